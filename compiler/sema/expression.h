// The one binder of expressions.
//
// Score formulas (`s * exp(-rate[h] * abs(q.column - k.column))`), kernels
// of distance (`k(d) = 20*cos(2*pi*d/6)`, in `posc repl` and `analysis`
// blocks), and settings, component arguments and defaults (`heads = 4`,
// `rates = 0.5 * linspace(1, 0.1)`) are the same language: numbers, the
// operators and functions of the operation table (compiler/expr/ops.def),
// `c ? a : b`, names, calls, and in settings lists, ranges and text. The
// Binder walks that syntax once for all of them: it finds each operator and
// function in the table, checks arity and positional arguments, and reports
// misuse with one located message. What differs between the contexts is what
// a name, a member (`q.column`), an index (`rate[h]`, `bias[h][i]`), a call
// outside the table (a kernel defined earlier, an analytic control,
// `linspace`) or a literal that is not a number means, and what a node is (a
// graph node of a formula or a kernel; a typed value of a setting); a
// Context answers those. So an operation added to the table is available in
// every context at once, with the same spelling, arity and errors.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostics.h"
#include "compiler/expr/ops.h"

namespace posc::sema {

using ExprNode = int;  // a node of the context's graph

class Binder;

// What one kind of expression means: its leaves and its nodes.
class ExpressionContext {
 public:
  virtual ~ExpressionContext() = default;

  // The expression's kind in messages ("score formula", "kernel").
  virtual std::string what() const = 0;

  // A constant node written at `at`, and an operation of the table on
  // earlier nodes (b and c are -1 where the operation takes fewer). `at`
  // locates errors the context finds while folding (a constant that is NaN)
  // or typing (a setting's `!` on a number); nullopt after reporting one.
  virtual ExprNode constant(double value, SourceRange at) = 0;
  virtual std::optional<ExprNode> operation(SourceRange at, expr::Op op, ExprNode a, ExprNode b, ExprNode c) = 0;

  // A name; nullopt after reporting an error.
  virtual std::optional<ExprNode> name(const ast::Expr& e, Binder& binder) = 0;
  // `x.field`, `x[i]`: by default not available in this kind of expression.
  virtual std::optional<ExprNode> member(const ast::Expr& e, Binder& binder);
  virtual std::optional<ExprNode> index(const ast::Expr& e, Binder& binder);

  // A call of a name the operation table does not have. `handled` false:
  // the name means nothing here either, and the binder reports an unknown
  // function with suggestions from extraFunctions().
  struct Handled {
    bool handled = false;
    std::optional<ExprNode> node;
  };
  virtual Handled call(const ast::Expr& e, Binder& binder);
  virtual std::vector<std::string> extraFunctions() const { return {}; }

  // A string, list, tuple or range. `handled` false: this kind of expression
  // computes a number, and the binder says so.
  virtual Handled literal(const ast::Expr& e, Binder& binder);

  // The value of a condition the context knows while binding (a setting's
  // boolean): the binder then binds only the branch it picks, as `c ? a : b`
  // is read in settings. nullopt: both branches are bound and selected
  // between by the operation `?` (score formulas and kernels).
  virtual std::optional<bool> knownCondition(ExprNode) const { return std::nullopt; }

  // The number a node is when it is known while binding (a constant), else
  // nullopt: the ends of a sum's range must be.
  virtual std::optional<double> constantOf(ExprNode node) const = 0;
};

// Sums are the binder's own, so every context has them:
//   sum(i, lo..hi, term)
// is term with the name i bound to lo, lo + 1, ..., hi - 1 in turn, added
// (0 when lo >= hi); lo and hi must be whole numbers known while binding (a
// component's argument, head_pairs). The sum is unrolled into the context's
// nodes, as written out by hand, so a formula with a sum compiles to the
// same kernel as the written-out formula. Sinusoidal kernels (Sandwich's
// inner products of sinusoidal embeddings) and small learned functions over
// a table's entries (FIRE's MLP) are written with it.

class Binder {
 public:
  Binder(ExpressionContext& context, DiagnosticEngine& diags) : context_(context), diags_(diags) {}

  // The node of `e`, or nullopt after reporting errors.
  std::optional<ExprNode> bind(const ast::Expr& e);

  // The arguments of call `e`, each bound, after checking that there are
  // `count` of them and none is named; nullopt after reporting errors.
  std::optional<std::vector<ExprNode>> arguments(const ast::Expr& e, size_t count);

  DiagnosticEngine& diags() { return diags_; }
  ExpressionContext& context() { return context_; }

  // The most operations the sums of one expression unroll into (terms times
  // the operations in a term, nested sums included), so that no file can
  // make the binder build an unbounded graph.
  static constexpr double kMaxSumOperations = 1 << 20;

 private:
  std::optional<ExprNode> call(const ast::Expr& e);
  std::optional<ExprNode> sum(const ast::Expr& e);
  ExpressionContext& context_;
  DiagnosticEngine& diags_;
  std::vector<std::pair<std::string, double>> indices_;  // the sums' indices in scope, innermost last
  double unrolled_ = 0;  // operations unrolled so far
};

}  // namespace posc::sema
