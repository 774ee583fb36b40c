// The pieces of one pre-norm transformer block: the norm (LayerNorm or
// RMSNorm), the feed-forward block (GELU, ReGLU or SwiGLU) and the block
// itself (x + attn(norm(x)), then x + mlp(norm(x))).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "compiler/plan/plan.h"
#include "runtime/model/attention.h"
#include "runtime/model/norm.h"

namespace posc::model {

// GELU: fc2(gelu(fc1(x))), fc1: width -> hidden.
// ReGLU / SwiGLU: fc1: width -> 2*hidden split into (a, b);
// fc2(relu(a) * b) / fc2(silu(a) * b). `bias`: whether fc1 and fc2 have one.
class MlpImpl : public torch::nn::Module {
 public:
  MlpImpl(plan::MlpKind kind, int64_t width, int64_t hidden, bool bias = true);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Linear fc1{nullptr}, fc2{nullptr};

 private:
  plan::MlpKind kind_;
};
TORCH_MODULE(Mlp);

class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const plan::ModelPlan& model, const plan::AttentionPlan& attention);
  torch::Tensor forward(const torch::Tensor& x, const AttentionInputs& in);

  Norm norm1{nullptr}, norm2{nullptr};
  Attention attn{nullptr};
  Mlp mlp{nullptr};

 private:
  double dropout_;
};
TORCH_MODULE(Block);

}  // namespace posc::model
