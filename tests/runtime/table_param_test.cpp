// Table parameters (`param bias[h][32] = 0, learned = true`, read as
// `bias[h][index]`) and the stdlib's T5 relative buckets built on them:
// the bucket of every (query, key) pair against T5's bucket function written
// out here independently, the table's gradient against finite differences at
// distances that reach the log-spaced buckets, the fused JIT kernel against
// the tensor path with tables shared by the heads, and the front end's
// errors for tables read the wrong way.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <string>

#include "compiler/driver/compile.h"
#include "compiler/jit/compiled.h"
#include "runtime/model/attention.h"
#include "runtime/model/fused_attention.h"
#include "runtime/model/score_formula.h"

using namespace posc;

namespace {

// T5's _relative_position_bucket (relative_position = key - query), as the
// reference implementation computes it with integer buckets.
int64_t t5Bucket(int64_t relative_position, bool bidirectional, int64_t num_buckets, double max_distance) {
  int64_t buckets = 0;
  int64_t n = relative_position;
  if (bidirectional) {
    num_buckets /= 2;
    if (n > 0) buckets += num_buckets;
    n = n < 0 ? -n : n;
  } else {
    n = n < 0 ? -n : 0;
  }
  const int64_t max_exact = num_buckets / 2;
  if (n < max_exact) return buckets + n;
  auto large = max_exact + static_cast<int64_t>(std::log(static_cast<double>(n) / max_exact) /
                                                std::log(max_distance / max_exact) * (num_buckets - max_exact));
  return buckets + std::min(large, num_buckets - 1);
}

std::string source(const std::string& attention, int heads = 2) {
  return "import t5\nexperiment e {\n  model { layers = 1  width = " + std::to_string(16 * heads) +
         "  heads = " + std::to_string(heads) + " }\n  attention {\n    " + attention + "\n  }\n}\n";
}

std::optional<plan::ExperimentPlan> compile(const std::string& text, std::string* errors = nullptr) {
  driver::Compilation c;
  driver::CompileRequest r;
  r.path = "table_test.pos";
  r.text = text;
  if (!c.compile(r)) {
    if (errors) *errors = c.diags.render(false);
    return std::nullopt;
  }
  return *c.plan;
}

// Channels of one sequence of L tokens: position 0..L-1, the rest zero.
torch::Tensor positions(int64_t L) {
  auto ch = torch::zeros({plan::kChannelCount, 1, L}, torch::kLong);
  ch[0] = torch::arange(L).reshape({1, L});
  return ch;
}

}  // namespace

TEST(TableParam, T5BucketsMatchTheReferenceBucketFunction) {
  const int64_t L = 700;  // distances beyond max_distance = 128 and up to 699
  for (bool bidirectional : {false, true}) {
    SCOPED_TRACE(bidirectional ? "bidirectional" : "causal");
    auto p = compile(source(bidirectional ? "use t5_bias_bidirectional(buckets = 32, max_distance = 128)"
                                          : "use t5_bias(buckets = 32, max_distance = 128)"));
    ASSERT_TRUE(p);
    ASSERT_EQ(p->attention.params.size(), 1u);
    const plan::Param& table = p->attention.params[0];
    EXPECT_TRUE(table.learned);
    EXPECT_TRUE(table.per_head);
    EXPECT_EQ(table.size, 32);
    // With entry e holding e (+ 100 on head 1), the term adds the bucket.
    auto entries = torch::arange(32, torch::kDouble).reshape({1, 32}).repeat({2, 1});
    entries[1] += 100;
    auto scores = torch::zeros({1, 2, L, L}, torch::kDouble);
    auto ch = positions(L);
    auto out = model::applyScoreTerms(scores, ch, ch, p->attention, {entries});
    auto got = out.accessor<double, 4>();
    int64_t checked = 0;
    for (int64_t q = 0; q < L; q += 3)
      for (int64_t k = 0; k < L; k += 1) {
        const auto want = static_cast<double>(t5Bucket(k - q, bidirectional, 32, 128));
        ASSERT_EQ(got[0][0][q][k], want) << "q " << q << " k " << k;
        ASSERT_EQ(got[0][1][q][k], want + 100) << "q " << q << " k " << k;
        ++checked;
      }
    EXPECT_GT(checked, 100000);
  }
}

TEST(TableParam, T5TableGradientMatchesFiniteDifferencesInEveryBucket) {
  // L = 300: every one of the 32 causal buckets is read, the last ones by
  // distances past max_distance.
  auto p = compile(source("use t5_bias(buckets = 32, max_distance = 128)"));
  ASSERT_TRUE(p);
  const int64_t L = 300, H = 2;
  torch::manual_seed(3);
  auto scores0 = torch::randn({1, H, L, L}, torch::kDouble);
  auto weight = torch::randn({1, H, L, L}, torch::kDouble);
  auto table0 = torch::randn({H, 32}, torch::kDouble);
  auto ch = positions(L);
  const bool jit = jit::available();
  for (bool fused : {false, true}) {
    if (fused && !jit) continue;
    SCOPED_TRACE(fused ? "fused JIT kernel" : "tensor path");
    auto loss = [&](const torch::Tensor& table) {
      std::vector<torch::Tensor> params{table};
      auto probs = fused ? model::fusedAttentionWeights(scores0, ch, ch, p->attention, p->model.softmax, params)
                         : model::attentionWeights(model::applyScoreTerms(scores0, ch, ch, p->attention, params),
                                                   p->model.softmax, false);
      return (probs * weight).sum();
    };
    auto table = table0.clone().set_requires_grad(true);
    loss(table).backward();
    auto grad = table.grad();
    const double h = 1e-6;
    for (int64_t head = 0; head < H; ++head)
      for (int64_t e = 0; e < 32; ++e) {
        auto tp = table0.clone(), tm = table0.clone();
        tp[head][e] += h;
        tm[head][e] -= h;
        const double fd = (loss(tp).item<double>() - loss(tm).item<double>()) / (2 * h);
        const double g = grad[head][e].item<double>();
        ASSERT_NE(g, 0.0) << "head " << head << " bucket " << e << " is never read";
        EXPECT_NEAR(g, fd, 1e-7 * (1 + std::fabs(fd))) << "head " << head << " bucket " << e;
      }
  }
}

TEST(TableParam, SharedAndPerHeadTablesInTheFusedKernelMatchTheTensorPath) {
  if (!jit::available()) GTEST_SKIP() << "built without LLVM";
  // A table shared by the heads beside a per-head table and a per-head
  // value, indices out of range on both sides and fractional.
  auto p = compile(source(
      "param w[6] = [0.5, -1, 2, 0.25, 3, -2], learned = true\n"
      "    param t[h][4] = [[1, 2, 3, 4], [-1, -2, -3, -4]], learned = true\n"
      "    param a[h] = [0.3, 0.7], learned = true\n"
      "    score = s * a[h] + w[(q.position - k.position) / 3 - 1] + t[h][k.position * 0.75 - 1]",
      2));
  ASSERT_TRUE(p);
  const int64_t L = 40;
  torch::manual_seed(11);
  for (auto dtype : {torch::kDouble, torch::kFloat}) {
    auto scores0 = torch::randn({2, 2, L, L}, torch::kDouble).to(dtype);
    auto weight = torch::randn({2, 2, L, L}, torch::kDouble).to(dtype);
    auto ch = torch::zeros({plan::kChannelCount, 2, L}, torch::kLong);
    ch[0] = torch::arange(L).expand({2, L});
    std::vector<torch::Tensor> grads[2], probs(2), gscores(2);
    for (int fused = 0; fused < 2; ++fused) {
      auto scores = scores0.clone().set_requires_grad(true);
      std::vector<torch::Tensor> params = {
          torch::tensor({0.5, -1.0, 2.0, 0.25, 3.0, -2.0}, torch::kDouble).to(dtype).set_requires_grad(true),
          torch::tensor({1.0, 2.0, 3.0, 4.0, -1.0, -2.0, -3.0, -4.0}, torch::kDouble).reshape({2, 4}).to(dtype)
              .set_requires_grad(true),
          torch::tensor({0.3, 0.7}, torch::kDouble).to(dtype).set_requires_grad(true)};
      auto pr = fused ? model::fusedAttentionWeights(scores, ch, ch, p->attention, p->model.softmax, params)
                      : model::attentionWeights(model::applyScoreTerms(scores, ch, ch, p->attention, params),
                                                p->model.softmax, false);
      (pr * weight).sum().backward();
      probs[fused] = pr.detach().to(torch::kDouble);
      gscores[fused] = scores.grad().to(torch::kDouble);
      for (auto& t : params) grads[fused].push_back(t.grad().to(torch::kDouble));
    }
    const double tol = dtype == torch::kDouble ? 1e-12 : 1e-5;
    EXPECT_TRUE(torch::allclose(probs[1], probs[0], tol, tol)) << "probabilities";
    EXPECT_TRUE(torch::allclose(gscores[1], gscores[0], tol, tol)) << "d/dscores";
    for (size_t i = 0; i < 3; ++i)
      EXPECT_TRUE(torch::allclose(grads[1][i], grads[0][i], 10 * tol, 10 * tol))
          << "param " << i << "\nfused " << grads[1][i] << "\ntensor " << grads[0][i];
    // Entries read: w at (q - k) / 3 - 1 clamped (0 .. 5), t at 0.75 k - 1.
    EXPECT_NE(grads[0][0][0].item<double>(), 0.0);
    EXPECT_NE(grads[0][0][5].item<double>(), 0.0);
  }
}

TEST(TableParam, ANanIndexReadsNaN) {
  auto p = compile(source("param t[3] = [1, 2, 3]\n    score = s + t[log(q.position - k.position - 1)]", 2));
  ASSERT_TRUE(p);
  auto ch = positions(4);
  auto out = model::applyScoreTerms(torch::zeros({1, 2, 4, 4}, torch::kDouble), ch, ch, p->attention,
                                    {torch::tensor({1.0, 2.0, 3.0}, torch::kDouble)});
  // q - k - 1: -1 (k = q) is NaN in the log; 0 is -inf (entry 0); 1 is 0 (entry 0); 2 is log 2 (entry 0).
  EXPECT_TRUE(std::isnan(out[0][0][2][2].item<double>()));
  EXPECT_EQ(out[0][0][2][1].item<double>(), 1.0);
  EXPECT_EQ(out[0][0][3][0].item<double>(), 1.0);
}

TEST(TableParam, TablesReadTheWrongWayAreLocatedErrors) {
  struct Case {
    std::string attention, message;
  };
  const std::vector<Case> cases = {
      {"param t[h][4] = 0\n    score = s + t[h]", "table 't' has a row per head: read it as 't[h][...]'"},
      {"param t[h][4] = 0\n    score = s + t", "table 't' is read one entry at a time"},
      {"param t[4] = 0\n    score = s + t[h][1]", "table 't' is shared by the heads: read it as 't[...]'"},
      {"param a[h] = 1\n    score = s + a[h][1]", "parameter 'a' is not a table"},
      {"param t[h][0] = 0\n    score = s", "a table's size must be a whole number from 1 to 65536"},
      {"param t[h][2.5] = 0\n    score = s", "a table's size must be a whole number"},
      {"param t[h][3] = [1, 2]\n    score = s", "a row of table 't' has 2 entries; give 3"},
      {"param t[h][2] = [[1, 2]]\n    score = s", "table 't' has 1 row but the model has 2 heads"},
      {"param t[2] = [[1, 2], [3, 4]]\n    score = s", "table 't' is shared by the heads"},
      {"param t[h][2][3] = 0\n    score = s", "a parameter has at most two brackets"},
  };
  for (const Case& c : cases) {
    std::string errors;
    EXPECT_FALSE(compile(source(c.attention), &errors)) << c.attention;
    EXPECT_NE(errors.find(c.message), std::string::npos) << c.attention << "\n" << errors;
    EXPECT_NE(errors.find("table_test.pos:"), std::string::npos) << errors;
  }
}

TEST(TableParam, PlanListsTheTableAndRendersItsReads) {
  auto p = compile(source("param t[h][3] = [[1, 2, 3], [4, 5, 6]], learned = true\n"
                          "    score = s + t[h][q.position - k.position]"));
  ASSERT_TRUE(p);
  const std::string dump = plan::dumpPlan(*p);
  EXPECT_NE(dump.find("param t[h][3] table learned, from = [[1, 2, 3], [4, 5, 6]]"), std::string::npos) << dump;
  EXPECT_NE(dump.find("s <- s + t[h][q.position - k.position]"), std::string::npos) << dump;
  EXPECT_EQ(p->attention.params[0].init, (std::vector<double>{1, 2, 3, 4, 5, 6}));
}
