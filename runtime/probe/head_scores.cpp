// Kernel sweep and band split: see kernel.h.
#include "runtime/probe/head_scores.h"

#include <torch/torch.h>

#include <cmath>
#include <map>

#include "runtime/model/positional.h"
#include "runtime/model/score_formula.h"

namespace posc::probe {

namespace {

torch::Tensor channelColumn(const Channels& c) { return torch::tensor(std::vector<int64_t>(c.begin(), c.end()), torch::kLong); }

// Pair contributions (N, H, P) of the rotated dot product for N key variants,
// and the post-term scores (N, H). q_ch (C, N), k_ch (C, N).
struct Scored {
  torch::Tensor pairs, scores;
};

Scored score(const plan::ExperimentPlan& plan, const std::vector<torch::Tensor>& params, const QueryKey& qk,
             const torch::Tensor& q_ch, const torch::Tensor& k_ch) {
  torch::NoGradGuard no_grad;
  const int64_t N = q_ch.size(1), H = plan.model.heads, D = plan.model.head_dim, P = D / 2;
  auto channels = torch::stack({q_ch, k_ch}, 2);  // (C, N, 2): token 0 query, token 1 key
  auto ctx = model::buildPositionalContext(plan.attention, plan.model, channels, torch::Tensor(), torch::kDouble);
  auto x = torch::stack({qk.q.to(torch::kCPU, torch::kDouble), qk.k.to(torch::kCPU, torch::kDouble)}, 1);  // (H, 2, D)
  x = x.unsqueeze(0).expand({N, H, 2, D}).contiguous();
  auto q = model::applyRotary(x, ctx, model::Side::Query).select(2, 0);
  auto k = model::applyKeyZeroing(model::applyRotary(x, ctx, model::Side::Key), ctx).select(2, 1);
  auto pairs = (q * k).reshape({N, H, P, 2}).sum(-1) / std::sqrt(static_cast<double>(D));
  auto dot = pairs.sum(-1).reshape({N, H, 1, 1});
  std::vector<torch::Tensor> p64;
  for (const auto& t : params) p64.push_back(t.detach().to(torch::kCPU, torch::kDouble));
  auto post = model::applyScoreTerms(dot, q_ch.unsqueeze(2), k_ch.unsqueeze(2), plan.attention, p64);
  return {pairs, post.reshape({N, H})};
}

}  // namespace

KeySweep keySweep(const Channels& query, const Channels& key, const std::vector<int64_t>& key_columns) {
  const int64_t N = static_cast<int64_t>(key_columns.size());
  KeySweep sweep;
  sweep.q = channelColumn(query).reshape({plan::kChannelCount, 1}).expand({plan::kChannelCount, N}).contiguous();
  sweep.k = channelColumn(key).reshape({plan::kChannelCount, 1}).repeat({1, N});
  // The key moves along its row: its position shifts with its column.
  auto columns = torch::tensor(key_columns, torch::kLong);
  const int64_t shift_from = key[static_cast<size_t>(plan::Channel::Column)];
  sweep.k[static_cast<int64_t>(plan::Channel::Position)] =
      columns - shift_from + key[static_cast<size_t>(plan::Channel::Position)];
  sweep.k[static_cast<int64_t>(plan::Channel::Column)] = columns;
  return sweep;
}

std::vector<double> sweepKeyColumn(const plan::ExperimentPlan& plan, const std::vector<torch::Tensor>& params,
                                   const QueryKey& qk, int head, const std::vector<int64_t>& key_columns) {
  const KeySweep sweep = keySweep(qk.q_channels, qk.k_channels, key_columns);
  auto s = score(plan, params, qk, sweep.q, sweep.k).scores.select(1, head).contiguous();
  return std::vector<double>(s.data_ptr<double>(), s.data_ptr<double>() + static_cast<int64_t>(key_columns.size()));
}

std::vector<PairInfo> pairInfo(const plan::ExperimentPlan& plan, int head) {
  std::vector<PairInfo> info(static_cast<size_t>(plan.model.head_dim / 2));
  for (const plan::Rotation& r : plan.attention.rotations) {
    bool on = r.heads.empty();
    for (int h : r.heads) on = on || h == head;
    const int n = r.pair_end - r.pair_begin;
    if (!on || n <= 0) continue;
    const double scale = r.stretch ? r.stretch->eval_value : 1.0;
    const std::vector<double> theta = plan::inverseFrequencies(r);
    for (int i = r.pair_begin; i < r.pair_end; ++i) {
      PairInfo& p = info[static_cast<size_t>(i)];
      if (p.rotated) continue;  // composed rotations: classified by the first
      const double freq = theta[static_cast<size_t>(i - r.pair_begin)] * scale;
      p = {2 * M_PI / freq, r.channel, true};
    }
  }
  return info;
}

BandSplit splitBands(const plan::ExperimentPlan& plan, const std::vector<torch::Tensor>& params, const QueryKey& qk,
                     int head, double fast_period, double slow_period) {
  auto q_ch = channelColumn(qk.q_channels).reshape({plan::kChannelCount, 1});
  auto k_ch = channelColumn(qk.k_channels).reshape({plan::kChannelCount, 1});
  Scored s = score(plan, params, qk, q_ch, k_ch);
  auto pairs = s.pairs.select(0, 0).select(0, head).contiguous();  // (P)
  const double* c = pairs.data_ptr<double>();
  BandSplit b;
  double dot = 0;
  const std::vector<PairInfo> info = pairInfo(plan, head);
  for (size_t i = 0; i < info.size(); ++i) {
    dot += c[i];
    if (!info[i].rotated) b.unrotated += c[i];
    else if (info[i].channel == plan::Channel::Row) b.row += c[i];
    else if (info[i].period < fast_period) b.fast += c[i];
    else if (info[i].period > slow_period) b.slow += c[i];
    else b.mid += c[i];
  }
  b.total = s.scores[0][head].item<double>();
  b.terms = b.total - dot;
  return b;
}

std::vector<std::pair<int64_t, double>> windowMaxima(const std::vector<int64_t>& offsets,
                                                     const std::vector<double>& scores, int width) {
  std::map<int64_t, double> best;
  for (size_t i = 0; i < offsets.size(); ++i) {
    if (offsets[i] == 0) continue;
    int64_t w = offsets[i] >= 0 ? offsets[i] / width * width : -((-offsets[i] + width - 1) / width) * width;
    auto it = best.find(w);
    if (it == best.end() || scores[i] > it->second) best[w] = scores[i];
  }
  return {best.begin(), best.end()};
}

}  // namespace posc::probe
