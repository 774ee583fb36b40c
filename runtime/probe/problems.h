// The problems a probe runs on, and teacher-forced batches of them.
//
// A probe's problems depend only on its declared seed and the length (the
// test-set generator with the probe's seed), so two runs of a probe on the
// same checkpoints see the same problems.
#pragma once

#include <torch/types.h>

#include <vector>

#include "compiler/plan/plan.h"
#include "runtime/task/addition.h"

namespace posc::probe {

std::vector<task::Problem> probeProblems(const plan::TaskPlan& task, uint64_t seed, int digits, int count);

// Teacher-forced input of `problems`: tokens (B, L), channels (C, B, L), on the CPU.
// With randomised channels (plan::ChannelSampling) the channels tensor, which
// the model reads, holds each problem's evaluation labels
// (task::evaluationLabels); `sequences` keep the ordered values that the
// probes use to find digits and places.
struct ForcedBatch {
  torch::Tensor tokens, channels;
  std::vector<task::Sequence> sequences;
};
ForcedBatch forcedBatch(const task::Tokenizer& tokenizer, const std::vector<task::Problem>& problems,
                        const std::vector<plan::ChannelSampling>& sampled = {});

// Index of the token whose output is answer token `place` (1-based: place 1 is
// the first answer token, predicted at '='), and of the digit token of row
// `row` whose column is `column`; -1 when there is none.
int decisionIndex(const task::Sequence& s, int place);
int digitIndex(const task::Sequence& s, int row, int column);

}  // namespace posc::probe
