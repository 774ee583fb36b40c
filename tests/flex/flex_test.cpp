// `posc emit flex` against posc itself: for every example experiment, the
// emitted score_mod, applied in Python as FlexAttention defines it (to every
// score broadcast over a dense tensor under Debian's python3-torch 1.13,
// which has no flex_attention; through flex_attention itself under PyTorch
// 2.x, tools/python_env.sh), with the emitted mask_mod and a softmax, gives posc's
// attention probabilities - with parameters moved off their initial values,
// the experiment's exemptions and the causal mask - to 1e-12 in float64 and
// 1e-5 in float32; and the emitted apply_rotary rotates queries and keys as
// posc does. tests/flex/check_score_mod.py does the Python side. Then a posc
// model runs in plain PyTorch (tools/posc_model.py) with posc's logits
// (1e-10 / 1e-5) and greedy choices (check_model.py), eagerly and, under
// 2.x, torch.compile'd. The tests skip where no python3 can import torch.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "compiler/driver/compile.h"
#include "compiler/flex/flex.h"
#include "runtime/eval/greedy.h"
#include "runtime/model/attention.h"
#include "runtime/model/gpt.h"
#include "runtime/model/positional.h"
#include "runtime/model/score_formula.h"
#include "runtime/probe/problems.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/safetensors.h"
#include "tests/common/run_posc.h"
#include "tests/flex/interpreters.h"

namespace {

using namespace posc;
namespace fs = std::filesystem;

// The interpreters the checks run under (interpreters.h).
using posc::testing::expectCheckPasses;
using posc::testing::Interpreter;
using posc::testing::kNoTorch;
const std::vector<Interpreter>& interpreters() { return posc::testing::pythonInterpreters(); }

std::vector<std::string> exampleFiles() {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(fs::path(POSC_SOURCE_DIR) / "examples/addition"))
    if (e.path().extension() == ".pos" && e.path().stem() != "study")
      files.push_back("examples/addition/" + e.path().filename().string());
  std::sort(files.begin(), files.end());
  return files;
}

// The example's plan at the small preset.
plan::ExperimentPlan compileSmall(const std::string& file, const std::string& preset = "small") {
  driver::Compilation c;
  driver::CompileRequest r;
  r.path = std::string(POSC_SOURCE_DIR) + "/" + file;
  if (!preset.empty()) r.experiment.preset = preset;
  EXPECT_TRUE(c.compile(r)) << c.diags.render(false);
  return c.plan ? *c.plan : plan::ExperimentPlan{};
}

// posc's probabilities (and rotations) for the plan, written where the
// Python check reads them.
void writeCase(const plan::ExperimentPlan& plan, torch::ScalarType dtype, const fs::path& path) {
  task::Tokenizer tokenizer(plan.task);
  const auto problems = probe::probeProblems(plan.task, 7, plan.task.train_max_digits, 2);
  const torch::Tensor channels = probe::forcedBatch(tokenizer, problems).channels;  // (4, B, L)
  const int64_t B = channels.size(1), L = channels.size(2), H = plan.model.heads, D = plan.model.head_dim;
  torch::manual_seed(3);
  const torch::Tensor scores = (torch::randn({B, H, L, L}, torch::kDouble) * 3).to(dtype);
  std::vector<torch::Tensor> params;
  train::NamedTensors out = {{"scores", scores}, {"channels", channels}};
  const std::vector<std::string> names = plan::parameterTensorNames(plan.attention);
  for (size_t i = 0; i < plan.attention.params.size(); ++i) {
    torch::Tensor p = model::initialScoreParam(plan.attention.params[i], static_cast<int>(H)).to(torch::kDouble);
    p = (p + 0.05 * torch::randn_like(p)).to(dtype);  // off the initial values: the check must read them
    params.push_back(p);
    out.emplace_back("param." + names[i], p);
  }
  const torch::Tensor post = model::applyScoreTerms(scores, channels, channels, plan.attention, params);
  out.emplace_back("expected", model::attentionWeights(post, plan.model.softmax, false));
  const torch::Tensor q = torch::randn({B, H, L, D}, torch::kDouble).to(dtype), k = torch::randn({B, H, L, D}, torch::kDouble).to(dtype);
  auto ctx = model::buildPositionalContext(plan.attention, plan.model, channels, {}, dtype);
  out.emplace_back("q", q);
  out.emplace_back("k", k);
  out.emplace_back("q_rotated", model::applyRotary(q, ctx, model::Side::Query));
  out.emplace_back("k_rotated", model::applyKeyZeroing(model::applyRotary(k, ctx, model::Side::Key), ctx));
  train::writeSafetensors(out, {}, path);
}

TEST(Flex, EmittedScoreModsGivePoscsProbabilities) {
  if (interpreters().empty()) GTEST_SKIP() << kNoTorch;
  const fs::path dir = fs::path(::testing::TempDir()) / "flex";
  fs::create_directories(dir);
  int checked = 0;
  std::string cases;  // MODULE DATA TOLERANCE, for one Python process per interpreter
  for (const std::string& file : exampleFiles()) {
    SCOPED_TRACE(file);
    const plan::ExperimentPlan plan = compileSmall(file);
    ASSERT_FALSE(plan.name.empty());
    std::string why;
    ASSERT_TRUE(flex::emitModule(plan, why)) << why;
    const std::string stem = fs::path(file).stem().string();
    const fs::path module = dir / (stem + ".py");
    const posc::testing::PoscResult emitted = posc::testing::runPosc("emit flex " + file + " --preset small");
    ASSERT_EQ(emitted.status, 0) << emitted.err;
    posc::testing::writeFile(module, emitted.out);
    for (auto [dtype, tolerance] : {std::pair{torch::kDouble, 1e-12}, std::pair{torch::kFloat, 1e-5}}) {
      const fs::path data = dir / (stem + (dtype == torch::kDouble ? ".f64" : ".f32") + ".safetensors");
      writeCase(plan, dtype, data);
      cases += fmt::format(" '{}' '{}' {:g}", module.string(), data.string(), tolerance);
    }
    ++checked;
  }
  EXPECT_GE(checked, 19);
  for (const Interpreter& python : interpreters()) {
    SCOPED_TRACE(python.path);
    const fs::path log = dir / "check_score_mod.log";
    expectCheckPasses(python, "check_score_mod.py'" + cases, log);
    // Every case, and under PyTorch 2.x every one through flex_attention itself.
    const std::string want = fmt::format("checked {} cases, {} through flex_attention", 2 * checked,
                                         python.flex ? 2 * checked : 0);
    EXPECT_NE(posc::testing::readFile(log).find(want), std::string::npos) << want << "\n" << posc::testing::readFile(log);
  }
}

TEST(Flex, WhatFlexAttentionCannotExpressIsRefusedWithTheReason) {
  const posc::testing::PoscResult handset = posc::testing::runPosc("emit flex examples/adder/handset.pos");
  EXPECT_EQ(handset.status, 2);
  EXPECT_NE(handset.err.find("has no FlexAttention form"), std::string::npos) << handset.err;
}

// softmax1 and the null slot change the normaliser, which flex_attention's
// logsumexp gives: the module says which it has (the numbers are checked
// against posc's logits below).
TEST(Flex, Softmax1AndTheNullSlotAreWrittenWithTheNormaliser) {
  const posc::testing::PoscResult softmax1 =
      posc::testing::runPosc("emit flex examples/quickstart.pos --set 'model.softmax=softmax1'");
  ASSERT_EQ(softmax1.status, 0) << softmax1.err;
  EXPECT_NE(softmax1.out.find("SOFTMAX1 = True"), std::string::npos);
  EXPECT_NE(softmax1.out.find("NULL_SLOT = False"), std::string::npos);
  const posc::testing::PoscResult null_slot = posc::testing::runPosc("emit flex examples/longctx/decay_sink.pos");
  ASSERT_EQ(null_slot.status, 0) << null_slot.err;
  EXPECT_NE(null_slot.out.find("SOFTMAX1 = False"), std::string::npos);
  EXPECT_NE(null_slot.out.find("NULL_SLOT = True"), std::string::npos);
  EXPECT_NE(null_slot.out.find("def finish(out, lse, null_value=None)"), std::string::npos);
}

}  // namespace

namespace {

// A posc model (fresh weights, score parameters moved off their initial
// values), its checkpoint, and its logits on 50 teacher-forced problems.
void writeModelCase(plan::ExperimentPlan plan, torch::ScalarType dtype, const fs::path& model_path,
                    const fs::path& data_path) {
  task::Tokenizer tokenizer(plan.task);
  const auto problems = probe::probeProblems(plan.task, 11, plan.task.train_max_digits, 50);
  const probe::ForcedBatch batch = probe::forcedBatch(tokenizer, problems);
  torch::manual_seed(5);
  model::Gpt gpt(plan, tokenizer.vocabulary().size());
  gpt->to(dtype);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : gpt->named_parameters()) {
      const std::string& name = p.key();
      if (name.rfind("score_params.", 0) == 0) p.value().add_(0.05 * torch::randn_like(p.value()));
      // The null slot's values start at zero; a check must see them.
      if (name.ends_with(".null_value")) p.value().normal_(0, 1);
    }
  }
  gpt->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor logits = gpt->forward(batch.tokens, batch.channels);
  train::saveSafetensorsCheckpoint(*gpt, plan, model_path);
  train::writeSafetensors({{"tokens", batch.tokens}, {"channels", batch.channels}, {"logits", logits}}, {}, data_path);
}

}  // namespace

// A posc checkpoint runs in plain PyTorch (tools/posc_model.py with the
// experiment's emitted module) with posc's logits and its greedy choice at
// every position of 50 teacher-forced problems. The trained adder covers
// today's blocks (grouped-query heads, qk_norm, SwiGLU, no biases); the
// study's models with softmax1, a null slot or both cover the normaliser
// (flex_attention's logsumexp under PyTorch 2.x).
TEST(Flex, PoscModelInPythonGivesPoscsLogits) {
  if (interpreters().empty()) GTEST_SKIP() << kNoTorch;
  const fs::path dir = fs::path(::testing::TempDir()) / "flex_model";
  fs::create_directories(dir);
  std::string cases;  // MODULE MODEL DATA TOLERANCE, for one Python process per interpreter
  int checked = 0;
  struct Case {
    const char* file;
    const char* preset;
    bool softmax1 = false, null_slot = false;
  };
  for (const Case& c : {Case{"examples/addition/rope2d_decay_sink.pos", "small"},
                        Case{"examples/addition/learned_absolute.pos", "small"},
                        Case{"examples/addition/abacus.pos", "small"},
                        Case{"examples/addition/t5_position.pos", "small"},
                        Case{"examples/addition/xpos_position.pos", "small"},
                        Case{"examples/adder/trained_qwen3.pos", ""},
                        Case{"examples/addition/rope2d_decay_sink.pos", "small", true, false},
                        Case{"examples/addition/rope2d_decay.pos", "small", false, true},
                        Case{"examples/addition/t5_position.pos", "small", true, true}}) {
    SCOPED_TRACE(c.file);
    plan::ExperimentPlan plan = compileSmall(c.file, c.preset);
    ASSERT_FALSE(plan.name.empty());
    std::string stem = fs::path(c.file).stem().string();
    std::string text;
    if (c.softmax1 || c.null_slot) {
      // The plan as `softmax = softmax1` and `use null_attention()` would make it.
      if (c.softmax1) plan.model.softmax = plan::SoftmaxKind::Softmax1;
      plan.attention.null_slot = c.null_slot;
      stem += std::string(c.softmax1 ? "_softmax1" : "") + (c.null_slot ? "_null_slot" : "");
      std::string why;
      const std::optional<std::string> module = flex::emitModule(plan, why);
      ASSERT_TRUE(module) << why;
      text = *module;
    } else {
      const std::string preset_flag = *c.preset ? std::string(" --preset ") + c.preset : std::string();
      const posc::testing::PoscResult emitted = posc::testing::runPosc(std::string("emit flex ") + c.file + preset_flag);
      ASSERT_EQ(emitted.status, 0) << emitted.err;
      text = emitted.out;
    }
    const fs::path module = dir / (stem + ".py");
    posc::testing::writeFile(module, text);
    for (auto [dtype, tolerance] : {std::pair{torch::kDouble, 1e-10}, std::pair{torch::kFloat, 1e-5}}) {
      const std::string tag = dtype == torch::kDouble ? ".f64" : ".f32";
      const fs::path model = dir / (stem + tag + ".model.safetensors"), data = dir / (stem + tag + ".data.safetensors");
      writeModelCase(plan, dtype, model, data);
      cases += fmt::format(" '{}' '{}' '{}' {:g}", module.string(), model.string(), data.string(), tolerance);
      ++checked;
    }
  }
  for (const Interpreter& python : interpreters()) {
    SCOPED_TRACE(python.path);
    const fs::path log = dir / "check_model.log";
    expectCheckPasses(python, "check_model.py'" + cases, log);
    const std::string want =
        fmt::format("checked {} cases, {} through flex_attention", checked, python.flex ? checked : 0);
    EXPECT_NE(posc::testing::readFile(log).find(want), std::string::npos) << want << "\n" << posc::testing::readFile(log);
  }
}

// The same under torch.compile (PyTorch 2.x's environment only): inductor
// fuses the emitted score_mod into a CPU kernel, which must still give
// posc's logits (f32, 1e-4) and greedy choices. One example, the study's
// winner: a compile takes about 15 s per shape on this CPU.
TEST(Flex, CompiledFlexAttentionGivesPoscsLogits) {
  const auto flex = std::find_if(interpreters().begin(), interpreters().end(), [](const Interpreter& i) { return i.flex; });
  if (flex == interpreters().end()) GTEST_SKIP() << "no PyTorch 2.x environment (bash tools/python_env.sh)";
  // Made from Debian's Python, inductor links its CPU kernels against
  // Debian's LibTorch 1.13 (docs/results.md): torch.compile cannot work there.
  if (std::system((flex->path + " -c 'import sys; sys.exit(sys.base_prefix == \"/usr\")'").c_str()) != 0)
    GTEST_SKIP() << "the PyTorch 2.x environment was made from Debian's python3; see docs/results.md";
  const fs::path dir = fs::path(::testing::TempDir()) / "flex_compiled";
  fs::create_directories(dir);
  const std::string file = "examples/addition/rope2d_decay_sink.pos";
  const plan::ExperimentPlan plan = compileSmall(file);
  ASSERT_FALSE(plan.name.empty());
  const posc::testing::PoscResult emitted = posc::testing::runPosc("emit flex " + file + " --preset small");
  ASSERT_EQ(emitted.status, 0) << emitted.err;
  const fs::path module = dir / "attention.py", model = dir / "model.safetensors", data = dir / "data.safetensors";
  posc::testing::writeFile(module, emitted.out);
  writeModelCase(plan, torch::kFloat, model, data);
  const fs::path log = dir / "compiled.log";
  expectCheckPasses(*flex, "check_model.py' '" + module.string() + "' '" + model.string() + "' '" + data.string() + "' 1e-4",
                    log, "POSC_FLEX_COMPILE=1 ");
  EXPECT_NE(posc::testing::readFile(log).find("attention through compiled flex_attention"), std::string::npos)
      << posc::testing::readFile(log);
}

// A model saved from Python (its own safetensors writer, GPT names only)
// warm-starts a posc run; posc's extras absent from the file (the decay
// rates) keep their initialisation and the run says so.
TEST(Flex, AModelSavedFromPythonWarmStartsPosc) {
  if (interpreters().empty()) GTEST_SKIP() << kNoTorch;
  const fs::path dir = fs::path(::testing::TempDir()) / "flex_warm";
  fs::create_directories(dir);
  const std::string common = " --preset small --no-progress --threads 1 --set train.steps=5 --set task.test_digits=[3]"
                             " --set task.problems_per_length=10";
  const posc::testing::PoscResult first =
      posc::testing::runPosc("run examples/addition/rope2d_decay.pos" + common + " --out '" + (dir / "first").string() + "'");
  ASSERT_EQ(first.status, 0) << first.err;
  const fs::path from_python = dir / "from_python.safetensors";
  const std::string cmd = interpreters().front().path + " '" POSC_SOURCE_DIR "/tests/flex/save_from_python.py' '" +
                          (dir / "first/seed0/final.safetensors").string() + "' '" + from_python.string() + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const posc::testing::PoscResult warm = posc::testing::runPosc(
      "run examples/addition/rope2d_decay.pos" + common + " --set 'train.init_from=\"" + from_python.string() +
      "\"' --out '" + (dir / "second").string() + "'");
  ASSERT_EQ(warm.status, 0) << warm.err;
  EXPECT_NE(warm.err.find("warm start from " + from_python.string() + ": copied"), std::string::npos) << warm.err;
  EXPECT_NE(warm.err.find("score_params.decay_rate (absent)"), std::string::npos) << warm.err;
}

namespace {

// One test length's problems for check_decode.py: prompts, the channels of
// each emitted token, and posc's greedy answers (KV-cache decoder).
void writeDecodeCase(model::Gpt& gpt, const plan::ExperimentPlan& plan, int digits, const fs::path& path) {
  task::Tokenizer tokenizer(plan.task);
  const std::vector<task::Problem> problems = probe::probeProblems(plan.task, 17, digits, 25);
  const std::vector<eval::Generated> answers = eval::greedyDecode(gpt, tokenizer, problems, eval::decodeOptionsFor(plan));
  int correct = 0;
  for (size_t i = 0; i < problems.size(); ++i) correct += eval::isCorrect(tokenizer, problems[i], answers[i]);
  std::fprintf(stderr, "posc: %d of %zu correct at %d digits\n", correct, problems.size(), digits);
  const int64_t B = static_cast<int64_t>(problems.size());
  const int64_t P = static_cast<int64_t>(tokenizer.encodePrompt(problems[0]).tokens.size());
  const int64_t A = tokenizer.maxAnswerTokens(problems[0]);
  auto prompt_tokens = torch::zeros({B, P}, torch::kLong);
  auto prompt_channels = torch::zeros({plan::kChannelCount, B, P}, torch::kLong);
  auto answer_channels = torch::zeros({plan::kChannelCount, B, A}, torch::kLong);
  auto posc_answers = torch::full({B, A}, -1, torch::kLong);
  for (int64_t b = 0; b < B; ++b) {
    const task::Problem& p = problems[static_cast<size_t>(b)];
    const task::Sequence prompt = tokenizer.encodePrompt(p);
    ASSERT_EQ(static_cast<int64_t>(prompt.tokens.size()), P);
    ASSERT_EQ(tokenizer.maxAnswerTokens(p), A);
    for (int64_t l = 0; l < P; ++l) {
      prompt_tokens[b][l] = prompt.tokens[static_cast<size_t>(l)];
      for (int c = 0; c < plan::kChannelCount; ++c) prompt_channels[c][b][l] = prompt.channels[static_cast<size_t>(c)][static_cast<size_t>(l)];
    }
    for (int64_t i = 0; i < A; ++i) {
      const auto ch = tokenizer.answerChannels(p, static_cast<int>(i));
      for (int c = 0; c < plan::kChannelCount; ++c) answer_channels[c][b][i] = ch[static_cast<size_t>(c)];
    }
    const eval::Generated& g = answers[static_cast<size_t>(b)];
    for (size_t i = 0; i < g.size() && static_cast<int64_t>(i) < A; ++i) posc_answers[b][static_cast<int64_t>(i)] = g[i];
  }
  train::writeSafetensors({{"prompt_tokens", prompt_tokens},
                           {"prompt_channels", prompt_channels},
                           {"answer_channels", answer_channels},
                           {"posc_answers", posc_answers},
                           {"eos", torch::full({1}, static_cast<int64_t>(tokenizer.vocabulary().eos()), torch::kLong)}},
                          {}, path);
}

}  // namespace

// A model trained by posc, saved as safetensors and loaded by
// tools/posc_model.py, answers 50 problems with the same greedy tokens when
// Python decodes autoregressively (a full forward pass per emitted token) as
// posc's KV-cache decoder does: 25 at the training length and 25 beyond it.
TEST(Flex, TrainedPoscModelDecodesGreedilyInPythonAsInPosc) {
  if (interpreters().empty()) GTEST_SKIP() << kNoTorch;
  const fs::path dir = fs::path(::testing::TempDir()) / "flex_decode";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string file = "examples/addition/rope2d_decay.pos";
  const posc::testing::PoscResult trained = posc::testing::runPosc(
      "run " + file + " --preset small --seed 0 --steps 400 --threads 1 --no-progress --set task.test_digits=[5]"
      " --set task.problems_per_length=10 --out '" + (dir / "run").string() + "'");
  ASSERT_EQ(trained.status, 0) << trained.err;
  const posc::testing::PoscResult emitted = posc::testing::runPosc("emit flex " + file + " --preset small");
  ASSERT_EQ(emitted.status, 0) << emitted.err;
  const fs::path module = dir / "attention.py";
  posc::testing::writeFile(module, emitted.out);

  const plan::ExperimentPlan plan = compileSmall(file);
  ASSERT_FALSE(plan.name.empty());
  task::Tokenizer tokenizer(plan.task);
  model::Gpt gpt(plan, tokenizer.vocabulary().size());
  train::loadCheckpoint(*gpt, dir / "run/seed0/final.pt");
  gpt->eval();
  std::string data_files;
  for (int digits : {plan.task.train_max_digits, plan.task.train_max_digits + 2}) {
    const fs::path data = dir / fmt::format("decode{}.safetensors", digits);
    writeDecodeCase(gpt, plan, digits, data);
    data_files += " '" + data.string() + "'";
  }
  const fs::path log = dir / "decode.log";
  for (const Interpreter& python : interpreters()) {
    expectCheckPasses(python,
                      "check_decode.py' '" + module.string() + "' '" + (dir / "run/seed0/final.safetensors").string() +
                          "'" + data_files,
                      log);
    std::fprintf(stderr, "%s", posc::testing::readFile(log).c_str());
  }
}
