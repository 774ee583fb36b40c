// The front end, stage by stage. A newcomer reads the compiler from here;
// the runtime's stages are runSeeds in runtime/run/run_experiment.cpp.
//
//   source   compiler/source   the file's bytes: UTF-8, NUL and size checks
//   parse    compiler/parse    ANTLR4 tree -> ast (with depth limits), imports
//   bind     compiler/sema     names, types, components expanded, settings
//                              checked; score formulas through the one binder
//                              of expressions (sema/expression.h); its own
//                              stages are the list of calls in
//                              sema::compileExperiment (sema/experiment.h)
//   plan     compiler/plan     the typed, LibTorch-free ExperimentPlan
#include "compiler/driver/compile.h"

#include <fmt/format.h>

namespace posc::driver {

// source, parse: the main file and every import.
bool Compilation::load(const CompileRequest& request) {
  program = sema::loadProgram(request.path, request.stdlib_dirs, sources, diags,
                              request.text ? &*request.text : nullptr);
  return program.has_value() && !diags.hasErrors();
}

// source, parse, then bind and plan one experiment.
bool Compilation::compile(const CompileRequest& request) {
  if (!load(request)) return false;                                             // source, parse
  plan = sema::compileExperiment(*program, request.experiment, sources, diags);  // bind, plan
  return plan.has_value() && !diags.hasErrors();
}

bool Compilation::checkAll(const CompileRequest& request) {
  if (!load(request)) return false;
  bool ok = true;
  for (const ast::Experiment& e : program->main().file.experiments) {
    sema::ExperimentRequest r = request.experiment;
    r.experiment = e.name.text;
    auto p = sema::compileExperiment(*program, r, sources, diags);
    ok = ok && p.has_value();
    if (p) plans.push_back(*p);
    if (p) plan = std::move(p);
  }
  return ok && !diags.hasErrors();
}

uint64_t fnv1a(std::string_view text, uint64_t h) {
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string stableHash(std::string_view text) { return fmt::format("{:016x}", fnv1a(text)); }

PlanHashes hashPlan(const plan::ExperimentPlan& plan, std::string_view placement) {
  return {stableHash(plan::dumpIdentity(plan) + std::string(placement)),
          stableHash(plan::dumpTrainingIdentity(plan) + std::string(placement))};
}

std::string Compilation::sourceHash() const {
  uint64_t h = kHashSeed;
  for (size_t i = 0; i < sources.size(); ++i) h = fnv1a(sources.file(static_cast<int32_t>(i)).text(), h);
  return fmt::format("{:016x}", h);
}

std::string Compilation::planWithProvenance(const std::string& version, const std::string& machine) const {
  std::string out = fmt::format("# posc {}\n# source {}\n# source hash {}\n", version,
                                plan ? plan->source_path : "", sourceHash());
  if (!machine.empty()) out += fmt::format("# numerics {}\n", machine);
  if (plan) out += plan::dumpPlan(*plan);
  return out;
}

}  // namespace posc::driver
