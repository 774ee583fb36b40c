// Maps ANTLR token positions (code-point indices) to byte ranges of the
// source, so diagnostics point at the right place even after non-ASCII text.
#pragma once

#include <antlr4-runtime.h>

#include <vector>

#include "compiler/source/source.h"

namespace posc::parse {

class Locator {
 public:
  Locator(int32_t source, const std::string& utf8);
  uint32_t byteOffset(size_t code_point_index) const;
  SourceRange token(const antlr4::Token* t) const;
  SourceRange rule(antlr4::ParserRuleContext* ctx) const;
  int32_t source() const { return source_; }

 private:
  int32_t source_;
  std::vector<uint32_t> offsets_;  // empty when the text is pure ASCII
  uint32_t size_;
};

}  // namespace posc::parse
