// The alias check (see alias_check.h).
#include "runtime/probe/alias_check.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/model/gpt.h"
#include "runtime/model/positional.h"
#include "runtime/model/score_formula.h"
#include "runtime/probe/head_scores.h"
#include "runtime/probe/problems.h"

namespace posc::probe {

namespace {

using torch::indexing::None;
using torch::indexing::Slice;

// What each rotation pair of each head can contribute at each key of a sweep.
// A pair turns a unit key e1 into v(d) = M(d) e1 as the query sees it, M being
// the query's and key's rotations (with stretch, xPos scales and key zeroing)
// composed; reading v with the query e1 and with e2 gives its two components
// c and s. Since M acts on the pair as a scaled rotation, a head whose query
// and key are any vectors in that pair scores a c(d) + b s(d): c and s span
// everything the pair can do with distance. An unrotated pair has c = 1, s = 0.
struct PairResponses {
  torch::Tensor c, s;  // (N, H, P)
};

PairResponses pairResponses(const plan::ExperimentPlan& plan, const KeySweep& sweep) {
  torch::NoGradGuard no_grad;
  const int64_t N = sweep.q.size(1), H = plan.model.heads, D = plan.model.head_dim, P = D / 2;
  auto ctx = model::buildPositionalContext(plan.attention, plan.model, torch::stack({sweep.q, sweep.k}, 2),
                                           torch::Tensor(), torch::kDouble);
  auto e1 = torch::zeros({D}, torch::kDouble), e2 = torch::zeros({D}, torch::kDouble);
  e1.index_put_({Slice(0, None, 2)}, 1.0);
  e2.index_put_({Slice(1, None, 2)}, 1.0);
  auto rotated = [&](const torch::Tensor& query) {  // (N, H, 2, D): token 0 the query, token 1 the key
    auto x = torch::stack({query, e1}).reshape({1, 1, 2, D}).expand({N, H, 2, D}).contiguous();
    return std::make_pair(model::applyRotary(x, ctx, model::Side::Query).select(2, 0),
                          model::applyKeyZeroing(model::applyRotary(x, ctx, model::Side::Key), ctx).select(2, 1));
  };
  auto [q1, k] = rotated(e1);
  auto q2 = rotated(e2).first;
  return {(q1 * k).reshape({N, H, P, 2}).sum(-1), (q2 * k).reshape({N, H, P, 2}).sum(-1)};
}

// A modelled head: content(d) = sum over pairs of a c(d) + b s(d), scaled so
// that content(target) = 1.
struct HeadModel {
  torch::Tensor a, b;  // (H, P)
  torch::Tensor spike;  // (H): the fitted kernel's height at the target before scaling (fitted model)
  torch::Tensor content(const PairResponses& r) const { return (r.c * a + r.s * b).sum(-1); }  // (N, H)
};

// Every pair aligned on the target with the same weight: a query in each pair
// along v(target), so the pair scores v(target) . v(d) / |v(target)|.
HeadModel alignedModel(const PairResponses& r, int64_t target) {
  auto c0 = r.c.select(0, target), s0 = r.s.select(0, target);  // (H, P)
  auto norm0 = torch::sqrt(c0 * c0 + s0 * s0);
  auto total = norm0.sum(-1, /*keepdim=*/true);  // the content at the target, before scaling
  auto safe = torch::where(norm0 > 0, norm0, torch::ones_like(norm0)) * torch::where(total > 0, total, torch::ones_like(total));
  HeadModel m;
  m.a = torch::where(norm0 > 0, c0 / safe, torch::zeros_like(c0));
  m.b = torch::where(norm0 > 0, s0 / safe, torch::zeros_like(s0));
  m.spike = torch::ones({c0.size(0)}, torch::kDouble);
  return m;
}

// The pairs' heights and phases fitted by ridge regression to the ideal spike
// (1 at the target, 0 at every other training offset), as in the study's
// ladder fit: min sum_d (f(d) - y(d))^2 + ridge |coefficients|^2, solved in the
// n x n form (Phi Phi^T + ridge I) alpha = y, coefficients = Phi^T alpha.
HeadModel fittedModel(const PairResponses& r, const std::vector<int64_t>& training_rows, int64_t target, double ridge) {
  auto rows = torch::tensor(training_rows, torch::kLong);
  const int64_t n = rows.size(0), P = r.c.size(2);
  auto phi = torch::cat({r.c.index_select(0, rows), r.s.index_select(0, rows)}, 2).permute({1, 0, 2});  // (H, n, 2P)
  auto y = torch::zeros({n, 1}, torch::kDouble);
  for (int64_t i = 0; i < n; ++i)
    if (training_rows[static_cast<size_t>(i)] == target) y[i][0] = 1.0;
  auto gram = torch::matmul(phi, phi.transpose(1, 2)) + ridge * torch::eye(n, torch::kDouble);  // (H, n, n)
  auto alpha = at::linalg_solve(gram, y.unsqueeze(0).expand({phi.size(0), n, 1}));             // (H, n, 1)
  auto coef = torch::matmul(phi.transpose(1, 2), alpha).squeeze(-1);                            // (H, 2P)
  HeadModel m;
  m.a = coef.narrow(1, 0, P);
  m.b = coef.narrow(1, P, P);
  m.spike = (r.c.select(0, target) * m.a + r.s.select(0, target) * m.b).sum(-1);  // (H)
  auto scale = torch::where(m.spike.abs() > 1e-300, m.spike, torch::ones_like(m.spike)).unsqueeze(1);
  m.a = m.a / scale;
  m.b = m.b / scale;
  return m;
}

// The score chain of every head (N, H): the modelled content times
// `target_score`, then the plan's score terms with their initial parameters.
torch::Tensor chainScores(const plan::ExperimentPlan& plan, const std::vector<torch::Tensor>& params, const KeySweep& sweep,
                          const HeadModel& head, double target_score) {
  torch::NoGradGuard no_grad;
  auto content = head.content(pairResponses(plan, sweep)) * target_score;
  const int64_t N = content.size(0), H = content.size(1);
  std::vector<torch::Tensor> p64;
  for (const auto& t : params) p64.push_back(t.to(torch::kDouble));
  auto post = model::applyScoreTerms(content.reshape({N, H, 1, 1}), sweep.q.unsqueeze(2), sweep.k.unsqueeze(2),
                                     plan.attention, p64);
  return post.reshape({N, H}).contiguous();
}

Channels channelsAt(const task::Sequence& s, int index) {
  Channels c{};
  for (int i = 0; i < plan::kChannelCount; ++i) c[static_cast<size_t>(i)] = s.channels[static_cast<size_t>(i)][static_cast<size_t>(index)];
  return c;
}

// Whether scores at keys 10^4, 10^5, ... 10^12 columns away look bounded: none
// exceeds the largest magnitude within the sweep, and they do not drift (a
// logarithmic or linear penalty that has not yet crossed that magnitude moves
// the same way decade after decade by steps that do not shrink; a decay's steps
// shrink to nothing and a rotation's oscillate).
bool staysBounded(const std::vector<double>& by_decade, double magnitude) {
  for (double v : by_decade)
    if (!std::isfinite(v) || std::fabs(v) > magnitude * (1 + 1e-9) + 1e-12) return false;
  const size_t n = by_decade.size(), tail = 8;
  if (n < tail + 1) return true;
  double first = 0, last = 0;
  int direction = 0;
  for (size_t i = n - tail; i < n; ++i) {
    const double step = by_decade[i] - by_decade[i - 1];
    const int d = step > 0 ? 1 : step < 0 ? -1 : 0;
    if (d == 0 || (direction != 0 && d != direction)) return true;
    direction = d;
    if (i == n - tail) first = std::fabs(step);
    last = std::fabs(step);
  }
  // A drift of 0.1% of the sweep's magnitude over the last 8 decades; far more
  // than float64's rounding of the angles there.
  const bool drifts =
      last >= 0.5 * first && std::fabs(by_decade[n - 1] - by_decade[n - tail - 1]) > 1e-3 * std::max(1.0, magnitude);
  return !drifts;
}

}  // namespace

AliasGeometry aliasGeometry(const plan::ExperimentPlan& plan, double target_score) {
  AliasGeometry g;
  g.target_score = target_score;
  // Columns count tokens of k digits each.
  const int k = std::max(1, plan.task.digits_per_token);
  auto tokens = [k](int digits) { return (digits + k - 1) / k; };
  // Padded orders train every operand at the padded width.
  const int trained_digits = plan::operandWidth(plan.task, plan.task.train_max_digits);
  g.trained = tokens(trained_digits) - 1;
  for (const plan::ProbePlan& p : plan.probes) {
    if (p.kind != plan::ProbeKind::Kernel) continue;
    g.length = p.length;
    g.place = p.place;
    g.operand = p.operand;
    g.sweep_begin = p.sweep_begin;
    g.sweep_end = p.sweep_end;
    g.window = p.window;
    g.far = p.far;
    g.problem_seed = p.problem_seed;
    g.from = fmt::format("the kernel probe '{}'", p.name);
    return g;
  }
  const int longest_test = plan.task.test_digits.empty()
                               ? plan.task.train_max_digits
                               : *std::max_element(plan.task.test_digits.begin(), plan.task.test_digits.end());
  // The last answer place of the longest test problem: its keys in row 0 sit
  // at every distance a test problem has, all before the query. Places and
  // columns count tokens.
  g.length = longest_test;
  g.place = tokens(longest_test);
  g.sweep_begin = 1 - tokens(longest_test);
  g.sweep_end = 1;
  g.window = 1;
  g.far = tokens(trained_digits);
  g.from = fmt::format("defaults: the last answer place of the longest test problem, every column of its first "
                       "operand; far = beyond the longest training length ({} digits)",
                       trained_digits);
  return g;
}

std::string aliasVerdict(const HeadAliases& h) {
  if (h.flat) return "no positional signal: every key scores like the target";
  if (!h.has_far) return "no far windows in the sweep";
  if (!(h.target > 0))
    return h.far_score >= h.target
               ? fmt::format("far alias: a far key scores {:.3g} points above the target at offset {} (the target "
                             "scores {:.3g}: its terms outweigh the modelled content)",
                             h.far_score - h.target, h.far_at, h.target)
               : fmt::format("far keys score at least {:.3g} points below the target (which scores {:.3g}: its terms "
                             "outweigh the modelled content)",
                             h.target - h.far_score, h.target);
  if (h.far >= 0.5) return fmt::format("far alias: {:.3g} of the target at offset {}", h.far, h.far_at);
  if (h.far >= 0.05) return fmt::format("weak far alias: {:.3g} of the target at offset {}", h.far, h.far_at);
  return fmt::format("far scores suppressed (at most {:.3g} of the target)", h.far);
}

AliasReport checkAliases(const plan::ExperimentPlan& plan, const AliasGeometry& g) {
  if (g.sweep_end <= g.sweep_begin || g.sweep_begin > 0 || g.sweep_end <= 0)
    throw std::invalid_argument("the alias check's sweep must contain offset 0 (the target)");
  AliasReport r;
  r.geometry = g;
  task::Tokenizer tokenizer(plan.task);
  const auto problems = probeProblems(plan.task, g.problem_seed, g.length, 1);
  const task::Sequence seq = forcedBatch(tokenizer, problems).sequences[0];
  const int q = decisionIndex(seq, g.place), k = digitIndex(seq, g.operand, g.place);
  if (q < 0 || k < 0)
    throw std::invalid_argument(fmt::format("the alias check: no answer place {} at {} digits", g.place, g.length));
  const Channels qc = channelsAt(seq, q), kc = channelsAt(seq, k);
  const int64_t target_column = kc[static_cast<size_t>(plan::Channel::Column)];

  std::vector<torch::Tensor> params;
  for (const plan::Param& p : plan.attention.params) params.push_back(model::initialScoreParam(p, plan.model.heads));

  // Keys after the query are masked in attention: the sweep ends at the last
  // offset whose key still precedes (or is) the query.
  const int64_t qpos = qc[static_cast<size_t>(plan::Channel::Position)];
  const int64_t kpos = kc[static_cast<size_t>(plan::Channel::Position)];
  r.last_causal_offset = qpos - kpos;
  std::vector<int64_t> offsets, columns;
  for (int64_t o = g.sweep_begin; o < std::min(g.sweep_end, r.last_causal_offset + 1); ++o) {
    offsets.push_back(o);
    columns.push_back(target_column + o);
  }
  const int64_t target = -g.sweep_begin;
  const KeySweep sweep = keySweep(qc, kc, columns);
  const PairResponses responses = pairResponses(plan, sweep);
  std::vector<int64_t> training_rows;
  const int64_t trained = g.trained;
  for (size_t i = 0; i < offsets.size(); ++i)
    if (std::llabs(offsets[i]) <= trained) training_rows.push_back(static_cast<int64_t>(i));
  const HeadModel head = g.model == AliasModel::Fitted ? fittedModel(responses, training_rows, target, g.ridge)
                                                       : alignedModel(responses, target);
  const torch::Tensor scores = chainScores(plan, params, sweep, head, g.target_score);

  // The same sweep with query and key moved together.
  Channels qs = qc, ks = kc;
  for (plan::Channel ch : {plan::Channel::Position, plan::Channel::Column, plan::Channel::Row}) {
    const int64_t shift = ch == plan::Channel::Position ? 37 : ch == plan::Channel::Column ? 11 : 3;
    qs[static_cast<size_t>(ch)] += shift;
    ks[static_cast<size_t>(ch)] += shift;
  }
  std::vector<int64_t> shifted_columns;
  for (int64_t c : columns) shifted_columns.push_back(c + 11);
  const torch::Tensor shifted = chainScores(plan, params, keySweep(qs, ks, shifted_columns), head, g.target_score);

  // Far beyond the sweep: keys 10^4 .. 10^12 columns before the target (angles
  // of 10^12 radians still hold 4 decimals in float64).
  std::vector<int64_t> remote;
  for (int e = 4; e <= 12; ++e) remote.push_back(target_column - static_cast<int64_t>(std::pow(10.0, e)));
  remote.push_back(target_column);
  const torch::Tensor remote_scores = chainScores(plan, params, keySweep(qc, kc, remote), head, g.target_score);
  for (int h = 0; h < plan.model.heads; ++h) {
    auto col = scores.select(1, h).contiguous();
    const std::vector<double> s(col.data_ptr<double>(), col.data_ptr<double>() + col.numel());
    HeadAliases a;
    a.head = h;
    a.target = s[static_cast<size_t>(target)];
    a.spike = head.spike[h].item<double>();
    double lo = INFINITY, hi = -INFINITY, magnitude = 0;
    for (double v : s) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      magnitude = std::max(magnitude, std::fabs(v));
    }
    a.flat = hi - lo <= 1e-12 * std::max(1.0, magnitude);
    const double diff = (scores.select(1, h) - shifted.select(1, h)).abs().max().item<double>();
    a.translation_invariant = diff <= 1e-9 * std::max(1.0, magnitude);
    auto remote_col = remote_scores.select(1, h).contiguous();
    a.bounded = staysBounded({remote_col.data_ptr<double>(), remote_col.data_ptr<double>() + remote.size() - 1}, magnitude);
    a.near = -INFINITY;
    a.far = -INFINITY;
    for (const auto& [w0, best] : windowMaxima(offsets, s, g.window)) {
      const bool is_far = std::min(std::llabs(w0), std::llabs(w0 + g.window - 1)) >= g.far;
      const double fraction = best / a.target;
      if (!is_far) {
        a.near = std::max(a.near, fraction);
        continue;
      }
      if (!a.has_far || best > a.far_score) {
        a.far = fraction;
        a.far_score = best;
        for (size_t i = 0; i < offsets.size(); ++i)
          if (offsets[i] >= w0 && offsets[i] < w0 + g.window && s[i] == best) a.far_at = offsets[i];
      }
      a.has_far = true;
    }
    r.heads.push_back(a);
  }
  if (!plan.attention.embeddings.empty())
    r.notes.push_back(
        "absolute position embeddings add to the token's vector, not to the score chain: the check does not see them");
  std::string learned;
  for (const plan::Param& p : plan.attention.params)
    if (p.learned) learned += (learned.empty() ? "" : ", ") + p.name;
  if (!learned.empty())
    r.notes.push_back(fmt::format("learned parameters ({}) are read at their initial values; training moves them",
                                  learned));
  if (plan.model.layers > 1) r.notes.push_back("every layer starts from the same positional parameters: one row per head");
  return r;
}

}  // namespace posc::probe
