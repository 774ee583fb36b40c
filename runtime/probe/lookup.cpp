// Traces and lookup heads for the kernel and band probes: see lookup.h.
#include "runtime/probe/lookup.h"

#include <torch/torch.h>

namespace posc::probe {

Traced traceProblems(model::Gpt& model, const task::Tokenizer& tokenizer, const std::vector<task::Problem>& problems,
                     const std::vector<plan::ChannelSampling>& sampled) {
  torch::NoGradGuard no_grad;
  Traced t;
  t.batch = forcedBatch(tokenizer, problems, sampled);
  const torch::Device device = model->parameters().front().device();
  model->forward(t.batch.tokens.to(device), t.batch.channels.to(device), torch::Tensor(), &t.trace);
  for (auto* v : {&t.trace.weights, &t.trace.scores, &t.trace.queries, &t.trace.keys})
    for (auto& x : *v) x = x.to(torch::kCPU, torch::kDouble);
  return t;
}

plan::HeadChoice lookupHead(const Traced& t, int place, int operand, plan::HeadChoice choice) {
  if (choice.layer >= 0 && choice.head >= 0) return choice;
  double best = -1;
  plan::HeadChoice out = choice;
  const int layers = static_cast<int>(t.trace.weights.size());
  for (int l = 0; l < layers; ++l) {
    if (choice.layer >= 0 && l != choice.layer) continue;
    const int64_t H = t.trace.weights[l].size(1);
    for (int64_t h = 0; h < H; ++h) {
      if (choice.head >= 0 && h != choice.head) continue;
      double sum = 0;
      int n = 0;
      for (size_t b = 0; b < t.batch.sequences.size(); ++b) {
        const task::Sequence& s = t.batch.sequences[b];
        const int q = decisionIndex(s, place), k = digitIndex(s, operand, place);
        if (q < 0 || k < 0) continue;
        sum += t.trace.weights[l][static_cast<int64_t>(b)][h][q][k].item<double>();
        ++n;
      }
      const double mean = n ? sum / n : 0;
      if (mean > best) {
        best = mean;
        out = {l, static_cast<int>(h)};
      }
    }
  }
  return out;
}

QueryKey queryKey(const Traced& t, int layer, int b, int q, int k) {
  QueryKey qk;
  qk.q = t.trace.queries[layer][b].select(1, q).contiguous();  // (H, D)
  qk.k = t.trace.keys[layer][b].select(1, k).contiguous();
  // The channel values the model read (with randomised channels, the
  // problem's evaluation labels; otherwise the sequence's own).
  auto ch = t.batch.channels.accessor<int64_t, 3>();
  for (int c = 0; c < plan::kChannelCount; ++c) {
    qk.q_channels[c] = ch[c][b][q];
    qk.k_channels[c] = ch[c][b][k];
  }
  return qk;
}

}  // namespace posc::probe
