// The test set of the public 10-digit-addition leaderboard, rebuilt exactly.
//
// The leaderboard scores a model on 10 fixed edge cases followed by 10,000
// random pairs drawn in Python as
//   rng = random.Random(2025)
//   for _ in range(10000):
//       a = rng.randint(0, 9999999999); b = rng.randint(0, 9999999999)
// PythonRandom reproduces that stream bit for bit, so posc evaluates on the
// identical 10,010 problems without needing the published data file.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/task/addition.h"

namespace posc::task {

inline constexpr uint64_t kAdderBoardSeed = 2025;
inline constexpr int kAdderBoardRandomPairs = 10000;
inline constexpr uint64_t kAdderBoardMaxOperand = 9999999999ULL;  // 10 digits

// The 10 edge cases, then the 10,000 random (a, b) pairs in draw order.
std::vector<std::pair<uint64_t, uint64_t>> adderBoardPairs();

// The same cases as addition problems (operands and their sum).
std::vector<Problem> adderBoardProblems();

}  // namespace posc::task
