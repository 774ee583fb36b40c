// Lowering of expressions into kernel programs (see lower.h).
#include "tools/posc/repl/lower.h"

#include <fmt/format.h>

#include <cmath>
#include <numbers>

#include "runtime/analysis/controls.h"

namespace posc::repl {

using analysis::KernelProgram;
using analysis::NodeId;
using Op = analysis::KernelNode::Op;

namespace {

// Controls with constant arguments: name -> (arity, function).
struct Control {
  size_t arity;
  double (*fn)(const double*);
  const char* signature;
};

const std::map<std::string, Control>& controls() {
  static const std::map<std::string, Control> c = {
      {"separation", {2, [](const double* a) { return analysis::neighbourSeparation(a[0], a[1]); }, "separation(omega, s)"}},
      {"recent_mass", {3, [](const double* a) { return analysis::recentMass(a[0], a[1], a[2]); }, "recent_mass(m, h, L)"}},
      {"margin", {2, [](const double* a) { return analysis::marginFor(a[0], a[1]); }, "margin(p, N)"}},
      {"probability", {2, [](const double* a) { return analysis::targetProbability(a[0], a[1]); }, "probability(margin, N)"}},
  };
  return c;
}

struct Lowering {
  const std::string& parameter;
  const Definitions& defs;
  DiagnosticEngine& diags;
  KernelProgram out;

  std::optional<NodeId> fail(SourceRange r, std::string message, std::string hint = {}) {
    Diagnostic& d = diags.error(r, std::move(message));
    d.hint = std::move(hint);
    return std::nullopt;
  }

  std::optional<NodeId> lower(const ast::Expr& e) {
    using K = ast::Expr::Kind;
    switch (e.kind) {
      case K::Number: return out.constant(e.number);
      case K::Name: return name(e);
      case K::Unary: {
        auto a = lower(*e.lhs);
        if (!a) return std::nullopt;
        if (e.op == "+") return a;
        Op op;
        if (!expr::findSymbol(e.op.c_str(), 1, op))
          return fail(e.range, fmt::format("operator '{}' is not available in kernels", e.op));
        return out.unary(op, *a);
      }
      case K::Binary: {
        Op op;
        if (!expr::findSymbol(e.op.c_str(), 2, op))
          return fail(e.range, fmt::format("operator '{}' is not available in kernels", e.op),
                      "kernels use + - * / % ^, comparisons, && || ! and c ? a : b");
        auto a = lower(*e.lhs);
        auto b = lower(*e.rhs);
        if (!a || !b) return std::nullopt;
        return out.binary(op, *a, *b);
      }
      case K::Conditional: {
        auto c = lower(*e.elements[0]);
        auto a = lower(*e.elements[1]);
        auto b = lower(*e.elements[2]);
        if (!c || !a || !b) return std::nullopt;
        return out.select(*c, *a, *b);
      }
      case K::Call: return call(e);
      case K::String: return fail(e.range, "a kernel is a number, not text");
      case K::List: return fail(e.range, "a kernel is a number, not a list");
      case K::Tuple: return fail(e.range, "a kernel is a number, not a tuple");
      case K::Range: return fail(e.range, "a range is not a number", "ranges go in commands: :table k, -10..10");
      case K::Index: return fail(e.range, "indexing is not available in kernels");
      case K::Member: return fail(e.range, "channels (q.column, k.column) are not available here",
                                  "write the kernel as a function of the distance: k(d) = ...");
    }
    return fail(e.range, "unsupported expression");
  }

  std::optional<NodeId> name(const ast::Expr& e) {
    const std::string& n = e.name.text;
    if (!parameter.empty() && n == parameter) return out.distance();
    if (n == "pi") return out.constant(std::numbers::pi);
    if (n == "e") return out.constant(std::numbers::e);
    if (auto it = defs.find(n); it != defs.end()) {
      if (!it->second.isKernel()) return out.constant(it->second.constant());
      return fail(e.range, fmt::format("'{}' is a kernel; call it with a distance", n),
                  fmt::format("for example {}({})", n, parameter.empty() ? "0" : parameter));
    }
    Diagnostic& d = diags.error(e.range, fmt::format("unknown name '{}'", n));
    suggest(d, n, knownNames(defs, parameter));
    if (parameter.empty() && n == "d") d.hint = "d is only a distance inside a kernel definition: k(d) = ...";
    else d.hint = "define it first: a constant with `name = value`, a kernel with `name(d) = ...`";
    return std::nullopt;
  }

  std::optional<NodeId> call(const ast::Expr& e) {
    const std::string& f = e.name.text;
    for (const ast::Arg& a : e.args)
      if (!a.name.text.empty()) return fail(a.name.range, fmt::format("'{}' takes positional arguments only", f));
    auto arity = [&](size_t n) {
      if (e.args.size() == n) return true;
      diags.error(e.range, fmt::format("'{}' takes {} argument{}, {} given", f, n, n == 1 ? "" : "s", e.args.size()));
      return false;
    };
    std::vector<NodeId> args;
    auto lowerArgs = [&]() {
      bool ok = true;
      for (const ast::Arg& a : e.args) {
        auto v = lower(*a.value);
        if (!v) ok = false;
        else args.push_back(*v);
      }
      return ok;
    };
    if (auto it = defs.find(f); it != defs.end()) {
      if (!it->second.isKernel())
        return fail(e.name.range, fmt::format("'{}' is a constant, not a kernel", f));
      if (!arity(1) || !lowerArgs()) return std::nullopt;
      return out.inlineProgram(it->second.program, args[0]);
    }
    if (Op op; expr::findFunction(f.c_str(), op)) {
      const int n = expr::arity(op);
      if (!arity(static_cast<size_t>(n)) || !lowerArgs()) return std::nullopt;
      if (n == 1) return out.unary(op, args[0]);
      if (n == 2) return out.binary(op, args[0], args[1]);
      return out.ternary(op, args[0], args[1], args[2]);
    }
    if (f == "similarity") {  // cos(omega d / s)
      if (!arity(3) || !lowerArgs()) return std::nullopt;
      return out.unary(Op::Cos, out.binary(Op::Div, out.binary(Op::Mul, args[0], args[1]), args[2]));
    }
    if (auto it = controls().find(f); it != controls().end()) {
      if (!arity(it->second.arity) || !lowerArgs()) return std::nullopt;
      double values[3] = {0, 0, 0};
      for (size_t i = 0; i < args.size(); ++i) {
        if (!out.isConstant(args[i]))
          return fail(e.args[i].value->range, fmt::format("{} needs constant arguments", it->second.signature));
        values[i] = out.value(args[i]);
      }
      try {
        return out.constant(it->second.fn(values));
      } catch (const std::exception& x) {
        return fail(e.range, fmt::format("{}: {}", it->second.signature, x.what()));
      }
    }
    std::vector<std::string> candidates = knownNames(defs, parameter);
    for (const std::string& n : expr::functionNames()) candidates.push_back(n);
    for (const auto& [n, _] : controls()) candidates.push_back(n);
    candidates.push_back("similarity");
    Diagnostic& d = diags.error(e.name.range, fmt::format("unknown function '{}'", f));
    suggest(d, f, candidates);
    return std::nullopt;
  }
};

}  // namespace

std::vector<std::string> knownNames(const Definitions& defs, const std::string& parameter) {
  std::vector<std::string> names = {"pi", "e"};
  if (!parameter.empty()) names.push_back(parameter);
  for (const auto& [n, _] : defs) names.push_back(n);
  return names;
}

std::optional<KernelProgram> lowerKernel(const ast::Expr& e, const std::string& parameter, const Definitions& defs,
                                         DiagnosticEngine& diags) {
  Lowering l{parameter, defs, diags, {}};
  std::optional<NodeId> result = l.lower(e);
  if (!result) return std::nullopt;
  l.out.root = *result;  // not always the last node built (`+x`, a shared subexpression)
  return std::move(l.out);
}

std::optional<double> lowerConstant(const ast::Expr& e, const Definitions& defs, DiagnosticEngine& diags) {
  std::optional<KernelProgram> p = lowerKernel(e, "", defs, diags);
  if (!p) return std::nullopt;
  return p->constantValue();  // without a parameter every node folds
}

}  // namespace posc::repl
