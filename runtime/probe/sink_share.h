// Sink share: how much of a query's attention lands on separator keys ('+'
// and '='), the improvised attention sink of the addition models.
#pragma once

#include <torch/types.h>

namespace posc::probe {

// weights (B, H, Lq, Lk) of the last Lq tokens; kind channel of the keys
// (B, Lk). Returns (B, H, Lq): the attention mass on separator keys.
torch::Tensor separatorShare(const torch::Tensor& weights, const torch::Tensor& key_kinds);

}  // namespace posc::probe
