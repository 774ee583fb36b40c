// The stdlib's published encodings against their papers' formulas, written
// out here independently of the stdlib's score formulas: every (query, key)
// pair of a sequence, on the tensor path and in the fused JIT kernel (where
// the attention probabilities are compared), in f64 (1e-12) and f32 (1e-6).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <functional>
#include <optional>
#include <random>
#include <string>

#include "compiler/driver/compile.h"
#include "compiler/jit/compiled.h"
#include "runtime/model/attention.h"
#include "runtime/model/fused_attention.h"
#include "runtime/model/positional.h"
#include "runtime/model/gpt.h"
#include "runtime/model/score_formula.h"
#include "runtime/task/addition.h"
#include "runtime/train/sampling.h"

using namespace posc;

namespace {

// An experiment of two heads of 16 whose attention section is `attention`,
// with every stdlib module imported; the plan, or the rendered errors.
struct Compiled {
  std::optional<plan::ExperimentPlan> plan;
  std::string errors;
};

Compiled compileAttention(const std::string& attention, const std::string& model_extra = "") {
  driver::Compilation c;
  driver::CompileRequest r;
  r.path = "encodings_test.pos";
  r.text = "import kerple\nimport rope\nimport absolute\nimport randomized\nimport sandwich\nimport fire\nexperiment e {\n  model { layers = 1  width = 32  heads = 2" +
           model_extra + " }\n  attention {\n    " + attention + "\n  }\n}\n";
  Compiled out;
  if (c.compile(r)) out.plan = *c.plan;
  out.errors = c.diags.render(false);
  return out;
}

plan::ExperimentPlan compile(const std::string& use) {
  Compiled c = compileAttention(use);
  EXPECT_TRUE(c.plan) << c.errors;
  return c.plan ? *c.plan : plan::ExperimentPlan{};
}

// Checks score <- s + bias(head, i, j) for every pair of an L-token
// sequence whose position channel is 0..L-1 (query i, key j <= i), then the
// fused kernel's probabilities against the tensor path's.
// `f32_tolerance`: relative, for float32 (1e-6 unless the formula's own
// float32 rounding is larger).
void expectBiasAt(const plan::ExperimentPlan& p, const std::function<double(int, int64_t, int64_t)>& bias,
                  const std::string& what, double f32_tolerance = 1e-6) {
  const int64_t L = 300, H = 2;
  auto ch = torch::zeros({plan::kChannelCount, 1, L}, torch::kLong);
  ch[0] = torch::arange(L).reshape({1, L});
  std::vector<torch::Tensor> params;
  for (const plan::Param& prm : p.attention.params) {
    torch::Tensor t = torch::tensor(prm.init, torch::kDouble);
    if (prm.table()) t = prm.per_head ? t.reshape({H, prm.size}) : t.reshape({prm.size});
    params.push_back(t);
  }
  torch::manual_seed(5);
  for (auto dtype : {torch::kDouble, torch::kFloat}) {
    SCOPED_TRACE(what + (dtype == torch::kDouble ? " f64" : " f32"));
    const double tol = dtype == torch::kDouble ? 1e-12 : f32_tolerance;
    auto s = (torch::randn({1, H, L, L}, torch::kDouble) * 3).to(dtype);
    std::vector<torch::Tensor> typed;
    for (auto& t : params) typed.push_back(t.to(dtype));
    auto out = model::applyScoreTerms(s, ch, ch, p.attention, typed).to(torch::kDouble);
    auto got = out.accessor<double, 4>();
    auto s64 = s.to(torch::kDouble);
    auto raw = s64.accessor<double, 4>();
    for (int h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; i += 7)
        for (int64_t j = 0; j <= i; ++j) {
          const double want = raw[0][h][i][j] + bias(h, i, j);
          ASSERT_NEAR(got[0][h][i][j], want, tol * (1 + std::fabs(want))) << "head " << h << " i " << i << " j " << j;
        }
    if (!jit::available()) continue;
    auto reference = model::attentionWeights(out.to(dtype), p.model.softmax, false);
    auto fused = model::fusedAttentionWeights(s, ch, ch, p.attention, p.model.softmax, typed);
    EXPECT_TRUE(torch::allclose(fused.to(torch::kDouble), reference.to(torch::kDouble), tol, tol)) << "fused kernel";
  }
}

// The same for a bias of the distance i - j alone.
void expectBias(const plan::ExperimentPlan& p, const std::function<double(int, double)>& bias, const std::string& what,
                double f32_tolerance = 1e-6) {
  expectBiasAt(p, [&](int h, int64_t i, int64_t j) { return bias(h, static_cast<double>(i - j)); }, what, f32_tolerance);
}

}  // namespace

TEST(Encodings, KerpleLogIsMinusR1LogOnePlusR2Distance) {
  // Chi et al. 2022, eq. for the logarithmic variant: -r1 log(1 + r2 |m - n|).
  const double r1[] = {0.5, 2.0}, r2[] = {1.5, 0.3};
  auto p = compile("use kerple_log(r1 = [0.5, 2], r2 = [1.5, 0.3])");
  expectBias(p, [&](int h, double d) { return -r1[h] * std::log(1 + r2[h] * d); }, "kerple_log");
}

TEST(Encodings, KerplePowerIsMinusR1DistanceToTheR2) {
  // Chi et al. 2022, the power variant: -r1 |m - n|^r2, 0 < r2 <= 2.
  const double r1[] = {0.25, 1.0}, r2[] = {0.5, 1.75};
  auto p = compile("use kerple_power(r1 = [0.25, 1], r2 = [0.5, 1.75])");
  expectBias(p, [&](int h, double d) { return -r1[h] * std::pow(d, r2[h]); }, "kerple_power");
}

TEST(Encodings, SandwichIsTheInnerProductOfSinusoidalEmbeddings) {
  // Chi et al. 2023, section 5: s + lambda p_m . p_n, with p Vaswani et al.'s
  // sinusoidal embedding of dimension dim: entries sin(m w_i), cos(m w_i),
  // w_i = 1 / 10000^(2i / dim). The product is formed here from the two
  // embeddings (the key at 0, so p_n = (0, 1, 0, 1, ...)).
  const double scale[] = {0.5, 2.0};
  const int dim = 16;
  auto embedding = [&](double m) {
    std::vector<double> p;
    for (int i = 0; i < dim / 2; ++i) {
      const double w = 1.0 / std::pow(10000.0, 2.0 * i / dim);
      p.push_back(std::sin(m * w));
      p.push_back(std::cos(m * w));
    }
    return p;
  };
  const std::vector<double> at_zero = embedding(0);
  auto p = compile("use sandwich(dim = 16, scale = [0.5, 2])");
  expectBias(p, [&](int h, double d) {
    const std::vector<double> pm = embedding(d);
    double dot = 0;
    for (size_t k = 0; k < pm.size(); ++k) dot += pm[k] * at_zero[k];
    return scale[h] * dot;
  }, "sandwich", /*f32_tolerance=*/1e-5);  // float32 rounds an angle of 300 radians by up to 1.8e-5
  // An odd dimension has no sinusoidal embedding.
  EXPECT_NE(compileAttention("use sandwich(dim = 15)").errors.find("Sandwich's embedding dimension is an even number"),
            std::string::npos);
}

TEST(Encodings, FireIsAnMlpOfTheProgressivelyNormalisedDistance) {
  // Li et al. 2024, section 3: b(i, j) = f(psi(i - j) / psi(max(L, i))),
  // psi(x) = log(c x + 1), f an MLP with one hidden ReLU layer; here with
  // three hidden units of chosen weights (the same for both heads) and a
  // threshold L = 40, so queries before and after it are both checked.
  const double w1[] = {2.0, -1.5, 0.5}, b1[] = {-0.2, 0.9, 0.1}, w2[] = {1.25, -0.75, 3.0};
  const double c = 0.7, L = 40;
  auto p = compile("use fire(hidden = 3, c = 0.7, threshold = 40, w1 = [2, -1.5, 0.5], b1 = [-0.2, 0.9, 0.1], "
                   "w2 = [1.25, -0.75, 3])");
  expectBiasAt(p, [&](int, int64_t i, int64_t j) {
    const auto psi = [&](double x) { return std::log(c * x + 1); };
    const double x = psi(static_cast<double>(i - j)) / psi(std::max(L, static_cast<double>(i)));
    double f = 0;
    for (int u = 0; u < 3; ++u) f += w2[u] * std::max(0.0, w1[u] * x + b1[u]);
    return f;
  }, "fire");
  // Its tables and numbers are learned per head: 2 numbers + 3 tables.
  int tables = 0;
  for (const plan::Param& prm : p.attention.params) tables += prm.table() ? 1 : 0;
  EXPECT_EQ(tables, 3);
  EXPECT_EQ(p.attention.params.size(), 5u);
  EXPECT_NE(compileAttention("use fire(c = 0)").errors.find("FIRE needs c > 0"), std::string::npos);
}

TEST(Encodings, KerpleArgumentsOutOfRangeAreRefused) {
  Compiled c = compileAttention("use kerple_power(r2 = [1, 2.5])");
  EXPECT_FALSE(c.plan);
  EXPECT_NE(c.errors.find("KERPLE power needs r1 > 0 and 0 < r2 <= 2"), std::string::npos) << c.errors;
}

namespace {

// Checks q_n . k_m against the rotated dot product written out here, pair by
// pair: sum_i scale(i, n - m) (R(n w_i) q_i) . (R(m w_i) k_i), for random
// queries and keys at positions 0..L-1, in f64 (1e-12) and f32 (1e-6).
void expectRotated(const plan::ExperimentPlan& p, const std::function<double(int64_t)>& omega,
                   const std::function<double(int64_t, double)>& scale) {
  const int64_t L = 200, H = 2, D = p.model.head_dim, P = D / 2;
  auto ch = torch::zeros({plan::kChannelCount, 1, L}, torch::kLong);
  ch[0] = torch::arange(L).reshape({1, L});
  torch::manual_seed(9);
  auto q = torch::randn({1, H, L, D}, torch::kDouble), k = torch::randn({1, H, L, D}, torch::kDouble);
  for (auto dtype : {torch::kDouble, torch::kFloat}) {
    auto ctx = model::buildPositionalContext(p.attention, p.model, ch, {}, dtype);
    auto got = torch::matmul(model::applyRotary(q.to(dtype), ctx, model::Side::Query),
                             model::applyRotary(k.to(dtype), ctx, model::Side::Key).transpose(-2, -1))
                   .to(torch::kDouble);
    auto qa = q.accessor<double, 4>(), ka = k.accessor<double, 4>();
    auto g = got.accessor<double, 4>();
    const double tol = dtype == torch::kDouble ? 1e-12 : 1e-6;
    for (int h = 0; h < H; ++h)
      for (int64_t n = 0; n < L; n += 11)
        for (int64_t m = 0; m <= n; m += 3) {
          double want = 0, size = 0;
          for (int64_t i = 0; i < P; ++i) {
            const double w = omega(i);
            const double a = n * w, b = m * w;
            const double q0 = qa[0][h][n][2 * i] * std::cos(a) - qa[0][h][n][2 * i + 1] * std::sin(a);
            const double q1 = qa[0][h][n][2 * i + 1] * std::cos(a) + qa[0][h][n][2 * i] * std::sin(a);
            const double k0 = ka[0][h][m][2 * i] * std::cos(b) - ka[0][h][m][2 * i + 1] * std::sin(b);
            const double k1 = ka[0][h][m][2 * i + 1] * std::cos(b) + ka[0][h][m][2 * i] * std::sin(b);
            want += scale(i, static_cast<double>(n - m)) * (q0 * k0 + q1 * k1);
            size += std::fabs(q0 * k0) + std::fabs(q1 * k1);
          }
          ASSERT_NEAR(g[0][h][n][m], want, tol * (1 + size)) << "head " << h << " n " << n << " m " << m;
        }
  }
}

}  // namespace

TEST(Encodings, XposScoresAreRotatedDotProductsScaledByZetaToTheDistanceOverGamma) {
  // Sun et al. 2022: q_n . k_m = sum_i zeta_i^((n - m) / gamma) (R(n w_i) q_i) . (R(m w_i) k_i),
  // zeta_i = (2i / d + 0.4) / 1.4 over the d / 2 pairs, w_i = 10000^(-i / (d/2)).
  auto p = compile("use xpos(channel = position, scale_base = 64)");
  ASSERT_EQ(p.attention.rotations.size(), 1u);
  EXPECT_EQ(p.attention.rotations[0].xpos_scale_base, 64);
  const double D = p.model.head_dim, P = D / 2;
  expectRotated(
      p, [&](int64_t i) { return std::pow(10000.0, -static_cast<double>(i) / P); },
      [&](int64_t i, double distance) { return std::pow((2.0 * i / D + 0.4) / 1.4, distance / 64); });
}

TEST(Encodings, PositionInterpolationDividesEveryFrequencyByTheFactor) {
  // Chen et al. 2023, eq. 2: f'(x, m) = f(x, m L / L'); with L' / L = 4 every
  // angle m w_i becomes m w_i / 4.
  auto p = compile("use pi_rope(factor = 4)");
  const double P = p.model.head_dim / 2.0;
  expectRotated(
      p, [&](int64_t i) { return std::pow(10000.0, -static_cast<double>(i) / P) / 4; },
      [](int64_t, double) { return 1.0; });
}

TEST(Encodings, YarnInterpolatesSlowPairsKeepsFastOnesAndScalesScoresByItsTemperature) {
  // Peng et al. 2023, eq. 17-18 and 22: r_d = L / lambda_d, lambda_d = 2 pi / theta_d;
  // gamma(r) = 0 if r < alpha, 1 if r > beta, (r - alpha) / (beta - alpha) between;
  // h(theta_d) = (1 - gamma) theta_d / s + gamma theta_d; then softmax(q.k / (t sqrt(|D|)))
  // with sqrt(1 / t) = 0.1 ln(s) + 1.
  // base 100 over 8 pairs and L = 64 puts pairs on both sides of the ramp and on it.
  auto p = compile("use yarn(factor = 8, original_length = 64, base = 100, alpha = 1, beta = 4)");
  const double P = p.model.head_dim / 2.0, s = 8, L = 64, alpha = 1, beta = 4;
  int below = 0, on = 0, above = 0;
  auto omega = [&](int64_t i) {
    const double theta = std::pow(100.0, -static_cast<double>(i) / P);
    const double r = L / (2 * M_PI / theta);
    const double gamma = r < alpha ? 0.0 : r > beta ? 1.0 : (r - alpha) / (beta - alpha);
    return (1 - gamma) * theta / s + gamma * theta;
  };
  for (int64_t i = 0; i < static_cast<int64_t>(P); ++i) {
    const double r = L * std::pow(100.0, -static_cast<double>(i) / P) / (2 * M_PI);
    (r < alpha ? below : r > beta ? above : on) += 1;
  }
  EXPECT_GT(below, 0);
  EXPECT_GT(on, 0);
  EXPECT_GT(above, 0);
  expectRotated(p, omega, [](int64_t, double) { return 1.0; });
  // The temperature: every score times 1 / t = (0.1 ln 8 + 1)^2.
  const int64_t Lq = 5;
  auto ch = torch::zeros({plan::kChannelCount, 1, Lq}, torch::kLong);
  ch[0] = torch::arange(Lq).reshape({1, Lq});
  auto scores = torch::randn({1, 2, Lq, Lq}, torch::kDouble);
  auto out = model::applyScoreTerms(scores, ch, ch, p.attention, {});
  const double inv_t = std::pow(0.1 * std::log(s) + 1, 2);
  EXPECT_TRUE(torch::allclose(out, scores * inv_t, 1e-12, 1e-12));
}

TEST(Encodings, InterpolationArgumentsOutOfRangeAreRefused) {
  Compiled c = compileAttention("use pi_rope(factor = 0.5)");
  EXPECT_FALSE(c.plan);
  EXPECT_NE(c.errors.find("the interpolation factor must be at least 1, got 0.5"), std::string::npos) << c.errors;
  c = compileAttention("use yarn(original_length = 64, alpha = 8, beta = 2)");
  EXPECT_FALSE(c.plan);
  EXPECT_NE(c.errors.find("YaRN's ramp is two numbers of turns, the first below the second"), std::string::npos)
      << c.errors;
}

TEST(Encodings, AbacusOffsetShiftsTheDigitColumnsOfEachTrainingSequence) {
  // McLeish et al. 2024: during training every digit's significance index
  // is shifted by one offset k per sequence; evaluation uses no shift.
  Compiled c = compileAttention("use abacus(size = 64, offset = 20)", "  precision = f64");
  ASSERT_TRUE(c.plan) << c.errors;
  const plan::ExperimentPlan& p = *c.plan;
  ASSERT_EQ(p.attention.embeddings.size(), 1u);
  EXPECT_EQ(p.attention.embeddings[0].train_offset, 20);
  EXPECT_NE(plan::dumpPlan(p).find("training offset 0..20 on nonzero indices"), std::string::npos);

  // The draws: one per sequence, every value of 0..20 and nothing else.
  std::mt19937_64 rng(3);
  auto offsets = train::sampleEmbedOffsets(p.attention, 4000, rng);
  ASSERT_EQ(offsets.sizes(), (std::vector<int64_t>{1, 4000}));
  EXPECT_EQ(offsets.min().item<int64_t>(), 0);
  EXPECT_EQ(offsets.max().item<int64_t>(), 20);
  EXPECT_EQ(std::get<0>(at::_unique(offsets)).numel(), 21);
  plan::AttentionPlan none;
  EXPECT_FALSE(train::sampleEmbedOffsets(none, 8, rng).defined());

  // The model with offsets equals the model on channels whose nonzero
  // columns were shifted by each sequence's offset, on the full and the
  // masked (training) paths.
  torch::manual_seed(1);
  model::Gpt model(p, 16);
  const int64_t B = 3, L = 12;
  auto tokens = torch::randint(0, 16, {B, L}, torch::kLong);
  auto channels = torch::zeros({plan::kChannelCount, B, L}, torch::kLong);
  channels[0] = torch::arange(L).expand({B, L});
  channels[1] = torch::randint(0, 11, {B, L});  // columns, 0 for non-digits
  auto k = torch::tensor({{0L, 7L, 20L}});
  auto shifted = channels.clone();
  shifted[1] = channels[1] + channels[1].gt(0).to(torch::kLong) * k.reshape({B, 1});
  auto with_offsets = model->forward(tokens, channels, {}, nullptr, k);
  auto reference = model->forward(tokens, shifted);
  EXPECT_LT((with_offsets - reference).abs().max().item<double>(), 1e-12);
  EXPECT_GT((with_offsets - model->forward(tokens, channels)).abs().max().item<double>(), 1e-6);
  auto mask = torch::ones({B, L}, torch::kBool);
  auto masked = model->forwardMasked(tokens, channels, {}, mask, k);
  EXPECT_LT((masked - reference.reshape({B * L, -1})).abs().max().item<double>(), 1e-12);
}

namespace {

// Rows of one channel, each given as its values, in a batch of that many rows.
task::Batch channelBatch(plan::Channel channel, const std::vector<std::vector<int64_t>>& rows) {
  task::Batch b;
  b.batch = static_cast<int>(rows.size());
  b.length = static_cast<int>(rows.front().size());
  for (auto& c : b.channels) c.assign(rows.size() * rows.front().size(), 0);
  for (size_t r = 0; r < rows.size(); ++r)
    std::copy(rows[r].begin(), rows[r].end(), b.channels[static_cast<size_t>(channel)].begin() + r * rows[r].size());
  return b;
}

}  // namespace

TEST(Encodings, RandomizedPositionsAreASortedUniformSubsetOfTheRangePerSequence) {
  // Ruoss et al. 2023: a sequence of n tokens trains on a sorted random
  // subset of n positions of 0..L-1, drawn anew per sequence.
  Compiled c = compileAttention("use rope(channel = position)\n    use randomized_positions(range = 700)");
  ASSERT_TRUE(c.plan) << c.errors;
  const plan::ExperimentPlan& p = *c.plan;
  ASSERT_EQ(p.attention.sampled_channels.size(), 1u);
  EXPECT_EQ(p.attention.sampled_channels[0].channel, plan::Channel::Position);
  EXPECT_EQ(p.attention.sampled_channels[0].range, 700);
  EXPECT_NE(plan::dumpPlan(p).find("randomise position: each sequence's values relabelled by a sorted sample of "
                                   "0..699 (training and evaluation)"),
            std::string::npos)
      << plan::dumpPlan(p);

  // 2,000 rows of positions 0..4 in a range of 64: strictly increasing labels
  // in range, and over the 10,000 labels every value about equally often
  // (expected 156.25 each; the bounds are five standard deviations).
  plan::ChannelSampling s{plan::Channel::Position, 64, ""};
  std::vector<std::vector<int64_t>> rows(2000, std::vector<int64_t>{0, 1, 2, 3, 4});
  task::Batch b = channelBatch(plan::Channel::Position, rows);
  std::mt19937_64 rng(7);
  task::randomizeChannels({s}, b, rng);
  std::vector<int> count(64, 0);
  const auto& pos = b.channels[static_cast<size_t>(plan::Channel::Position)];
  for (size_t r = 0; r < rows.size(); ++r)
    for (size_t t = 0; t < 5; ++t) {
      const int64_t v = pos[r * 5 + t];
      ASSERT_GE(v, 0);
      ASSERT_LT(v, 64);
      if (t > 0) {
        ASSERT_GT(v, pos[r * 5 + t - 1]) << "row " << r;
      }
      ++count[static_cast<size_t>(v)];
    }
  for (int v = 0; v < 64; ++v) {
    EXPECT_GT(count[static_cast<size_t>(v)], 96) << v;
    EXPECT_LT(count[static_cast<size_t>(v)], 217) << v;
  }
  // The smallest label of a row is k with probability C(63 - k, 4) / C(64, 5):
  // k = 0 in 5/64 of the rows (expected 156.25, sd 12).
  int first_zero = 0;
  for (size_t r = 0; r < rows.size(); ++r) first_zero += pos[r * 5] == 0;
  EXPECT_NEAR(first_zero, 156.25, 60);
  // Other channels are left alone; the same seed gives the same labels.
  for (size_t c2 = 0; c2 < b.channels.size(); ++c2) {
    if (c2 == static_cast<size_t>(plan::Channel::Position)) continue;
    for (int64_t v : b.channels[c2]) {
      ASSERT_EQ(v, 0);
    }
  }
  task::Batch again = channelBatch(plan::Channel::Position, rows);
  std::mt19937_64 rng2(7);
  task::randomizeChannels({s}, again, rng2);
  EXPECT_EQ(again.channels, b.channels);
}

TEST(Encodings, RandomizedColumnsKeepEqualPlacesEqualAndOrdered) {
  // Columns repeat across operands (units of both are column 1) and
  // non-digits are column 0: the map is one per sequence, applied to every
  // token, so equal columns stay equal and larger ones stay larger.
  plan::ChannelSampling s{plan::Channel::Column, 40, ""};
  task::Batch b = channelBatch(plan::Channel::Column, {{1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 4, 0}});
  std::mt19937_64 rng(11);
  task::randomizeChannels({s}, b, rng);
  const auto& col = b.channels[static_cast<size_t>(plan::Channel::Column)];
  for (int t : {4, 8}) EXPECT_EQ(col[static_cast<size_t>(t)], col[0]);
  EXPECT_EQ(col[3], col[7]);
  EXPECT_LT(col[3], col[0]);
  EXPECT_LT(col[0], col[1]);
  EXPECT_LT(col[2], col[11]);
  EXPECT_LT(col[11], 40);
  // A row that does not fit the range is refused.
  task::Batch wide = channelBatch(plan::Channel::Column, {{0, 1, 2, 45}});
  EXPECT_THROW(task::randomizeChannels({s}, wide, rng), std::invalid_argument);
}

TEST(Encodings, RandomizedPositionsNeedARangeThatHoldsTheTrainingSequences) {
  // The default task trains on operands of up to 10 digits: 34 tokens.
  Compiled c = compileAttention("use randomized_positions(range = 20)");
  EXPECT_FALSE(c.plan);
  EXPECT_NE(c.errors.find("a range of 20 cannot hold the position values 0..33 of the longest training sequence "
                          "(10 digits)"),
            std::string::npos)
      << c.errors;
  // Evaluation draws labels from the range too: it must hold the test lengths.
  driver::Compilation tc;
  driver::CompileRequest r;
  r.path = "randomized_test.pos";
  r.text = "import rope\nimport randomized\nexperiment e {\n  task { train_max_digits = 5  test_digits = [5, 40] }\n"
           "  attention {\n    use randomized_positions(range = 100)\n  }\n}\n";
  EXPECT_FALSE(tc.compile(r));
  const std::string errors = tc.diags.render(false);
  EXPECT_NE(errors.find("a range of 100 cannot hold the position values 0..123 of the longest test sequence (40 "
                        "digits)"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("randomized_test.pos:6:"), std::string::npos) << errors;
  c = compileAttention("use randomized_positions(channel = kind, range = 64)");
  EXPECT_FALSE(c.plan);
  EXPECT_NE(c.errors.find("the kind channel names token kinds; it has no order to randomise"), std::string::npos)
      << c.errors;
  c = compileAttention("use randomized_positions(range = 64)\n    use randomized_positions(range = 128)");
  EXPECT_FALSE(c.plan);
  EXPECT_NE(c.errors.find("the position channel is already randomised"), std::string::npos) << c.errors;
}
