// The resolved plan as JSON: every field of ExperimentPlan, defaults
// included, under the names plan.h gives them (enums by their names, score
// formulas as their node lists with op names, and their text). Every run
// writes it as plan.json beside plan.txt (which stays the text for people);
// posc's own readers of a results folder (report, compare, probe) read it,
// and so can any script. planFromJson is its exact inverse: a plan read back
// dumps (dumpPlan) as the plan written.
#pragma once

#include <string>

#include "compiler/plan/plan.h"

namespace posc::plan {

// "format": "posc-plan", "version": 1, then the plan's sections.
inline constexpr int kPlanJsonVersion = 1;
std::string planJson(const ExperimentPlan& plan);

// Throws std::runtime_error naming what is wrong (not JSON, another format,
// a newer version, a field of the wrong type).
ExperimentPlan planFromJson(const std::string& text);

}  // namespace posc::plan
