// Compile-time values: what settings, component arguments and parameter
// initialisers evaluate to before they are checked against a type.
//
// Bare names that are not bound to anything evaluate to Symbols (`gelu`,
// `column`, `separator`), which the consumer checks against the words it
// accepts, so a typo gets "did you mean" from the place that knows the
// alternatives.
#pragma once

#include <string>
#include <vector>

#include "compiler/plan/plan.h"
#include "compiler/source/source.h"

namespace posc::sema {

// The most values a built-in list function (linspace, geomspace,
// alibi_slopes) or an expanded range may produce: far above any head, pair or
// length count an experiment uses, far below what exhausts memory.
inline constexpr long long kMaxListLength = 1 << 16;

struct Value {
  enum class Kind { Number, Bool, String, Symbol, List, Tuple, Range, Dist, None } kind = Kind::None;
  double number = 0;
  bool boolean = false;
  std::string text;  // String contents or Symbol name
  std::vector<Value> elements;  // List, Tuple
  long long lo = 0, hi = 0;     // Range: [lo, hi)
  plan::Distribution dist;
  SourceRange range;  // where the value was written

  static Value makeNumber(double v, SourceRange r) { Value x; x.kind = Kind::Number; x.number = v; x.range = r; return x; }
  static Value makeBool(bool v, SourceRange r) { Value x; x.kind = Kind::Bool; x.boolean = v; x.range = r; return x; }
  static Value makeSymbol(std::string s, SourceRange r) { Value x; x.kind = Kind::Symbol; x.text = std::move(s); x.range = r; return x; }
  static Value makeString(std::string s, SourceRange r) { Value x; x.kind = Kind::String; x.text = std::move(s); x.range = r; return x; }
  static Value makeNone(SourceRange r) { Value x; x.kind = Kind::None; x.range = r; return x; }

  bool isInteger() const;
  std::string describe() const;  // "the number 2.5", "the name 'colum'", "a list of 3 values"
  std::string render() const;    // canonical text, for plan dumps
};

}  // namespace posc::sema
