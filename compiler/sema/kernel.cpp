// Kernels of distance as a context of the one binder: see kernel.h.
#include "compiler/sema/kernel.h"

#include <fmt/format.h>

#include <numbers>

#include "compiler/sema/expression.h"

namespace posc::sema {

namespace {

using formula::KernelProgram;
using formula::NodeId;

class KernelContext final : public ExpressionContext {
 public:
  KernelContext(const std::string& parameter, const KernelScope& scope, DiagnosticEngine& diags)
      : parameter_(parameter), scope_(scope), diags_(diags) {}

  KernelProgram out;

  std::string what() const override { return "kernel"; }
  ExprNode constant(double v, SourceRange) override { return out.constant(v); }
  std::optional<double> constantOf(ExprNode n) const override {
    if (!out.isConstant(n)) return std::nullopt;
    return out.value(n);
  }
  std::optional<ExprNode> operation(SourceRange, expr::Op op, ExprNode a, ExprNode b, ExprNode c) override {
    switch (expr::arity(op)) {
      case 1: return out.unary(op, a);
      case 2: return out.binary(op, a, b);
      default: return out.ternary(op, a, b, c);
    }
  }

  std::optional<ExprNode> member(const ast::Expr& e, Binder&) override {
    return fail(e.range, "channels (q.column, k.column) are not available here",
                "write the kernel as a function of the distance: k(d) = ...");
  }

  std::optional<ExprNode> name(const ast::Expr& e, Binder&) override {
    const std::string& n = e.name.text;
    if (!parameter_.empty() && n == parameter_) return out.distance();
    if (n == "pi") return out.constant(std::numbers::pi);
    if (n == "e") return out.constant(std::numbers::e);
    if (auto it = scope_.defs.find(n); it != scope_.defs.end()) {
      if (!it->second.isKernel()) return out.constant(it->second.constant());
      return fail(e.range, fmt::format("'{}' is a kernel; call it with a distance", n),
                  fmt::format("for example {}({})", n, parameter_.empty() ? "0" : parameter_));
    }
    Diagnostic& d = diags_.error(e.range, fmt::format("unknown name '{}'", n));
    suggest(d, n, kernelNames(scope_.defs, parameter_));
    if (parameter_.empty() && n == "d") d.hint = "d is only a distance inside a kernel definition: k(d) = ...";
    else d.hint = "define it first: a constant with `name = value`, a kernel with `name(d) = ...`";
    return std::nullopt;
  }

  // Kernels defined earlier (inlined), similarity(omega, d, s) and the
  // caller's functions of constant arguments; the table's functions are the
  // binder's.
  Handled call(const ast::Expr& e, Binder& binder) override {
    const std::string& f = e.name.text;
    if (auto it = scope_.defs.find(f); it != scope_.defs.end()) {
      if (!it->second.isKernel()) return {true, fail(e.name.range, fmt::format("'{}' is a constant, not a kernel", f))};
      auto args = binder.arguments(e, 1);
      if (!args) return {true, std::nullopt};
      return {true, out.inlineProgram(it->second.program, (*args)[0])};
    }
    if (f == "similarity") {  // cos(omega d / s)
      auto args = binder.arguments(e, 3);
      if (!args) return {true, std::nullopt};
      const auto& a = *args;
      return {true, out.unary(expr::Op::Cos, out.binary(expr::Op::Div, out.binary(expr::Op::Mul, a[0], a[1]), a[2]))};
    }
    if (auto it = scope_.functions.find(f); it != scope_.functions.end()) {
      const ConstantFunction& fn = it->second;
      auto args = binder.arguments(e, fn.arity);
      if (!args) return {true, std::nullopt};
      std::vector<double> values;  // one per argument: fn reads `arity` of them
      for (size_t i = 0; i < args->size(); ++i) {
        if (!out.isConstant((*args)[i]))
          return {true, fail(e.args[i].value->range, fmt::format("{} needs constant arguments", fn.signature))};
        values.push_back(out.value((*args)[i]));
      }
      try {
        return {true, out.constant(fn.fn(values.data()))};
      } catch (const std::exception& x) {
        return {true, fail(e.range, fmt::format("{}: {}", fn.signature, x.what()))};
      }
    }
    return {};
  }

  std::vector<std::string> extraFunctions() const override {
    std::vector<std::string> names = kernelNames(scope_.defs, parameter_);
    for (const auto& [n, _] : scope_.functions) names.push_back(n);
    names.push_back("similarity");
    return names;
  }

 private:
  std::optional<ExprNode> fail(SourceRange r, std::string message, std::string hint = {}) {
    Diagnostic& d = diags_.error(r, std::move(message));
    d.hint = std::move(hint);
    return std::nullopt;
  }

  const std::string& parameter_;
  const KernelScope& scope_;
  DiagnosticEngine& diags_;
};

}  // namespace

std::vector<std::string> kernelNames(const KernelDefinitions& defs, const std::string& parameter) {
  std::vector<std::string> names = {"pi", "e"};
  if (!parameter.empty()) names.push_back(parameter);
  for (const auto& [n, _] : defs) names.push_back(n);
  return names;
}

std::optional<KernelProgram> bindKernel(const ast::Expr& e, const std::string& parameter, const KernelScope& scope,
                                        DiagnosticEngine& diags) {
  KernelContext context(parameter, scope, diags);
  Binder binder(context, diags);
  std::optional<NodeId> result = binder.bind(e);
  if (!result) return std::nullopt;
  context.out.root = *result;  // not always the last node built (`+x`, a shared subexpression)
  return std::move(context.out);
}

std::optional<double> bindConstant(const ast::Expr& e, const KernelScope& scope, DiagnosticEngine& diags) {
  std::optional<KernelProgram> p = bindKernel(e, "", scope, diags);
  if (!p) return std::nullopt;
  return p->constantValue();  // without a parameter every node folds
}

}  // namespace posc::sema
