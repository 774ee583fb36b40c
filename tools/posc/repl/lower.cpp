// The REPL's kernels: the kernel binder with the analytic controls (lower.h).
#include "tools/posc/repl/lower.h"

#include "runtime/analysis/controls.h"

namespace posc::repl {

namespace {

const sema::ConstantFunctions& controls() {
  static const sema::ConstantFunctions c = {
      {"separation", {2, [](const double* a) { return analysis::neighbourSeparation(a[0], a[1]); }, "separation(omega, s)"}},
      {"recent_mass", {3, [](const double* a) { return analysis::recentMass(a[0], a[1], a[2]); }, "recent_mass(m, h, L)"}},
      {"margin", {2, [](const double* a) { return analysis::marginFor(a[0], a[1]); }, "margin(p, N)"}},
      {"probability", {2, [](const double* a) { return analysis::targetProbability(a[0], a[1]); }, "probability(margin, N)"}},
  };
  return c;
}

}  // namespace

std::vector<std::string> knownNames(const Definitions& defs, const std::string& parameter) {
  return sema::kernelNames(defs, parameter);
}

std::optional<analysis::KernelProgram> lowerKernel(const ast::Expr& e, const std::string& parameter,
                                                   const Definitions& defs, DiagnosticEngine& diags) {
  return sema::bindKernel(e, parameter, {defs, controls()}, diags);
}

std::optional<double> lowerConstant(const ast::Expr& e, const Definitions& defs, DiagnosticEngine& diags) {
  return sema::bindConstant(e, {defs, controls()}, diags);
}

}  // namespace posc::repl
