// Score formulas as kernels over distance, for `posc repl`'s :load.
//
// A score term rewrites a head's raw score s as a function of the query's and
// the key's channels: decay gives s * exp(-rate[h] |q.column - k.column|),
// ALiBi s - slope[h] |q.position - k.position|. Fixing s, the head and the
// parameters (at their initial values), and putting the query at distance d
// from the key on every channel (q.c = d, k.c = 0), turns an attention's
// chain of terms into a kernel over d that the REPL can sweep, plot and
// compare. Kind exemptions are left out (both tokens are taken to be
// ordinary digits); the description says which terms had them.
//
// The chain comes from an experiment in a .pos file, or from one component
// of the stdlib used with chosen arguments, compiled by the ordinary front
// end (so its errors are the usual located diagnostics).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/plan/plan.h"
#include "runtime/analysis/kernel.h"

namespace posc::repl {

struct ScoreKernel {
  analysis::KernelProgram program;
  std::vector<std::string> lines;  // one per term: its name and formula with the values used
};

// The chain of `attention`'s score terms for `head`, applied to the score s,
// with every channel difference q.c - k.c equal to the distance d. Terms
// whose `heads` exclude `head` are skipped.
ScoreKernel scoreKernel(const plan::AttentionPlan& attention, int head, double s);

// What :load compiles.
struct ScoreSource {
  std::string file;        // a .pos file, or empty for a component
  std::string experiment;  // in `file`; empty: its last experiment
  std::string component;   // a stdlib component, e.g. "decay"
  std::string arguments;   // its arguments as .pos text, e.g. "rates = [0.1, 0.02]"
  int heads = 6;           // the model's heads when compiling a component
};

// Compiles `source` into its attention plan. On errors returns nullopt and
// sets `errors` to the rendered diagnostics.
std::optional<plan::ExperimentPlan> compileScoreSource(const ScoreSource& source, std::string& errors,
                                                       bool color = false);

}  // namespace posc::repl
