// Training-step and evaluation throughput, with baselines measured in the
// same run so the printed ratios are meaningful on any machine.
//
//   TrainStep/<size>/<encoding>: one AdamW step (fresh batch of 64 problems,
//     forward, masked cross-entropy, backward, clip, step). Baseline: the same
//     model with no positional component (NoPE), so the ratio is the cost of
//     the encoding itself. Counters: tokens/s and model FLOP/s (6 x params x tokens).
//   OptimizerStep/<size>/{torch,fused}: gradient clipping and one AdamW step
//     over the model's parameters with fixed random gradients, as
//     torch::nn::utils::clip_grad_norm_ + torch::optim::AdamW (the baseline)
//     and as posc's one-pass FusedAdamW (runtime/train/fused_adamw.h).
//   Decode/<size>: greedy decoding of 90 problems with the KV cache against
//     the reference decoder that recomputes the whole sequence per token.
//   "+jit" variants run the same with the score-formula JIT on (fused terms +
//     mask + softmax kernels); the others use the tensor-op lowering.
//
// Run: build/bench/train_eval_bench [--benchmark_filter=...]
// Sizes: small = 2 layers x 64 wide (the quick start); study = 6 x 384 (10.6M params).
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <torch/torch.h>

#include <map>

#include "bench/step_plan.h"
#include "runtime/eval/greedy.h"
#include "runtime/model/batch.h"
#include "runtime/model/device.h"
#include "runtime/train/fused_adamw.h"
#include "runtime/train/sampling.h"
#include "runtime/train/trainer.h"

namespace {

using namespace posc;
using bench::makePlan;

void TrainStep(benchmark::State& state, bool study_size, std::string encoding, bool jit, bool bf16) {
  model::setThreads(static_cast<int>(state.range(0)));
  plan::ExperimentPlan p = makePlan(study_size, encoding);
  task::Tokenizer tok(p.task);
  model::Gpt model = train::buildModel(p, 0, torch::kCPU);
  model->setScoreJit(jit);
  train::FusedAdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-4));  // as the trainer steps
  std::mt19937_64 rng = train::dataRng(0);
  int64_t tokens = 0;
  for (auto _ : state) {
    task::Batch b = task::sampleTrainingBatch(p.task, tok, 64, rng);
    model::BatchTensors t = model::toTensors(b, torch::kCPU);
    torch::Tensor loss = train::trainingLoss(model, t, torch::Tensor(), bf16);
    opt.zero_grad();
    loss.backward();
    train::clipAndStep(opt, 1.0);
    tokens += b.batch * b.length;
  }
  double params = static_cast<double>(model->parameterCount());
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(6.0 * params * static_cast<double>(tokens) / 1e9, benchmark::Counter::kIsRate);
}

void OptimizerStep(benchmark::State& state, bool study_size, bool fused) {
  model::setThreads(static_cast<int>(state.range(0)));
  plan::ExperimentPlan p = makePlan(study_size, "rope2d_decay");
  model::Gpt model = train::buildModel(p, 0, torch::kCPU);
  torch::manual_seed(0);
  for (auto& param : model->parameters()) param.mutable_grad() = torch::randn_like(param) * 1e-2;
  auto options = torch::optim::AdamWOptions(1e-4).weight_decay(0.1);
  train::FusedAdamW fused_opt(model->parameters(), options);
  torch::optim::AdamW torch_opt(model->parameters(), options);
  for (auto _ : state) {
    if (fused) {
      train::clipAndStep(fused_opt, 0.5);
    } else {
      torch::nn::utils::clip_grad_norm_(model->parameters(), 0.5);
      torch_opt.step();
    }
  }
  state.counters["params"] = static_cast<double>(model->parameterCount());
}

void Decode(benchmark::State& state, bool study_size, bool cached, bool jit) {
  model::setThreads(static_cast<int>(state.range(0)));
  int digits = static_cast<int>(state.range(1));
  plan::ExperimentPlan p = makePlan(study_size, "rope2d_decay");
  task::Tokenizer tok(p.task);
  model::Gpt model = train::buildModel(p, 0, torch::kCPU);
  model->setScoreJit(jit);
  model->eval();
  std::vector<task::Problem> problems = task::testProblems(p.task, digits);
  eval::DecodeOptions options;
  options.batch = 90;
  int64_t emitted = 0;
  for (auto _ : state) {
    auto out = cached ? eval::greedyDecode(model, tok, problems, options)
                      : eval::greedyDecodeReference(model, tok, problems, options);
    for (const auto& g : out) emitted += static_cast<int64_t>(g.size());
  }
  state.counters["answer tokens/s"] = benchmark::Counter(static_cast<double>(emitted), benchmark::Counter::kIsRate);
}

// Prints each benchmark's time as a ratio to the baseline named beside it.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      // "TrainStep/small/nope/threads:1/min_time:3.000" -> "TrainStep/small/nope/threads:1"
      std::string name = r.benchmark_name();
      for (const char* suffix : {"/min_time:", "/iterations:"})
        if (size_t at = name.find(suffix); at != std::string::npos) name = name.substr(0, at);
      times_[name] = r.GetAdjustedRealTime();
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::map<std::string, std::string> pairs = {
        {"TrainStep/small/rope2d_decay/threads:1", "TrainStep/small/nope/threads:1"},
        {"TrainStep/small/rope2d/threads:1", "TrainStep/small/nope/threads:1"},
        {"TrainStep/study/rope2d_decay/threads:1", "TrainStep/study/nope/threads:1"},
        {"TrainStep/small/rope2d_decay/threads:2", "TrainStep/small/rope2d_decay/threads:1"},
        {"TrainStep/small/rope2d_decay+jit/threads:2", "TrainStep/small/rope2d_decay+jit/threads:1"},
        {"TrainStep/study/rope2d_decay+jit/threads:2", "TrainStep/study/rope2d_decay+jit/threads:1"},
        {"TrainStep/study/rope2d_decay+jit+bf16/threads:1", "TrainStep/study/rope2d_decay+jit/threads:1"},
        {"OptimizerStep/small/fused/threads:1", "OptimizerStep/small/torch/threads:1"},
        {"OptimizerStep/study/fused/threads:1", "OptimizerStep/study/torch/threads:1"},
        {"OptimizerStep/study/fused/threads:2", "OptimizerStep/study/fused/threads:1"},
        {"Decode/small/kv_cache/threads:1/digits:50", "Decode/small/reference/threads:1/digits:50"},
        {"TrainStep/small/rope2d_decay+jit/threads:1", "TrainStep/small/rope2d_decay/threads:1"},
        {"TrainStep/study/rope2d_decay+jit/threads:1", "TrainStep/study/rope2d_decay/threads:1"},
        {"Decode/small/kv_cache+jit/threads:1/digits:200", "Decode/small/kv_cache/threads:1/digits:200"},
        {"Decode/study/kv_cache+jit/threads:1/digits:200", "Decode/study/kv_cache/threads:1/digits:200"},
    };
    std::printf("\nratios (time / baseline time, same run):\n");
    for (const auto& [name, base] : pairs) {
      auto a = times_.find(name), b = times_.find(base);
      if (a == times_.end() || b == times_.end()) continue;
      std::printf("  %-45s / %-45s = %.3f\n", name.c_str(), base.c_str(), a->second / b->second);
    }
  }

 private:
  std::map<std::string, double> times_;
};

}  // namespace

int main(int argc, char** argv) {
  // "+jit": the score-formula JIT on; "+bf16": bf16 autocast (precision = bf16_mixed).
  for (bool study : {false, true})
    for (std::string enc : {"nope", "rope2d", "rope2d_decay", "rope2d_decay+jit", "rope2d_decay+jit+bf16"}) {
      if (!study && enc == "rope2d_decay+jit+bf16") continue;
      std::string name = fmt::format("TrainStep/{}/{}", study ? "study" : "small", enc);
      const bool jit = enc.find("+jit") != std::string::npos, bf16 = enc.find("+bf16") != std::string::npos;
      auto* b = benchmark::RegisterBenchmark(name.c_str(), TrainStep, study, enc.substr(0, enc.find('+')), jit, bf16);
      b->ArgName("threads")->Arg(1)->Unit(benchmark::kMillisecond)->MinTime(study ? 10.0 : 3.0);
      if (enc == "rope2d_decay" || enc == "rope2d_decay+jit") b->Arg(2);
    }
  for (bool study : {false, true})
    for (bool fused : {false, true}) {
      std::string name = fmt::format("OptimizerStep/{}/{}", study ? "study" : "small", fused ? "fused" : "torch");
      auto* b = benchmark::RegisterBenchmark(name.c_str(), OptimizerStep, study, fused);
      b->ArgName("threads")->Arg(1)->Unit(benchmark::kMillisecond)->MinTime(study ? 3.0 : 1.0);
      if (study && fused) b->Arg(2);
    }
  benchmark::RegisterBenchmark("Decode/small/kv_cache", Decode, false, true, false)
      ->ArgNames({"threads", "digits"})->Args({1, 50})->Args({1, 200})->Unit(benchmark::kMillisecond)->Iterations(2);
  benchmark::RegisterBenchmark("Decode/small/kv_cache+jit", Decode, false, true, true)
      ->ArgNames({"threads", "digits"})->Args({1, 200})->Unit(benchmark::kMillisecond)->Iterations(2);
  benchmark::RegisterBenchmark("Decode/small/reference", Decode, false, false, false)
      ->ArgNames({"threads", "digits"})->Args({1, 50})->Unit(benchmark::kMillisecond)->Iterations(1);
  benchmark::RegisterBenchmark("Decode/study/kv_cache", Decode, true, true, false)
      ->ArgNames({"threads", "digits"})->Args({1, 200})->Unit(benchmark::kMillisecond)->Iterations(1);
  benchmark::RegisterBenchmark("Decode/study/kv_cache+jit", Decode, true, true, true)
      ->ArgNames({"threads", "digits"})->Args({1, 200})->Unit(benchmark::kMillisecond)->Iterations(1);
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
