// Stop attention: where each head looks when the model decides to stop.
//
// The stop decision is the teacher-forced decision at the last answer digit,
// whose correct output is <eos>. To take it, a model must see that nothing is
// left to add: no operand digit in the next column and no carry. The study's
// models do this with a sink: the decision's lookup finds no digit and its
// attention goes to the separators instead. This probe records, per layer
// and head, how the stop decision's attention splits over the keys:
//
//   separators    '+' and '='
//   operand near  operand digits within one column of the query's (the
//                 operands' last columns, where the next digit would be)
//   operand far   the other operand digits
//   answer        the answer digits written so far (the query itself too)
//   other         whatever is left: a null slot where the plan has one
//
// and the log-sum-exp of the head's scores over the separator keys and over
// every other visible key (the null slot's score 0 included). Their
// difference is the logit of the separator share. Comparing lengths splits a
// falling sink share into the separators' own score changing and the rest
// growing (more keys near score 0 after a decay: the sink diluted).
#pragma once

#include <torch/types.h>

#include <map>
#include <utility>
#include <vector>

#include "runtime/probe/teacher_forced.h"

namespace posc::probe {

struct StopHead {
  double separators = 0, operand_near = 0, operand_far = 0, answer = 0, other = 0;  // mean shares
  double separator_lse = 0;  // mean log-sum-exp of the scores on separator keys
  double rest_lse = 0;       // ... on every other key the query sees (and the null slot)
  // The far operand digits' share by column offset (key column - query column).
  std::map<int, double> far_by_offset;
};

struct StopMap {
  int decisions = 0;               // stop decisions (one per problem)
  int right = 0;                   // of them, argmax is <eos>
  double eos_probability = 0;      // mean P(<eos>) at the stop decision
  double keys = 0;                 // mean number of keys the stop decision sees
  std::map<std::pair<int, int>, StopHead> heads;  // (layer, head) -> means over the stop decisions
};

// `batch` problems per forward pass; `null_slot`: the plan's attention has a
// null slot (its score 0 joins the rest's log-sum-exp).
// `sampled`: the plan's randomised channels (forcedBatch).
StopMap stopAttention(const Forward& forward, const task::Tokenizer& tokenizer,
                      const std::vector<task::Problem>& problems, bool null_slot, int batch = 25,
                      const std::vector<plan::ChannelSampling>& sampled = {});

}  // namespace posc::probe
