// `posc run` for a hand-set model: nothing to train; count the parameters by
// every rule, evaluate by the plan's protocol and write a results folder:
//
//   <out>/plan.txt        the resolved plan, every non-zero weight included
//   <out>/source.pos      the experiment's source text
//   <out>/parameters.txt  the parameter counts, rule by rule and tensor by tensor
//   <out>/failures.csv    a,b,expected,got for every failed case (header only if none)
//   <out>/summary.md      accuracy and parameter counts
//
// Every file is written atomically (runtime/results/atomic_file).
#pragma once

#include "compiler/plan/plan.h"
#include "runtime/run/run_experiment.h"

namespace posc::handset {

// Returns 0 on success. Throws runtime::UserError for an unwritable folder.
int runHandset(const plan::ExperimentPlan& plan, const runtime::RunOptions& options);

}  // namespace posc::handset
