// Compile-time evaluation of expressions into Values.
//
// Used for settings (`layers = 6`), component arguments and defaults
// (`rates = linspace(0.5, 0.05)`) and parameter initialisers. It is the
// settings context of the one binder (expression.h): the same operators,
// functions, arity checks and messages as score formulas and kernels, with
// typed values (lists, booleans, ranges, distributions) as its nodes. A
// condition picks its branch while binding (`heads > 2 ? a : b` does not
// bind the other branch); comparisons, `!`, `&&` and `||` give booleans,
// which settings keep a type of their own.
//
// Built-in names: pi, true, false, none, all, and inside attention sections
// heads (count), head_dim and head_pairs (head_dim / 2).
// Built-in functions: linspace(a, b[, n]) (n defaults to heads),
// geomspace(a, b[, n]), alibi_slopes([n]) (ALiBi's default geometric slopes),
// uniform(a, b[, eval]), log_uniform(a, b[, eval]), fixed(a), min and max
// (of numbers and lists), range(a, b) (the half-open range a..b), and the
// expression language's numeric functions and operators (abs, exp, floor,
// clamp, where, ..., + - * / % ^: compiler/expr/ops.def), on numbers and
// elementwise on a list of numbers with numbers.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostics.h"
#include "compiler/sema/value.h"

namespace posc::sema {

class Env {
 public:
  explicit Env(const Env* parent = nullptr) : parent_(parent) {}
  void bind(const std::string& name, Value v) { values_[name] = std::move(v); }
  const Value* find(const std::string& name) const;
  std::vector<std::string> names() const;  // for suggestions

 private:
  const Env* parent_;
  std::map<std::string, Value> values_;
};

// Returns nullopt after reporting an error.
std::optional<Value> evaluate(const ast::Expr& e, const Env& env, DiagnosticEngine& diags);

// ALiBi's default slopes for n heads: the geometric sequence starting at
// 2^(-8/n) with ratio 2^(-8/n); for n not a power of two, the
// interleaving rule of the ALiBi paper's reference code.
std::vector<double> alibiSlopes(int n);

}  // namespace posc::sema
