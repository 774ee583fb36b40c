// The plan a results folder was run with, for the readers of finished runs
// (posc report, posc compare): plan.json (compiler/plan/plan_json.h), which
// every run writes.
//
// Folders written before plan.json existed (posc before December 2026) have
// only plan.txt; for them the fields the readers use (the experiment, its
// preset, the longest training operand or prompt, the published figures) are
// read from its lines, and every other field keeps its default.
#pragma once

#include <filesystem>

#include "compiler/plan/plan.h"

namespace posc::results {

// Throws std::runtime_error when the folder has neither file, or the one it
// has is damaged (naming the file).
plan::ExperimentPlan readRunPlan(const std::filesystem::path& dir);

// The run's name in comparisons: "experiment" or "experiment-preset".
std::string runVariant(const plan::ExperimentPlan& plan);

}  // namespace posc::results
