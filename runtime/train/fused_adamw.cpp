// The fused AdamW step: see fused_adamw.h. Per element, as torch::optim::AdamW
// computes it (lr, betas, eps and wd from the group's options; t the step):
//   g  = grad * grad_scale
//   p  = p * (1 - lr * wd)
//   m  = beta1 * m + (1 - beta1) * g
//   v  = beta2 * v + (1 - beta2) * g * g
//   p  = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// and without bias correction (setBiasCorrection(false)) the last line is
//   p  = p - lr * m / (sqrt(v) + eps)
#include "runtime/train/fused_adamw.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <cmath>
#include <sstream>
#include <string>
#include <type_traits>

namespace posc::train {

namespace {

bool denseCpuFloat(const torch::Tensor& t) {
  return t.device().is_cpu() && t.is_contiguous() && !t.is_sparse() &&
         (t.scalar_type() == torch::kFloat || t.scalar_type() == torch::kDouble);
}

constexpr int64_t kGrain = 1 << 15;  // elements per thread task: small tensors stay on one thread

// The loops below are compiled for AVX-512, AVX2 and the baseline (GCC's
// target_clones; the loader picks one per CPU), with the square root and the
// division vectorised (this file is built with -fno-math-errno -fopenmp-simd,
// runtime/CMakeLists.txt): scalar, they made the step compute-bound.
template <typename T>
inline __attribute__((always_inline)) void updateRange(T* __restrict p, const T* __restrict g, T* __restrict m,
                                                       T* __restrict v, int64_t n, T decay, T beta1, T beta2,
                                                       T scale, T step_size, T inv_sqrt_bc2, T eps) {
  const T one_minus_beta1 = T(1) - beta1, one_minus_beta2 = T(1) - beta2;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const T gi = g[i] * scale;
    const T pi = p[i] * decay;
    const T mi = m[i] * beta1 + one_minus_beta1 * gi;
    const T vi = v[i] * beta2 + one_minus_beta2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] = pi - step_size * mi / (std::sqrt(vi) * inv_sqrt_bc2 + eps);
  }
}

template <typename T>
inline __attribute__((always_inline)) double squaresRange(const T* __restrict g, int64_t n) {
  double acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(g[i]) * static_cast<double>(g[i]);
  return acc;
}

#define POSC_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
POSC_CLONES void updateChunk(float* p, const float* g, float* m, float* v, int64_t n, float decay, float beta1,
                             float beta2, float scale, float step_size, float inv_sqrt_bc2, float eps) {
  updateRange(p, g, m, v, n, decay, beta1, beta2, scale, step_size, inv_sqrt_bc2, eps);
}
POSC_CLONES void updateChunk(double* p, const double* g, double* m, double* v, int64_t n, double decay,
                             double beta1, double beta2, double scale, double step_size, double inv_sqrt_bc2,
                             double eps) {
  updateRange(p, g, m, v, n, decay, beta1, beta2, scale, step_size, inv_sqrt_bc2, eps);
}
POSC_CLONES double squaresChunk(const float* g, int64_t n) { return squaresRange(g, n); }
POSC_CLONES double squaresChunk(const double* g, int64_t n) { return squaresRange(g, n); }
#undef POSC_CLONES

template <typename T>
void update(T* p, const T* g, T* m, T* v, int64_t n, T decay, T beta1, T beta2, T scale, T step_size,
            T inv_sqrt_bc2, T eps) {
  at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
    updateChunk(p + begin, g + begin, m + begin, v + begin, end - begin, decay, beta1, beta2, scale, step_size,
                inv_sqrt_bc2, eps);
  });
}

template <typename T>
double sumOfSquares(const T* g, int64_t n) {
  return at::parallel_reduce(
      0, n, kGrain, 0.0,
      [&](int64_t begin, int64_t end, double acc) { return acc + squaresChunk(g + begin, end - begin); },
      [](double a, double b) { return a + b; });
}

// The optimiser keys a parameter's state by its TensorImpl: as the
// pointer's text in LibTorch 1.x (c10::guts::to_string, which streams it),
// as the pointer itself in 2.x. Either way AdamW::step() finds the state
// the fused step made, and the other way round.
template <typename StateMap, typename Tensor>
typename StateMap::key_type stateKey(const StateMap&, const Tensor& p) {
  if constexpr (std::is_same_v<typename StateMap::key_type, std::string>) {
    std::ostringstream text;
    text << static_cast<const void*>(p.unsafeGetTensorImpl());
    return text.str();
  } else {
    return p.unsafeGetTensorImpl();
  }
}

}  // namespace

bool FusedAdamW::fusable() const {
  for (const auto& group : param_groups()) {
    if (static_cast<const torch::optim::AdamWOptions&>(group.options()).amsgrad()) return false;
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      if (!denseCpuFloat(p) || !denseCpuFloat(p.grad()) || p.grad().scalar_type() != p.scalar_type()) return false;
      auto found = state_.find(stateKey(state_, p));
      if (found == state_.end()) continue;
      const auto& state = static_cast<const torch::optim::AdamWParamState&>(*found->second);
      for (const auto* moment : {&state.exp_avg(), &state.exp_avg_sq()})
        if (!denseCpuFloat(*moment) || moment->scalar_type() != p.scalar_type() || moment->numel() != p.numel())
          return false;
    }
  }
  return true;
}

double FusedAdamW::gradNorm() const {
  if (!fusable()) {
    std::vector<torch::Tensor> norms;
    for (const auto& group : param_groups())
      for (const auto& p : group.params())
        if (p.grad().defined()) norms.push_back(p.grad().norm(2).to(torch::kDouble).cpu());
    return norms.empty() ? 0.0 : torch::stack(norms).norm(2).item<double>();
  }
  double sum = 0;
  for (const auto& group : param_groups())
    for (const auto& p : group.params()) {
      const auto& g = p.grad();
      if (!g.defined()) continue;
      sum += g.scalar_type() == torch::kDouble ? sumOfSquares(g.data_ptr<double>(), g.numel())
                                               : sumOfSquares(g.data_ptr<float>(), g.numel());
    }
  return std::sqrt(sum);
}

torch::optim::AdamWParamState& FusedAdamW::stateOf(const torch::Tensor& p) {
  const auto key = stateKey(state_, p);
  auto found = state_.find(key);
  if (found == state_.end()) {
    auto fresh = std::make_unique<torch::optim::AdamWParamState>();
    fresh->step(0);
    fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    found = state_.emplace(key, std::move(fresh)).first;
  }
  return static_cast<torch::optim::AdamWParamState&>(*found->second);
}

void FusedAdamW::stepScaled(double grad_scale) {
  torch::NoGradGuard no_grad;
  if (!fusable()) {
    if (!bias_correction_) {
      stepUncorrectedTensors(grad_scale);
      return;
    }
    if (grad_scale != 1.0)
      for (auto& group : param_groups())
        for (auto& p : group.params())
          if (p.grad().defined()) p.mutable_grad().mul_(grad_scale);
    AdamW::step();
    return;
  }
  for (auto& group : param_groups()) {
    auto& options = static_cast<torch::optim::AdamWOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& state = stateOf(p);
      state.step(state.step() + 1);
      const double beta1 = std::get<0>(options.betas()), beta2 = std::get<1>(options.betas());
      const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(state.step()));
      const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(state.step()));
      const double decay = 1 - options.lr() * options.weight_decay();
      const double step_size = bias_correction_ ? options.lr() / bias_correction1 : options.lr();
      const double inv_sqrt_bc2 = bias_correction_ ? 1 / std::sqrt(bias_correction2) : 1.0;
      auto& m = state.exp_avg();
      auto& v = state.exp_avg_sq();
      const auto& g = p.grad();
      if (p.scalar_type() == torch::kDouble)
        update<double>(p.data_ptr<double>(), g.data_ptr<double>(), m.data_ptr<double>(), v.data_ptr<double>(),
                       p.numel(), decay, beta1, beta2, grad_scale, step_size, inv_sqrt_bc2, options.eps());
      else
        update<float>(p.data_ptr<float>(), g.data_ptr<float>(), m.data_ptr<float>(), v.data_ptr<float>(),
                      p.numel(), static_cast<float>(decay), static_cast<float>(beta1), static_cast<float>(beta2),
                      static_cast<float>(grad_scale), static_cast<float>(step_size),
                      static_cast<float>(inv_sqrt_bc2), static_cast<float>(options.eps()));
    }
  }
}

void FusedAdamW::stepUncorrectedTensors(double grad_scale) {
  for (auto& group : param_groups()) {
    auto& options = static_cast<torch::optim::AdamWOptions&>(group.options());
    const double beta1 = std::get<0>(options.betas()), beta2 = std::get<1>(options.betas());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& state = stateOf(p);
      state.step(state.step() + 1);
      const torch::Tensor g = p.grad() * grad_scale;
      p.mul_(1 - options.lr() * options.weight_decay());
      state.exp_avg().mul_(beta1).add_(g, 1 - beta1);
      state.exp_avg_sq().mul_(beta2).addcmul_(g, g, 1 - beta2);
      torch::Tensor v = state.exp_avg_sq();
      if (options.amsgrad()) {  // AMSGrad: the largest second moment so far, as AdamW keeps it
        if (!state.max_exp_avg_sq().defined()) state.max_exp_avg_sq(torch::zeros_like(v));
        torch::max_out(state.max_exp_avg_sq(), state.max_exp_avg_sq(), v);
        v = state.max_exp_avg_sq();
      }
      p.addcdiv_(state.exp_avg(), v.sqrt().add_(options.eps()), -options.lr());
    }
  }
}

torch::Tensor FusedAdamW::step(LossClosure closure) {
  torch::Tensor loss;
  if (closure) {
    torch::AutoGradMode enable_grad(true);
    loss = closure();
  }
  stepScaled(1.0);
  return loss;
}

double clipAndStep(FusedAdamW& optimizer, double max_norm) {
  const double norm = optimizer.gradNorm();
  optimizer.stepScaled(std::min(1.0, max_norm / (norm + 1e-6)));
  return norm;
}

}  // namespace posc::train
