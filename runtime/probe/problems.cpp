// Probe problems and teacher-forced batches: see problems.h.
#include "runtime/probe/problems.h"

#include <torch/torch.h>

#include <algorithm>

#include "runtime/train/trainer.h"

namespace posc::probe {

std::vector<task::Problem> probeProblems(const plan::TaskPlan& task, uint64_t seed, int digits, int count) {
  plan::TaskPlan t = task;
  t.test_seed = seed;
  t.problems_per_length = count;
  return task::testProblems(t, digits);
}

ForcedBatch forcedBatch(const task::Tokenizer& tokenizer, const std::vector<task::Problem>& problems,
                        const std::vector<plan::ChannelSampling>& sampled) {
  ForcedBatch b;
  for (const task::Problem& p : problems) b.sequences.push_back(tokenizer.encode(p));
  task::Batch batch = task::makeBatch(b.sequences, tokenizer.vocabulary());
  if (!sampled.empty()) {
    const size_t L = static_cast<size_t>(batch.length);
    for (size_t row = 0; row < problems.size(); ++row) {
      const task::ChannelLabels labels = task::evaluationLabels(sampled, tokenizer, problems[row]);
      for (const auto& [channel, label] : labels.maps)
        for (size_t t = 0; t < L; ++t) {
          int64_t& v = batch.channels[static_cast<size_t>(channel)][row * L + t];
          v = label[static_cast<size_t>(std::clamp<int64_t>(v, 0, static_cast<int64_t>(label.size()) - 1))];
        }
    }
  }
  train::BatchTensors t = train::toTensors(batch, torch::kCPU);
  b.tokens = t.tokens;
  b.channels = t.channels;
  return b;
}

int decisionIndex(const task::Sequence& s, int place) {
  int i = s.prompt_length - 1 + (place - 1);
  return i >= 0 && i + 1 < static_cast<int>(s.tokens.size()) ? i : -1;
}

int digitIndex(const task::Sequence& s, int row, int column) {
  const auto& rows = s.channels[static_cast<size_t>(plan::Channel::Row)];
  const auto& cols = s.channels[static_cast<size_t>(plan::Channel::Column)];
  const auto& kinds = s.channels[static_cast<size_t>(plan::Channel::Kind)];
  for (size_t i = 0; i < s.tokens.size(); ++i)
    if (rows[i] == row && cols[i] == column && kinds[i] == static_cast<int64_t>(plan::TokenKind::Digit) &&
        static_cast<int>(i) < s.prompt_length)
      return static_cast<int>(i);
  return -1;
}

}  // namespace posc::probe
