// The compile-time expression evaluator and its built-in functions.
#include "compiler/sema/evaluate.h"

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <set>

#include "compiler/expr/ops.h"

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

struct Evaluator {
  const Env& env;
  DiagnosticEngine& diags;

  std::optional<Value> fail(SourceRange r, std::string msg) {
    diags.error(r, std::move(msg));
    return std::nullopt;
  }

  std::optional<double> number(const ast::Expr& e, const char* what) {
    auto v = eval(e);
    if (!v) return std::nullopt;
    if (v->kind != Kind::Number) {
      diags.error(e.range, fmt::format("{} must be a number, not {}", what, v->describe()));
      return std::nullopt;
    }
    return v->number;
  }

  std::optional<int> heads(SourceRange r) {
    const Value* h = env.find("heads");
    if (h == nullptr || h->kind != Kind::Number) {
      diags.error(r, "the head count is only known inside an attention section; give the count explicitly");
      return std::nullopt;
    }
    return static_cast<int>(h->number);
  }

  std::optional<Value> list(const std::vector<double>& xs, SourceRange r) {
    Value v;
    v.kind = Kind::List;
    v.range = r;
    for (double x : xs) v.elements.push_back(Value::makeNumber(x, r));
    return v;
  }

  std::optional<Value> call(const ast::Expr& e) {
    const std::string& f = e.name.text;
    for (const ast::Arg& a : e.args)
      if (!a.name.text.empty())
        return fail(a.name.range, fmt::format("built-in function '{}' takes positional arguments only", f));
    auto arity = [&](size_t lo, size_t hi) -> bool {
      if (e.args.size() >= lo && e.args.size() <= hi) return true;
      diags.error(e.range, lo == hi ? fmt::format("'{}' takes {} argument{}, {} given", f, lo, lo == 1 ? "" : "s", e.args.size())
                                    : fmt::format("'{}' takes {} to {} arguments, {} given", f, lo, hi, e.args.size()));
      return false;
    };
    auto arg = [&](size_t i, const char* what) { return number(*e.args[i].value, what); };

    if (f == "linspace" || f == "geomspace") {
      if (!arity(2, 3)) return std::nullopt;
      auto a = arg(0, "the start"), b = arg(1, "the end");
      // The count: the third argument, or the head count.
      int count = 0;
      if (e.args.size() == 3) {
        std::optional<double> c = arg(2, "the count");
        if (!c) return std::nullopt;
        count = static_cast<int>(*c);
      } else {
        std::optional<int> h = heads(e.range);
        if (!h) return std::nullopt;
        count = *h;
      }
      if (!a || !b) return std::nullopt;
      if (count < 1) return fail(e.range, fmt::format("'{}' needs a count of at least 1", f));
      if (f == "geomspace" && (*a <= 0 || *b <= 0))
        return fail(e.range, "'geomspace' needs positive end points");
      std::vector<double> xs;
      for (int i = 0; i < count; ++i) {
        double t = count == 1 ? 0.0 : static_cast<double>(i) / (count - 1);
        xs.push_back(f == "linspace" ? *a + (*b - *a) * t : *a * std::pow(*b / *a, t));
      }
      return list(xs, e.range);
    }
    if (f == "alibi_slopes") {
      if (!arity(0, 1)) return std::nullopt;
      std::optional<int> n;
      if (e.args.empty()) n = heads(e.range);
      else if (auto c = arg(0, "the head count")) n = static_cast<int>(*c);
      if (!n) return std::nullopt;
      return list(alibiSlopes(*n), e.range);
    }
    if (f == "uniform" || f == "log_uniform" || f == "fixed") {
      if (f == "fixed" ? !arity(1, 1) : !arity(2, 3)) return std::nullopt;
      Value v;
      v.kind = Kind::Dist;
      v.range = e.range;
      auto a = arg(0, "the lower end");
      if (!a) return std::nullopt;
      v.dist.a = v.dist.b = *a;
      v.dist.eval_value = *a;
      if (f == "fixed") {
        v.dist.kind = plan::Distribution::Kind::Fixed;
        return v;
      }
      auto b = arg(1, "the upper end");
      if (!b) return std::nullopt;
      if (*b < *a) return fail(e.range, fmt::format("'{}' needs lower <= upper, got {:g} > {:g}", f, *a, *b));
      if (f == "log_uniform" && *a <= 0) return fail(e.range, "'log_uniform' needs a positive lower end");
      v.dist.kind = f == "uniform" ? plan::Distribution::Kind::Uniform : plan::Distribution::Kind::LogUniform;
      v.dist.b = *b;
      v.dist.eval_value = 1.0;
      if (e.args.size() == 3) {
        auto c = arg(2, "the evaluation value");
        if (!c) return std::nullopt;
        v.dist.eval_value = *c;
      }
      return v;
    }
    if (f == "range") {
      if (!arity(2, 2)) return std::nullopt;
      auto a = arg(0, "the start"), b = arg(1, "the end");
      if (!a || !b) return std::nullopt;
      Value v;
      v.kind = Kind::Range;
      v.lo = static_cast<long long>(*a);
      v.hi = static_cast<long long>(*b);
      v.range = e.range;
      return v;
    }
    if (f == "min" || f == "max") {
      if (e.args.empty()) return fail(e.range, fmt::format("'{}' needs at least one argument", f));
      std::vector<double> xs;
      for (const ast::Arg& a : e.args) {
        auto v = eval(*a.value);
        if (!v) return std::nullopt;
        if (v->kind == Kind::Number) xs.push_back(v->number);
        else if (v->kind == Kind::List && !v->elements.empty()) {
          for (const Value& x : v->elements) {
            if (x.kind != Kind::Number) return fail(a.value->range, fmt::format("'{}' needs numbers", f));
            xs.push_back(x.number);
          }
        } else {
          return fail(a.value->range, fmt::format("'{}' needs numbers or non-empty lists of numbers, not {}", f, v->describe()));
        }
      }
      double r = xs[0];
      for (double x : xs) r = f == "min" ? std::min(r, x) : std::max(r, x);
      return Value::makeNumber(r, e.range);
    }
    // The expression language's numeric functions (compiler/expr/ops.def),
    // on numbers; `where` needs a boolean condition: use c ? a : b.
    if (expr::Op op; expr::findFunction(f.c_str(), op) && op != expr::Op::Select) {
      const size_t n = static_cast<size_t>(expr::arity(op));
      if (!arity(n, n)) return std::nullopt;
      double x[3] = {0, 0, 0};
      for (size_t i = 0; i < n; ++i) {
        auto v = arg(i, "the argument");
        if (!v) return std::nullopt;
        x[i] = *v;
      }
      return finiteFrom(expr::fold(op, x[0], x[1], x[2]),
                        std::isfinite(x[0]) && std::isfinite(x[1]) && std::isfinite(x[2]), e.range);
    }
    Diagnostic& d = diags.error(e.name.range, fmt::format("unknown function '{}'", f));
    std::vector<std::string> names = {"linspace", "geomspace", "alibi_slopes", "uniform", "log_uniform",
                                      "fixed", "range"};
    for (const std::string& n : expr::functionNames())
      if (n != "where") names.push_back(n);
    suggest(d, f, names);
    return std::nullopt;
  }

  std::optional<Value> eval(const ast::Expr& e) {
    switch (e.kind) {
      case ast::Expr::Kind::Number: return Value::makeNumber(e.number, e.range);
      case ast::Expr::Kind::String: return Value::makeString(e.text, e.range);
      case ast::Expr::Kind::Name: {
        const std::string& n = e.name.text;
        if (const Value* v = env.find(n)) {
          // A bound value keeps the range where it was written (a component
          // argument points at the use site), so errors land on the user's text.
          Value copy = *v;
          if (!copy.range.valid()) copy.range = e.range;
          return copy;
        }
        if (n == "true" || n == "false") return Value::makeBool(n == "true", e.range);
        if (n == "pi") return Value::makeNumber(M_PI, e.range);
        if (n == "none") return Value::makeNone(e.range);
        return Value::makeSymbol(n, e.range);
      }
      case ast::Expr::Kind::List:
      case ast::Expr::Kind::Tuple: {
        Value v;
        v.kind = e.kind == ast::Expr::Kind::List ? Kind::List : Kind::Tuple;
        v.range = e.range;
        for (const ast::ExprPtr& x : e.elements) {
          auto xv = eval(*x);
          if (!xv) return std::nullopt;
          v.elements.push_back(std::move(*xv));
        }
        return v;
      }
      case ast::Expr::Kind::Range: {
        auto a = eval(*e.lhs), b = eval(*e.rhs);
        if (!a || !b) return std::nullopt;
        if (!a->isInteger()) return fail(e.lhs->range, fmt::format("a range needs integer ends, not {}", a->describe()));
        if (!b->isInteger()) return fail(e.rhs->range, fmt::format("a range needs integer ends, not {}", b->describe()));
        Value v;
        v.kind = Kind::Range;
        v.lo = static_cast<long long>(a->number);
        v.hi = static_cast<long long>(b->number);
        v.range = e.range;
        return v;
      }
      case ast::Expr::Kind::Unary: {
        auto a = eval(*e.lhs);
        if (!a) return std::nullopt;
        if (e.op == "!") {
          if (a->kind != Kind::Bool) return fail(e.range, fmt::format("'!' needs a boolean, not {}", a->describe()));
          return Value::makeBool(!a->boolean, e.range);
        }
        if (a->kind == Kind::List) {
          for (Value& x : a->elements) {
            if (x.kind != Kind::Number) return fail(e.range, "unary minus needs numbers");
            if (e.op == "-") x.number = -x.number;
          }
          a->range = e.range;
          return a;
        }
        if (a->kind != Kind::Number) return fail(e.range, fmt::format("'{}' needs a number, not {}", e.op, a->describe()));
        return Value::makeNumber(e.op == "-" ? -a->number : a->number, e.range);
      }
      case ast::Expr::Kind::Binary: return binary(e);
      case ast::Expr::Kind::Conditional: {
        auto c = eval(*e.elements[0]);
        if (!c) return std::nullopt;
        if (c->kind != Kind::Bool) return fail(e.elements[0]->range, fmt::format("a condition must be a boolean, not {}", c->describe()));
        return eval(*e.elements[c->boolean ? 1 : 2]);
      }
      case ast::Expr::Kind::Call: return call(e);
      case ast::Expr::Kind::Index: {
        auto base = eval(*e.lhs);
        auto idx = eval(*e.rhs);
        if (!base || !idx) return std::nullopt;
        if (base->kind != Kind::List && base->kind != Kind::Tuple)
          return fail(e.lhs->range, fmt::format("only lists can be indexed, not {}", base->describe()));
        if (!idx->isInteger() || idx->number < 0 || idx->number >= static_cast<double>(base->elements.size()))
          return fail(e.rhs->range, fmt::format("index {} is outside a list of {} values", idx->render(), base->elements.size()));
        return base->elements[static_cast<size_t>(idx->number)];
      }
      case ast::Expr::Kind::Member:
        return fail(e.range, "'q.' and 'k.' channels can only be read inside a score formula");
    }
    return std::nullopt;
  }

  // A number computed from finite operands must be finite: NaN or an
  // infinity in a setting (log(-1), 10^400) is an error at the operation.
  std::optional<Value> finite(double v, double x, double y, SourceRange r) {
    return finiteFrom(v, std::isfinite(x) && std::isfinite(y), r);
  }
  std::optional<Value> finiteFrom(double v, bool operands_finite, SourceRange r) {
    if (std::isfinite(v) || !operands_finite) return Value::makeNumber(v, r);
    Diagnostic& d = diags.error(r, fmt::format("this expression is {}",
                                               std::isnan(v) ? "NaN" : v > 0 ? "infinite" : "-infinite"));
    d.hint = "check the operands' signs and magnitudes";
    return std::nullopt;
  }

  std::optional<Value> binary(const ast::Expr& e) {
    auto a = eval(*e.lhs);
    auto b = eval(*e.rhs);
    if (!a || !b) return std::nullopt;
    const std::string& op = e.op;
    if (op == "&&" || op == "||") {
      if (a->kind != Kind::Bool || b->kind != Kind::Bool)
        return fail(e.range, fmt::format("'{}' needs booleans", op));
      return Value::makeBool(op == "&&" ? a->boolean && b->boolean : a->boolean || b->boolean, e.range);
    }
    if ((op == "==" || op == "!=") && a->kind == Kind::Symbol && b->kind == Kind::Symbol)
      return Value::makeBool((a->text == b->text) == (op == "=="), e.range);
    // Numbers, and lists of numbers elementwise with a number (`0.5 * slopes`).
    // + - * / % ^ as the expression language defines them (ops.def).
    std::function<std::optional<double>(double, double)> fn;
    if (expr::Op o; expr::findSymbol(op.c_str(), 2, o) && !expr::givesTruth(o))
      fn = [o](double x, double y) { return expr::fold(o, x, y); };
    if (!fn) {
      if (a->kind != Kind::Number || b->kind != Kind::Number)
        return fail(e.range, fmt::format("'{}' compares numbers, not {} and {}", op, a->describe(), b->describe()));
      double x = a->number, y = b->number;
      bool r = op == "<" ? x < y : op == "<=" ? x <= y : op == ">" ? x > y : op == ">=" ? x >= y : op == "==" ? x == y : x != y;
      return Value::makeBool(r, e.range);
    }
    if (op == "/" && b->kind == Kind::Number && b->number == 0) return fail(e.rhs->range, "division by zero");
    bool reported = false;  // by finite(): no second error
    auto apply = [&](const Value& x, const Value& y) -> std::optional<Value> {
      if (x.kind == Kind::Number && y.kind == Kind::Number) {
        auto v = finite(*fn(x.number, y.number), x.number, y.number, e.range);
        reported = !v;
        return v;
      }
      if (x.kind == Kind::List || y.kind == Kind::List) {
        const Value& l = x.kind == Kind::List ? x : y;
        const Value& s = x.kind == Kind::List ? y : x;
        if (s.kind != Kind::Number) return std::nullopt;
        Value out = l;
        out.range = e.range;
        for (Value& el : out.elements) {
          if (el.kind != Kind::Number) return std::nullopt;
          double v = x.kind == Kind::List ? *fn(el.number, s.number) : *fn(s.number, el.number);
          if (!finite(v, el.number, s.number, e.range)) {
            reported = true;
            return std::nullopt;
          }
          el.number = v;
        }
        return out;
      }
      return std::nullopt;
    };
    auto r = apply(*a, *b);
    if (!r && reported) return std::nullopt;
    if (!r) return fail(e.range, fmt::format("'{}' cannot combine {} and {}", op, a->describe(), b->describe()));
    return r;
  }
};

}  // namespace

std::optional<Value> evaluate(const ast::Expr& e, const Env& env, DiagnosticEngine& diags) {
  Evaluator ev{env, diags};
  return ev.eval(e);
}

}  // namespace posc::sema
