// Translation of score formulas into plan::Formula, with constant folding.
#include "compiler/sema/formula.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "compiler/sema/expression.h"

namespace posc::sema {

using Op = plan::FormulaNode::Op;

const std::vector<std::string>& channelNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (int c = 0; c < plan::kChannelCount; ++c) out.push_back(plan::channelName(static_cast<plan::Channel>(c)));
    return out;
  }();
  return names;
}

bool channelFromName(const std::string& name, plan::Channel& out) {
  const auto& names = channelNames();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) {
      out = static_cast<plan::Channel>(i);
      return true;
    }
  return false;
}

namespace {

// Score formulas as a context of the one binder (expression.h): nodes are
// entries of a flat plan::Formula; names are s, h, pi, parameters and numeric
// arguments; members are channels; indexing reads parameters and tables.
class FormulaContext final : public ExpressionContext {
 public:
  FormulaContext(const FormulaScope& scope, DiagnosticEngine& diags) : scope(scope), diags(diags) {}
  const FormulaScope& scope;
  DiagnosticEngine& diags;
  plan::Formula out;

  std::string what() const override { return "score formula"; }
  ExprNode constant(double v, SourceRange) override { return constantNode(v); }
  std::optional<ExprNode> operation(SourceRange at, Op o, ExprNode a, ExprNode b, ExprNode c) override {
    return op(at, o, a, b, c);
  }
  std::optional<double> constantOf(ExprNode n) const override {
    if (!isConst(n)) return std::nullopt;
    return constValue(n);
  }
  std::optional<ExprNode> member(const ast::Expr& e, Binder&) override { return channel(e); }
  std::optional<ExprNode> index(const ast::Expr& e, Binder& binder) override { return indexed(e, binder); }
  std::optional<ExprNode> name(const ast::Expr& e, Binder&) override { return named(e); }

  int push(plan::FormulaNode n) {
    out.nodes.push_back(n);
    return static_cast<int>(out.nodes.size() - 1);
  }
  int constantNode(double v) {
    plan::FormulaNode n;
    n.op = Op::Const;
    n.value = v;
    return push(n);
  }
  bool isConst(int i) const { return out.nodes[static_cast<size_t>(i)].op == Op::Const; }
  double constValue(int i) const { return out.nodes[static_cast<size_t>(i)].value; }

  // Appends the operation at `at`, folding it when every operand is
  // constant. A fold that turns finite constants into NaN or an infinity
  // (log(-1), 1/0, exp(1000)) is an error at the operation: every score
  // would be that value.
  int op(SourceRange at, Op o, int a, int b = -1, int c = -1) {
    if (isConst(a) && (b < 0 || isConst(b)) && (c < 0 || isConst(c))) {
      double x = constValue(a), y = b < 0 ? 0 : constValue(b), z = c < 0 ? 0 : constValue(c);
      double v = expr::fold(o, x, y, z);
      if (!std::isfinite(v) && std::isfinite(x) && std::isfinite(y) && std::isfinite(z)) {
        Diagnostic& d = diags.error(at, fmt::format("this constant expression is {}",
                                                    std::isnan(v) ? "NaN" : v > 0 ? "infinite" : "-infinite"));
        d.hint = "every score would be NaN or infinite; check the operands' signs and magnitudes";
      }
      // The operand constants become dead; prune() removes them.
      return constantNode(v);
    }
    plan::FormulaNode n;
    n.op = o;
    n.a = a;
    n.b = b;
    n.c = c;
    return push(n);
  }

  std::vector<std::string> visibleNames() const {
    std::vector<std::string> names = {"s", "h", "q", "k", "pi"};
    for (const auto& [n, _] : scope.params) names.push_back(n);
    for (const std::string& n : scope.env.names())
      if (const Value* v = scope.env.find(n); v && v->kind == Value::Kind::Number) names.push_back(n);
    return names;
  }

  std::optional<int> channel(const ast::Expr& e) {
    // q.X / k.X
    if (e.lhs->kind != ast::Expr::Kind::Name || (e.lhs->name.text != "q" && e.lhs->name.text != "k")) {
      diags.error(e.range, "channels are read as q.<channel> (the query's) or k.<channel> (the key's)");
      return std::nullopt;
    }
    std::string name = e.name.text;
    if (const Value* v = scope.env.find(name); v && v->kind == Value::Kind::Symbol) name = v->text;
    plan::Channel ch;
    if (!channelFromName(name, ch)) {
      Diagnostic& d = diags.error(e.name.range, fmt::format("unknown position channel '{}'", name));
      suggest(d, name, channelNames());
      if (d.notes.empty()) d.hint = "the channels are position, column, row and kind";
      return std::nullopt;
    }
    plan::FormulaNode n;
    n.op = e.lhs->name.text == "q" ? Op::QChannel : Op::KChannel;
    n.channel = ch;
    return push(n);
  }

  // name[h] (a per-head value), name[x] (an entry of a shared table) or
  // name[h][x] (an entry of the head's row of a per-head table).
  std::optional<int> indexed(const ast::Expr& e, Binder& binder) {
    const bool nested = e.lhs->kind == ast::Expr::Kind::Index;
    const ast::Expr& base = nested ? *e.lhs->lhs : *e.lhs;
    if (base.kind != ast::Expr::Kind::Name) {
      diags.error(e.range, "only parameters can be indexed in a score formula");
      return std::nullopt;
    }
    const std::string& n = base.name.text;
    if (!scope.params.count(n)) {
      Diagnostic& d = diags.error(base.range, fmt::format("unknown parameter '{}' in score formula", n));
      std::vector<std::string> names;
      for (const auto& [pn, _] : scope.params) names.push_back(pn);
      suggest(d, n, names);
      return std::nullopt;
    }
    const int id = scope.params.at(n);
    const plan::Param& p = scope.attention.params[static_cast<size_t>(id)];
    auto isHead = [](const ast::Expr& x) { return x.kind == ast::Expr::Kind::Name && x.name.text == "h"; };
    const std::string shape = p.per_head ? fmt::format("{}[h][...]", n) : fmt::format("{}[...]", n);
    if (!p.table()) {
      if (nested) {
        diags.error(e.range, fmt::format("parameter '{}' is not a table; it has no entries to index", n));
        return std::nullopt;
      }
      if (!isHead(*e.rhs)) {
        Diagnostic& d = diags.error(e.rhs->range, "a per-head parameter is indexed by the head 'h'");
        d.hint = fmt::format("write '{}[h]'", n);
        return std::nullopt;
      }
      return param(n, e.range, true);
    }
    // A table: its entry index, after the head for a per-head table.
    if (p.per_head && (!nested || !isHead(*e.lhs->rhs))) {
      Diagnostic& d = diags.error(nested ? e.lhs->rhs->range : e.range,
                                  fmt::format("table '{}' has a row per head: read it as '{}'", n, shape));
      d.hint = "the head's row comes first, then the entry";
      return std::nullopt;
    }
    if (!p.per_head && nested) {
      Diagnostic& d = diags.error(e.lhs->rhs->range, fmt::format("table '{}' is shared by the heads: read it as '{}'", n, shape));
      d.hint = "a table declared without [h] has one row for every head";
      return std::nullopt;
    }
    auto at = binder.bind(*e.rhs);
    if (!at) return std::nullopt;
    plan::FormulaNode node;
    node.op = Op::Lookup;
    node.param = id;
    node.a = *at;
    return push(node);
  }

  std::optional<int> param(const std::string& name, SourceRange r, bool indexed) {
    auto it = scope.params.find(name);
    const plan::Param& p = scope.attention.params[static_cast<size_t>(it->second)];
    if (p.table()) {
      Diagnostic& d = diags.error(r, fmt::format("table '{}' is read one entry at a time", name));
      d.hint = fmt::format("write '{}'", p.per_head ? name + "[h][index]" : name + "[index]");
      return std::nullopt;
    }
    if (p.per_head && !indexed) {
      Diagnostic& d = diags.error(r, fmt::format("per-head parameter '{}' must be indexed by the head", name));
      d.hint = fmt::format("write '{}[h]'", name);
      return std::nullopt;
    }
    if (!p.per_head && indexed) {
      diags.error(r, fmt::format("parameter '{}' is a scalar; it cannot be indexed", name));
      return std::nullopt;
    }
    plan::FormulaNode n;
    n.op = Op::Param;
    n.param = it->second;
    return push(n);
  }

  std::optional<int> named(const ast::Expr& e) {
    const std::string& n = e.name.text;
    if (scope.params.count(n)) return param(n, e.range, false);
    if (n == "s" || n == "score") {
      plan::FormulaNode node;
      node.op = Op::Score;
      return push(node);
    }
    if (n == "h") {
      plan::FormulaNode node;
      node.op = Op::Head;
      return push(node);
    }
    if (n == "pi") return constantNode(M_PI);
    if (const Value* v = scope.env.find(n)) {
      if (v->kind == Value::Kind::Number) return constantNode(v->number);
      if (v->kind == Value::Kind::Bool) return constantNode(v->boolean ? 1 : 0);
      diags.error(e.range, fmt::format("'{}' is {}, which a score formula cannot use as a number", n, v->describe()));
      return std::nullopt;
    }
    Diagnostic& d = diags.error(e.range, fmt::format("unknown name '{}' in score formula", n));
    suggest(d, n, visibleNames());
    if (d.notes.empty())
      d.hint = "a formula reads s (the score), h (the head), q.<channel>, k.<channel>, declared params and numeric arguments";
    return std::nullopt;
  }
};

// Removes nodes that the result does not depend on (left behind by folding)
// and renumbers operands.
plan::Formula prune(const plan::Formula& f) {
  std::vector<bool> live(f.nodes.size(), false);
  if (f.nodes.empty()) return f;
  live.back() = true;
  for (size_t i = f.nodes.size(); i-- > 0;) {
    if (!live[i]) continue;
    for (int x : {f.nodes[i].a, f.nodes[i].b, f.nodes[i].c})
      if (x >= 0) live[static_cast<size_t>(x)] = true;
  }
  std::vector<int> index(f.nodes.size(), -1);
  plan::Formula out;
  out.text = f.text;
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    if (!live[i]) continue;
    plan::FormulaNode n = f.nodes[i];
    for (int* x : {&n.a, &n.b, &n.c})
      if (*x >= 0) *x = index[static_cast<size_t>(*x)];
    index[i] = static_cast<int>(out.nodes.size());
    out.nodes.push_back(n);
  }
  return out;
}

}  // namespace

std::optional<plan::Formula> compileFormula(const ast::Expr& e, const FormulaScope& scope,
                                            DiagnosticEngine& diags) {
  FormulaContext c(scope, diags);
  Binder binder(c, diags);
  int errors_before = diags.errorCount();
  auto root = binder.bind(e);
  if (!root || diags.errorCount() > errors_before) return std::nullopt;
  if (*root != static_cast<int>(c.out.nodes.size()) - 1) {
    // The result is an earlier node (e.g. unary plus): make it last.
    plan::FormulaNode keep = c.out.nodes[static_cast<size_t>(*root)];
    c.out.nodes.push_back(keep);
  }
  c.out.text = ast::dumpExpr(e);
  return prune(c.out);
}

}  // namespace posc::sema
