// Builds the 10-digit-addition leaderboard's evaluation pairs; see
// adder_protocol.h.
#include "runtime/task/adder_protocol.h"

#include <string>

#include "runtime/task/python_random.h"

namespace posc::task {

std::vector<std::pair<uint64_t, uint64_t>> adderBoardPairs() {
  // The leaderboard's fixed edge cases, in its order.
  std::vector<std::pair<uint64_t, uint64_t>> pairs = {
      {0, 0},                       // smallest operands, all-zero answer
      {0, 1},                       // one non-zero digit, no carry
      {9999999999, 0},              // all nines plus zero: no carry despite maximal digits
      {9999999999, 1},              // carry ripples through all ten digits into an 11th
      {9999999999, 9999999999},     // largest sum: a carry out of every column
      {5000000000, 5000000000},     // only the leading column carries, into an 11th digit
      {1111111111, 8888888889},     // columns sum to 9 and pass one units carry all the way up
      {1234567890, 9876543210},     // mixed digits, carries in every column but the units
      {9999999999, 9999999999},     // the maximal case again (the leaderboard lists it twice)
      {1, 9999999999},              // operands swapped relative to 9999999999 + 1
  };
  pairs.reserve(pairs.size() + kAdderBoardRandomPairs);
  PythonRandom rng(kAdderBoardSeed);
  for (int i = 0; i < kAdderBoardRandomPairs; ++i) {
    // Two statements, so a is drawn before b exactly as in the Python loop.
    const uint64_t a = rng.randint(0, kAdderBoardMaxOperand);
    const uint64_t b = rng.randint(0, kAdderBoardMaxOperand);
    pairs.emplace_back(a, b);
  }
  return pairs;
}

std::vector<Problem> adderBoardProblems() {
  std::vector<Problem> out;
  for (const auto& [a, b] : adderBoardPairs()) {
    Problem p;
    p.operands = {Number::fromString(std::to_string(a)), Number::fromString(std::to_string(b))};
    p.answer = add(p.operands[0], p.operands[1]);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace posc::task
