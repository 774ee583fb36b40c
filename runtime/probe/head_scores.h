// The kernel view of one head: the score of a fixed query on a fixed key as a
// function of the key's column, and the split of a score into rotation-pair
// bands.
//
// Both start from the raw (unrotated) query and key vectors of one layer,
// recorded by the model's AttentionTrace, and re-apply every positional
// component of the plan: rotations by every channel (with the key's column
// replaced), key zeroing, the 1/sqrt(head_dim) scale and the score terms with
// the model's parameters. Everything is computed in float64, so a hand-set
// head gives its analytic values exactly.
#pragma once

#include <torch/types.h>

#include <array>
#include <string>
#include <vector>

#include "compiler/plan/plan.h"

namespace posc::probe {

using Channels = std::array<int64_t, plan::kChannelCount>;

// One query and one key of a layer: raw vectors of every head (H, head_dim).
struct QueryKey {
  torch::Tensor q, k;
  Channels q_channels{}, k_channels{};
};

// The channels of a query held fixed and of its key moved to each column in
// `key_columns` along its row: its position shifts by the same amount (so
// position-driven rotations see the move too), its row and kind stay.
// q and k: (kChannelCount, N) integers.
struct KeySweep {
  torch::Tensor q, k;
};
KeySweep keySweep(const Channels& query, const Channels& key, const std::vector<int64_t>& key_columns);

// Post-term score of `head` for the key moved to each column in `key_columns`
// along its row: its position shifts by the same amount (so position-driven
// rotations see the move too), its row and kind stay. params: the model's
// score parameters.
std::vector<double> sweepKeyColumn(const plan::ExperimentPlan& plan, const std::vector<torch::Tensor>& params,
                                   const QueryKey& qk, int head, const std::vector<int64_t>& key_columns);

// The score of `head` split by rotation pair: pair contributions of the rotated
// dot product (after key zeroing, divided by sqrt(head_dim)) grouped into
// bands, plus what the score terms add. The bands sum to `total` exactly.
struct BandSplit {
  double fast = 0, mid = 0, slow = 0;  // pairs rotated by a channel other than row, by period
  double row = 0;                      // pairs rotated by the row channel
  double unrotated = 0;                // pairs no rotation turns
  double terms = 0;                    // post-term score minus the dot product
  double total = 0;                    // the post-term score
};
BandSplit splitBands(const plan::ExperimentPlan& plan, const std::vector<torch::Tensor>& params, const QueryKey& qk,
                     int head, double fast_period, double slow_period);

// Period (in units of its channel) of every pair of `head`, and the channel
// that turns it; period 0 for a pair no rotation turns.
struct PairInfo {
  double period = 0;
  plan::Channel channel = plan::Channel::Position;
  bool rotated = false;
};
std::vector<PairInfo> pairInfo(const plan::ExperimentPlan& plan, int head);

// Highest value of `scores` (indexed like `offsets`) in each window
// [w0, w0 + width) of offsets, windows aligned at multiples of `width`,
// skipping offset 0 (the target). Returns (window start, max) pairs.
std::vector<std::pair<int64_t, double>> windowMaxima(const std::vector<int64_t>& offsets,
                                                     const std::vector<double>& scores, int width);

}  // namespace posc::probe
