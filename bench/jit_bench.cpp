// The score-formula JIT against the tensor-op lowering, both in the same run.
//
//   Attention/<side>/<pass>/B:H:L  decay (per-head rates, separator keys
//     exempt) + causal mask + softmax on f32 scores (B, H, L, L) with random
//     channels. <side> is "tensor" (applyScoreTerms + attentionWeights, one
//     LibTorch op per node) or "jit" (fusedAttentionWeights). <pass> is
//     "forward" (no autograd) or "fwd+bwd" (forward, then backward of
//     sum(weight * probs) into the scores and the learned rates).
//     Sizes: evaluation 90 x 6 x 600, training 64 x 6 x 40; fwd+bwd at
//     evaluation length uses B = 16 to keep the tensor side's memory modest.
//   Compile/new: generate, optimise and link the forward kernel for a
//     formula never seen before (a different constant each iteration), at
//     the quick tier: the wait before a new formula's first forward pass.
//     Compile/new-optimised: until the optimised tier, compiled on the JIT's
//     background thread, has replaced it. Compile/new+backward: the quick
//     forward, then the backward function (compiled on first use, which a
//     training run reaches after its first forward). Compile/cached: the
//     same request again (a cache hit).
//   CosineMap/<side>: k(d) = sum_{t=1..16} cos(0.1 t d) / t over 1e6
//     distances, the JIT's compiled map against the tree-walking interpreter
//     of the same IR; counter evals/s.
//
// Run: build/bench/jit_bench [--benchmark_filter=...]; one thread throughout
// unless a benchmark says otherwise.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <torch/torch.h>

#include <map>

#include "bench/decay_attention.h"
#include "compiler/formula/formula.h"
#include "compiler/jit/compiled.h"
#include "runtime/model/attention.h"
#include "runtime/model/fused_attention.h"
#include "runtime/model/score_formula.h"

namespace {

using namespace posc;

plan::AttentionPlan decayAttention(int heads, double scale = 1.0) {
  return bench::decayAttention(heads, /*learned=*/true, scale);
}

struct AttentionInputs {
  torch::Tensor scores, channels, weight;
  std::vector<torch::Tensor> params;
};

AttentionInputs makeInputs(int64_t B, int64_t H, int64_t L, const plan::AttentionPlan& a) {
  torch::manual_seed(0);
  AttentionInputs in;
  in.scores = torch::randn({B, H, L, L});
  in.channels = torch::zeros({plan::kChannelCount, B, L}, torch::kLong);
  in.channels[0] = torch::arange(L).expand({B, L});
  in.channels[1] = torch::randint(0, 12, {B, L});
  in.channels[2] = torch::randint(0, 3, {B, L});
  in.channels[3] = torch::randint(0, 3, {B, L});
  in.weight = torch::randn({B, H, L, L});
  in.params.push_back(torch::tensor(a.params[0].init, torch::kFloat).set_requires_grad(true));
  return in;
}

void Attention(benchmark::State& state, bool jit, bool backward) {
  torch::set_num_threads(1);
  const int64_t B = state.range(0), H = state.range(1), L = state.range(2);
  auto a = decayAttention(static_cast<int>(H));
  auto in = makeInputs(B, H, L, a);
  auto probs = [&](const torch::Tensor& s) {
    return jit ? model::fusedAttentionWeights(s, in.channels, in.channels, a,
                                              plan::SoftmaxKind::Standard, in.params)
               : model::attentionWeights(
                     model::applyScoreTerms(s, in.channels, in.channels, a, in.params),
                     plan::SoftmaxKind::Standard, false);
  };
  if (jit) {  // compile outside the timing: forward (both tiers) and, if timed, backward
    auto s = in.scores.narrow(2, 0, 1).narrow(3, 0, 1).detach().requires_grad_(backward);
    auto p = probs(s);
    if (backward) p.sum().backward();
    in.params[0].mutable_grad().reset();
    jit::finishBackgroundCompiles();
  }
  for (auto _ : state) {
    if (backward) {
      auto s = in.scores.detach().requires_grad_(true);
      (probs(s) * in.weight).sum().backward();
      benchmark::DoNotOptimize(s.grad().data_ptr());
      in.params[0].mutable_grad().reset();
    } else {
      torch::NoGradGuard no_grad;
      auto p = probs(in.scores);
      benchmark::DoNotOptimize(p.data_ptr());
    }
  }
  state.counters["scores/s"] =
      benchmark::Counter(static_cast<double>(B * H * L * L), benchmark::Counter::kIsIterationInvariantRate);
}

enum class CompileCase { New, NewOptimised, NewWithBackward, Cached };

void Compile(benchmark::State& state, CompileCase c) {
  auto a0 = decayAttention(6);
  jit::compileAttention(jit::attentionSpecFor(plan::ModelPlan{}, a0, jit::DType::F32));  // engine up
  jit::finishBackgroundCompiles();
  static int i = 0;  // distinct formulas across the "new" benchmarks
  for (auto _ : state) {
    auto a = c == CompileCase::Cached ? a0 : decayAttention(6, 1.0 + 1e-6 * ++i);
    const auto& k = jit::compileAttention(jit::attentionSpecFor(plan::ModelPlan{}, a, jit::DType::F32));
    benchmark::DoNotOptimize(k.forward());
    if (c == CompileCase::NewWithBackward) benchmark::DoNotOptimize(k.backward());
    if (c == CompileCase::NewOptimised) {
      jit::finishBackgroundCompiles();
    } else {  // the background tier's work is not part of this case's time
      state.PauseTiming();
      jit::finishBackgroundCompiles();
      state.ResumeTiming();
    }
  }
}

void CosineMap(benchmark::State& state, bool compiled) {
  formula::Graph g;
  formula::NodeId d = g.leaf(formula::Op::Var, 0), sum = g.constant(0.0);
  for (int t = 1; t <= 16; ++t)
    sum = g.binary(formula::Op::Add, sum,
                   g.binary(formula::Op::Mul, g.constant(1.0 / t),
                            g.unary(formula::Op::Cos, g.binary(formula::Op::Mul, g.constant(0.1 * t), d))));
  const int64_t n = 1000000;
  std::vector<double> x(n), y(n);
  for (int64_t i = 0; i < n; ++i) x[i] = 0.001 * static_cast<double>(i);
  const auto* k = compiled ? &jit::compileMap(g, sum, 1) : nullptr;
  for (auto _ : state) {
    if (compiled) {
      const double* vars[] = {x.data()};
      k->fn(vars, y.data(), n);
    } else {
      formula::Env env;
      env.vars = {0.0};
      for (int64_t i = 0; i < n; ++i) {
        env.vars[0] = x[i];
        y[i] = formula::interpret(g, sum, env);
      }
    }
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["evals/s"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
}

// Prints each JIT benchmark's speed-up over its tensor-op (or interpreter)
// counterpart, measured in the same run.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      std::string name = r.benchmark_name();
      for (const char* suffix : {"/min_time:", "/iterations:"})
        if (size_t at = name.find(suffix); at != std::string::npos) name = name.substr(0, at);
      times_[name] = r.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(r.time_unit);
      cpu_[name] = r.GetAdjustedCPUTime() / benchmark::GetTimeUnitMultiplier(r.time_unit);
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    // CPU time too: on a shared machine a single-threaded benchmark's CPU time
    // is the steadier measure (every benchmark here runs on one thread).
    std::printf("\nspeed-ups (baseline time / JIT time, same run): wall, CPU\n");
    for (const auto& [name, t] : times_) {
      std::string base = name;
      for (auto [from, to] : {std::pair{"/jit/", "/tensor/"}, std::pair{"/compiled", "/interpreter"}})
        if (size_t at = base.find(from); at != std::string::npos) base.replace(at, std::string(from).size(), to);
      if (base == name) continue;
      auto b = times_.find(base);
      if (b == times_.end()) continue;
      std::printf("  %-50s %.2fx  %.2fx\n", name.c_str(), b->second / t, cpu_[base] / cpu_[name]);
    }
    if (times_.count("Compile/new") && times_.count("Compile/cached"))
      std::printf("  compile latency: new formula %.2f ms (CPU %.2f ms), cached %.4f ms (CPU %.4f ms)\n",
                  times_["Compile/new"] * 1e3, cpu_["Compile/new"] * 1e3,
                  times_["Compile/cached"] * 1e3, cpu_["Compile/cached"] * 1e3);
    if (times_.count("Compile/new-optimised"))
      std::printf("  until its optimised-tier forward is in place: %.2f ms (CPU %.2f ms, this thread only)\n",
                  times_["Compile/new-optimised"] * 1e3, cpu_["Compile/new-optimised"] * 1e3);
    if (times_.count("Compile/new+backward"))
      std::printf("  with its backward function: %.2f ms (CPU %.2f ms)\n", times_["Compile/new+backward"] * 1e3,
                  cpu_["Compile/new+backward"] * 1e3);
  }

 private:
  std::map<std::string, double> times_, cpu_;  // seconds
};

}  // namespace

int main(int argc, char** argv) {
  for (bool jit : {false, true}) {
    const char* side = jit ? "jit" : "tensor";
    benchmark::RegisterBenchmark(fmt::format("Attention/{}/forward", side).c_str(), Attention, jit, false)
        ->ArgNames({"B", "H", "L"})->Args({90, 6, 600})->Args({64, 6, 40})
        ->Unit(benchmark::kMillisecond)->MinTime(2.0);
    benchmark::RegisterBenchmark(fmt::format("Attention/{}/fwd+bwd", side).c_str(), Attention, jit, true)
        ->ArgNames({"B", "H", "L"})->Args({16, 6, 600})->Args({64, 6, 40})
        ->Unit(benchmark::kMillisecond)->MinTime(2.0);
  }
  benchmark::RegisterBenchmark("Compile/new", Compile, CompileCase::New)->Unit(benchmark::kMillisecond)->Iterations(20);
  benchmark::RegisterBenchmark("Compile/new-optimised", Compile, CompileCase::NewOptimised)
      ->Unit(benchmark::kMillisecond)
      ->Iterations(20);
  benchmark::RegisterBenchmark("Compile/new+backward", Compile, CompileCase::NewWithBackward)
      ->Unit(benchmark::kMillisecond)
      ->Iterations(20);
  benchmark::RegisterBenchmark("Compile/cached", Compile, CompileCase::Cached)
      ->Unit(benchmark::kMicrosecond)
      ->Iterations(1000);
  benchmark::RegisterBenchmark("CosineMap/interpreter", CosineMap, false)->Unit(benchmark::kMillisecond)->MinTime(1.0);
  benchmark::RegisterBenchmark("CosineMap/compiled", CosineMap, true)->Unit(benchmark::kMillisecond)->MinTime(1.0);
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
}
