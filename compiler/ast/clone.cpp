// Deep copies of expressions, for the few places that build an item from
// parts of another (`--set attention.alibi.slopes=...` copies a `use` with one
// argument replaced). The tree itself stays immutable.
#include "compiler/ast/ast.h"

namespace posc::ast {

ExprPtr clone(const Expr& e) {
  auto c = std::make_unique<Expr>();
  c->kind = e.kind;
  c->range = e.range;
  c->number = e.number;
  c->text = e.text;
  c->name = e.name;
  c->op = e.op;
  if (e.lhs) c->lhs = clone(*e.lhs);
  if (e.rhs) c->rhs = clone(*e.rhs);
  for (const ExprPtr& x : e.elements) c->elements.push_back(x ? clone(*x) : nullptr);
  for (const Arg& a : e.args) c->args.push_back(clone(a));
  c->depth = e.depth;
  return c;
}

Arg clone(const Arg& a) { return Arg{a.name, a.value ? clone(*a.value) : nullptr, a.range}; }

}  // namespace posc::ast
