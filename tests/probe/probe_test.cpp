// Probes on hand-set weights, where the answer is known in closed form:
//   - a head whose kernel over column distance is a two-term cosine series
//     (the study's toy: target 20, an alias at -35 close to it) gives exactly
//     that series when its key is swept;
//   - the band split of a score sums to the score, and each band is its
//     pair's cosine;
//   - the separator share of a head with a hand-set separator bonus is the
//     softmax share computed by hand;
//   - the teacher-forced map of a model with one planted error reports
//     exactly that place, with the planted separator share;
//   - the stop probe's shares by key group and its log-sum-exps are the
//     softmax of a hand-set separator bonus counted by hand.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "runtime/model/batch.h"
#include "runtime/model/gpt.h"
#include "runtime/probe/head_scores.h"
#include "runtime/probe/lookup.h"
#include "runtime/probe/problems.h"
#include "runtime/probe/sink_share.h"
#include "runtime/probe/stop_attention.h"
#include "runtime/probe/teacher_forced.h"
#include "runtime/task/addition.h"
#include "tests/runtime/model_test_util.h"

namespace {

using namespace posc;
using model::testing::FormulaBuilder;
using model::testing::Op;
using model::testing::columnPair;

// Sets every token's query and key to fixed vectors: qkv weight 0, bias = (q, k, v).
void setQueryKey(model::Gpt& m, const std::vector<double>& q, const std::vector<double>& k) {
  torch::NoGradGuard no_grad;
  auto params = m->named_parameters();
  auto& w = params["block0.attn.qkv.weight"];
  auto& b = params["block0.attn.qkv.bias"];
  w.zero_();
  b.zero_();
  const int64_t n = static_cast<int64_t>(q.size());
  b.narrow(0, 0, n).copy_(torch::tensor(q, torch::kDouble).to(b.scalar_type()));
  b.narrow(0, n, n).copy_(torch::tensor(k, torch::kDouble).to(b.scalar_type()));
}

plan::ExperimentPlan handSetPlan(int head_dim) {
  plan::ExperimentPlan p = model::testing::tinyPlan(1, head_dim, 1);
  p.model.precision = plan::Precision::F64;
  return p;
}

// One head of dimension 4, no rotation, and a score term that adds `bonus`
// on separator keys.
plan::ExperimentPlan separatorBonusPlan(double bonus) {
  plan::ExperimentPlan p = handSetPlan(4);
  FormulaBuilder fb;
  int s = fb.leaf(Op::Score);
  int sep = fb.binary(Op::Eq, fb.k(plan::Channel::Kind), fb.constant(1));
  fb.binary(Op::Add, s, fb.binary(Op::Mul, fb.constant(bonus), sep));
  plan::ScoreTerm term;
  term.name = "separator bonus";
  term.formula = fb.f;
  p.attention.score_terms.push_back(term);
  return p;
}

}  // namespace

TEST(KernelProbe, TwoTermCosineKernelGivesTheToyAliasExactly) {
  // score(d) = A1 cos(w1 d) + A2 cos(w2 d): a fast term (period 5.82 columns)
  // and a mid term (period 35.5) of 10 each: 20 at the target, and at -35
  // both terms are almost back round.
  const double A1 = 10, A2 = 10, w1 = 2 * M_PI / 5.82, w2 = 2 * M_PI / 35.5;
  plan::ExperimentPlan p = handSetPlan(4);
  p.attention.rotations = {columnPair(0, w1), columnPair(1, w2)};
  model::Gpt m(p, task::Vocabulary{1}.size());
  // q.k / sqrt(4) per pair = a_i b_i / 2 = A_i.
  setQueryKey(m, {std::sqrt(2 * A1), 0, std::sqrt(2 * A2), 0}, {std::sqrt(2 * A1), 0, std::sqrt(2 * A2), 0});
  task::Tokenizer tok(p.task);
  auto problems = probe::probeProblems(p.task, 5, 12, 1);
  probe::Traced t = probe::traceProblems(m, tok, problems);
  const task::Sequence& s = t.batch.sequences[0];
  const int q = probe::decisionIndex(s, 4), k = probe::digitIndex(s, 0, 4);
  ASSERT_GE(q, 0);
  ASSERT_GE(k, 0);
  probe::QueryKey qk = probe::queryKey(t, 0, 0, q, k);
  const int64_t target = qk.k_channels[static_cast<size_t>(plan::Channel::Column)];
  const int64_t query = qk.q_channels[static_cast<size_t>(plan::Channel::Column)];
  std::vector<int64_t> offsets, columns;
  for (int64_t o = -60; o <= 60; ++o) {
    offsets.push_back(o);
    columns.push_back(target + o);
  }
  auto kernel = [&](int64_t key_column) {
    const double d = static_cast<double>(query - key_column);
    return A1 * std::cos(w1 * d) + A2 * std::cos(w2 * d);
  };
  const std::vector<double> swept = probe::sweepKeyColumn(p, m->scoreParams(), qk, 0, columns);
  for (size_t i = 0; i < offsets.size(); ++i) EXPECT_NEAR(swept[i], kernel(columns[i]), 1e-9) << "offset " << offsets[i];
  // The model's own score on the real key agrees with the sweep at offset 0.
  EXPECT_NEAR(t.trace.scores[0][0][0][q][k].item<double>(), swept[60], 1e-9);
  // The toy: the query sits one column below its target (it predicts place 4
  // from place 3), so the distance d is offset + 1; target 20 at d = 0 means
  // offset -1. The alias 35 columns away scores within a fraction of a point.
  const double at_target = kernel(query);
  const double at_alias = kernel(query - 35);
  EXPECT_NEAR(at_target, 20.0, 1e-12);
  EXPECT_GT(at_alias, 19.8);
  EXPECT_LT(at_alias, 20.0);
  EXPECT_NEAR(swept[static_cast<size_t>(60 + (query - 35 - target))], at_alias, 1e-9);
  // Nearby teeth are suppressed by the mid term: at d = -5.82 k for k = 2, 3, 4
  // the score is below 10.
  for (int kk : {2, 3, 4}) EXPECT_LT(kernel(query - std::lround(5.82 * kk)), 10.0);
  // Windowed maxima: the window holding the alias reports its tooth.
  auto maxima = probe::windowMaxima(offsets, swept, 10);
  double best_far = -1e9;
  for (const auto& [w0, v] : maxima)
    if (w0 <= -30 && w0 >= -40) best_far = std::max(best_far, v);
  EXPECT_GE(best_far, at_alias - 1e-9);
}

TEST(BandProbe, BandsSumToTheScoreAndEachIsItsPairsCosine) {
  // Five pairs: fast (period 6) and mid (period 50) and slow (period 400)
  // column pairs, a row pair, an unrotated pair; then a decay score term.
  const double w_fast = 2 * M_PI / 6, w_mid = 2 * M_PI / 50, w_slow = 2 * M_PI / 400, w_row = 1.3;
  plan::ExperimentPlan p = handSetPlan(10);
  p.attention.rotations = {columnPair(0, w_fast), columnPair(1, w_mid), columnPair(2, w_slow),
                           columnPair(3, w_row, plan::Channel::Row)};
  p.attention.params.push_back(model::testing::param("decay.rate", true, false, {0.05}));
  p.attention.score_terms.push_back(model::testing::decayTerm(0));
  model::Gpt m(p, task::Vocabulary{1}.size());
  const std::vector<double> a = {1.5, -2.0, 0.7, 1.1, 0.9}, b = {2.0, 1.0, -1.5, 0.8, 1.2};
  std::vector<double> q(10, 0.0), k(10, 0.0);
  for (int i = 0; i < 5; ++i) {
    q[2 * i] = a[i];
    k[2 * i] = b[i];
  }
  setQueryKey(m, q, k);
  task::Tokenizer tok(p.task);
  auto problems = probe::probeProblems(p.task, 9, 30, 1);
  probe::Traced t = probe::traceProblems(m, tok, problems);
  const task::Sequence& s = t.batch.sequences[0];
  const int qi = probe::decisionIndex(s, 20);
  for (int key : {probe::digitIndex(s, 0, 20), probe::digitIndex(s, 1, 3), probe::digitIndex(s, 0, 29)}) {
    probe::QueryKey qk = probe::queryKey(t, 0, 0, qi, key);
    probe::BandSplit bs = probe::splitBands(p, m->scoreParams(), qk, 0, 20, 200);
    const double dcol = static_cast<double>(qk.q_channels[1] - qk.k_channels[1]);
    const double drow = static_cast<double>(qk.q_channels[2] - qk.k_channels[2]);
    const double r = std::sqrt(10.0);
    EXPECT_NEAR(bs.fast, a[0] * b[0] * std::cos(w_fast * dcol) / r, 1e-12);
    EXPECT_NEAR(bs.mid, a[1] * b[1] * std::cos(w_mid * dcol) / r, 1e-12);
    EXPECT_NEAR(bs.slow, a[2] * b[2] * std::cos(w_slow * dcol) / r, 1e-12);
    EXPECT_NEAR(bs.row, a[3] * b[3] * std::cos(w_row * drow) / r, 1e-12);
    EXPECT_NEAR(bs.unrotated, a[4] * b[4] / r, 1e-12);
    const double dot = bs.fast + bs.mid + bs.slow + bs.row + bs.unrotated;
    const double rate = m->scoreParams()[0][0].item<double>();  // 0.05 as the model stores it
    EXPECT_NEAR(rate, 0.05, 1e-8);
    EXPECT_NEAR(bs.total, dot * std::exp(-rate * std::abs(dcol)), 1e-12);
    EXPECT_NEAR(dot + bs.terms, bs.total, 1e-12);
    // The model computed the same post-term score.
    EXPECT_NEAR(t.trace.scores[0][0][0][qi][key].item<double>(), bs.total, 1e-9);
  }
}

TEST(SinkShareProbe, HandSetSeparatorBonusGivesTheSoftmaxShare) {
  // Equal q.k everywhere (no rotation) plus 3 on separator keys: a query that
  // sees n_sep separators among n keys puts e^3 n_sep / (e^3 n_sep + n - n_sep)
  // of its attention on them.
  plan::ExperimentPlan p = separatorBonusPlan(3);
  model::Gpt m(p, task::Vocabulary{1}.size());
  setQueryKey(m, {0.5, 0.1, -0.3, 0.2}, {0.4, 0.2, 0.1, -0.6});
  task::Tokenizer tok(p.task);
  auto problems = probe::probeProblems(p.task, 3, 7, 2);
  probe::Traced t = probe::traceProblems(m, tok, problems);
  auto kinds = t.batch.channels.select(0, static_cast<int64_t>(plan::Channel::Kind));
  auto share = probe::separatorShare(t.trace.weights[0], kinds);
  for (int b = 0; b < 2; ++b) {
    const task::Sequence& seq = t.batch.sequences[static_cast<size_t>(b)];
    int n_sep = 0;
    for (size_t i = 0; i < seq.tokens.size(); ++i) {
      n_sep += seq.channels[static_cast<size_t>(plan::Channel::Kind)][i] == 1;
      const double n = static_cast<double>(i + 1);
      const double expected = std::exp(3.0) * n_sep / (std::exp(3.0) * n_sep + n - n_sep);
      EXPECT_NEAR(share[b][0][static_cast<int64_t>(i)].item<double>(), expected, 1e-12) << "token " << i;
    }
  }
}

namespace {

// A "model" that sees the answer (it reads the next token of its teacher-forced
// input) and so decides every token right, except the digit at `planted`,
// which it gets wrong by one. Head 0 of its one layer looks up the operand
// digits of the decided column (0.5 each); at the planted place it puts
// `share` on '=' instead. Head 1 attends to the first token only.
probe::Forward plantedModel(const task::Tokenizer& tok, int planted, double share) {
  return [&tok, planted, share](const torch::Tensor& tokens, const torch::Tensor& channels,
                                model::AttentionTrace& trace) {
    const int64_t B = tokens.size(0), L = tokens.size(1), V = tok.vocabulary().size();
    auto logits = torch::zeros({B, L, V}, torch::kDouble);
    auto w = torch::zeros({B, 2, L, L}, torch::kDouble);
    auto kinds = channels.select(0, 3), cols = channels.select(0, 1), rows = channels.select(0, 2);
    for (int64_t b = 0; b < B; ++b) {
      int64_t eq = -1;
      for (int64_t i = 0; i < L; ++i)
        if (tokens[b][i].item<int64_t>() == tok.vocabulary().equals()) eq = i;
      for (int64_t i = 0; i < L; ++i) {
        w[b][1][i][0] = 1.0;
        if (i + 1 >= L) continue;
        int64_t next = tokens[b][i + 1].item<int64_t>();
        const int64_t place = i - eq + 1;
        if (i >= eq && place == planted) next = (next + 1) % 10;
        logits[b][i][next] = 1.0;
        if (i < eq) continue;
        double target_w = place == planted ? (1 - share) / 2 : 0.5;
        for (int64_t j = 0; j < eq; ++j)
          if (kinds[b][j].item<int64_t>() == 0 && cols[b][j].item<int64_t>() == place && rows[b][j].item<int64_t>() < 2)
            w[b][0][i][j] = target_w;
        if (place == planted) w[b][0][i][eq] = share;
      }
    }
    trace.weights = {w};
    return logits;
  };
}

}  // namespace

TEST(TeacherForcedProbe, PlantedErrorIsReportedAtExactlyItsPlace) {
  plan::TaskPlan task;
  task::Tokenizer tok(task);
  auto problems = probe::probeProblems(task, 11, 12, 20);
  const int planted = 7;
  probe::TeacherForcedMap m = probe::teacherForcedMap(plantedModel(tok, planted, 0.9), tok, problems, 1, 6);
  ASSERT_EQ(m.lookup_heads.size(), 1u);
  EXPECT_EQ(m.lookup_heads[0], std::make_pair(0, 0));
  EXPECT_EQ(m.wrong, 20);
  for (const auto& [place, ps] : m.by_place) {
    EXPECT_EQ(ps.wrong, place == planted ? 20 : 0) << "place " << place;
    EXPECT_NEAR(ps.separator_share, place == planted ? 0.9 : 0.0, 1e-12) << "place " << place;
  }
  EXPECT_EQ(m.first_wrong, (std::map<int, int>{{planted, 20}}));
  EXPECT_EQ(m.stop_decisions, 20);
  EXPECT_EQ(m.wrong_stops, 0);
  EXPECT_EQ(m.premature_stops, 0);
  int chain_decisions = 0, chain_wrong = 0;
  for (const auto& [len, c] : m.by_chain) {
    chain_decisions += c.first;
    chain_wrong += c.second;
  }
  EXPECT_EQ(chain_wrong, 20);
  EXPECT_EQ(chain_decisions + m.stop_decisions, m.decisions);
}

TEST(TeacherForcedProbe, CarryChainsCountConsecutiveCarries) {
  plan::TaskPlan task;
  task::Tokenizer tok(task);
  task::Problem p{{task::Number::fromString("999"), task::Number::fromString("1")}, task::Number::fromString("1000")};
  EXPECT_EQ(probe::carryChains(tok.encode(p), 2, 1), (std::vector<int>{0, 1, 2, 3}));
  task::Problem q{{task::Number::fromString("1905"), task::Number::fromString("1095")}, task::Number::fromString("3000")};
  // 5+5 carries into place 2; 0+9+1 carries into 3; 9+0+1 carries into 4; 1+1+1 does not.
  EXPECT_EQ(probe::carryChains(tok.encode(q), 2, 1), (std::vector<int>{0, 1, 2, 3, 0}));
}

TEST(StopProbe, HandSetSeparatorBonusSplitsByKeyGroupAsCountedByHand) {
  // As in the sink-share test: one score c = q.k / 2 on every key, plus 3 on
  // separators. The stop decision (at the last answer digit, index Q) sees
  // n = Q + 1 keys, 2 of them separators: each separator gets e^3 / Z and
  // every other key 1 / Z, Z = 2 e^3 + n - 2. Each group's share is its key
  // count over Z; the separators' log-sum-exp is c + 3 + log 2 and the rest's
  // c + log(n - 2).
  plan::ExperimentPlan p = separatorBonusPlan(3);
  model::Gpt m(p, task::Vocabulary{1}.size());
  const std::vector<double> q = {0.5, 0.1, -0.3, 0.2}, k = {0.4, 0.2, 0.1, -0.6};
  setQueryKey(m, q, k);
  double c = 0;
  for (size_t i = 0; i < q.size(); ++i) c += q[i] * k[i] / 2;
  task::Tokenizer tok(p.task);
  probe::Forward forward = [&](const torch::Tensor& tokens, const torch::Tensor& channels,
                               model::AttentionTrace& trace) {
    return m->forward(tokens, channels, torch::Tensor(), &trace);
  };
  for (int digits : {6, 13}) {
    auto problems = probe::probeProblems(p.task, 21, digits, 7);
    probe::StopMap map = probe::stopAttention(forward, tok, problems, false, 3);
    EXPECT_EQ(map.decisions, 7);
    ASSERT_EQ(map.heads.size(), 1u);
    const probe::StopHead& h = map.heads.at({0, 0});
    double sep_share = 0, near = 0, far = 0, answer = 0, keys = 0, rest_lse = 0, p_eos = 0;
    int right = 0;
    for (const task::Problem& problem : problems) {
      const task::Sequence seq = tok.encode(problem);
      const int Q = static_cast<int>(seq.tokens.size()) - 2;  // the last answer digit, before <eos>
      const double n = Q + 1, z = 2 * std::exp(3.0) + n - 2;
      // Operand digits within one column of the query's column (its column
      // is the answer's length), the other operand digits, the answer so far.
      const int64_t answer_digits = static_cast<int64_t>(seq.tokens.size()) - seq.prompt_length - 1;
      int n_near = 0, n_far = 0;
      for (int i = 0; i < seq.prompt_length; ++i) {
        if (seq.channels[static_cast<size_t>(plan::Channel::Kind)][static_cast<size_t>(i)] != 0) continue;
        const int64_t col = seq.channels[static_cast<size_t>(plan::Channel::Column)][static_cast<size_t>(i)];
        (std::abs(col - answer_digits) <= 1 ? n_near : n_far) += 1;
      }
      sep_share += 2 * std::exp(3.0) / z;
      near += n_near / z;
      far += n_far / z;
      answer += static_cast<double>(answer_digits) / z;
      keys += n;
      rest_lse += c + std::log(n - 2);
      // The model's own P(<eos>) at that token, from a plain forward pass.
      model::BatchTensors bt = model::toTensors(task::makeBatch({seq}, tok.vocabulary()), torch::kCPU);
      auto probs = torch::softmax(m->forward(bt.tokens, bt.channels)[0][Q].to(torch::kDouble), -1);
      p_eos += probs[tok.vocabulary().eos()].item<double>();
      right += probs.argmax().item<int64_t>() == tok.vocabulary().eos();
    }
    EXPECT_NEAR(h.separators, sep_share / 7, 1e-12) << digits;
    EXPECT_NEAR(h.operand_near, near / 7, 1e-12) << digits;
    EXPECT_NEAR(h.operand_far, far / 7, 1e-12) << digits;
    EXPECT_NEAR(h.answer, answer / 7, 1e-12) << digits;
    EXPECT_NEAR(h.other, 0.0, 1e-12) << digits;
    EXPECT_NEAR(h.separators + h.operand_near + h.operand_far + h.answer, 1.0, 1e-12) << digits;
    EXPECT_NEAR(h.separator_lse, c + 3 + std::log(2.0), 1e-12) << digits;
    EXPECT_NEAR(h.rest_lse, rest_lse / 7, 1e-12) << digits;
    EXPECT_NEAR(map.keys, keys / 7, 1e-12) << digits;
    EXPECT_NEAR(map.eos_probability, p_eos / 7, 1e-12) << digits;
    EXPECT_EQ(map.right, right) << digits;
    // The operands' last columns are near: the group is never empty.
    EXPECT_GT(h.operand_near, 0.0);
  }
}
