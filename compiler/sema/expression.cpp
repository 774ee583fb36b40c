// The one binder of numeric expressions: see expression.h.
#include "compiler/sema/expression.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace posc::sema {

std::optional<ExprNode> ExpressionContext::member(const ast::Expr& e, Binder& binder) {
  binder.diags().error(e.range, fmt::format("'.{}' is not available in a {}", e.name.text, what()));
  return std::nullopt;
}

std::optional<ExprNode> ExpressionContext::index(const ast::Expr& e, Binder& binder) {
  binder.diags().error(e.range, fmt::format("indexing is not available in a {}", what()));
  return std::nullopt;
}

ExpressionContext::Handled ExpressionContext::call(const ast::Expr&, Binder&) { return {}; }
ExpressionContext::Handled ExpressionContext::literal(const ast::Expr&, Binder&) { return {}; }

std::optional<ExprNode> Binder::bind(const ast::Expr& e) {
  using K = ast::Expr::Kind;
  auto notANumber = [&](const char* thing) -> std::optional<ExprNode> {
    diags_.error(e.range, fmt::format("a {} computes a number; {} is not allowed here", context_.what(), thing));
    return std::nullopt;
  };
  switch (e.kind) {
    case K::Number: return context_.constant(e.number, e.range);
    case K::Name:
      for (auto it = indices_.rbegin(); it != indices_.rend(); ++it)
        if (it->first == e.name.text) return context_.constant(it->second, e.range);
      return context_.name(e, *this);
    case K::Member: return context_.member(e, *this);
    case K::Index: return context_.index(e, *this);
    case K::Call: return call(e);
    case K::Unary: {
      auto a = bind(*e.lhs);
      if (!a || e.op == "+") return a;
      expr::Op op;
      if (!expr::findSymbol(e.op.c_str(), 1, op)) {
        diags_.error(e.range, fmt::format("operator '{}' is not available in a {}", e.op, context_.what()));
        return std::nullopt;
      }
      return context_.operation(e.range, op, *a, -1, -1);
    }
    case K::Binary: {
      auto a = bind(*e.lhs);
      auto b = bind(*e.rhs);
      if (!a || !b) return std::nullopt;
      expr::Op op;
      if (!expr::findSymbol(e.op.c_str(), 2, op)) {
        diags_.error(e.range, fmt::format("operator '{}' is not available in a {}", e.op, context_.what()));
        return std::nullopt;
      }
      // A divisor known to be 0 makes every value infinite or NaN: a
      // formula would check and then fail at the first training step.
      if (op == expr::Op::Div && context_.constantOf(*b) == 0.0) {
        Diagnostic& d = diags_.error(e.rhs->range, fmt::format("division by zero in a {}", context_.what()));
        d.hint = "the divisor is 0 wherever it is evaluated";
        return std::nullopt;
      }
      return context_.operation(e.range, op, *a, *b, -1);
    }
    case K::Conditional: {
      auto c = bind(*e.elements[0]);
      if (!c) return std::nullopt;
      if (std::optional<bool> known = context_.knownCondition(*c)) return bind(*e.elements[*known ? 1 : 2]);
      auto a = bind(*e.elements[1]);
      auto b = bind(*e.elements[2]);
      if (!c || !a || !b) return std::nullopt;
      return context_.operation(e.range, expr::Op::Select, *c, *a, *b);
    }
    case K::String:
    case K::List:
    case K::Tuple:
    case K::Range: {
      ExpressionContext::Handled own = context_.literal(e, *this);
      if (own.handled) return own.node;
      return notANumber(e.kind == K::String ? "a string" : e.kind == K::List ? "a list" : e.kind == K::Tuple ? "a tuple" : "a range");
    }
  }
  return notANumber("this expression");
}

std::optional<std::vector<ExprNode>> Binder::arguments(const ast::Expr& e, size_t count) {
  const std::string& f = e.name.text;
  for (const ast::Arg& a : e.args)
    if (!a.name.text.empty()) {
      diags_.error(a.name.range, fmt::format("'{}' takes positional arguments only", f));
      return std::nullopt;
    }
  if (e.args.size() != count) {
    diags_.error(e.range, fmt::format("'{}' takes {} argument{}, {} given", f, count, count == 1 ? "" : "s",
                                      e.args.size()));
    return std::nullopt;
  }
  std::vector<ExprNode> out;
  bool ok = true;
  for (const ast::Arg& a : e.args) {
    auto x = bind(*a.value);
    if (!x) ok = false;
    else out.push_back(*x);
  }
  if (!ok) return std::nullopt;
  return out;
}

namespace {

// The nodes of an expression's syntax tree (the parser bounds its depth).
size_t operationsIn(const ast::Expr& e) {
  size_t n = 1;
  if (e.lhs) n += operationsIn(*e.lhs);
  if (e.rhs) n += operationsIn(*e.rhs);
  for (const ast::ExprPtr& x : e.elements) n += operationsIn(*x);
  for (const ast::Arg& a : e.args) n += operationsIn(*a.value);
  return n;
}

}  // namespace

std::optional<ExprNode> Binder::sum(const ast::Expr& e) {
  auto fail = [&](SourceRange at, std::string message) -> std::optional<ExprNode> {
    Diagnostic& d = diags_.error(at, std::move(message));
    d.hint = "write sum(i, lo..hi, term): the index's name, a range of whole numbers, and the term in i";
    return std::nullopt;
  };
  if (e.args.size() != 3) return fail(e.range, fmt::format("'sum' takes 3 arguments, {} given", e.args.size()));
  for (const ast::Arg& a : e.args)
    if (!a.name.text.empty()) return fail(a.name.range, "'sum' takes positional arguments only");
  const ast::Expr& index = *e.args[0].value;
  const ast::Expr& range = *e.args[1].value;
  if (index.kind != ast::Expr::Kind::Name) return fail(index.range, "a sum's first argument names its index");
  if (range.kind != ast::Expr::Kind::Range) return fail(range.range, "a sum runs over a range lo..hi");
  double ends[2];
  for (int i = 0; i < 2; ++i) {
    const ast::Expr& end = i == 0 ? *range.lhs : *range.rhs;
    auto node = bind(end);
    if (!node) return std::nullopt;
    std::optional<double> v = context_.constantOf(*node);
    if (!v || !std::isfinite(*v) || *v != std::floor(*v))
      return fail(end.range, "the ends of a sum's range must be whole numbers known when the file is read");
    ends[i] = *v;
  }
  const double terms = std::max(0.0, ends[1] - ends[0]);
  const double operations = terms * static_cast<double>(operationsIn(*e.args[2].value));
  if (unrolled_ + operations > kMaxSumOperations)
    return fail(range.range, fmt::format("this sum of {:g} terms unrolls into more operations than posc builds for one "
                                         "expression ({:g})",
                                         terms, kMaxSumOperations));
  unrolled_ += operations;
  std::optional<ExprNode> total;
  for (double v = ends[0]; v < ends[1]; ++v) {
    indices_.emplace_back(index.name.text, v);
    std::optional<ExprNode> term = bind(*e.args[2].value);
    indices_.pop_back();
    if (!term) return std::nullopt;  // reported once, at the first term
    total = total ? context_.operation(e.range, expr::Op::Add, *total, *term, -1) : term;
    if (!total) return std::nullopt;
  }
  return total ? total : context_.constant(0, e.range);
}

std::optional<ExprNode> Binder::call(const ast::Expr& e) {
  if (e.name.text == "sum") return sum(e);
  ExpressionContext::Handled own = context_.call(e, *this);
  if (own.handled) return own.node;
  const std::string& f = e.name.text;
  expr::Op op;
  if (!expr::findFunction(f.c_str(), op)) {
    Diagnostic& d = diags_.error(e.name.range, fmt::format("unknown function '{}' in a {}", f, context_.what()));
    std::vector<std::string> candidates = expr::functionNames();
    candidates.push_back("sum");
    for (const std::string& n : context_.extraFunctions()) candidates.push_back(n);
    suggest(d, f, candidates);
    return std::nullopt;
  }
  const int arity = expr::arity(op);
  auto args = arguments(e, static_cast<size_t>(arity));
  if (!args) return std::nullopt;
  return context_.operation(e.range, op, (*args)[0], arity >= 2 ? (*args)[1] : -1, arity >= 3 ? (*args)[2] : -1);
}

}  // namespace posc::sema
