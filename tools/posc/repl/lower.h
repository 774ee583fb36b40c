// The REPL's kernels: the kernel binder (compiler/sema/kernel.h) with the
// analytic controls of runtime/analysis as functions of constant arguments:
// separation(omega, s), recent_mass(m, h, L), margin(p, N) and
// probability(margin, N).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostics.h"
#include "compiler/sema/kernel.h"
#include "runtime/analysis/kernel.h"

namespace posc::repl {

using Definition = sema::KernelDefinition;
using Definitions = sema::KernelDefinitions;

// Binds `e` with `parameter` (may be empty) as the distance; nullopt after
// reporting errors.
std::optional<analysis::KernelProgram> lowerKernel(const ast::Expr& e, const std::string& parameter,
                                                   const Definitions& defs, DiagnosticEngine& diags);

// Binds and requires a value that does not depend on any distance.
std::optional<double> lowerConstant(const ast::Expr& e, const Definitions& defs, DiagnosticEngine& diags);

// The names a kernel expression may use, for "did you mean" suggestions.
std::vector<std::string> knownNames(const Definitions& defs, const std::string& parameter);

}  // namespace posc::repl
