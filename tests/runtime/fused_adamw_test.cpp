// FusedAdamW (runtime/train/fused_adamw.h) against torch::optim::AdamW and
// clip_grad_norm_: the same parameters after several steps with a changing
// learning rate, two groups (with and without weight decay), clipping active
// and inactive, float64 and float32; and its state saved and loaded by
// torch::optim::AdamW (and back), so resume files are unchanged.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <sstream>

#include "runtime/train/fused_adamw.h"

namespace posc::train {
namespace {

struct Params {
  std::vector<torch::Tensor> matrices, vectors;
  std::vector<torch::Tensor> all() const {
    auto a = matrices;
    a.insert(a.end(), vectors.begin(), vectors.end());
    return a;
  }
};

// A matrix large enough to be split across threads, a small one, a vector, a scalar.
Params makeParams(torch::ScalarType dtype) {
  torch::manual_seed(1);
  auto o = torch::dtype(dtype);
  Params p;
  p.matrices = {torch::randn({300, 400}, o).requires_grad_(true), torch::randn({7, 5}, o).requires_grad_(true)};
  p.vectors = {torch::randn({13}, o).requires_grad_(true), torch::randn({}, o).requires_grad_(true)};
  return p;
}

template <typename Opt>
std::unique_ptr<Opt> makeOptimizer(const Params& p, bool amsgrad = false) {
  auto options = [&](double wd) {
    return torch::optim::AdamWOptions(1e-2).betas({0.9, 0.95}).eps(1e-8).weight_decay(wd).amsgrad(amsgrad);
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(p.matrices, std::make_unique<torch::optim::AdamWOptions>(options(0.1)));
  groups.emplace_back(p.vectors, std::make_unique<torch::optim::AdamWOptions>(options(0.0)));
  return std::make_unique<Opt>(std::move(groups), options(0.1));
}

void setGradients(const Params& p, int step) {
  torch::manual_seed(100 + step);
  for (auto t : p.all()) t.mutable_grad() = torch::randn_like(t) * (step % 2 ? 0.05 : 3.0);
}

void setLr(torch::optim::Optimizer& opt, double lr) {
  for (auto& g : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
}

void expectClose(const Params& a, const Params& b, double tol) {
  auto x = a.all(), y = b.all();
  for (size_t i = 0; i < x.size(); ++i) {
    const double scale = std::max(1.0, y[i].abs().max().item<double>());
    EXPECT_LT((x[i] - y[i]).abs().max().item<double>(), tol * scale) << "parameter " << i;
  }
}

void compare(torch::ScalarType dtype, double clip, double tol, bool amsgrad = false) {
  Params ref = makeParams(dtype), fused = makeParams(dtype);
  auto torch_opt = makeOptimizer<torch::optim::AdamW>(ref, amsgrad);
  auto fused_opt = makeOptimizer<FusedAdamW>(fused, amsgrad);
  for (int step = 0; step < 6; ++step) {
    const double lr = 1e-2 * (1.0 - 0.1 * step);
    setLr(*torch_opt, lr);
    setLr(*fused_opt, lr);
    setGradients(ref, step);
    setGradients(fused, step);
    if (clip > 0) {
      const double expected = torch::nn::utils::clip_grad_norm_(ref.all(), clip);
      torch_opt->step();
      const double norm = clipAndStep(*fused_opt, clip);
      EXPECT_NEAR(norm, expected, 1e-5 * expected) << "step " << step;
    } else {
      torch_opt->step();
      fused_opt->step();
    }
  }
  expectClose(fused, ref, tol);
  // The parameters did move: the comparison is not between two untouched sets.
  EXPECT_GT((fused.matrices[0] - makeParams(dtype).matrices[0]).abs().max().item<double>(), 1e-3);
}

TEST(FusedAdamW, EqualsTorchAdamWF64) {
  compare(torch::kDouble, 0, 1e-12);
  compare(torch::kDouble, 1.0, 1e-12);  // 3.0-sized gradients: clipped every other step
}

TEST(FusedAdamW, EqualsTorchAdamWF32) {
  compare(torch::kFloat, 0, 1e-5);
  compare(torch::kFloat, 1.0, 1e-5);
}

TEST(FusedAdamW, AmsGradTakesAdamWsOwnStepWithTheSameClipping) {
  compare(torch::kDouble, 1.0, 1e-12, /*amsgrad=*/true);
}

TEST(FusedAdamW, GradNormIsTheNormOfAllGradients) {
  Params p = makeParams(torch::kDouble);
  setGradients(p, 0);
  auto opt = makeOptimizer<FusedAdamW>(p);
  double sum = 0;
  for (auto t : p.all()) sum += t.grad().pow(2).sum().item<double>();
  EXPECT_NEAR(opt->gradNorm(), std::sqrt(sum), 1e-9 * std::sqrt(sum));
  // Clipping scales what the step sees, not the stored gradients.
  auto before = p.matrices[0].grad().clone();
  clipAndStep(*opt, 1e-3);
  EXPECT_TRUE(torch::equal(p.matrices[0].grad(), before));
}

// State written by one optimiser and read by the other continues identically.
template <typename From, typename To>
void continueAfterLoad() {
  Params a = makeParams(torch::kDouble), b = makeParams(torch::kDouble);
  auto first = makeOptimizer<From>(a);
  for (int step = 0; step < 3; ++step) {
    setGradients(a, step);
    first->step();
  }
  torch::serialize::OutputArchive out;
  first->save(out);
  std::stringstream buffer;
  out.save_to(buffer);
  {
    torch::NoGradGuard g;
    auto x = a.all(), y = b.all();
    for (size_t i = 0; i < x.size(); ++i) y[i].copy_(x[i]);
  }
  auto second = makeOptimizer<To>(b);
  torch::serialize::InputArchive in;
  in.load_from(buffer);
  second->load(in);
  for (int step = 3; step < 5; ++step) {
    setGradients(a, step);
    setGradients(b, step);
    first->step();
    second->step();
  }
  expectClose(b, a, 1e-12);
}

TEST(FusedAdamW, StateRoundTripsThroughTorchAdamW) {
  continueAfterLoad<FusedAdamW, torch::optim::AdamW>();
  continueAfterLoad<torch::optim::AdamW, FusedAdamW>();
}

// Without bias correction (MLX's AdamW default, train.bias_correction =
// false), by hand: p = 1, g = 0.5, lr 0.1, decay 0.1, betas (0.9, 0.999),
// eps 1e-8. Step 1: p = 1 x (1 - 0.01) = 0.99; m = 0.05, v = 0.00025;
// p -= 0.1 x 0.05 / (0.0158114 + 1e-8) = 0.316228 -> 0.673772. Step 2, the
// same gradient: p = 0.673772 x 0.99 = 0.667035; m = 0.095, v = 0.00049975;
// p -= 0.1 x 0.095 / 0.0223551 = 0.424959 -> 0.242075. A contiguous CPU
// parameter takes the fused loop, a transposed one the tensor operations;
// both give these values.
TEST(FusedAdamW, WithoutBiasCorrectionMatchesTheFormula) {
  for (bool contiguous : {true, false}) {
    torch::Tensor p = contiguous ? torch::ones({3, 2}, torch::kDouble)
                                 : torch::ones({2, 3}, torch::kDouble).t();
    p.requires_grad_(true);
    ASSERT_EQ(p.is_contiguous(), contiguous);
    FusedAdamW opt({p}, torch::optim::AdamWOptions(0.1).betas({0.9, 0.999}).eps(1e-8).weight_decay(0.1));
    opt.setBiasCorrection(false);
    const double m1 = 0.05, v1 = 0.00025, m2 = 0.9 * m1 + 0.05, v2 = 0.999 * v1 + 0.001 * 0.25;
    const double p1 = 0.99 - 0.1 * m1 / (std::sqrt(v1) + 1e-8);
    const double p2 = p1 * 0.99 - 0.1 * m2 / (std::sqrt(v2) + 1e-8);
    EXPECT_NEAR(p1, 0.673772, 1e-6);
    EXPECT_NEAR(p2, 0.242075, 1e-6);
    for (double expected : {p1, p2}) {
      p.mutable_grad() = torch::full_like(p, 0.5);
      opt.step();
      EXPECT_NEAR(p.min().item<double>(), expected, 1e-14) << (contiguous ? "fused" : "tensor ops");
      EXPECT_NEAR(p.max().item<double>(), expected, 1e-14) << (contiguous ? "fused" : "tensor ops");
    }
  }
}

}  // namespace
}  // namespace posc::train
