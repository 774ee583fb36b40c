// Teacher-forced decision map: see teacher_forced.h.
#include "runtime/probe/teacher_forced.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "runtime/probe/problems.h"
#include "runtime/probe/sink_share.h"

namespace posc::probe {

Forward modelForward(model::Gpt& model) {
  const torch::Device device = model->parameters().front().device();
  return [&model, device](const torch::Tensor& tokens, const torch::Tensor& channels, model::AttentionTrace& trace) {
    return model->forward(tokens.to(device), channels.to(device), torch::Tensor(), &trace);
  };
}

std::vector<int> carryChains(const task::Sequence& s, int operands, int digits_per_token) {
  const auto& rows = s.channels[static_cast<size_t>(plan::Channel::Row)];
  const auto& cols = s.channels[static_cast<size_t>(plan::Channel::Column)];
  const auto& kinds = s.channels[static_cast<size_t>(plan::Channel::Kind)];
  std::map<int64_t, int64_t> column_sum;  // column -> sum of operand token values
  int64_t max_col = 0;
  for (int i = 0; i < s.prompt_length; ++i)
    if (kinds[i] == 0 && rows[i] < operands) {
      column_sum[cols[i]] += s.tokens[i];
      max_col = std::max(max_col, cols[i]);
    }
  const int64_t base = static_cast<int64_t>(std::llround(std::pow(10.0, digits_per_token)));
  std::vector<int> chain(static_cast<size_t>(max_col + 1), 0);  // places 1 .. max_col + 1
  int64_t carry = 0;
  int run = 0;
  for (int64_t c = 1; c <= max_col + 1; ++c) {
    chain[static_cast<size_t>(c - 1)] = run;  // chain into place c
    carry = (column_sum[c] + carry) / base;
    run = carry > 0 ? run + 1 : 0;
  }
  return chain;
}

TeacherForcedMap teacherForcedMap(const Forward& forward, const task::Tokenizer& tokenizer,
                                  const std::vector<task::Problem>& problems, int lookup_heads, int batch,
                                  const std::vector<plan::ChannelSampling>& sampled) {
  torch::NoGradGuard no_grad;
  TeacherForcedMap m;
  const int eos = tokenizer.vocabulary().eos();
  // Per (layer, head): attention on target digits (sum, count) and separator share by place.
  std::map<std::pair<int, int>, std::pair<double, int>> target;
  std::map<std::pair<int, int>, std::map<int, std::pair<double, int>>> share;
  for (size_t start = 0; start < problems.size(); start += static_cast<size_t>(batch)) {
    std::vector<task::Problem> chunk(problems.begin() + static_cast<long>(start),
                                     problems.begin() + static_cast<long>(std::min(problems.size(), start + batch)));
    ForcedBatch fb = forcedBatch(tokenizer, chunk, sampled);
    model::AttentionTrace trace;
    auto logits = forward(fb.tokens, fb.channels, trace);
    auto predicted = logits.argmax(-1).to(torch::kCPU).contiguous();  // (B, L)
    auto kinds = fb.channels.select(0, static_cast<int64_t>(plan::Channel::Kind));
    const int layers = static_cast<int>(trace.weights.size());
    std::vector<torch::Tensor> sep(layers), w(layers);
    std::vector<torch::TensorAccessor<double, 3>> sep_a;
    std::vector<torch::TensorAccessor<double, 4>> w_a;
    for (int l = 0; l < layers; ++l) {
      w[l] = trace.weights[l].to(torch::kCPU, torch::kDouble).contiguous();
      sep[l] = separatorShare(w[l], kinds).contiguous();  // (B, H, L)
      w_a.push_back(w[l].accessor<double, 4>());
      sep_a.push_back(sep[l].accessor<double, 3>());
    }
    auto pred_a = predicted.accessor<int64_t, 2>();
    for (size_t b = 0; b < chunk.size(); ++b) {
      const task::Sequence& s = fb.sequences[b];
      const int answer_tokens = static_cast<int>(s.tokens.size()) - s.prompt_length;  // digits + <eos>
      const std::vector<int> chains = carryChains(s, static_cast<int>(chunk[b].operands.size()),
                                                  tokenizer.vocabulary().digits_per_token);
      int first_wrong = 0;
      for (int place = 1; place <= answer_tokens; ++place) {
        const int q = decisionIndex(s, place);
        const int64_t truth = s.tokens[static_cast<size_t>(q + 1)];
        const int64_t got = pred_a[static_cast<int64_t>(b)][q];
        const bool wrong = got != truth;
        ++m.decisions;
        m.wrong += wrong;
        if (wrong && !first_wrong) first_wrong = place;
        if (truth == eos) {
          ++m.stop_decisions;
          m.wrong_stops += wrong;
          continue;
        }
        if (got == eos) ++m.premature_stops;
        PlaceStats& ps = m.by_place[place];
        ++ps.decisions;
        ps.wrong += wrong;
        if (static_cast<size_t>(place - 1) < chains.size()) {
          auto& c = m.by_chain[chains[static_cast<size_t>(place - 1)]];
          ++c.first;
          c.second += wrong;
        }
        std::vector<int> targets;
        for (int r = 0; r < static_cast<int>(chunk[b].operands.size()); ++r) {
          const int t = digitIndex(s, r, place);
          if (t >= 0) targets.push_back(t);
        }
        for (int l = 0; l < layers; ++l) {
          const int64_t H = w[l].size(1);
          for (int64_t h = 0; h < H; ++h) {
            auto& sh = share[{l, static_cast<int>(h)}][place];
            sh.first += sep_a[l][static_cast<int64_t>(b)][h][q];
            ++sh.second;
            if (targets.empty()) continue;
            double on_target = 0;
            for (int t : targets) on_target += w_a[l][static_cast<int64_t>(b)][h][q][t];
            auto& tg = target[{l, static_cast<int>(h)}];
            tg.first += on_target;
            ++tg.second;
          }
        }
      }
      if (first_wrong) ++m.first_wrong[first_wrong];
    }
  }
  // The main lookup heads, then their separator share by place.
  std::vector<std::pair<double, std::pair<int, int>>> ranked;
  for (const auto& [lh, t] : target) ranked.push_back({t.second ? t.first / t.second : 0.0, lh});
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (int i = 0; i < lookup_heads && i < static_cast<int>(ranked.size()); ++i) {
    m.lookup_heads.push_back(ranked[static_cast<size_t>(i)].second);
    m.lookup_target_share.push_back(ranked[static_cast<size_t>(i)].first);
  }
  for (auto& [place, ps] : m.by_place) {
    double sum = 0;
    int n = 0;
    for (const auto& lh : m.lookup_heads) {
      const auto& sh = share[lh][place];
      sum += sh.first;
      n += sh.second;
    }
    ps.separator_share = n ? sum / n : 0.0;
  }
  return m;
}

}  // namespace posc::probe
