// Kernels of distance: .pos expressions -> formula::KernelProgram.
//
// `posc repl` and `posc analyze` read kernels written in the .pos expression
// syntax (`20*cos(2*pi*d/6) + 5*cos(2*pi*d/40 + 0.3)`). This binds an
// ast::Expr through the one binder (expression.h) into a KernelProgram,
// folding constants, inlining calls of kernels defined earlier, and
// reporting anything that is not a number of d as a located diagnostic.
//
// Names: the kernel's parameter (the distance), constants and kernels
// defined earlier, pi and e. Operators and functions: those of the
// expression language (compiler/expr/ops.def), similarity(omega, d, s) =
// cos(omega d / s), and the caller's functions of constant arguments (the
// analytic controls of runtime/analysis, which the REPL passes in).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostics.h"
#include "compiler/formula/kernel_program.h"

namespace posc::sema {

// A name defined in a session or an analysis: a constant (`w = 2*pi/6`) or a
// kernel of one distance parameter (`k(d) = cos(w*d)`).
struct KernelDefinition {
  std::string name;
  std::string parameter;  // empty: a constant
  formula::KernelProgram program;  // for a constant: a constant kernel
  std::string source;     // the defining text, for :list
  bool isKernel() const { return !parameter.empty(); }
  double constant() const { return program.constantValue(); }
};

using KernelDefinitions = std::map<std::string, KernelDefinition>;

// A function of constant arguments the caller provides (an analytic
// control): `arity` numbers in, one out; it may throw std::exception with a
// message, reported at the call.
struct ConstantFunction {
  size_t arity;
  double (*fn)(const double*);
  const char* signature;  // "separation(omega, s)", for messages
};
using ConstantFunctions = std::map<std::string, ConstantFunction>;

// What a kernel may read besides the distance.
struct KernelScope {
  const KernelDefinitions& defs;
  const ConstantFunctions& functions;
};

// Binds `e` with `parameter` (may be empty) as the distance. Returns the
// program or nullopt after reporting errors.
std::optional<formula::KernelProgram> bindKernel(const ast::Expr& e, const std::string& parameter,
                                                 const KernelScope& scope, DiagnosticEngine& diags);

// Binds and requires a value that does not depend on any distance.
std::optional<double> bindConstant(const ast::Expr& e, const KernelScope& scope, DiagnosticEngine& diags);

// The names a kernel expression may use, for "did you mean" suggestions.
std::vector<std::string> kernelNames(const KernelDefinitions& defs, const std::string& parameter);

}  // namespace posc::sema
