// Evaluating a hand-set model: a generic greedy decoding loop over a
// tokens-in, logits-out forward, and the two protocols of plan::EvalProtocol.
//
// The loop knows nothing about the model: it calls the forward on the whole
// sequence so far, takes the argmax of the last position's logits over the
// whole vocabulary, appends it and repeats (no cache, no constrained
// vocabulary), which is how the 10-digit leaderboard decodes its entries.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/handset/forward.h"
#include "runtime/task/addition.h"

namespace posc::handset {

// Logits (sequence length x vocab, row-major) for a token sequence.
using LogitsFn = std::function<std::vector<double>(const std::vector<int64_t>&)>;

// Appends `steps` greedy tokens to `prompt` and returns them.
std::vector<int64_t> greedyTokens(const LogitsFn& forward, int vocab, std::vector<int64_t> prompt, int steps);

struct FailedCase {
  std::string a, b, expected, got;  // got: the emitted tokens, rendered
};

struct ProtocolResult {
  std::string protocol;  // "adderboard" or "lengths"
  long long correct = 0, total = 0;
  std::vector<FailedCase> failures;  // every failure, in evaluation order
  double percent() const { return total == 0 ? 0.0 : 100.0 * static_cast<double>(correct) / static_cast<double>(total); }
};

// The leaderboard's 10,010 cases: the prompt is <bos>? a + b = with both
// operands zero-padded to 10 digits; exactly 11 answer tokens are decoded and
// must be the zero-padded sum.
ProtocolResult evaluateAdderBoard(const LogitsFn& forward, const plan::TaskPlan& task);

// task.test_digits x task.problems_per_length; decoding stops at <eos> or
// after Tokenizer::maxAnswerTokens; exact match as in eval/greedy.
ProtocolResult evaluateLengths(const LogitsFn& forward, const plan::TaskPlan& task);

}  // namespace posc::handset
