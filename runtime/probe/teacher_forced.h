// Teacher-forced decisions: every answer decision of N problems scored on its
// own (the correct answer so far is fed in, so one error does not cause the
// next), with where the wrong ones sit, how the main lookup heads attend
// there, and whether carry chains matter.
//
// A decision is the model's argmax at the token before an answer token;
// "place" p (1-based) is the decision that emits answer token p (units = 1 in
// reversed order); the last decision of a problem, which should emit <eos>,
// is its stop decision. The main lookup heads are the (layer, head) pairs that
// put the most attention, over all digit decisions, on the operand digits in
// the decided place's column.
#pragma once

#include <torch/types.h>

#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "runtime/model/gpt.h"
#include "runtime/task/addition.h"

namespace posc::probe {

// logits (B, L, V) of tokens (B, L) with channels (C, B, L), filling `trace`.
using Forward = std::function<torch::Tensor(const torch::Tensor& tokens, const torch::Tensor& channels,
                                            model::AttentionTrace& trace)>;
// The Forward of a trained model: inputs moved to its device, no stretch.
// The model must outlive the returned function.
Forward modelForward(model::Gpt& model);

struct PlaceStats {
  int decisions = 0, wrong = 0;
  double separator_share = 0;  // mean over decisions and main lookup heads
};

struct TeacherForcedMap {
  std::vector<std::pair<int, int>> lookup_heads;  // (layer, head), strongest first
  std::vector<double> lookup_target_share;        // their mean attention on the target digits
  std::map<int, PlaceStats> by_place;             // digit decisions, by place
  std::map<int, std::pair<int, int>> by_chain;    // carry-chain length -> (decisions, wrong)
  int decisions = 0, wrong = 0;                   // digit and stop decisions
  int stop_decisions = 0, wrong_stops = 0;        // the <eos> decision
  int premature_stops = 0;                        // <eos> predicted at a digit decision
  std::map<int, int> first_wrong;                 // place of a problem's first wrong decision -> problems
};

// `batch` problems per forward pass.
// `sampled`: the plan's randomised channels (forcedBatch).
TeacherForcedMap teacherForcedMap(const Forward& forward, const task::Tokenizer& tokenizer,
                                  const std::vector<task::Problem>& problems, int lookup_heads, int batch = 25,
                                  const std::vector<plan::ChannelSampling>& sampled = {});

// Length of the carry chain into each answer place (index p - 1 for place p):
// how many consecutive lower places, from p - 1 down, carry out.
std::vector<int> carryChains(const task::Sequence& s, int operands, int digits_per_token);

}  // namespace posc::probe
