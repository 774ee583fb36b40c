// The compiler pipeline in one place:
//
//   load + parse (parse/, sema/program) -> AST
//   assemble the experiment (sema/experiment, settings, attention, formula)
//   -> plan::ExperimentPlan
//
// A Compilation owns the sources and diagnostics of one run, so the CLI can
// render every error with its source line after any stage.
#pragma once

#include <optional>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/diag/diagnostics.h"
#include "compiler/plan/plan.h"
#include "compiler/sema/experiment.h"
#include "compiler/sema/program.h"

namespace posc::driver {

struct CompileRequest {
  std::string path;
  std::optional<std::string> text;  // the main file's content instead of reading `path`
  sema::ExperimentRequest experiment;
  std::vector<std::string> stdlib_dirs = sema::defaultStdlibDirs();
};

// FNV-1a over `text`, continuing from `h` (so several texts hash as their
// concatenation), and as 16 hex digits: the stable hash of posc's provenance
// (source hash) and of a study's job plans.
inline constexpr uint64_t kHashSeed = 1469598103934665603ull;
uint64_t fnv1a(std::string_view text, uint64_t h = kHashSeed);
std::string stableHash(std::string_view text);

// A plan's two identities, each with `placement` (the text of where it runs:
// device, kernels) appended: the whole plan (plan::dumpIdentity) and what it
// trains (plan::dumpTrainingIdentity). A run and a study job are continued,
// skipped or evaluated again by these.
struct PlanHashes {
  std::string plan, training;
};
PlanHashes hashPlan(const plan::ExperimentPlan& plan, std::string_view placement);

class Compilation {
 public:
  Compilation() = default;
  Compilation(const Compilation&) = delete;
  Compilation& operator=(const Compilation&) = delete;

  SourceManager sources;
  DiagnosticEngine diags{sources};
  std::optional<sema::Program> program;
  std::optional<plan::ExperimentPlan> plan;
  std::vector<plan::ExperimentPlan> plans;  // checkAll: every experiment that compiled, in file order

  // Stage 1: the main file and its imports. False on errors.
  bool load(const CompileRequest& request);
  // Stages 1-2: load, then compile one experiment into a plan.
  bool compile(const CompileRequest& request);
  // Stage 1-2 for every experiment of the main file (posc check).
  bool checkAll(const CompileRequest& request);

  // A stable 64-bit hash (hex) of every source file read, for provenance.
  std::string sourceHash() const;
  // plan.txt: a provenance header (version, source, hash, and `machine`, a
  // line about the numeric libraries in use) and the plan dump.
  std::string planWithProvenance(const std::string& version, const std::string& machine = "") const;
};

}  // namespace posc::driver
