// Lowering of .pos expressions into kernel programs over the distance d.
//
// `posc repl` and `posc analyze` both read kernels written in the .pos
// expression syntax (`20*cos(2*pi*d/6) + 5*cos(2*pi*d/40 + 0.3)`). This
// turns an ast::Expr into an analysis::KernelProgram, folding constants,
// inlining calls of kernels defined earlier, and reporting anything that is
// not a number of d as a located diagnostic.
//
// Names: the kernel's parameter (the distance), constants and kernels
// defined earlier, pi and e. Operators and functions: those of the
// expression language (compiler/expr/ops.def), and the analytic controls
// similarity(omega, d, s) = cos(omega d / s), separation(omega, s),
// recent_mass(m, h, L), margin(p, N) and probability(margin, N) (the last
// four with constant arguments).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostics.h"
#include "runtime/analysis/kernel.h"

namespace posc::repl {

// A name defined in a session or an analysis: a constant (`w = 2*pi/6`) or a
// kernel of one distance parameter (`k(d) = cos(w*d)`).
struct Definition {
  std::string name;
  std::string parameter;  // empty: a constant
  analysis::KernelProgram program;  // for a constant: a constant kernel
  std::string source;     // the defining text, for :list
  bool isKernel() const { return !parameter.empty(); }
  double constant() const { return program.constantValue(); }
};

using Definitions = std::map<std::string, Definition>;

// Lowers `e` with `parameter` (may be empty) as the distance. Returns the
// program (its last node is the result) or nullopt after reporting errors.
std::optional<analysis::KernelProgram> lowerKernel(const ast::Expr& e, const std::string& parameter,
                                                   const Definitions& defs, DiagnosticEngine& diags);

// Lowers and requires a value that does not depend on any distance.
std::optional<double> lowerConstant(const ast::Expr& e, const Definitions& defs, DiagnosticEngine& diags);

// The names a kernel expression may use, for "did you mean" suggestions.
std::vector<std::string> knownNames(const Definitions& defs, const std::string& parameter);

}  // namespace posc::repl
