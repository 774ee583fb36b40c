// Problem sampling: random operands for training and the fixed test sets.
// Uniform draws are done here from raw generator output (rejection sampling)
// rather than with std::uniform_int_distribution, whose algorithm differs
// between standard libraries: the same seed must give the same problems
// everywhere.
#include <algorithm>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>

#include "runtime/task/addition.h"

namespace posc::task {
namespace {

// Uniform in [0, n), n > 0, without modulo bias: draws falling in the
// incomplete last block of n values are rejected.
uint64_t uniformBelow(uint64_t n, std::mt19937_64& rng) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  const uint64_t accept_below = kMax - kMax % n;  // a multiple of n
  for (;;) {
    const uint64_t draw = rng();
    if (draw < accept_below) return draw % n;
  }
}

// Uniform in [lo, hi].
int uniformBetween(int lo, int hi, std::mt19937_64& rng) {
  return lo + static_cast<int>(uniformBelow(static_cast<uint64_t>(hi - lo) + 1, rng));
}

// SplitMix64 finaliser: spreads nearby seeds over the whole generator state.
uint64_t mixBits(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t testSeed(uint64_t test_seed, int digits) {
  return mixBits(mixBits(test_seed) ^ mixBits(0x5eedULL + static_cast<uint64_t>(digits)));
}

Problem problemFrom(std::vector<Number> operands) {
  Problem p;
  p.answer = sum(operands);
  p.operands = std::move(operands);
  return p;
}

}  // namespace

Number randomNumber(int length, std::mt19937_64& rng) {
  if (length < 1) throw std::invalid_argument("randomNumber: length must be at least 1");
  Number n;
  n.digits.resize(static_cast<size_t>(length));
  for (int i = 0; i + 1 < length; ++i) n.digits[i] = static_cast<uint8_t>(uniformBelow(10, rng));
  const int lowest_leading = length == 1 ? 0 : 1;
  n.digits[length - 1] = static_cast<uint8_t>(uniformBetween(lowest_leading, 9, rng));
  return n;
}

// A number uniform over the values of min_length..max_length digits
// (0 included when min_length is 1): max_length uniform digits, leading
// zeros dropped, drawn again while it is shorter than min_length.
Number randomValue(int min_length, int max_length, std::mt19937_64& rng) {
  for (;;) {
    Number n;
    n.digits.resize(static_cast<size_t>(max_length));
    for (auto& d : n.digits) d = static_cast<uint8_t>(uniformBelow(10, rng));
    while (n.digits.size() > 1 && n.digits.back() == 0) n.digits.pop_back();
    if (static_cast<int>(n.digits.size()) >= min_length) return n;
  }
}

Problem sampleProblem(const plan::TaskPlan& task, std::mt19937_64& rng) {
  const bool same_length = task.sampling == plan::OperandSampling::SameLength ||
                           (task.sampling == plan::OperandSampling::Mixed && uniformBelow(2, rng) == 0);
  if (same_length) {
    const int length = uniformBetween(task.train_min_digits, task.train_max_digits, rng);
    return sampleProblem(task, length, rng);
  }
  std::vector<Number> operands;
  operands.reserve(static_cast<size_t>(task.operands));
  for (int i = 0; i < task.operands; ++i) {
    if (task.sampling == plan::OperandSampling::Values) {
      operands.push_back(randomValue(task.train_min_digits, task.train_max_digits, rng));
      continue;
    }
    const int length = uniformBetween(task.train_min_digits, task.train_max_digits, rng);
    operands.push_back(randomNumber(length, rng));
  }
  return problemFrom(std::move(operands));
}

Problem sampleProblem(const plan::TaskPlan& task, int digits, std::mt19937_64& rng) {
  std::vector<Number> operands;
  operands.reserve(static_cast<size_t>(task.operands));
  for (int i = 0; i < task.operands; ++i) operands.push_back(randomNumber(digits, rng));
  return problemFrom(std::move(operands));
}

std::vector<Problem> testProblems(const plan::TaskPlan& task, int digits) {
  std::mt19937_64 rng(testSeed(task.test_seed, digits));
  std::vector<Problem> problems;
  problems.reserve(static_cast<size_t>(task.problems_per_length));
  for (int i = 0; i < task.problems_per_length; ++i)
    problems.push_back(sampleProblem(task, digits, rng));
  return problems;
}

namespace {

// n distinct integers of 0..range-1, uniformly, sorted (Floyd's algorithm:
// for j = range - n .. range - 1, a uniform t in 0..j, or j itself when t is
// already taken; every n-subset is equally likely).
std::vector<int64_t> sortedSample(int64_t n, int64_t range, std::mt19937_64& rng) {
  std::set<int64_t> chosen;
  for (int64_t j = range - n; j < range; ++j) {
    const auto t = static_cast<int64_t>(uniformBelow(static_cast<uint64_t>(j) + 1, rng));
    chosen.insert(chosen.count(t) ? j : t);
  }
  return {chosen.begin(), chosen.end()};
}

// The label of `value`; values past the map keep its last label.
int64_t labelOf(const std::vector<int64_t>& label, int64_t value) {
  return label[static_cast<size_t>(std::clamp<int64_t>(value, 0, static_cast<int64_t>(label.size()) - 1))];
}

std::invalid_argument doesNotFit(int64_t largest, int64_t range) {
  return std::invalid_argument("channel values 0.." + std::to_string(largest) + " do not fit the range 0.." +
                               std::to_string(range - 1));
}

}  // namespace

void randomizeChannels(const std::vector<plan::ChannelSampling>& samplings, Batch& batch, std::mt19937_64& rng) {
  const size_t L = static_cast<size_t>(batch.length);
  for (const plan::ChannelSampling& sampling : samplings) {
    auto& values = batch.channels[static_cast<size_t>(sampling.channel)];
    for (size_t row = 0; row < static_cast<size_t>(batch.batch); ++row) {
      int64_t* v = values.data() + row * L;
      const int64_t largest = L == 0 ? 0 : *std::max_element(v, v + L);
      if ((L > 0 && *std::min_element(v, v + L) < 0) || largest + 1 > sampling.range)
        throw doesNotFit(largest, sampling.range);
      const std::vector<int64_t> label = sortedSample(largest + 1, sampling.range, rng);
      for (size_t t = 0; t < L; ++t) v[t] = label[static_cast<size_t>(v[t])];
    }
  }
}

ChannelLabels evaluationLabels(const std::vector<plan::ChannelSampling>& samplings, const Tokenizer& tok,
                               const Problem& problem) {
  ChannelLabels out;
  if (samplings.empty()) return out;
  uint64_t seed = 0x7e57ULL;
  for (const Number& n : problem.operands) {
    seed = mixBits(seed ^ static_cast<uint64_t>(n.length()));
    for (uint8_t d : n.digits) seed = mixBits(seed ^ d);
  }
  std::mt19937_64 rng(seed);
  const Sequence full = tok.encode(problem);
  for (const plan::ChannelSampling& sampling : samplings) {
    const auto& v = full.channels[static_cast<size_t>(sampling.channel)];
    const int64_t largest = v.empty() ? 0 : *std::max_element(v.begin(), v.end());
    if (largest + 1 > sampling.range) throw doesNotFit(largest, sampling.range);
    out.maps.emplace_back(sampling.channel, sortedSample(largest + 1, sampling.range, rng));
  }
  return out;
}

void ChannelLabels::apply(std::array<int64_t, plan::kChannelCount>& token) const {
  for (const auto& [channel, label] : maps) {
    int64_t& v = token[static_cast<size_t>(channel)];
    v = labelOf(label, v);
  }
}

void ChannelLabels::apply(std::array<std::vector<int64_t>, plan::kChannelCount>& channels) const {
  for (const auto& [channel, label] : maps)
    for (int64_t& v : channels[static_cast<size_t>(channel)]) v = labelOf(label, v);
}

}  // namespace posc::task
