// Stop attention: see stop_attention.h.
#include "runtime/probe/stop_attention.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "runtime/probe/problems.h"

namespace posc::probe {

namespace {

enum class Group { Separators, OperandNear, OperandFar, Answer, Other };

// log(sum(exp(x))) of the values, -inf for none.
double logSumExp(const std::vector<double>& xs) {
  if (xs.empty()) return -std::numeric_limits<double>::infinity();
  const double m = *std::max_element(xs.begin(), xs.end());
  double sum = 0;
  for (double x : xs) sum += std::exp(x - m);
  return m + std::log(sum);
}

}  // namespace

StopMap stopAttention(const Forward& forward, const task::Tokenizer& tokenizer,
                      const std::vector<task::Problem>& problems, bool null_slot, int batch,
                      const std::vector<plan::ChannelSampling>& sampled) {
  torch::NoGradGuard no_grad;
  StopMap m;
  const int eos = tokenizer.vocabulary().eos();
  const auto column = static_cast<size_t>(plan::Channel::Column);
  const auto kind = static_cast<size_t>(plan::Channel::Kind);
  const auto digit = static_cast<int64_t>(plan::TokenKind::Digit);
  const auto separator = static_cast<int64_t>(plan::TokenKind::Separator);
  for (size_t start = 0; start < problems.size(); start += static_cast<size_t>(batch)) {
    std::vector<task::Problem> chunk(problems.begin() + static_cast<long>(start),
                                     problems.begin() + static_cast<long>(std::min(problems.size(), start + batch)));
    ForcedBatch fb = forcedBatch(tokenizer, chunk, sampled);
    model::AttentionTrace trace;
    auto probs = torch::softmax(forward(fb.tokens, fb.channels, trace).to(torch::kCPU, torch::kDouble), -1).contiguous();
    auto probs_a = probs.accessor<double, 3>();
    auto predicted = probs.argmax(-1).contiguous();  // (B, L), as teacher_forced decides
    auto pred_a = predicted.accessor<int64_t, 2>();
    const int layers = static_cast<int>(trace.weights.size());
    std::vector<torch::Tensor> w(layers), s(layers);
    for (int l = 0; l < layers; ++l) {
      w[l] = trace.weights[l].to(torch::kCPU, torch::kDouble).contiguous();
      s[l] = trace.scores[l].to(torch::kCPU, torch::kDouble).contiguous();
    }
    for (size_t b = 0; b < chunk.size(); ++b) {
      const task::Sequence& seq = fb.sequences[b];
      const int stop_place = static_cast<int>(seq.tokens.size()) - seq.prompt_length;  // the decision emitting <eos>
      const int q = decisionIndex(seq, stop_place);
      if (q < 0 || seq.tokens[static_cast<size_t>(q + 1)] != eos) continue;
      ++m.decisions;
      m.eos_probability += probs_a[static_cast<int64_t>(b)][q][eos];
      m.right += pred_a[static_cast<int64_t>(b)][q] == eos;
      m.keys += q + 1;
      // The group of every key the stop decision sees.
      const int64_t q_column = seq.channels[column][static_cast<size_t>(q)];
      std::vector<Group> group(static_cast<size_t>(q + 1));
      for (int k = 0; k <= q; ++k) {
        const int64_t kk = seq.channels[kind][static_cast<size_t>(k)];
        if (kk == separator) group[k] = Group::Separators;
        else if (kk != digit) group[k] = Group::Other;
        else if (k >= seq.prompt_length) group[k] = Group::Answer;
        else if (std::llabs(seq.channels[column][static_cast<size_t>(k)] - q_column) <= 1) group[k] = Group::OperandNear;
        else group[k] = Group::OperandFar;
      }
      for (int l = 0; l < layers; ++l) {
        auto wa = w[l].accessor<double, 4>();
        auto sa = s[l].accessor<double, 4>();
        for (int64_t h = 0; h < w[l].size(1); ++h) {
          StopHead& sh = m.heads[{l, static_cast<int>(h)}];
          double shares[5] = {0, 0, 0, 0, 0};
          std::vector<double> sep_scores, rest_scores;
          for (int k = 0; k <= q; ++k) {
            const double weight = wa[static_cast<int64_t>(b)][h][q][k];
            shares[static_cast<int>(group[k])] += weight;
            if (group[k] == Group::OperandFar)
              sh.far_by_offset[static_cast<int>(seq.channels[column][static_cast<size_t>(k)] - q_column)] += weight;
            const double score = sa[static_cast<int64_t>(b)][h][q][k];
            (group[k] == Group::Separators ? sep_scores : rest_scores).push_back(score);
          }
          if (null_slot) rest_scores.push_back(0.0);
          // What the token keys do not take goes to the null slot (if any).
          shares[static_cast<int>(Group::Other)] +=
              std::max(0.0, 1.0 - shares[0] - shares[1] - shares[2] - shares[3] - shares[4]);
          sh.separators += shares[0];
          sh.operand_near += shares[1];
          sh.operand_far += shares[2];
          sh.answer += shares[3];
          sh.other += shares[4];
          sh.separator_lse += logSumExp(sep_scores);
          sh.rest_lse += logSumExp(rest_scores);
        }
      }
    }
  }
  if (m.decisions > 0) {
    const double n = m.decisions;
    m.eos_probability /= n;
    m.keys /= n;
    for (auto& [_, sh] : m.heads) {
      for (double* x : {&sh.separators, &sh.operand_near, &sh.operand_far, &sh.answer, &sh.other, &sh.separator_lse,
                        &sh.rest_lse})
        *x /= n;
      for (auto& [_, x] : sh.far_by_offset) x /= n;
    }
  }
  return m;
}

}  // namespace posc::probe
