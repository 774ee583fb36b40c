// `analysis NAME { ... }` blocks of a .pos file: kernels over distance and the
// analytic controls, computed into CSV, Markdown and SVG artefacts.
//
//   analysis controls {
//     rotation(omega = 1, scales = [1, 2, 4, 8], max_distance = 40)
//     recent_mass(h = 16, slopes = [0, 0.01, 0.05, 0.1, 0.25], lengths = [16, 64, 256, 1024, 4096])
//     checks()
//   }
//   analysis toy {
//     k = 20*cos(2*pi*d/6) + 5*cos(2*pi*d/40 + 0.3)    // a kernel of the distance d
//     aliases(k, over = -200..200, fraction = 0.9)
//   }
//
// Everything is checked and computed before anything is returned, so the
// CLI writes either every artefact or, after an error, none.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostics.h"

namespace posc::repl {

struct Artefact {
  std::string file;  // a file name inside the analysis's output folder
  std::string content;
};

struct AnalysisResult {
  std::string name;
  std::vector<Artefact> artefacts;
  std::string summary;  // Markdown: every table, with the settings that made it
};

// Runs the file's analyses (only the one named `only`, when not empty).
// Returns nullopt after reporting errors into `diags`.
std::optional<std::vector<AnalysisResult>> runAnalyses(const ast::File& file, const std::string& only,
                                                       DiagnosticEngine& diags);

// The calls an analysis block accepts, with their arguments (for docs and help).
std::string analysisCallsHelp();

}  // namespace posc::repl
