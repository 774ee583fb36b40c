// Greedy decoding and exact-match accuracy.
//
// A test problem is shown as its prompt (operands, separators, '='); the model
// then emits answer tokens one at a time, always taking the most likely token
// (argmax), until it emits <eos> or has emitted Tokenizer::maxAnswerTokens
// tokens. Each emitted token is fed back with the index channels it would
// have in a training sequence (Tokenizer::answerChannels; <eos> and other
// non-digit tokens get their own kind and column 0). A problem counts as
// correct iff the emitted tokens decode to a number equal to the true sum.
//
// Problems whose prompts have the same length are decoded together (all
// operands of one test length have the same number of digits, so a test set
// forms full batches). The fast decoder keeps a KV cache: one prefill pass
// over the prompts, then one single-token pass per answer token. The
// reference decoder recomputes a full forward pass for every token; it exists
// to check the cache (both must emit identical tokens).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/plan/plan.h"
#include "runtime/model/gpt.h"
#include "runtime/results/tables.h"
#include "runtime/task/addition.h"

namespace posc::eval {

using Generated = std::vector<int64_t>;  // answer tokens, up to and including <eos> if emitted

struct DecodeOptions {
  int batch = 90;                                 // problems decoded together
  plan::Precision precision = plan::Precision::F32;  // Bf16Mixed: forward under bf16 autocast
  // Randomised channels (plan::ChannelSampling): each problem's prompt and
  // emitted tokens read its evaluation labels (task::evaluationLabels).
  std::vector<plan::ChannelSampling> sampled_channels;
};
// The options a plan's evaluation uses: eval.batch, the precision, its
// randomised channels.
DecodeOptions decodeOptionsFor(const plan::ExperimentPlan& plan);

// Greedy answers for `problems` (same order), with the KV cache.
std::vector<Generated> greedyDecode(model::Gpt& model, const task::Tokenizer& tokenizer,
                                    const std::vector<task::Problem>& problems, const DecodeOptions& options);

// The same without the cache: a full forward pass per emitted token.
std::vector<Generated> greedyDecodeReference(model::Gpt& model, const task::Tokenizer& tokenizer,
                                             const std::vector<task::Problem>& problems,
                                             const DecodeOptions& options);

bool isCorrect(const task::Tokenizer& tokenizer, const task::Problem& problem, const Generated& generated);

// Exact-match accuracy at every test length of the plan (plan.task.test_digits,
// testProblems of each, batches of plan.eval.batch).
std::vector<results::LengthAccuracy> evaluateLengths(model::Gpt& model, const plan::ExperimentPlan& plan,
                                                     uint64_t seed);

}  // namespace posc::eval
