// Evaluating a trained model on the long-context document protocol.
//
// The protocol (runtime/longctx/protocol.h) grades whatever answers; here the
// answerer is the model's greedy decoder with a KV cache: the prompts of a
// batch are grouped by length, each group is read in one prefill pass, then
// answer tokens are emitted one at a time (argmax, fed back with the channels
// of runtime/longctx/sequence.h) until every row has emitted <eos> or
// longctx::kMaxAnswerTokens tokens. Prefill and generation are timed
// separately (each ends when its tokens are on the host, so a GPU's
// asynchronous work is counted where it happens), and the largest cache a
// group held is reported as its peak cache memory.
#pragma once

#include <vector>

#include "compiler/plan/plan.h"
#include "runtime/eval/greedy.h"
#include "runtime/longctx/protocol.h"
#include "runtime/model/gpt.h"

namespace posc::eval {

// The greedy answerer over `model` (eval mode while it answers; the training
// flag is restored after every call). Precision as in `options`.
longctx::Answerer greedyAnswerer(model::Gpt& model, const DecodeOptions& options);

// The protocol's factors as the plan declares them (eval.documents, the
// training length for the regression set, task.test_seed). With
// `regression_only`, only the lengths at or below the longest training one.
longctx::Factors protocolFactors(const plan::ExperimentPlan& plan, bool regression_only = false);

// Runs the plan's protocol on the model; `on_cell` (may be empty) sees each
// cell as it finishes.
std::vector<longctx::CellResult> evaluateDocuments(model::Gpt& model, const plan::ExperimentPlan& plan,
                                                   bool regression_only = false,
                                                   std::function<void(const longctx::CellResult&)> on_cell = {});

}  // namespace posc::eval
