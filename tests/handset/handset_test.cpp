// Hand-set models: the forward pass against closed forms, parameter counting
// by rule, the <bos> token, and the 10-digit adder example at 100% on the
// leaderboard's 10,010 cases.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cmath>

#include "compiler/driver/compile.h"
#include "compiler/plan/params.h"
#include "runtime/handset/evaluate.h"
#include "runtime/handset/forward.h"
#include "runtime/task/addition.h"

namespace {

using posc::plan::ExperimentPlan;

ExperimentPlan compileText(const std::string& text) {
  const std::string path = ::testing::TempDir() + "/handset_test.pos";
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  posc::driver::Compilation c;
  posc::driver::CompileRequest r;
  r.path = path;
  const bool ok = c.compile(r);
  EXPECT_TRUE(ok) << c.diags.render(false);
  return ok ? *c.plan : ExperimentPlan{};
}

ExperimentPlan compileFile(const std::string& path) {
  EXPECT_EQ(chdir(POSC_SOURCE_DIR), 0);
  posc::driver::Compilation c;
  posc::driver::CompileRequest r;
  r.path = path;
  const bool ok = c.compile(r);
  EXPECT_TRUE(ok) << c.diags.render(false);
  return ok ? *c.plan : ExperimentPlan{};
}

// One layer, one head of dimension 1, no query/key weights: every score is
// the query bias b times the key bias 1, minus slope * distance. Values read
// embedding dimension 0 (token value t for digit t), the output head is the
// identity on a width-15 residual (vocabulary 14 + <bos>... here 14: no <bos>).
const char* kOneHead = R"(
experiment one_head {
  task  { order = padded  train_max_digits = 3 }
  model { softmax = SOFTMAX }
  embed { width = 14  table = identity() }
  layer {
    heads = 1  head_dim = 1
    query_bias = [B]  key_bias = [1]
    alibi = [SLOPE]
    value = sparse([(0, 1, 1), (0, 2, 2), (0, 3, 3)])
    out = sparse([(13, 0, 1)])
  }
  unembed { table = identity() }
}
)";

std::string oneHead(const std::string& softmax, double bias, double slope) {
  std::string s = kOneHead;
  s.replace(s.find("SOFTMAX"), 7, softmax);
  s.replace(s.find("B]"), 1, fmt::format("{}", bias));
  s.replace(s.find("SLOPE"), 5, fmt::format("{}", slope));
  return s;
}

}  // namespace

TEST(HandsetForward, Softmax1WeightsMatchTheClosedForm) {
  // Tokens 1, 2, 3 (values 1, 2, 3 in the head). At query position 2 the
  // scores are b - 2a, b - a, b; softmax1 weights e^s / (1 + sum e^s).
  const double b = 0.7, a = 0.4;
  ExperimentPlan plan = compileText(oneHead("softmax1", b, a));
  ASSERT_TRUE(plan.handset);
  posc::handset::Forward f(*plan.handset, plan.model.softmax);
  const std::vector<double> logits = f.logits({1, 2, 3});
  ASSERT_EQ(logits.size(), 3u * 14u);
  const double e0 = std::exp(b - 2 * a), e1 = std::exp(b - a), e2 = std::exp(b);
  const double expected = (1 * e0 + 2 * e1 + 3 * e2) / (1 + e0 + e1 + e2);
  EXPECT_NEAR(logits[2 * 14 + 13], expected, 1e-15);
  // Position 0 sees only itself: e^b / (1 + e^b) times value 1.
  EXPECT_NEAR(logits[0 * 14 + 13], std::exp(b) / (1 + std::exp(b)), 1e-15);
  // The residual passes the one-hot embedding through.
  EXPECT_EQ(logits[1 * 14 + 2], 1.0);
  EXPECT_EQ(logits[1 * 14 + 1], 0.0);
}

TEST(HandsetForward, StandardSoftmaxNormalises) {
  const double b = -3.0, a = 1.5;
  ExperimentPlan plan = compileText(oneHead("standard", b, a));
  posc::handset::Forward f(*plan.handset, plan.model.softmax);
  const std::vector<double> logits = f.logits({3, 1});
  // Query 1: scores b - a (key 0, value 3), b (key 1, value 1).
  const double w0 = std::exp(-a) / (std::exp(-a) + 1.0);
  EXPECT_NEAR(logits[1 * 14 + 13], 3 * w0 + 1 * (1 - w0), 1e-15);
}

TEST(HandsetForward, ReGLUAndWideningLayer) {
  // Width 2 -> 3: the third dimension starts at zero; ReGLU writes
  // relu(x0 - 1) * (2 x1) into it.
  ExperimentPlan plan = compileText(R"(
experiment reglu {
  task  { order = padded  train_max_digits = 3 }
  embed { width = 2  table = sparse([(4, 0, 3), (4, 1, 0.25), (5, 0, -2), (5, 1, 1)]) }
  layer { width = 3  mlp_hidden = 1  gate = [[1, 0, 0]]  gate_bias = [-1]  up = [[0, 2, 0]]  down = [[0], [0], [1]] }
  unembed { table = sparse([(0, 2, 1), (1, 0, 1)]) }
}
)");
  ASSERT_TRUE(plan.handset);
  posc::handset::Forward f(*plan.handset, plan.model.softmax);
  const std::vector<double> logits = f.logits({4, 5});
  EXPECT_DOUBLE_EQ(logits[0], (3 - 1) * (2 * 0.25));  // token 4: relu(2) * 0.5
  EXPECT_DOUBLE_EQ(logits[1], 3);
  EXPECT_DOUBLE_EQ(logits[14 + 0], 0.0);  // token 5: relu(-3) = 0
  EXPECT_DOUBLE_EQ(logits[14 + 1], -2);
}

TEST(HandsetParams, RoutingTensors) {
  posc::plan::WeightTensor t;
  t.rows = 2;
  t.cols = 3;
  t.values = {0, 1, 0, 0, 0, 1};
  EXPECT_TRUE(posc::plan::routesOnly(t));
  t.values = {0, 1, 0, 0, 1, 0};  // two ones in one column
  EXPECT_FALSE(posc::plan::routesOnly(t));
  t.values = {0, 2, 0, 0, 0, 1};  // not a 1
  EXPECT_FALSE(posc::plan::routesOnly(t));
  t.values = {0, 0, 0, 0, 0, 0};  // nothing to route
  EXPECT_FALSE(posc::plan::routesOnly(t));
}

TEST(HandsetTokens, BosOpensTheSequence) {
  posc::plan::TaskPlan task;
  task.order = posc::plan::DigitOrder::Padded;
  task.train_max_digits = 3;
  task.bos = true;
  posc::task::Tokenizer tok(task);
  EXPECT_EQ(tok.vocabulary().size(), 15);
  posc::task::Problem p{{posc::task::Number::fromString("12"), posc::task::Number::fromString("5")},
                        posc::task::Number::fromString("17")};
  posc::task::Sequence s = tok.encode(p);
  EXPECT_EQ(tok.render(s), "<bos> 0 1 2 + 0 0 5 = 0 0 1 7 <eos>");
  EXPECT_EQ(s.prompt_length, 9);
  EXPECT_EQ(tok.answerChannels(p, 0)[static_cast<int>(posc::plan::Channel::Position)], 9);
}

TEST(HandsetAdder, ParameterCountsUnderEveryRule) {
  ExperimentPlan plan = compileFile("examples/adder/handset.pos");
  ASSERT_TRUE(plan.handset);
  const posc::plan::ParameterCounts c = posc::plan::countParameters(*plan.handset);
  // embed 15 x 4 + layer 1 (1 + 1 + 4 + 4 + 4 + 4 + 4) + layer 2 (1 + 1 + 5 + 5) + unembed 15 x 5
  EXPECT_EQ(c.dense, 60 + 22 + 12 + 75);
  // embed: 9 digit values, 3 flags, the <bos> half unit; 7 + 4 entries in the
  // layers; 2 per digit in the head.
  EXPECT_EQ(c.nonzero, 13 + 7 + 4 + 20);
  // Without the 9 routing entries (key biases, value, out, gate, up, down).
  EXPECT_EQ(c.no_identity, 35);
  // The 9 routing ones are one shared value.
  EXPECT_EQ(c.unique, 44 - 9 + 1);
  EXPECT_EQ(c.alibi_slopes, 1);
}

TEST(HandsetAdder, AllTenThousandAndTenLeaderboardCases) {
  ExperimentPlan plan = compileFile("examples/adder/handset.pos");
  ASSERT_TRUE(plan.handset);
  posc::handset::Forward f(*plan.handset, plan.model.softmax);
  const auto r = posc::handset::evaluateAdderBoard([&](const std::vector<int64_t>& t) { return f.logits(t); }, plan.task);
  EXPECT_EQ(r.total, 10010);
  EXPECT_EQ(r.correct, 10010);
  for (size_t i = 0; i < r.failures.size() && i < 5; ++i)
    ADD_FAILURE() << r.failures[i].a << " + " << r.failures[i].b << " = " << r.failures[i].expected << ", got "
                  << r.failures[i].got;
}

TEST(HandsetAdder, ABrokenWeightIsCaught) {
  // The protocol can fail: without the <bos>'s half unit, a remainder whose
  // lower digits are all zero sits exactly on the boundary between two
  // digits, and rounding decides.
  ExperimentPlan plan = compileFile("examples/adder/handset.pos");
  ASSERT_TRUE(plan.handset);
  plan.handset->embed.values[14 * 4 + 3] = 0.0;
  posc::handset::Forward f(*plan.handset, plan.model.softmax);
  const auto r = posc::handset::evaluateAdderBoard([&](const std::vector<int64_t>& t) { return f.logits(t); }, plan.task);
  EXPECT_LT(r.correct, r.total);
}
