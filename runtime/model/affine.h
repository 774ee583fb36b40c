// An affine layer's product as one operation.
//
// torch::nn::Linear's C++ forward multiplies a 3-D input and then adds the
// bias in a second pass (and a third in the backward pass, to sum the bias's
// gradient); ATen's own linear folds a contiguous (B, L, W) input into one
// matrix and adds the bias inside the product (addmm), as PyTorch's Python
// nn.Linear does. Every affine layer of the model goes through this.
#pragma once

#include <torch/nn/modules/linear.h>
#include <torch/types.h>

namespace posc::model {

inline torch::Tensor affine(const torch::nn::Linear& layer, const torch::Tensor& x) {
  return at::linear(x, layer->weight, layer->bias);
}

}  // namespace posc::model
