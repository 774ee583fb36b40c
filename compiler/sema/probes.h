// The probes section: `probes { reach(lengths = [10, 20, 40], threshold = 0.9) ... }`.
//
// Each item is a call naming a probe kind with keyword arguments. Probes are
// measurements on trained checkpoints (see plan::ProbePlan); this stage checks
// names, types and ranges, fills in defaults that depend on the task (the
// training length, the test lengths), and checks the settings against the
// model (a layer or head that does not exist, an answer place outside the
// problem) with located diagnostics.
//
// Sections on the extends chain and in presets are applied in order; a later
// declaration of the same probe kind replaces the earlier one, so a preset
// can shrink a probe's grid.
#pragma once

#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostics.h"
#include "compiler/plan/plan.h"

namespace posc::sema {

// The probe kinds and their arguments, one line each, for `posc help probes`.
std::string describeProbeArguments();

// Builds plan.probes from the probes items (in application order) once the
// rest of the plan (task, model) is final. Reports errors and skips bad items.
void buildProbes(const std::vector<const ast::Item*>& items, plan::ExperimentPlan& plan, DiagnosticEngine& diags);

}  // namespace posc::sema
