// Closed-form learning-rate schedule; see schedule.h for the formulas.
#include "runtime/train/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace posc::train {

double learningRateAt(const plan::TrainPlan& train, int step) {
  const double lr = train.lr;
  if (train.warmup > 0 && step < train.warmup)
    return lr * static_cast<double>(step + 1) / static_cast<double>(train.warmup);
  if (train.schedule == plan::Schedule::Constant) return lr;
  const double min_lr = lr * train.min_lr_ratio;
  const int span = train.steps - 1 - std::max(train.warmup, 0);
  double p = span > 0 ? static_cast<double>(step - std::max(train.warmup, 0)) / span : 1.0;
  p = std::clamp(p, 0.0, 1.0);
  switch (train.schedule) {
    case plan::Schedule::Cosine: return min_lr + (lr - min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * p));
    case plan::Schedule::Linear: return lr - (lr - min_lr) * p;
    case plan::Schedule::Constant: break;
  }
  return lr;
}

}  // namespace posc::train
