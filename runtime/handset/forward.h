// The forward pass of a hand-set model, in float64, on plain vectors.
//
// Tokens in, logits out, for every position (the standard causal forward a
// decoding loop calls). Per layer: the residual is zero-extended to the
// layer's width; attention (q = Wq x + bq, likewise k and v; score
// q.k / sqrt(head_dim) - slope * (query pos - key pos); causal; softmax or
// softmax1), its output projected back and added; then a ReGLU feed-forward,
// down(relu(gate x + bg) * (up x + bu)) + bd, added. Absent tensors are zeros.
// No normalisation. Deliberately free of LibTorch: a hand-set model has no
// gradients to take, and plain loops keep every operation visible and the
// arithmetic exactly float64.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/plan/plan.h"

namespace posc::handset {

class Forward {
 public:
  Forward(const plan::HandsetModel& model, plan::SoftmaxKind softmax);

  // Logits, row-major (tokens.size() x vocab). Throws std::out_of_range for
  // a token outside the vocabulary.
  std::vector<double> logits(const std::vector<int64_t>& tokens) const;
  int vocab() const { return model_.vocab; }

 private:
  const plan::HandsetModel& model_;
  plan::SoftmaxKind softmax_;
};

}  // namespace posc::handset
