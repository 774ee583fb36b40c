// Probe problems and teacher-forced batches: see problems.h.
#include "runtime/probe/problems.h"
#include "runtime/model/batch.h"

#include <torch/torch.h>


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
  // What the model reads: the sequences with their evaluation labels.
  std::vector<task::Sequence> read = b.sequences;
  for (size_t i = 0; i < read.size() && !sampled.empty(); ++i)
    task::evaluationLabels(sampled, tokenizer, problems[i]).apply(read[i].channels);
  model::BatchTensors t = model::toTensors(task::makeBatch(read, tokenizer.vocabulary()), torch::kCPU);
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
