// The normalisation layers of the model: LayerNorm and RMSNorm, used before
// attention and the feed-forward block, at the end of the stack, and (qk_norm)
// on each query and key head.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "compiler/plan/plan.h"

namespace posc::model {

// LayerNorm: (x - mean) / sqrt(var + eps) * weight + bias.
// RMSNorm:   x * rsqrt(mean(x^2) + eps) * weight (no bias).
// Both over the last dimension, eps = 1e-5; weight starts at 1, bias at 0.
// Without `bias`, LayerNorm has none either.
class NormImpl : public torch::nn::Module {
 public:
  NormImpl(plan::NormKind kind, int64_t width, bool bias = true);
  torch::Tensor forward(const torch::Tensor& x);

  torch::Tensor weight, bias;  // bias only for LayerNorm with biases

 private:
  plan::NormKind kind_;
  int64_t width_;
};
TORCH_MODULE(Norm);

}  // namespace posc::model
