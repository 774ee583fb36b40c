// Code-point to byte offsets for token ranges.
#include "compiler/parse/locator.h"

#include <algorithm>

namespace posc::parse {

Locator::Locator(int32_t source, const std::string& utf8)
    : source_(source), size_(static_cast<uint32_t>(utf8.size())) {
  bool ascii = std::all_of(utf8.begin(), utf8.end(), [](char c) { return (c & 0x80) == 0; });
  if (ascii) return;
  for (uint32_t i = 0; i < utf8.size(); ++i)
    if ((static_cast<unsigned char>(utf8[i]) & 0xC0) != 0x80) offsets_.push_back(i);
  offsets_.push_back(size_);
}

uint32_t Locator::byteOffset(size_t cp) const {
  if (offsets_.empty()) return std::min<uint32_t>(static_cast<uint32_t>(cp), size_);
  return cp < offsets_.size() ? offsets_[cp] : size_;
}

SourceRange Locator::token(const antlr4::Token* t) const {
  if (t == nullptr) return {};
  if (t->getType() == antlr4::Token::EOF) return {source_, size_, size_};
  size_t start = t->getStartIndex();
  size_t stop = t->getStopIndex();
  return {source_, byteOffset(start), byteOffset(stop + 1)};
}

SourceRange Locator::rule(antlr4::ParserRuleContext* ctx) const {
  SourceRange begin = token(ctx->getStart());
  const antlr4::Token* stop = ctx->getStop();
  if (stop == nullptr || stop->getTokenIndex() < ctx->getStart()->getTokenIndex()) return begin;
  return begin.to(token(stop));
}

}  // namespace posc::parse
