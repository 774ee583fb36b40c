// The compile-time expression evaluator and its built-in functions.
#include "compiler/sema/evaluate.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "compiler/expr/ops.h"
#include "compiler/sema/expression.h"

namespace posc::sema {

const Value* Env::find(const std::string& name) const {
  auto it = values_.find(name);
  if (it != values_.end()) return &it->second;
  return parent_ ? parent_->find(name) : nullptr;
}

std::vector<std::string> Env::names() const {
  std::vector<std::string> out = parent_ ? parent_->names() : std::vector<std::string>{};
  for (const auto& [k, _] : values_) out.push_back(k);
  return out;
}

std::vector<double> alibiSlopes(int n) {
  auto power_of_two = [](int m) {
    std::vector<double> s;
    double start = std::pow(2.0, -8.0 / m);
    for (int i = 0; i < m; ++i) s.push_back(std::pow(start, i + 1));
    return s;
  };
  if (n <= 0) return {};
  int closest = 1;
  while (closest * 2 <= n) closest *= 2;
  std::vector<double> slopes = power_of_two(closest);
  if (closest != n) {
    std::vector<double> extra = power_of_two(2 * closest);
    for (int i = 0; i < n - closest; ++i) slopes.push_back(extra[static_cast<size_t>(2 * i)]);
  }
  return slopes;
}

namespace {

using Kind = Value::Kind;
using expr::Op;

// Settings, component arguments and defaults as a context of the one binder
// (expression.h): a node is a typed Value. Operations of the table apply to
// numbers, and elementwise to a list of numbers with numbers
// (`0.5 * linspace(1, 0.1)`); comparisons and `!`, `&&`, `||` give booleans,
// which stay a type of their own; a condition picks its branch while
// binding. Names are the environment's values, pi, true, false, none, and
// otherwise symbols (`gelu`, `column`), which the consumer checks against
// the words it accepts. Calls outside the table are the built-ins of
// evaluate.h; min and max also take lists and any number of arguments.
class SettingContext final : public ExpressionContext {
 public:
  SettingContext(const Env& env, DiagnosticEngine& diags) : env_(env), diags_(diags) {}

  const Value& value(ExprNode n) const { return values_[static_cast<size_t>(n)]; }

  std::string what() const override { return "setting"; }

  ExprNode constant(double v, SourceRange at) override { return push(Value::makeNumber(v, at)); }

  std::optional<ExprNode> operation(SourceRange at, Op op, ExprNode a, ExprNode b, ExprNode c) override {
    const Value& x = value(a);
    const char* spelling = expr::info(op).symbol ? expr::info(op).symbol : expr::info(op).function;
    // The operation's type rule (the `type` column of ops.def).
    switch (expr::info(op).type) {
      case expr::TypeRule::Choose:
        if (x.kind != Kind::Bool)
          return fail(x.range, fmt::format("a condition must be a boolean, not {}", x.describe()));
        return push(value(x.boolean ? b : c));  // not reached when binding `c ? a : b`: knownCondition
      case expr::TypeRule::Logic: {
        if (expr::arity(op) == 1) {
          if (x.kind != Kind::Bool)
            return fail(at, fmt::format("'{}' needs a boolean, not {}", spelling, x.describe()));
          return push(Value::makeBool(expr::fold(op, x.boolean) != 0, at));
        }
        const Value& y = value(b);
        if (x.kind != Kind::Bool || y.kind != Kind::Bool) return fail(at, fmt::format("'{}' needs booleans", spelling));
        return push(Value::makeBool(expr::fold(op, x.boolean, y.boolean) != 0, at));
      }
      case expr::TypeRule::Compare: {
        const Value& y = value(b);
        if ((op == Op::Eq || op == Op::Ne) && x.kind == Kind::Symbol && y.kind == Kind::Symbol)
          return push(Value::makeBool((x.text == y.text) == (op == Op::Eq), at));
        if (x.kind != Kind::Number || y.kind != Kind::Number)
          return fail(at, fmt::format("'{}' compares numbers, not {} and {}", spelling, x.describe(), y.describe()));
        return push(Value::makeBool(expr::fold(op, x.number, y.number) != 0, at));
      }
      case expr::TypeRule::Number:
        break;
    }
    return arithmetic(at, op, {a, b, c});
  }

  std::optional<ExprNode> name(const ast::Expr& e, Binder&) override {
    const std::string& n = e.name.text;
    if (const Value* v = env_.find(n)) {
      // A bound value keeps the range where it was written (a component
      // argument points at the use site), so errors land on the user's text.
      Value copy = *v;
      if (!copy.range.valid()) copy.range = e.range;
      return push(std::move(copy));
    }
    if (n == "true" || n == "false") return push(Value::makeBool(n == "true", e.range));
    if (n == "pi") return push(Value::makeNumber(M_PI, e.range));
    if (n == "none") return push(Value::makeNone(e.range));
    return push(Value::makeSymbol(n, e.range));
  }

  std::optional<ExprNode> member(const ast::Expr& e, Binder&) override {
    return fail(e.range, "'q.' and 'k.' channels can only be read inside a score formula");
  }

  std::optional<ExprNode> index(const ast::Expr& e, Binder& binder) override {
    auto base = binder.bind(*e.lhs);
    auto idx = binder.bind(*e.rhs);
    if (!base || !idx) return std::nullopt;
    const Value& l = value(*base);
    const Value& i = value(*idx);
    if (l.kind != Kind::List && l.kind != Kind::Tuple)
      return fail(e.lhs->range, fmt::format("only lists can be indexed, not {}", l.describe()));
    if (!i.isInteger() || i.number < 0 || i.number >= static_cast<double>(l.elements.size()))
      return fail(e.rhs->range, fmt::format("index {} is outside a list of {} values", i.render(), l.elements.size()));
    return push(Value(l.elements[static_cast<size_t>(i.number)]));
  }

  Handled literal(const ast::Expr& e, Binder& binder) override {
    if (e.kind == ast::Expr::Kind::String) return {true, push(Value::makeString(e.text, e.range))};
    if (e.kind == ast::Expr::Kind::Range) {
      auto lo = binder.bind(*e.lhs), hi = binder.bind(*e.rhs);
      if (!lo || !hi) return {true, std::nullopt};
      for (auto [end, node] : {std::pair{e.lhs.get(), *lo}, {e.rhs.get(), *hi}})
        if (!value(node).isInteger())
          return {true, fail(end->range, fmt::format("a range needs integer ends, not {}", value(node).describe()))};
      return {true, push(rangeValue(value(*lo).number, value(*hi).number, e.range))};
    }
    Value v;  // a list or a tuple
    v.kind = e.kind == ast::Expr::Kind::List ? Kind::List : Kind::Tuple;
    v.range = e.range;
    for (const ast::ExprPtr& x : e.elements) {
      auto n = binder.bind(*x);
      if (!n) return {true, std::nullopt};
      v.elements.push_back(value(*n));
    }
    return {true, push(std::move(v))};
  }

  std::optional<double> constantOf(ExprNode n) const override {
    if (value(n).kind != Kind::Number) return std::nullopt;
    return value(n).number;
  }

  std::optional<bool> knownCondition(ExprNode c) const override {
    if (value(c).kind != Kind::Bool) return std::nullopt;
    return value(c).boolean;
  }

  Handled call(const ast::Expr& e, Binder& binder) override;

  std::vector<std::string> extraFunctions() const override {
    return {"linspace", "geomspace", "alibi_slopes", "uniform", "log_uniform", "fixed", "range"};
  }

 private:
  const Env& env_;
  DiagnosticEngine& diags_;
  std::vector<Value> values_;

  ExprNode push(Value v) {
    values_.push_back(std::move(v));
    return static_cast<ExprNode>(values_.size() - 1);
  }
  std::nullopt_t fail(SourceRange r, std::string message) {
    diags_.error(r, std::move(message));
    return std::nullopt;
  }
  static Value rangeValue(double lo, double hi, SourceRange r) {
    Value v;
    v.kind = Kind::Range;
    v.lo = static_cast<long long>(lo);
    v.hi = static_cast<long long>(hi);
    v.range = r;
    return v;
  }

  // A number computed from finite operands must be finite: NaN or an
  // infinity in a setting (log(-1), 10^400) is an error at the operation.
  bool finite(double v, const double* operands, size_t n, SourceRange at) {
    if (std::isfinite(v)) return true;
    for (size_t i = 0; i < n; ++i)
      if (!std::isfinite(operands[i])) return true;
    Diagnostic& d = diags_.error(at, fmt::format("this expression is {}", std::isnan(v) ? "NaN" : v > 0 ? "infinite" : "-infinite"));
    d.hint = "check the operands' signs and magnitudes";
    return false;
  }

  // An arithmetic operation or numeric function of the table: on numbers,
  // or elementwise on one list of numbers with numbers.
  std::optional<ExprNode> arithmetic(SourceRange at, Op op, std::array<ExprNode, 3> nodes) {
    const size_t n = static_cast<size_t>(expr::arity(op));
    const Value* list = nullptr;
    for (size_t i = 0; i < n; ++i) {
      const Value& v = value(nodes[i]);
      if (v.kind == Kind::Number) continue;
      if (v.kind == Kind::List && list == nullptr && std::all_of(v.elements.begin(), v.elements.end(),
                                                                  [](const Value& x) { return x.kind == Kind::Number; })) {
        list = &v;
        continue;
      }
      return cannot(at, op, nodes);
    }
    auto apply = [&](double element, SourceRange r) -> std::optional<Value> {
      double x[3] = {0, 0, 0};
      for (size_t i = 0; i < n; ++i) x[i] = value(nodes[i]).kind == Kind::List ? element : value(nodes[i]).number;
      double v = expr::fold(op, x[0], x[1], x[2]);
      if (!finite(v, x, n, at)) return std::nullopt;
      return Value::makeNumber(v, r);
    };
    if (list == nullptr) {
      auto v = apply(0, at);
      if (!v) return std::nullopt;
      return push(std::move(*v));
    }
    Value out = *list;
    out.range = at;
    for (Value& element : out.elements) {
      auto v = apply(element.number, at);
      if (!v) return std::nullopt;
      element = std::move(*v);
    }
    return push(std::move(out));
  }

  std::nullopt_t cannot(SourceRange at, Op op, const std::array<ExprNode, 3>& nodes) {
    const expr::OpInfo& info = expr::info(op);
    if (info.arity == 1 && info.symbol)
      return fail(at, fmt::format("'{}' needs a number, not {}", info.symbol, value(nodes[0]).describe()));
    if (info.arity == 2 && info.symbol)
      return fail(at, fmt::format("'{}' cannot combine {} and {}", info.symbol, value(nodes[0]).describe(),
                                  value(nodes[1]).describe()));
    for (int i = 0; i < info.arity; ++i)
      if (value(nodes[static_cast<size_t>(i)]).kind != Kind::Number)
        return fail(value(nodes[static_cast<size_t>(i)]).range,
                    fmt::format("'{}' needs numbers, not {}", info.function, value(nodes[static_cast<size_t>(i)]).describe()));
    return std::nullopt;
  }

  // Built-ins' arguments.
  std::optional<double> number(Binder& binder, const ast::Expr& e, const char* what) {
    auto n = binder.bind(e);
    if (!n) return std::nullopt;
    if (value(*n).kind != Kind::Number)
      return fail(e.range, fmt::format("{} must be a number, not {}", what, value(*n).describe()));
    return value(*n).number;
  }
  // A list function's count: a whole number in 1..kMaxListLength, checked
  // before it is converted or anything is allocated.
  std::optional<int> listLength(double c, SourceRange r, const std::string& f) {
    if (std::isfinite(c) && std::floor(c) == c && c >= 1 && c <= static_cast<double>(kMaxListLength))
      return static_cast<int>(c);
    Diagnostic& d = diags_.error(r, fmt::format("'{}' makes lists of 1 to {} values; the count here is {}", f,
                                                kMaxListLength, Value::makeNumber(c, r).render()));
    d.hint = "a count is a number of heads, pairs or lengths";
    return std::nullopt;
  }
  std::optional<int> heads(SourceRange r) {
    const Value* h = env_.find("heads");
    if (h == nullptr || h->kind != Kind::Number)
      return fail(r, "the head count is only known inside an attention section; give the count explicitly");
    return static_cast<int>(h->number);
  }
  ExprNode list(const std::vector<double>& xs, SourceRange r) {
    Value v;
    v.kind = Kind::List;
    v.range = r;
    for (double x : xs) v.elements.push_back(Value::makeNumber(x, r));
    return push(std::move(v));
  }
  std::optional<ExprNode> spaced(const ast::Expr& e, Binder& binder);
  std::optional<ExprNode> distribution(const ast::Expr& e, Binder& binder);
  std::optional<ExprNode> extremum(const ast::Expr& e, Binder& binder);
};

ExpressionContext::Handled SettingContext::call(const ast::Expr& e, Binder& binder) {
  const std::string& f = e.name.text;
  const bool builtin = f == "min" || f == "max";
  const std::vector<std::string> own = extraFunctions();
  if (!builtin && std::find(own.begin(), own.end(), f) == own.end()) return {};  // the table's, or unknown
  for (const ast::Arg& a : e.args)
    if (!a.name.text.empty()) return {true, fail(a.name.range, fmt::format("'{}' takes positional arguments only", f))};
  auto arity = [&](size_t lo, size_t hi) -> bool {
    if (e.args.size() >= lo && e.args.size() <= hi) return true;
    diags_.error(e.range, lo == hi ? fmt::format("'{}' takes {} argument{}, {} given", f, lo, lo == 1 ? "" : "s", e.args.size())
                                   : fmt::format("'{}' takes {} to {} arguments, {} given", f, lo, hi, e.args.size()));
    return false;
  };
  if (f == "linspace" || f == "geomspace") return {true, arity(2, 3) ? spaced(e, binder) : std::nullopt};
  if (f == "uniform" || f == "log_uniform") return {true, arity(2, 3) ? distribution(e, binder) : std::nullopt};
  if (f == "fixed") return {true, arity(1, 1) ? distribution(e, binder) : std::nullopt};
  if (f == "min" || f == "max") return {true, extremum(e, binder)};
  if (f == "alibi_slopes") {
    if (!arity(0, 1)) return {true, std::nullopt};
    std::optional<int> n;
    if (e.args.empty()) n = heads(e.range);
    else if (auto c = number(binder, *e.args[0].value, "the head count")) n = listLength(*c, e.args[0].value->range, f);
    if (!n) return {true, std::nullopt};
    return {true, list(alibiSlopes(*n), e.range)};
  }
  // range(a, b): the half-open range a..b
  if (!arity(2, 2)) return {true, std::nullopt};
  auto a = number(binder, *e.args[0].value, "the start"), b = number(binder, *e.args[1].value, "the end");
  if (!a || !b) return {true, std::nullopt};
  for (auto [end, x] : {std::pair{e.args[0].value.get(), *a}, {e.args[1].value.get(), *b}})
    if (!Value::makeNumber(x, end->range).isInteger())
      return {true, fail(end->range, fmt::format("'range' needs integer ends, not {}", Value::makeNumber(x, end->range).describe()))};
  return {true, push(rangeValue(*a, *b, e.range))};
}

std::optional<ExprNode> SettingContext::spaced(const ast::Expr& e, Binder& binder) {
  const std::string& f = e.name.text;
  auto a = number(binder, *e.args[0].value, "the start"), b = number(binder, *e.args[1].value, "the end");
  // The count: the third argument, or the head count.
  int count = 0;
  if (e.args.size() == 3) {
    std::optional<double> c = number(binder, *e.args[2].value, "the count");
    if (!c) return std::nullopt;
    std::optional<int> n = listLength(*c, e.args[2].value->range, f);
    if (!n) return std::nullopt;
    count = *n;
  } else {
    std::optional<int> h = heads(e.range);
    if (!h) return std::nullopt;
    count = *h;
  }
  if (!a || !b) return std::nullopt;
  if (count < 1) return fail(e.range, fmt::format("'{}' needs a count of at least 1", f));
  if (f == "geomspace" && (*a <= 0 || *b <= 0)) return fail(e.range, "'geomspace' needs positive end points");
  std::vector<double> xs;
  for (int i = 0; i < count; ++i) {
    double t = count == 1 ? 0.0 : static_cast<double>(i) / (count - 1);
    xs.push_back(f == "linspace" ? *a + (*b - *a) * t : *a * std::pow(*b / *a, t));
  }
  return list(xs, e.range);
}

std::optional<ExprNode> SettingContext::distribution(const ast::Expr& e, Binder& binder) {
  const std::string& f = e.name.text;
  Value v;
  v.kind = Kind::Dist;
  v.range = e.range;
  auto a = number(binder, *e.args[0].value, "the lower end");
  if (!a) return std::nullopt;
  v.dist.a = v.dist.b = *a;
  v.dist.eval_value = *a;
  if (f == "fixed") {
    v.dist.kind = plan::Distribution::Kind::Fixed;
    return push(std::move(v));
  }
  auto b = number(binder, *e.args[1].value, "the upper end");
  if (!b) return std::nullopt;
  if (*b < *a) return fail(e.range, fmt::format("'{}' needs lower <= upper, got {:g} > {:g}", f, *a, *b));
  if (f == "log_uniform" && *a <= 0) return fail(e.range, "'log_uniform' needs a positive lower end");
  v.dist.kind = f == "uniform" ? plan::Distribution::Kind::Uniform : plan::Distribution::Kind::LogUniform;
  v.dist.b = *b;
  v.dist.eval_value = 1.0;
  if (e.args.size() == 3) {
    auto c = number(binder, *e.args[2].value, "the evaluation value");
    if (!c) return std::nullopt;
    v.dist.eval_value = *c;
  }
  return push(std::move(v));
}

// min and max of numbers and non-empty lists of numbers, any number of them
// (NaN-propagating, as the table's min and max).
std::optional<ExprNode> SettingContext::extremum(const ast::Expr& e, Binder& binder) {
  const std::string& f = e.name.text;
  if (e.args.empty()) return fail(e.range, fmt::format("'{}' needs at least one argument", f));
  std::vector<double> xs;
  for (const ast::Arg& a : e.args) {
    auto n = binder.bind(*a.value);
    if (!n) return std::nullopt;
    const Value& v = value(*n);
    if (v.kind == Kind::Number) {
      xs.push_back(v.number);
    } else if (v.kind == Kind::List && !v.elements.empty()) {
      for (const Value& x : v.elements) {
        if (x.kind != Kind::Number) return fail(a.value->range, fmt::format("'{}' needs numbers", f));
        xs.push_back(x.number);
      }
    } else {
      return fail(a.value->range, fmt::format("'{}' needs numbers or non-empty lists of numbers, not {}", f, v.describe()));
    }
  }
  double r = xs[0];
  for (double x : xs) r = f == "min" ? expr::minimum(r, x) : expr::maximum(r, x);
  return push(Value::makeNumber(r, e.range));
}

}  // namespace

std::optional<Value> evaluate(const ast::Expr& e, const Env& env, DiagnosticEngine& diags) {
  SettingContext context(env, diags);
  Binder binder(context, diags);
  std::optional<ExprNode> node = binder.bind(e);
  if (!node) return std::nullopt;
  return context.value(*node);
}

}  // namespace posc::sema
