// The CUDA path (CTest label `cuda`), skipped with a message where LibTorch
// has no CUDA device: every score formula of the examples on CUDA against the
// CPU (f32 within 1e-4, f64 within 1e-10, probabilities and gradients), KV-cache
// decoding on CUDA against full recomputation token for token, a warm start
// from a CPU checkpoint onto CUDA and back, and bf16_mixed training on CUDA.
//
// The CPU side of the formula check is the tensor-op lowering, which the CPU
// build's tests hold equal to the fused JIT kernels (tests/runtime/
// fused_attention_test.cpp); a GPU build has no LLVM.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "compiler/driver/compile.h"
#include "runtime/eval/greedy.h"
#include "runtime/model/attention.h"
#include "runtime/model/score_formula.h"
#include "runtime/task/addition.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/trainer.h"
#include "tests/common/attention_cases.h"

using namespace posc;
namespace fs = std::filesystem;

namespace {

#define REQUIRE_CUDA()                                                                            \
  if (!torch::cuda::is_available())                                                              \
  GTEST_SKIP() << "no CUDA device (LibTorch " << TORCH_VERSION                                     \
               << (torch::cuda::device_count() == 0 ? ", none visible" : "") << "): CUDA tests skipped"

plan::ExperimentPlan compileExample(const std::string& file, const std::string& preset = "small") {
  driver::Compilation c;
  driver::CompileRequest r;
  r.path = std::string(POSC_SOURCE_DIR) + "/examples/addition/" + file;
  r.experiment.preset = preset;
  EXPECT_TRUE(c.compile(r)) << c.diags.render(false);
  return *c.plan;
}

struct Outcome {
  torch::Tensor probs, gscores;
  std::vector<torch::Tensor> gparams;
};

Outcome attentionOn(const plan::ExperimentPlan& p, const posc::testing::Inputs& base, torch::Device device) {
  auto scores = base.scores.to(device).set_requires_grad(true);
  std::vector<torch::Tensor> params;
  for (const auto& t : base.params) params.push_back(t.detach().to(device).set_requires_grad(true));
  auto qch = base.qch.to(device), kch = base.kch.to(device);
  torch::Tensor probs = model::attentionWeights(model::applyScoreTerms(scores, qch, kch, p.attention, params),
                                                p.model.softmax, p.attention.null_slot);
  (probs * base.weight.to(device)).sum().backward();
  Outcome o{probs.detach().cpu(), scores.grad().cpu(), {}};
  for (auto& t : params) o.gparams.push_back(t.grad().defined() ? t.grad().cpu() : torch::Tensor());
  return o;
}

TEST(Cuda, EveryExampleFormulaMatchesTheCpu) {
  REQUIRE_CUDA();
  const auto plans = posc::testing::examplePlans();
  ASSERT_GE(plans.size(), 3u);
  for (const auto& [key, p] : plans) {
    for (auto [dtype, tol] : {std::pair{torch::kFloat, 1e-4}, std::pair{torch::kDouble, 1e-10}}) {
      SCOPED_TRACE(key + (dtype == torch::kFloat ? " f32" : " f64"));
      const posc::testing::Inputs in = posc::testing::randomInputs(p, 2, 160, p.attention.null_slot, dtype);
      const Outcome cpu = attentionOn(p, in, torch::kCPU), gpu = attentionOn(p, in, torch::kCUDA);
      posc::testing::expectClose(gpu.probs, cpu.probs, tol, "probabilities");
      posc::testing::expectClose(gpu.gscores, cpu.gscores, tol, "gradient into the scores");
      for (size_t i = 0; i < cpu.gparams.size(); ++i)
        if (cpu.gparams[i].defined()) posc::testing::expectClose(gpu.gparams[i], cpu.gparams[i], tol, "parameter gradient");
    }
  }
}

TEST(Cuda, KvCacheDecodingEqualsFullRecomputation) {
  REQUIRE_CUDA();
  const plan::ExperimentPlan p = compileExample("rope2d_decay_sink.pos");
  model::Gpt m = train::buildModel(p, 0, torch::kCUDA);
  m->eval();
  const task::Tokenizer tokenizer(p.task);
  for (int digits : {3, 12}) {
    const auto problems = task::testProblems(p.task, digits);
    eval::DecodeOptions o;
    o.batch = 30;
    torch::NoGradGuard no_grad;
    const auto cached = eval::greedyDecode(m, tokenizer, problems, o);
    const auto full = eval::greedyDecodeReference(m, tokenizer, problems, o);
    ASSERT_EQ(cached.size(), full.size());
    for (size_t i = 0; i < cached.size(); ++i) EXPECT_EQ(cached[i], full[i]) << "problem " << i << " at " << digits;
  }
}

TEST(Cuda, WarmStartFromACpuCheckpointAndBack) {
  REQUIRE_CUDA();
  const plan::ExperimentPlan p = compileExample("rope2d_decay.pos");
  const fs::path dir = fs::path(::testing::TempDir()) / "cuda_warm_start";
  fs::create_directories(dir);
  model::Gpt cpu = train::buildModel(p, 3, torch::kCPU);
  train::saveCheckpoint(*cpu, dir / "cpu.pt");
  model::Gpt gpu = train::buildModel(p, 4, torch::kCUDA);
  train::warmStart(*gpu, dir / "cpu.pt");
  // The same weights on both devices give the same logits.
  const task::Tokenizer tokenizer(p.task);
  task::Sequence s = tokenizer.encode(task::testProblems(p.task, 5).front());
  auto tokens = torch::tensor(s.tokens, torch::kLong).unsqueeze(0);
  auto channels = torch::zeros({plan::kChannelCount, 1, tokens.size(1)}, torch::kLong);
  for (int c = 0; c < plan::kChannelCount; ++c)
    channels[c][0] = torch::tensor(s.channels[static_cast<size_t>(c)], torch::kLong);
  torch::NoGradGuard no_grad;
  cpu->eval();
  gpu->eval();
  posc::testing::expectClose(gpu->forward(tokens.cuda(), channels.cuda()).cpu(), cpu->forward(tokens, channels), 1e-4,
                       "logits after a CPU -> CUDA warm start");
  // And back: a checkpoint written from CUDA loads on the CPU with the same values.
  train::saveCheckpoint(*gpu, dir / "gpu.pt");
  model::Gpt back = train::buildModel(p, 5, torch::kCPU);
  train::warmStart(*back, dir / "gpu.pt");
  auto a = back->named_parameters(), b = cpu->named_parameters();
  for (const auto& item : a) EXPECT_TRUE(torch::equal(item.value(), b[item.key()])) << item.key();
}

TEST(Cuda, Bf16MixedTrains) {
  REQUIRE_CUDA();
  plan::ExperimentPlan p = compileExample("rope2d_decay.pos");
  p.model.precision = plan::Precision::Bf16Mixed;
  p.train.steps = 500;
  model::Gpt m = train::buildModel(p, 0, torch::kCUDA);
  train::TrainContext ctx;
  ctx.device = torch::kCUDA;
  ctx.progress = train::TrainContext::Progress::None;
  const train::TrainStats stats = train::trainModel(m, p, ctx);
  EXPECT_EQ(stats.steps, 500);
  EXPECT_TRUE(std::isfinite(stats.final_loss));
  EXPECT_LT(stats.final_loss, 1.5) << "the loss starts near ln(vocab) = 2.6 and must fall";
}

}  // namespace
