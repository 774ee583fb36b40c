// Numeric checks of the attention pieces in isolation: rotary tables against
// explicit rotation matrices, RoPE translation invariance, 2D RoPE pair
// layout, key zeroing, score-term lowering (decay, ALiBi and its gradient,
// exemptions, head selection) and softmax1.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "model_test_util.h"
#include "runtime/model/attention.h"
#include "runtime/model/positional.h"
#include "runtime/model/score_formula.h"

namespace posc::model {
namespace {

using namespace posc::model::testing;
using plan::Channel;

plan::Rotation rotation(Channel c, int begin, int end, double base = 10000.0) {
  plan::Rotation r;
  r.channel = c;
  r.pair_begin = begin;
  r.pair_end = end;
  r.base = base;
  return r;
}

// (kChannelCount, B, L) with position = column = row = the given values, kind digit.
torch::Tensor uniformChannels(const torch::Tensor& values) {
  auto v = values.to(torch::kLong);
  return torch::stack({v, v, v, torch::zeros_like(v)});
}

TEST(Rotary, MatchesExplicitRotationMatrices) {
  // head_dim 4: pairs 0 and 1. Rotation by position over pair 0 only, base 100,
  // plus a stretched column rotation over pair 1.
  auto p = tinyPlan(1, 4, 1);
  p.attention.rotations.push_back(rotation(Channel::Position, 0, 1, 100.0));
  auto col = rotation(Channel::Column, 1, 2, 100.0);
  plan::Distribution d;
  d.kind = plan::Distribution::Kind::Uniform;
  d.a = 1;
  d.b = 4;
  d.eval_value = 2.5;
  col.stretch = d;
  p.attention.rotations.push_back(col);

  const int64_t B = 2, L = 5;
  auto pos = torch::arange(L).repeat({B, 1});
  auto column = torch::tensor({3, 1, 4, 1, 5}).repeat({B, 1});
  auto channels = torch::stack({pos, column, torch::zeros_like(pos), torch::zeros_like(pos)});
  auto stretch = torch::tensor({0.5, 2.0});
  auto x = torch::randn({B, 1, L, 4}, torch::kDouble);

  for (bool with_stretch : {true, false}) {
    auto ctx = buildPositionalContext(p.attention, p.model, channels, with_stretch ? stretch : torch::Tensor(),
                                      torch::kDouble);
    auto y = applyRotary(x, ctx);
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t t = 0; t < L; ++t) {
        const double factor = with_stretch ? stretch[b].item<double>() : 2.5;
        // Pair 0: inv_freq = 100^0 = 1; pair 1 (a component with one pair): also 1.
        const double angles[2] = {static_cast<double>(t), column[b][t].item<double>() * factor};
        for (int i = 0; i < 2; ++i) {
          const double c = std::cos(angles[i]), s = std::sin(angles[i]);
          const double x0 = x[b][0][t][2 * i].item<double>(), x1 = x[b][0][t][2 * i + 1].item<double>();
          EXPECT_NEAR(y[b][0][t][2 * i].item<double>(), c * x0 - s * x1, 1e-12);
          EXPECT_NEAR(y[b][0][t][2 * i + 1].item<double>(), s * x0 + c * x1, 1e-12);
        }
      }
    }
  }
}

TEST(Rotary, FrequencyLadderAndUncoveredPairs) {
  // head_dim 16 (8 pairs); rotation over pairs [2, 6): pair 2+i has
  // inv_freq = base^(-i/4); pairs 0, 1, 6, 7 are not rotated.
  auto p = tinyPlan(1, 16, 1);
  p.attention.rotations.push_back(rotation(Channel::Position, 2, 6, 10000.0));
  auto channels = uniformChannels(torch::arange(7).reshape({1, 7}));
  auto angle = rotaryAngles(p.attention, p.model, channels, {});
  ASSERT_EQ(angle.sizes(), (std::vector<int64_t>{1, 1, 7, 8}));
  for (int t = 0; t < 7; ++t) {
    for (int i = 0; i < 8; ++i) {
      const double expected = (i >= 2 && i < 6) ? t * std::pow(10000.0, -(i - 2) / 4.0) : 0.0;
      EXPECT_NEAR(angle[0][0][t][i].item<double>(), expected, 1e-12) << "t=" << t << " i=" << i;
    }
  }
}

TEST(Rotary, ScoresAreTranslationInvariant) {
  auto p = tinyPlan(1, 32, 2);  // head_dim 16
  p.attention.rotations.push_back(rotation(Channel::Position, 0, 8));
  const int64_t L = 12;
  auto q = torch::randn({1, 2, L, 16});
  auto k = torch::randn({1, 2, L, 16});
  auto scores = [&](int64_t shift) {
    auto ctx = buildPositionalContext(p.attention, p.model,
                                      uniformChannels(torch::arange(L).reshape({1, L}) + shift), {},
                                      torch::kFloat);
    return torch::matmul(applyRotary(q, ctx), applyRotary(k, ctx).transpose(-2, -1));
  };
  auto base = scores(0);
  EXPECT_TRUE(torch::allclose(base, scores(37), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(base, scores(250), 1e-5, 1e-5));
  // And the rotation does change scores (not the identity).
  EXPECT_FALSE(torch::allclose(base, torch::matmul(q, k.transpose(-2, -1)), 1e-3, 1e-3));
}

TEST(Rotary, TwoDimensionalRopeSplitsPairsByRowAndColumn) {
  // D = 16: rows turn pairs [0, D/4) = [0, 4), columns pairs [D/4, D/2) = [4, 8).
  auto p = tinyPlan(1, 32, 2);
  p.attention.rotations.push_back(rotation(Channel::Row, 0, 4));
  p.attention.rotations.push_back(rotation(Channel::Column, 4, 8));
  auto channels = batchChannels({additionChannels({3, 2}, 4)});
  const int64_t L = channels.size(2);
  auto angle = rotaryAngles(p.attention, p.model, channels, {});
  for (int64_t t = 0; t < L; ++t) {
    const double row = channels[2][0][t].item<double>(), col = channels[1][0][t].item<double>();
    for (int i = 0; i < 4; ++i) {
      EXPECT_NEAR(angle[0][0][t][i].item<double>(), row * std::pow(10000.0, -i / 4.0), 1e-12);
      EXPECT_NEAR(angle[0][0][t][4 + i].item<double>(), col * std::pow(10000.0, -i / 4.0), 1e-12);
    }
  }
  // Changing only the column leaves dims [0, 8) of a rotated vector alone and
  // moves dims [8, 16); changing only the row does the opposite.
  auto x = torch::randn({1, 2, L, 16}, torch::kDouble);
  auto rotate = [&](const torch::Tensor& ch) {
    return applyRotary(x, buildPositionalContext(p.attention, p.model, ch, {}, torch::kDouble));
  };
  auto y = rotate(channels);
  auto col_changed = channels.clone();
  col_changed[1] += 3;
  auto row_changed = channels.clone();
  row_changed[2] += 1;
  auto yc = rotate(col_changed), yr = rotate(row_changed);
  EXPECT_TRUE(torch::allclose(y.narrow(3, 0, 8), yc.narrow(3, 0, 8)));
  EXPECT_FALSE(torch::allclose(y.narrow(3, 8, 8), yc.narrow(3, 8, 8)));
  EXPECT_TRUE(torch::allclose(y.narrow(3, 8, 8), yr.narrow(3, 8, 8)));
  EXPECT_FALSE(torch::allclose(y.narrow(3, 0, 8), yr.narrow(3, 0, 8)));
}

TEST(Rotary, HeadSelection) {
  auto p = tinyPlan(1, 32, 2);
  auto r = rotation(Channel::Position, 0, 8);
  r.heads = {1};
  p.attention.rotations.push_back(r);
  auto x = torch::randn({1, 2, 5, 16});
  auto ctx = buildPositionalContext(p.attention, p.model, uniformChannels(torch::arange(5).reshape({1, 5})),
                                    {}, torch::kFloat);
  auto y = applyRotary(x, ctx);
  EXPECT_TRUE(torch::equal(y[0][0], x[0][0]));
  EXPECT_FALSE(torch::allclose(y[0][1], x[0][1]));
}

TEST(KeyZeroing, SeparatorKeyScoreIndependentOfColumn) {
  // Position turns pairs [0, 4), column pairs [4, 8); separator keys lose the
  // column pairs (dims [8, 16)).
  auto p = tinyPlan(1, 32, 2);
  p.attention.rotations.push_back(rotation(Channel::Position, 0, 4));
  p.attention.rotations.push_back(rotation(Channel::Column, 4, 8));
  plan::KeyZeroing z;
  z.kinds.insert(plan::TokenKind::Separator);
  z.pair_begin = 4;
  z.pair_end = 8;
  p.attention.key_zeroing.push_back(z);

  auto channels = batchChannels({additionChannels({3, 2}, 4)});
  const int64_t L = channels.size(2);
  const int64_t sep = 3;  // the '+' after three digits
  ASSERT_EQ(channels[3][0][sep].item<int64_t>(), 1);
  const int64_t digit = 1;
  auto q = torch::randn({1, 2, L, 16});
  auto k = torch::randn({1, 2, L, 16});
  auto scores = [&](const torch::Tensor& ch) {
    auto ctx = buildPositionalContext(p.attention, p.model, ch, {}, torch::kFloat);
    auto kk = applyKeyZeroing(applyRotary(k, ctx), ctx);
    return std::make_pair(torch::matmul(applyRotary(q, ctx), kk.transpose(-2, -1)), kk);
  };
  auto [s0, k0] = scores(channels);
  EXPECT_TRUE(torch::all(k0[0].select(1, sep).narrow(1, 8, 8) == 0).item<bool>());
  EXPECT_FALSE(torch::all(k0[0].select(1, digit).narrow(1, 8, 8) == 0).item<bool>());
  auto moved = channels.clone();
  moved[1][0][sep] = 7;
  moved[1][0][digit] = 9;
  auto [s1, k1] = scores(moved);
  // Scores against the separator key do not move; against the digit key they do.
  EXPECT_TRUE(torch::allclose(s0.select(3, sep), s1.select(3, sep), 1e-6, 1e-6));
  EXPECT_FALSE(torch::allclose(s0.select(3, digit), s1.select(3, digit), 1e-3, 1e-3));
}

TEST(ScoreTerms, DecayMatchesClosedFormWithSeparatorKeysExempt) {
  plan::AttentionPlan a;
  a.params.push_back(param("decay.rate", true, false, {0.3, 1.1}));
  a.score_terms.push_back(decayTerm(0));
  auto channels = batchChannels({additionChannels({3, 4}, 5), additionChannels({4, 3}, 5)});
  const int64_t B = 2, H = 2, L = channels.size(2);
  auto s = torch::randn({B, H, L, L}, torch::kDouble);
  std::vector<torch::Tensor> params{torch::tensor({0.3, 1.1}, torch::kDouble)};
  auto out = applyScoreTerms(s, channels, channels, a, params);
  ASSERT_EQ(out.sizes(), s.sizes());
  int sep_queries_changed = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j < L; ++j) {
          const double old = s[b][h][i][j].item<double>();
          const bool key_sep = channels[3][b][j].item<int64_t>() == 1;
          const double dc = std::abs(channels[1][b][i].item<double>() - channels[1][b][j].item<double>());
          const double expected = key_sep ? old : old * std::exp(-params[0][h].item<double>() * dc);
          EXPECT_NEAR(out[b][h][i][j].item<double>(), expected, 1e-12);
          if (!key_sep && channels[3][b][i].item<int64_t>() == 1 && dc > 0) ++sep_queries_changed;
        }
  EXPECT_GT(sep_queries_changed, 0);  // separator queries are not exempt
}

TEST(ScoreTerms, ExemptQueriesAndHeadSelection) {
  plan::AttentionPlan a;
  a.params.push_back(param("bias", false, false, {5.0}));
  FormulaBuilder f;
  f.binary(Op::Add, f.leaf(Op::Score), f.param(0));
  plan::ScoreTerm t;
  t.formula = f.f;
  t.exempt_queries.insert(plan::TokenKind::Special);
  t.heads = {1};
  a.score_terms.push_back(t);
  auto channels = batchChannels({additionChannels({2, 2}, 3)});
  const int64_t L = channels.size(2);
  auto s = torch::randn({1, 2, L, L});
  auto out = applyScoreTerms(s, channels, channels, a, {torch::scalar_tensor(5.0)});
  EXPECT_TRUE(torch::equal(out[0][0], s[0][0]));  // head 0 not selected
  EXPECT_TRUE(torch::allclose(out[0][1][L - 1], s[0][1][L - 1]));  // <eos> query exempt
  EXPECT_TRUE(torch::allclose(out[0][1].narrow(0, 0, L - 1), s[0][1].narrow(0, 0, L - 1) + 5.0));
}

TEST(ScoreTerms, ComparisonsSelectAndHead) {
  // where(q.position >= k.position, head + 0.5, -1) ignoring the score.
  plan::AttentionPlan a;
  FormulaBuilder f;
  int cond = f.binary(Op::Ge, f.q(Channel::Position), f.k(Channel::Position));
  int yes = f.binary(Op::Add, f.leaf(Op::Head), f.constant(0.5));
  int no = f.constant(-1.0);
  plan::FormulaNode sel;
  sel.op = Op::Select;
  sel.a = cond;
  sel.b = yes;
  sel.c = no;
  f.push(sel);
  plan::ScoreTerm t;
  t.formula = f.f;
  a.score_terms.push_back(t);
  auto channels = uniformChannels(torch::arange(4).reshape({1, 4}));
  auto out = applyScoreTerms(torch::zeros({1, 3, 4, 4}), channels, channels, a, {});
  for (int h = 0; h < 3; ++h)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        EXPECT_FLOAT_EQ(out[0][h][i][j].item<float>(), i >= j ? h + 0.5f : -1.0f);
}

TEST(ScoreTerms, AlibiSlopeGradientIsMinusSumOfDistances) {
  plan::AttentionPlan a;
  a.params.push_back(param("alibi.slope", true, true, {0.5, 0.25}));
  a.score_terms.push_back(alibiTerm(0));
  // Hand-computed case: columns [1, 2, 0, 1, 2], kinds [D, D, S, D, D].
  // Non-exempt keys j in {0, 1, 3, 4}. Key column 1 (two keys): sum over the
  // five queries of |c_i - 1| = 0+1+1+0+1 = 3, twice = 6. Key column 2: sum of
  // |c_i - 2| = 1+0+2+1+0 = 4, twice = 8. d sum(scores) / d slope[h] = -14.
  auto pos = torch::arange(5).reshape({1, 5});
  auto col = torch::tensor({1, 2, 0, 1, 2}).reshape({1, 5});
  auto kind = torch::tensor({0, 0, 1, 0, 0}).reshape({1, 5});
  auto channels = torch::stack({pos, col, torch::zeros_like(pos), kind});
  auto slope = torch::tensor({0.5, 0.25}, torch::kDouble).requires_grad_(true);
  auto s = torch::randn({1, 2, 5, 5}, torch::kDouble);
  applyScoreTerms(s, channels, channels, a, {slope}).sum().backward();
  EXPECT_NEAR(slope.grad()[0].item<double>(), -14.0, 1e-12);
  EXPECT_NEAR(slope.grad()[1].item<double>(), -14.0, 1e-12);

  // A real layout, against a direct sum.
  auto ch = batchChannels({additionChannels({3, 5}, 6), additionChannels({5, 3}, 6)});
  auto slope2 = torch::tensor({0.5, 0.25}, torch::kDouble).requires_grad_(true);
  const int64_t L = ch.size(2);
  applyScoreTerms(torch::randn({2, 2, L, L}, torch::kDouble), ch, ch, a, {slope2}).sum().backward();
  double expected = 0;
  for (int b = 0; b < 2; ++b)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < L; ++j)
        if (ch[3][b][j].item<int64_t>() != 1)
          expected -= std::abs(ch[1][b][i].item<double>() - ch[1][b][j].item<double>());
  EXPECT_NEAR(slope2.grad()[0].item<double>(), expected, 1e-9);
  EXPECT_NEAR(slope2.grad()[1].item<double>(), expected, 1e-9);
}

TEST(Softmax1, MatchesClosedForm) {
  auto x = torch::randn({2, 3, 6}, torch::kDouble) * 3;
  x.index_put_({0, 0, 5}, -std::numeric_limits<double>::infinity());
  auto e = x.exp();
  auto expected = e / (1 + e.sum(-1, true));
  EXPECT_TRUE(torch::allclose(softmax1(x, -1), expected, 1e-12, 1e-14));
  // Large scores: no overflow, and the result approaches the ordinary softmax.
  auto big = torch::randn({4, 8}) + 500.0f;
  auto y = softmax1(big, -1);
  EXPECT_TRUE(torch::isfinite(y).all().item<bool>());
  EXPECT_TRUE(torch::allclose(y, torch::softmax(big, -1), 1e-5, 1e-6));
  // Very negative scores: the weights vanish instead of summing to one.
  auto small = torch::full({1, 3}, -60.0, torch::kDouble);
  EXPECT_LT(softmax1(small, -1).sum().item<double>(), 1e-20);
}

TEST(AttentionWeights, CausalMaskWithCacheOffsetAndNullSlot) {
  auto s = torch::randn({1, 1, 2, 5}, torch::kDouble);  // 3 cached keys, 2 new queries
  auto w = attentionWeights(s, plan::SoftmaxKind::Standard, false);
  EXPECT_EQ(w[0][0][0][4].item<double>(), 0.0);  // query 0 sits at position 3
  EXPECT_GT(w[0][0][0][3].item<double>(), 0.0);
  EXPECT_NEAR(w.sum(-1).sub(1).abs().max().item<double>(), 0.0, 1e-12);
  auto wn = attentionWeights(s, plan::SoftmaxKind::Standard, true);
  ASSERT_EQ(wn.size(3), 6);
  // With a null slot the token weights equal softmax1 of the masked scores.
  auto w1 = attentionWeights(s, plan::SoftmaxKind::Softmax1, false);
  EXPECT_TRUE(torch::allclose(wn.narrow(3, 0, 5), w1, 1e-12, 1e-14));
}

}  // namespace
}  // namespace posc::model
