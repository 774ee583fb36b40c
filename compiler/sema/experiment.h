// From a loaded program to one ExperimentPlan.
//
// The order in which an experiment's configuration is assembled:
//   1. defaults (plan.h);
//   2. the sections of each experiment on the `extends` chain, root first
//      (settings override; `attention { }` replaces the inherited attention
//      items, `attention += { }` appends to them);
//   3. the chosen preset, as declared by each experiment on the chain, root
//      first (so a variant can refine its base's preset);
//   4. command-line overrides (`--set section.name=value`), in order, then
//      probe calls given on the command line (`posc probe --probe CALL`);
//   5. derived defaults (mlp_hidden = 4 x width unless set), cross-setting
//      checks, then the attention items are expanded with the final model.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/diag/diagnostics.h"
#include "compiler/plan/plan.h"
#include "compiler/sema/program.h"

namespace posc::sema {

struct Override {
  std::string key;    // "train.steps"
  std::string value;  // source text of an expression: "100", "[0, 1]"
};

struct ExperimentRequest {
  std::optional<std::string> experiment;  // default: the last one in the main file
  std::optional<std::string> preset;
  std::vector<Override> overrides;
  // Probe calls given on the command line (`posc probe --probe 'reach(lengths
  // = [300, 500])'`), as source text. Each is checked like a line of a probes
  // section, after every declared one, so it replaces the declared probe of
  // its kind (or adds one to a plan that declares none).
  std::vector<std::string> probe_calls;
  // The plan runs on this machine's CPU (not `--device cuda`): checks of the
  // CPU's abilities apply (bf16_mixed without native bf16 is warned about).
  bool on_cpu = true;
};

std::optional<plan::ExperimentPlan> compileExperiment(const Program& program, const ExperimentRequest& request,
                                                      SourceManager& sources, DiagnosticEngine& diags);

}  // namespace posc::sema
