// Parameter counts of a hand-set model, one number per stated rule.
//
// How many parameters a hand-written transformer "has" is a matter of rule,
// and the 10-digit-adder study reports several side by side; so does posc:
//   dense       every entry of every weight tensor that was written
//   nonzero     entries that are not zero (zeros are not parameters)
//   no_identity nonzero, without tensors that only route dimensions: all
//               their non-zero entries are exactly 1, at most one per row and
//               per column (an identity, or an identity with rows or columns
//               left out)
//   unique      the leaderboard's tying rule (a tied value counts once, fixed
//               positional encodings not at all) applied to the non-zero
//               entries: every value written as one shared name counts once
//               however often it is used. (The leaderboard counts the entries
//               of its models' parameter tensors; zeros written by omission
//               are not parameters here, as in the study.)
// ALiBi slopes are a fixed positional encoding and count under no rule; they
// are reported on their own. Free of LibTorch, like the rest of the plan.
#pragma once

#include <string>
#include <vector>

#include "compiler/plan/plan.h"

namespace posc::plan {

struct TensorCount {
  std::string name;
  long long dense = 0, nonzero = 0;
  bool identity = false;  // routes dimensions only (see above)
  long long tied = 0;     // non-zero entries written as a shared name
};

struct ParameterCounts {
  long long dense = 0;
  long long nonzero = 0;
  long long no_identity = 0;
  long long unique = 0;
  long long alibi_slopes = 0;  // non-zero slopes, not counted
  std::vector<TensorCount> tensors;
};

// True when every non-zero entry is exactly 1 and no row or column holds two.
bool routesOnly(const WeightTensor& t);

ParameterCounts countParameters(const HandsetModel& model);

// The table printed by `posc params` and `posc run`: one line per rule, then
// one line per written tensor.
std::string renderParameterCounts(const ParameterCounts& counts);

}  // namespace posc::plan
