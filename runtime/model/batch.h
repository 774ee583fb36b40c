// A task batch (task::Batch, runtime/task/addition.h: plain vectors) as the
// tensors a model reads. Training, greedy evaluation and the probes all feed
// the model through this one conversion.
#pragma once

#include <torch/types.h>

#include <cstdint>

#include "runtime/task/addition.h"

namespace posc::model {

// tokens and targets (B, L) int64, loss_mask (B, L) bool, channels (C, B, L) int64.
struct BatchTensors {
  torch::Tensor tokens, targets, loss_mask, channels;
};
BatchTensors toTensors(const task::Batch& batch, torch::Device device);

// Rows [begin, begin + count) of every tensor (one rank's share of a batch).
BatchTensors sliceRows(const BatchTensors& batch, int64_t begin, int64_t count);

}  // namespace posc::model
