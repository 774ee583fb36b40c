// The learning-rate schedule, in closed form so that any step's rate can be
// computed (and tested) without replaying training.
//
// Steps are numbered 0 .. steps-1 (the optimiser step being taken).
//   warm-up   step < warmup:  lr * (step + 1) / warmup
//             (linear; the first step already moves, the last warm-up step
//             reaches lr exactly)
//   decay     p = (step - warmup) / (steps - 1 - warmup), clamped to [0, 1]
//             (p = 1 when there is no room to decay), min = lr * min_lr_ratio
//               Cosine:   min + (lr - min) * (1 + cos(pi p)) / 2
//               Linear:   lr - (lr - min) * p
//               Constant: lr
// So the final step of a decaying schedule runs at exactly lr * min_lr_ratio.
#pragma once

#include "compiler/plan/plan.h"

namespace posc::train {

double learningRateAt(const plan::TrainPlan& train, int step);

}  // namespace posc::train
