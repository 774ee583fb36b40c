// AdamW with each parameter's update in one pass over its memory, and
// gradient-norm clipping folded into that pass.
//
// torch::optim::AdamW updates a parameter with about eight tensor operations
// (decay, two moment updates, a square root, a division, an addition of eps,
// the update itself), each a full pass over the parameter, its gradient or a
// moment; clip_grad_norm_ adds a norm and a multiplication per gradient. For
// the study's 10.6M parameters that is about 8% of a CPU step, and for the
// quick start's small tensors it is mostly dispatch. Here the same update is
// one loop per parameter (spread over LibTorch's threads for large ones): the
// formulas of torch::optim::AdamW, element by element, in the parameter's
// dtype with the step's constants computed in double as it does.
//
// It is a torch::optim::AdamW: same options, same state objects under the
// same keys, so checkpoints, resume files and anything that reads the state
// are unchanged. Parameters that are not dense CPU float32/float64 tensors
// (CUDA runs), or AMSGrad, take AdamW's own step.
#pragma once

#include <torch/optim/adamw.h>

namespace posc::train {

class FusedAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;

  // The L2 norm of all gradients together, as clip_grad_norm_ measures it
  // (accumulated in double).
  double gradNorm() const;

  // One step with every gradient multiplied by `grad_scale` on the way in
  // (the fused path leaves the stored gradients as they are; AdamW's own
  // step, the fallback, scales them in place as clip_grad_norm_ does). clip_grad_norm_(max)
  // followed by step() is stepScaled(min(1, max / (gradNorm() + 1e-6))).
  void stepScaled(double grad_scale);

  torch::Tensor step(LossClosure closure = nullptr) override;

  // false: Adam without bias correction, p -= lr m / (sqrt(v) + eps) with
  // the raw moments (MLX's AdamW default; train.bias_correction). Parameters
  // the fused loop cannot take (or AMSGrad) then update through tensor
  // operations with the same formulas, not through AdamW's own step.
  void setBiasCorrection(bool on) { bias_correction_ = on; }

 private:
  bool fusable() const;
  // p's state, created (step 0, zero moments) on its first step.
  torch::optim::AdamWParamState& stateOf(const torch::Tensor& p);
  void stepUncorrectedTensors(double grad_scale);

  bool bias_correction_ = true;
};

// clip_grad_norm_(params, max_norm) then step(), fused: returns the norm.
double clipAndStep(FusedAdamW& optimizer, double max_norm);

}  // namespace posc::train
