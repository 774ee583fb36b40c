// Tests of the training support code: atomic files, result tables, the
// learning-rate schedule, batch tensors, stretch sampling, the masked loss,
// checkpoints (round trip and warm start) and a short runExperiment that
// checks the results folder.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <fstream>
#include <map>
#include <numbers>
#include <sstream>

#include "runtime/eval/greedy.h"
#include "runtime/model/batch.h"
#include "runtime/model/device.h"
#include "runtime/results/atomic_file.h"
#include "runtime/results/tables.h"
#include "runtime/run/run_experiment.h"
#include "runtime/train/checkpoint.h"
#include "runtime/model/precision.h"
#include "runtime/train/sampling.h"
#include "runtime/train/schedule.h"
#include "runtime/train/trainer.h"
#include "tests/runtime/train_test_plans.h"

namespace posc {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> folderEntries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}

// ---------------------------------------------------------------------------
TEST(AtomicFile, WritesExactContentAndLeavesNoTemporary) {
  ScratchDir dir("atomic");
  const fs::path file = dir.path() / "out.txt";
  std::string content = "first line\n";
  content.push_back('\0');
  content += std::string(100000, 'x');
  results::writeFileAtomic(file, content);
  EXPECT_EQ(readFile(file), content);
  results::writeFileAtomic(file, "replaced");
  EXPECT_EQ(readFile(file), "replaced");
  EXPECT_EQ(folderEntries(dir.path()), std::vector<std::string>{"out.txt"});
  EXPECT_EQ(results::temporaryPathFor(file).parent_path(), dir.path());
}

TEST(AtomicFile, FailureNamesThePathAndLeavesNothing) {
  ScratchDir dir("atomic-fail");
  const fs::path file = dir.path() / "missing-folder" / "out.txt";
  try {
    results::writeFileAtomic(file, "x");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("missing-folder"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(folderEntries(dir.path()).empty());
}

TEST(AtomicFile, JsonLinesLogHoldsWholeLines) {
  ScratchDir dir("jsonl");
  results::JsonLinesLog log(dir.path() / "metrics.jsonl");
  log.append(R"({"step":1})");
  log.append(R"({"step":2})");
  EXPECT_EQ(readFile(dir.path() / "metrics.jsonl"), "{\"step\":1}\n{\"step\":2}\n");
  EXPECT_EQ(folderEntries(dir.path()).size(), 1u);
}

// ---------------------------------------------------------------------------
TEST(TrainResults, AccuracyCsvAndSummaryTable) {
  std::vector<results::LengthAccuracy> records = {
      {0, 3, 90, 90}, {0, 10, 45, 90}, {1, 3, 81, 90}, {1, 10, 90, 90}};
  EXPECT_EQ(results::accuracyCsv(records),
            "seed,digits,correct,total,accuracy\n"
            "0,3,90,90,1.000000\n0,10,45,90,0.500000\n1,3,81,90,0.900000\n1,10,90,90,1.000000\n");
  const results::Table t = results::accuracySummaryTable(records);
  ASSERT_EQ(t.header, (std::vector<std::string>{"digits", "seed 0", "seed 1", "mean", "range"}));
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"3", "100.0", "90.0", "95.0", "90.0-100.0"}));
  EXPECT_EQ(t.rows[1], (std::vector<std::string>{"10", "50.0", "100.0", "75.0", "50.0-100.0"}));
  const std::string md = results::renderMarkdown(t);
  EXPECT_NE(md.find("| digits | seed 0 | seed 1 | mean |      range |"), std::string::npos) << md;
  EXPECT_NE(md.find("|     10 |   50.0 |  100.0 | 75.0 | 50.0-100.0 |"), std::string::npos) << md;
}

TEST(TrainResults, PublishedFiguresStandBesideTheMeasuredOnes) {
  std::vector<results::LengthAccuracy> records = {{0, 60, 81, 90}, {0, 100, 45, 90}};
  plan::EvalPlan eval;
  eval.published = {{60, {83, 98, 100}}, {200, {34, 77, 77}}};
  eval.published_source = "the study";
  const results::Table t = results::accuracySummaryTable(records, eval.published);
  ASSERT_EQ(t.header.back(), "published");
  EXPECT_EQ(t.rows[0].back(), "83 / 98 / 100");
  EXPECT_EQ(t.rows[1].back(), "-");  // no published figure at 100 digits
  EXPECT_NE(results::summaryMarkdown("decay", records, eval).find("Published figures: the study."), std::string::npos);
  // Without figures the column is absent.
  EXPECT_EQ(results::accuracySummaryTable(records).header.back(), "range");
}

TEST(TrainResults, CsvQuotesSpecialFields) {
  results::Table t;
  t.header = {"a", "b"};
  t.rows = {{"x,y", "say \"hi\""}};
  EXPECT_EQ(results::renderCsv(t), "a,b\n\"x,y\",\"say \"\"hi\"\"\"\n");
}

// ---------------------------------------------------------------------------
plan::TrainPlan schedulePlan(plan::Schedule s) {
  plan::TrainPlan tp;
  tp.steps = 1000;
  tp.warmup = 100;
  tp.lr = 2e-3;
  tp.min_lr_ratio = 0.1;
  tp.schedule = s;
  return tp;
}

TEST(Schedule, CosineWithWarmup) {
  const plan::TrainPlan tp = schedulePlan(plan::Schedule::Cosine);
  const double lr = tp.lr, min = lr * tp.min_lr_ratio;
  EXPECT_DOUBLE_EQ(train::learningRateAt(tp, 0), lr / 100);
  EXPECT_DOUBLE_EQ(train::learningRateAt(tp, 49), lr * 50 / 100);
  EXPECT_DOUBLE_EQ(train::learningRateAt(tp, 99), lr);   // end of warm-up
  EXPECT_DOUBLE_EQ(train::learningRateAt(tp, 100), lr);  // decay starts at p = 0
  // Mid-cosine: p = (step - 100) / 899, so p = 1/2 lies between steps 549 and 550.
  const int step = 549;
  const double p = (549.0 - 100.0) / 899.0;
  EXPECT_DOUBLE_EQ(train::learningRateAt(tp, step), min + (lr - min) * 0.5 * (1 + std::cos(std::numbers::pi * p)));
  EXPECT_NEAR(train::learningRateAt(tp, step), (lr + min) / 2, 1e-5);
  EXPECT_DOUBLE_EQ(train::learningRateAt(tp, 999), min);  // last step
}

TEST(Schedule, LinearConstantAndNoWarmup) {
  plan::TrainPlan tp = schedulePlan(plan::Schedule::Linear);
  const double lr = tp.lr, min = lr * tp.min_lr_ratio;
  EXPECT_DOUBLE_EQ(train::learningRateAt(tp, 999), min);
  EXPECT_DOUBLE_EQ(train::learningRateAt(tp, 100 + 899 / 3), lr - (lr - min) * (299.0 / 899.0));
  tp.schedule = plan::Schedule::Constant;
  EXPECT_DOUBLE_EQ(train::learningRateAt(tp, 0), lr / 100);
  EXPECT_DOUBLE_EQ(train::learningRateAt(tp, 500), lr);
  EXPECT_DOUBLE_EQ(train::learningRateAt(tp, 999), lr);
  tp = schedulePlan(plan::Schedule::Cosine);
  tp.warmup = 0;
  EXPECT_DOUBLE_EQ(train::learningRateAt(tp, 0), lr);
  EXPECT_DOUBLE_EQ(train::learningRateAt(tp, 999), min);
  tp.steps = 1;
  EXPECT_DOUBLE_EQ(train::learningRateAt(tp, 0), min);  // a single step is the last step
}

// ---------------------------------------------------------------------------
TEST(TrainLoop, BatchTensorsHaveTheTaskLayout) {
  const plan::ExperimentPlan p = testing::tinyAdditionPlan();
  task::Tokenizer tok(p.task);
  std::mt19937_64 rng(7);
  const task::Batch batch = task::sampleTrainingBatch(p.task, tok, 5, rng);
  const model::BatchTensors t = model::toTensors(batch, torch::kCPU);
  ASSERT_EQ(t.tokens.sizes(), (std::vector<int64_t>{5, batch.length}));
  ASSERT_EQ(t.channels.sizes(), (std::vector<int64_t>{plan::kChannelCount, 5, batch.length}));
  EXPECT_EQ(t.loss_mask.scalar_type(), torch::kBool);
  for (int64_t b = 0; b < 5; ++b)
    for (int64_t l = 0; l < batch.length; ++l) {
      const size_t i = static_cast<size_t>(b * batch.length + l);
      EXPECT_EQ(t.tokens[b][l].item<int64_t>(), batch.tokens[i]);
      EXPECT_EQ(t.targets[b][l].item<int64_t>(), batch.targets[i]);
      EXPECT_EQ(t.loss_mask[b][l].item<bool>(), batch.loss_mask[i] != 0);
      for (int c = 0; c < plan::kChannelCount; ++c)
        EXPECT_EQ(t.channels[c][b][l].item<int64_t>(), batch.channels[static_cast<size_t>(c)][i]);
    }
}

TEST(TrainLoop, StretchFollowsTheFirstDeclaredDistribution) {
  plan::AttentionPlan att = testing::tinyAdditionPlan().attention;
  std::mt19937_64 rng(3);
  EXPECT_FALSE(train::sampleStretch(att, 8, rng, torch::kFloat32, torch::kCPU).defined());
  plan::Distribution d;
  d.kind = plan::Distribution::Kind::LogUniform;
  d.a = 0.5;
  d.b = 4.0;
  att.rotations[1].stretch = d;
  plan::Distribution fixed;
  fixed.a = 9;
  att.rotations.push_back(att.rotations[0]);
  att.rotations.back().stretch = fixed;  // not the first: ignored
  const torch::Tensor s = train::sampleStretch(att, 4096, rng, torch::kFloat64, torch::kCPU);
  ASSERT_EQ(s.sizes(), (std::vector<int64_t>{4096}));
  EXPECT_GE(s.min().item<double>(), 0.5);
  EXPECT_LT(s.max().item<double>(), 4.0);
  // Log-uniform: log2 of the factor is uniform on [-1, 2), mean 0.5.
  EXPECT_NEAR(s.log2().mean().item<double>(), 0.5, 0.05);
  std::mt19937_64 a(11), b(11);
  EXPECT_TRUE(torch::equal(train::sampleStretch(att, 16, a, torch::kFloat32, torch::kCPU),
                           train::sampleStretch(att, 16, b, torch::kFloat32, torch::kCPU)));
  d.kind = plan::Distribution::Kind::Uniform;
  EXPECT_GE(train::sampleDistribution(d, a), 0.5);
  EXPECT_DOUBLE_EQ(train::sampleDistribution(fixed, a), 9.0);
}

TEST(TrainLoop, MaskedCrossEntropyAveragesAnswerPositions) {
  torch::manual_seed(0);
  const torch::Tensor logits = torch::randn({2, 3, 5});
  const torch::Tensor targets = torch::tensor({0, 1, 2, 3, 4, 0}, torch::kInt64).view({2, 3});
  const torch::Tensor mask = torch::tensor({0, 1, 1, 1, 0, 0}, torch::kBool).view({2, 3});
  const torch::Tensor logp = torch::log_softmax(logits, -1);
  const double expected =
      -(logp[0][1][1].item<double>() + logp[0][2][2].item<double>() + logp[1][0][3].item<double>()) / 3;
  EXPECT_NEAR(train::maskedCrossEntropy(logits, targets, mask).item<double>(), expected, 1e-6);
}

// The training loss (masked forward pass) equals the cross-entropy of the
// full forward pass at the loss mask, on a real addition batch (f64).
TEST(TrainLoop, TrainingLossEqualsMaskedCrossEntropyOfTheFullForward) {
  plan::ExperimentPlan p = testing::tinyAdditionPlan();
  p.model.precision = plan::Precision::F64;
  model::Gpt m = train::buildModel(p, 3, torch::kCPU);
  task::Tokenizer tok(p.task);
  std::mt19937_64 rng = train::dataRng(3);
  const model::BatchTensors bt = model::toTensors(task::sampleTrainingBatch(p.task, tok, 16, rng), torch::kCPU);
  const double full = train::maskedCrossEntropy(m->forward(bt.tokens, bt.channels), bt.targets, bt.loss_mask)
                          .item<double>();
  EXPECT_NEAR(train::trainingLoss(m, bt, torch::Tensor(), /*bf16=*/false).item<double>(), full, 1e-12);
}

TEST(TrainLoop, TrainsInEveryPrecisionWithStretchAndPeriodicEvaluation) {
  for (plan::Precision precision : {plan::Precision::F32, plan::Precision::F64, plan::Precision::Bf16Mixed}) {
    plan::ExperimentPlan p = testing::tinyAdditionPlan();
    p.model.precision = precision;
    p.train.steps = 30;
    p.train.warmup = 5;
    p.train.log_every = 10;
    p.eval.every = 10;
    plan::Distribution d;
    d.kind = plan::Distribution::Kind::LogUniform;
    d.a = 0.5;
    d.b = 2.0;
    p.attention.rotations[1].stretch = d;
    model::Gpt m = train::buildModel(p, 0, torch::kCPU);
    ScratchDir dir("loop");
    results::JsonLinesLog log(dir.path() / "metrics.jsonl");
    std::vector<int> evaluated;
    train::TrainContext ctx;
    ctx.metrics = &log;
    ctx.progress = train::TrainContext::Progress::Bar;
    ctx.evaluate = [&](int step) {
      evaluated.push_back(step);
      EXPECT_EQ(eval::evaluateLengths(m, p, 0).size(), 2u);
    };
    const train::TrainStats stats = train::trainModel(m, p, ctx);
    EXPECT_TRUE(std::isfinite(stats.final_loss));
    EXPECT_LT(stats.final_loss, std::log(14.0)) << "precision " << static_cast<int>(precision);
    EXPECT_GT(stats.tokens_per_s, 0);
    EXPECT_EQ(evaluated, (std::vector<int>{10, 20}));  // not after the last step: the caller evaluates
    EXPECT_EQ(log.lines().size(), 3u);
    EXPECT_FALSE(model::autocastEnabled(c10::DeviceType::CPU));
    for (const auto& param : m->parameters()) EXPECT_EQ(param.scalar_type(), model::parameterDtype(precision));
  }
}

TEST(TrainLoop, UnknownOrMissingDeviceIsAUserError) {
  EXPECT_THROW(model::resolveDevice("tpu"), runtime::UserError);
  if (!torch::cuda::is_available()) {
    try {
      model::resolveDevice("cuda");
      FAIL();
    } catch (const runtime::UserError& e) {
      EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos);
    }
  }
}

// ---------------------------------------------------------------------------
torch::Tensor logitsOf(model::Gpt& m, const plan::ExperimentPlan& p) {
  task::Tokenizer tok(p.task);
  std::mt19937_64 rng(5);
  const model::BatchTensors t = model::toTensors(task::sampleTrainingBatch(p.task, tok, 4, rng), torch::kCPU);
  torch::NoGradGuard no_grad;
  m->eval();
  return m->forward(t.tokens, t.channels);
}

TEST(TrainCheckpoint, SaveLoadRoundTripGivesIdenticalLogits) {
  plan::ExperimentPlan p = testing::tinyAdditionPlan();
  testing::addLearnedDecay(p);
  ScratchDir dir("ckpt");
  model::Gpt a = train::buildModel(p, 1, torch::kCPU);
  {
    torch::NoGradGuard g;  // move the score parameter off its init so that it is checked too
    for (auto& param : a->parameters()) param.add_(0.01);
  }
  train::saveCheckpoint(*a, dir.path() / "final.pt");
  EXPECT_EQ(folderEntries(dir.path()), std::vector<std::string>{"final.pt"});
  model::Gpt b = train::buildModel(p, 2, torch::kCPU);
  EXPECT_FALSE(torch::equal(logitsOf(a, p), logitsOf(b, p)));
  train::loadCheckpoint(*b, dir.path() / "final.pt");
  EXPECT_TRUE(torch::equal(logitsOf(a, p), logitsOf(b, p)));
  // The file is LibTorch's ordinary module archive.
  model::Gpt c = train::buildModel(p, 3, torch::kCPU);
  torch::load(c, (dir.path() / "final.pt").string());
  EXPECT_TRUE(torch::equal(logitsOf(a, p), logitsOf(c, p)));
}

TEST(TrainCheckpoint, WarmStartCopiesMatchingAndKeepsNewParametersFresh) {
  const plan::ExperimentPlan base = testing::tinyAdditionPlan();
  plan::ExperimentPlan extended = base;
  testing::addLearnedDecay(extended, 0.375);
  ScratchDir dir("warm");
  model::Gpt trained = train::buildModel(base, 1, torch::kCPU);
  train::saveCheckpoint(*trained, dir.path() / "final.pt");

  model::Gpt fresh = train::buildModel(extended, 2, torch::kCPU);
  std::map<std::string, torch::Tensor> before;
  for (const auto& p : fresh->named_parameters()) before[p.key()] = p.value().detach().clone();
  const auto trained_params = trained->named_parameters();
  const train::WarmStartReport report = train::warmStart(*fresh, dir.path() / "final.pt");

  int copied = 0, kept = 0;
  for (const auto& p : fresh->named_parameters()) {
    if (const torch::Tensor* src = trained_params.find(p.key())) {
      EXPECT_TRUE(torch::equal(p.value(), *src)) << p.key();
      ++copied;
    } else {
      EXPECT_TRUE(torch::equal(p.value(), before[p.key()])) << p.key();
      EXPECT_TRUE(torch::allclose(p.value(), torch::full_like(p.value(), 0.375))) << p.key();
      ++kept;
    }
  }
  EXPECT_EQ(kept, 1);  // the learned decay rate
  EXPECT_EQ(copied, static_cast<int>(trained_params.size()));
  ASSERT_EQ(report.kept_fresh.size(), 1u);
  EXPECT_NE(report.kept_fresh[0].find("(absent)"), std::string::npos) << report.kept_fresh[0];
  EXPECT_TRUE(report.unused.empty());
  EXPECT_NE(train::describe(report, dir.path() / "final.pt").find("kept their fresh initialisation"),
            std::string::npos);
  // Strict loading refuses the same file.
  model::Gpt strict = train::buildModel(extended, 2, torch::kCPU);
  EXPECT_THROW(train::loadCheckpoint(*strict, dir.path() / "final.pt"), std::runtime_error);
}

// A checkpoint of another model (here a wider feed-forward layer) is refused
// with the mismatched tensors named, and nothing is copied: before, the
// matching tensors were copied and the run trained on, exit 0.
TEST(TrainCheckpoint, WarmStartRefusesAnotherModelAndCopiesNothing) {
  plan::ExperimentPlan small = testing::tinyAdditionPlan();
  plan::ExperimentPlan wide = small;
  wide.model.mlp_hidden = 128;
  ScratchDir dir("shape");
  model::Gpt a = train::buildModel(small, 1, torch::kCPU);
  train::saveCheckpoint(*a, dir.path() / "final.pt");
  model::Gpt b = train::buildModel(wide, 2, torch::kCPU);
  std::map<std::string, torch::Tensor> before;
  for (const auto& p : b->named_parameters()) before[p.key()] = p.value().detach().clone();
  try {
    train::warmStart(*b, dir.path() / "final.pt");
    ADD_FAILURE() << "a checkpoint of another model was taken";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("is of another model"), std::string::npos) << what;
    EXPECT_NE(what.find("block0.mlp.fc1.weight (shape [256,64] in checkpoint, [128,64] here)"), std::string::npos) << what;
  }
  for (const auto& p : b->named_parameters()) EXPECT_TRUE(torch::equal(p.value(), before[p.key()])) << p.key();
}

// A checkpoint with NaN weights is refused where it is read, naming the
// tensor (before, the first forward pass blamed the score formula).
TEST(TrainCheckpoint, NonFiniteWeightsAreRefusedWhereTheyAreRead) {
  plan::ExperimentPlan p = testing::tinyAdditionPlan();
  ScratchDir dir("nan");
  model::Gpt a = train::buildModel(p, 1, torch::kCPU);
  {
    torch::NoGradGuard no_grad;
    a->named_parameters()["block1.mlp.fc2.weight"].index_put_({0, 3}, std::nan(""));
  }
  train::saveCheckpoint(*a, dir.path() / "final.pt");
  for (bool strict : {false, true}) {
    model::Gpt b = train::buildModel(p, 2, torch::kCPU);
    try {
      if (strict) train::loadCheckpoint(*b, dir.path() / "final.pt");
      else train::warmStart(*b, dir.path() / "final.pt");
      ADD_FAILURE() << "NaN weights were taken";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("tensor 'block1.mlp.fc2.weight' holds 1 non-finite value(s)"),
                std::string::npos)
          << e.what();
    }
  }
}

// ---------------------------------------------------------------------------
runtime::RunOptions runOptions(const fs::path& out) {
  runtime::RunOptions o;
  o.out_dir = out.string();
  o.plan_text = "plan text\n";
  o.source_text = "experiment tiny {}\n";
  o.progress_bar = false;
  return o;
}

TEST(TrainRun, WritesTheResultsFolderAndWarmStartsFromIt) {
  ScratchDir root("run");
  plan::ExperimentPlan p = testing::tinyAdditionPlan();
  p.train.steps = 20;
  p.train.log_every = 10;
  p.train.checkpoint_every = 10;
  p.train.seeds = {0, 1};
  p.task.test_digits = {2};
  p.task.problems_per_length = 12;
  ASSERT_EQ(runtime::runExperiment(p, runOptions(root.path() / "first")), 0);

  const fs::path out = root.path() / "first";
  EXPECT_EQ(readFile(out / "plan.txt"), "plan text\n");
  EXPECT_EQ(readFile(out / "source.pos"), "experiment tiny {}\n");
  for (const char* f : {"seed0/checkpoint_10.pt", "seed0/checkpoint_20.pt", "seed0/final.pt", "seed1/final.pt",
                        "seed0/checkpoint_10.safetensors", "seed0/final.safetensors", "seed1/final.safetensors"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  // No temporary file is left; .lock is the folder's lock and .posc-results
  // its marker (train/run_folder.h).
  EXPECT_TRUE(fs::exists(out / ".posc-results"));
  for (const auto& name : folderEntries(out)) {
    if (name != ".lock" && name != ".posc-results") {
      EXPECT_NE(name[0], '.') << "leftover " << name;
    }
  }
  EXPECT_NE(readFile(out / "status.json").find(R"("state":"finished")"), std::string::npos);

  std::istringstream metrics(readFile(out / "metrics.jsonl"));
  std::vector<std::string> lines;
  for (std::string line; std::getline(metrics, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].rfind(R"({"seed":0,"step":10,"loss":)", 0), 0u) << lines[0];
  EXPECT_EQ(lines[3].rfind(R"({"seed":1,"step":20,"loss":)", 0), 0u) << lines[3];
  for (const auto& l : lines) {
    EXPECT_NE(l.find(R"("lr":)"), std::string::npos);
    EXPECT_NE(l.find(R"("tokens_per_s":)"), std::string::npos);
    EXPECT_EQ(l.back(), '}');
  }

  const std::string csv = readFile(out / "accuracy.csv");
  EXPECT_EQ(csv.rfind("seed,digits,correct,total,accuracy\n0,2,", 0), 0u) << csv;
  EXPECT_NE(csv.find("\n1,2,"), std::string::npos) << csv;
  const std::string summary = readFile(out / "summary.md");
  EXPECT_NE(summary.find("| digits | seed 0 | seed 1 |"), std::string::npos) << summary;

  // Warm start with no training evaluates the loaded model: same accuracy.
  plan::ExperimentPlan second = p;
  second.name = "second";
  second.train.steps = 0;
  second.train.init_from = "first";
  ASSERT_EQ(runtime::runExperiment(second, runOptions(root.path() / "second")), 0);
  EXPECT_EQ(readFile(root.path() / "second" / "accuracy.csv"), csv);

  second.train.init_from = "never-run";
  try {
    runtime::runExperiment(second, runOptions(root.path() / "third"));
    FAIL() << "expected a UserError";
  } catch (const runtime::UserError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("never-run/seed0/final.pt"), std::string::npos) << msg;
    EXPECT_NE(msg.find("run the experiment 'never-run' first, or pass --init-root"), std::string::npos) << msg;
  }
}

TEST(TrainRun, UnwritableFolderIsAUserError) {
  ScratchDir root("blocked");
  { std::ofstream(root.path() / "file") << "x"; }
  plan::ExperimentPlan p = testing::tinyAdditionPlan();
  p.train.steps = 0;
  EXPECT_THROW(runtime::runExperiment(p, runOptions(root.path() / "file" / "out")), runtime::UserError);
}

}  // namespace
}  // namespace posc
