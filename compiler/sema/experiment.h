// From a loaded program to one ExperimentPlan: the bind stage's assembly of
// one experiment. compileExperiment (experiment.cpp) is the list of its
// stages, each a function that owns its checks:
//   chooseExperiment       the one asked for, else the main file's last;
//   extendsChain           root first; an unknown base or a cycle is an error;
//   applySections          each experiment's sections on the chain, root first,
//                          over the defaults of plan.h (settings override;
//                          `attention { }` replaces the inherited attention
//                          items, `attention += { }` appends to them);
//   applyPreset            the preset, as each experiment on the chain declares
//                          it, root first (a variant refines its base's preset);
//   applyCommandLine       `--set section.name=value` in order, then the probe
//                          calls of `posc probe --probe CALL`;
//   checkSettingsTogether  derived defaults (mlp_hidden = 4 x width unless
//                          set), checks across settings, memory, precision;
//   expandAttention        the attention items with the final model;
//   buildHandsetModel      hand-set weights, where the experiment writes them;
//   buildProbes            the probe calls (sema/probes.h);
//   resolveWarmStart       init_from and the warm-start file.
// A stage that reports an error ends the list.
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
