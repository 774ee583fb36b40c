// The one binder of numeric expressions.
//
// Score formulas (`s * exp(-rate[h] * abs(q.column - k.column))`) and kernels
// of distance (`k(d) = 20*cos(2*pi*d/6)`, in `posc repl` and `analysis`
// blocks) are the same language: numbers, the operators and functions of
// the operation table (compiler/expr/ops.def), `c ? a : b`, names, and calls.
// The Binder walks that syntax once for both: it finds each operator and
// function in the table, checks arity and positional arguments, and reports
// what is not a number (strings, lists, ranges) with one located message.
// What differs between the two is only what a name, a member (`q.column`),
// an index (`rate[h]`, `bias[h][i]`) or a call outside the table (a kernel
// defined earlier, an analytic control) means, and what a node is; a
// Context answers those. So an operation added to the table is available in
// both at once, with the same spelling, arity and errors.
//
// Settings and component arguments are evaluated to typed values (lists,
// booleans, ranges; compiler/sema/evaluate) and share the table's
// spellings, arity and fold, not this binder.
#pragma once

#include <optional>
#include <string>
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

  // A constant node, and an operation of the table on earlier nodes (b and
  // c are -1 where the operation takes fewer). `at` locates errors the
  // context finds while folding (a constant that is NaN).
  virtual ExprNode constant(double value) = 0;
  virtual ExprNode operation(SourceRange at, expr::Op op, ExprNode a, ExprNode b, ExprNode c) = 0;

  // A name; nullopt after reporting an error.
  virtual std::optional<ExprNode> name(const ast::Expr& e, Binder& binder) = 0;
  // `x.field`, `x[i]`: by default not available in this kind of expression.
  virtual std::optional<ExprNode> member(const ast::Expr& e, Binder& binder);
  virtual std::optional<ExprNode> index(const ast::Expr& e, Binder& binder);

  // A call of a name the operation table does not have. `handled` false:
  // the name means nothing here either, and the binder reports an unknown
  // function with suggestions from extraFunctions().
  struct Call {
    bool handled = false;
    std::optional<ExprNode> node;
  };
  virtual Call call(const ast::Expr& e, Binder& binder);
  virtual std::vector<std::string> extraFunctions() const { return {}; }
};

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

 private:
  std::optional<ExprNode> call(const ast::Expr& e);
  ExpressionContext& context_;
  DiagnosticEngine& diags_;
};

}  // namespace posc::sema
