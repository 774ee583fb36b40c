// Shared by the kernel and band probes: run problems teacher-forced with an
// attention trace, find the head that does the lookup of a decision, and take
// out one query and key of a layer.
#pragma once

#include <vector>

#include "compiler/plan/plan.h"
#include "runtime/model/gpt.h"
#include "runtime/probe/head_scores.h"
#include "runtime/probe/problems.h"

namespace posc::probe {

struct Traced {
  ForcedBatch batch;
  model::AttentionTrace trace;  // on the CPU, float64
};
// `sampled`: the plan's randomised channels (forcedBatch).
Traced traceProblems(model::Gpt& model, const task::Tokenizer& tokenizer, const std::vector<task::Problem>& problems,
                     const std::vector<plan::ChannelSampling>& sampled = {});

// The (layer, head) with the highest mean attention, at the decision for
// `place`, on the digit of row `operand` in that column. Declared values in
// `choice` (>= 0) are kept.
plan::HeadChoice lookupHead(const Traced& t, int place, int operand, plan::HeadChoice choice);

// Query at token `q` and key at token `k` of problem `b` in `layer`.
QueryKey queryKey(const Traced& t, int layer, int b, int q, int k);

}  // namespace posc::probe
