// Problem sampling: random operand lengths and digits for training, and the
// fixed, reproducible test sets.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "tests/task/task_test_util.h"

namespace posc::task {
namespace {

using plan::DigitOrder;
using testing::makeTask;

TEST(RandomNumber, HasExactLengthAndNoLeadingZero) {
  std::mt19937_64 rng(3);
  std::set<int> leading;
  for (int length : {2, 3, 10, 57, 250}) {
    for (int i = 0; i < 300; ++i) {
      const Number n = randomNumber(length, rng);
      ASSERT_EQ(n.length(), length);
      ASSERT_NE(n.digits.back(), 0) << n.toString();
      for (uint8_t d : n.digits) ASSERT_LE(d, 9);
      leading.insert(n.digits.back());
    }
  }
  EXPECT_EQ(leading, (std::set<int>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(RandomNumber, SingleDigitCoversZeroToNine) {
  std::mt19937_64 rng(5);
  std::set<int> seen;
  for (int i = 0; i < 500; ++i) seen.insert(randomNumber(1, rng).digits.at(0));
  EXPECT_EQ(seen.size(), 10u);
}

TEST(RandomNumber, SameSeedSameNumber) {
  std::mt19937_64 a(99), b(99);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(randomNumber(40, a), randomNumber(40, b));
}

TEST(SampleProblem, TrainingLengthsStayInRangeAndReachBothEnds) {
  const plan::TaskPlan task = makeTask(3, 1, DigitOrder::Reversed, 3, 7);
  std::mt19937_64 rng(1);
  std::set<int> lengths;
  for (int i = 0; i < 2000; ++i) {
    const Problem p = sampleProblem(task, rng);
    ASSERT_EQ(p.operands.size(), 3u);
    for (const Number& n : p.operands) {
      ASSERT_GE(n.length(), 3);
      ASSERT_LE(n.length(), 7);
      lengths.insert(n.length());
    }
    ASSERT_EQ(p.answer, sum(p.operands));
  }
  EXPECT_EQ(lengths, (std::set<int>{3, 4, 5, 6, 7}));
}

// task.sampling = values: each value of 1..3 digits equally likely (0..999),
// so a length-L operand has probability 9 x 10^(L-1) / 1000 (1/100 for one
// digit, counting 0), and the values cover the range.
TEST(SampleProblem, ValuesAreUniformOverTheRange) {
  plan::TaskPlan task = makeTask(2, 1, DigitOrder::Reversed, 1, 3);
  task.sampling = plan::OperandSampling::Values;
  std::mt19937_64 rng(4);
  std::map<int, int> by_length;
  std::set<std::string> seen;
  const int n = 200000;
  for (int i = 0; i < n / 2; ++i) {
    const Problem p = sampleProblem(task, rng);
    ASSERT_EQ(p.answer, sum(p.operands));
    for (const Number& v : p.operands) {
      ASSERT_TRUE(v.length() == 1 || v.digits.back() != 0) << v.toString();
      ++by_length[v.length()];
      seen.insert(v.toString());
    }
  }
  EXPECT_EQ(seen.size(), 1000u);  // every value of 0..999
  // Expected shares 0.01, 0.09, 0.9; binomial standard deviations are at most 0.0007.
  EXPECT_NEAR(by_length[1] / double(n), 0.01, 0.003);
  EXPECT_NEAR(by_length[2] / double(n), 0.09, 0.003);
  EXPECT_NEAR(by_length[3] / double(n), 0.90, 0.003);
}

// With a shortest length above 1 the values start at 10^(min-1): here
// 100..9999, of which 900 have three digits and 9000 four.
TEST(SampleProblem, ValuesRespectTheShortestLength) {
  plan::TaskPlan task = makeTask(2, 1, DigitOrder::Reversed, 3, 4);
  task.sampling = plan::OperandSampling::Values;
  std::mt19937_64 rng(6);
  int three = 0, total = 0;
  for (int i = 0; i < 50000; ++i)
    for (const Number& v : sampleProblem(task, rng).operands) {
      ASSERT_GE(v.length(), 3);
      ASSERT_LE(v.length(), 4);
      three += v.length() == 3;
      ++total;
    }
  EXPECT_NEAR(three / double(total), 900.0 / 9900.0, 0.005);
}

// task.sampling = same_length: every operand of a problem has the problem's
// length, each of 3..7 about a fifth of the problems (binomial standard
// deviation 0.003 over 20,000 problems), where independent lengths give
// equal operands in only a fifth of the problems.
TEST(SampleProblem, SameLengthGivesEveryOperandOneLength) {
  plan::TaskPlan task = makeTask(3, 1, DigitOrder::Reversed, 3, 7);
  task.sampling = plan::OperandSampling::SameLength;
  std::mt19937_64 rng(8);
  std::map<int, int> by_length;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const Problem p = sampleProblem(task, rng);
    ASSERT_EQ(p.operands.size(), 3u);
    const int length = p.operands[0].length();
    for (const Number& v : p.operands) {
      ASSERT_EQ(v.length(), length);
      ASSERT_TRUE(v.digits.back() != 0) << v.toString();
    }
    ASSERT_EQ(p.answer, sum(p.operands));
    ++by_length[length];
  }
  ASSERT_EQ(by_length.size(), 5u);
  EXPECT_EQ(by_length.begin()->first, 3);
  EXPECT_EQ(by_length.rbegin()->first, 7);
  for (const auto& [length, count] : by_length) EXPECT_NEAR(count / double(n), 0.2, 0.015) << length;
}

// task.sampling = mixed: half the problems as same_length, half as lengths.
// With 2 operands of 1..10 digits the operands are equal in length in
// 0.5 + 0.5 x 1/10 = 0.55 of the problems and both of 10 digits in
// 0.5 x 1/10 + 0.5 x 1/100 = 0.055 (binomial standard deviations 0.0035 and
// 0.0016 over 20,000 problems), where lengths gives 0.1 and 0.01.
TEST(SampleProblem, MixedDrawsHalfTheProblemsWithOneLength) {
  plan::TaskPlan task = makeTask(2, 1, DigitOrder::Reversed, 1, 10);
  task.sampling = plan::OperandSampling::Mixed;
  std::mt19937_64 rng(9);
  const int n = 20000;
  int equal = 0, longest = 0;
  std::map<int, int> by_length;
  for (int i = 0; i < n; ++i) {
    const Problem p = sampleProblem(task, rng);
    ASSERT_EQ(p.operands.size(), 2u);
    ASSERT_EQ(p.answer, sum(p.operands));
    const int a = p.operands[0].length(), b = p.operands[1].length();
    equal += a == b;
    longest += a == 10 && b == 10;
    ++by_length[a];
  }
  EXPECT_NEAR(equal / double(n), 0.55, 0.015);
  EXPECT_NEAR(longest / double(n), 0.055, 0.007);
  ASSERT_EQ(by_length.size(), 10u);  // each operand's length stays uniform
  for (const auto& [length, count] : by_length) EXPECT_NEAR(count / double(n), 0.1, 0.012) << length;
}

TEST(SampleProblem, TestLengthIsExact) {
  const plan::TaskPlan task = makeTask(2, 1, DigitOrder::Reversed);
  std::mt19937_64 rng(2);
  for (int i = 0; i < 100; ++i) {
    const Problem p = sampleProblem(task, 33, rng);
    for (const Number& n : p.operands) ASSERT_EQ(n.length(), 33);
    ASSERT_EQ(p.answer, add(p.operands[0], p.operands[1]));
  }
}

TEST(TestProblems, AreAPureFunctionOfSeedAndLength) {
  plan::TaskPlan task = makeTask(2, 1, DigitOrder::Reversed);
  task.problems_per_length = 25;
  const std::vector<Problem> first = testProblems(task, 12);
  ASSERT_EQ(first.size(), 25u);
  for (const Problem& p : first) {
    for (const Number& n : p.operands) EXPECT_EQ(n.length(), 12);
    EXPECT_EQ(p.answer, sum(p.operands));
  }
  const std::vector<Problem> again = testProblems(task, 12);
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(first[i].operands, again[i].operands);

  // Training settings and the digit order do not enter.
  plan::TaskPlan other = task;
  other.train_min_digits = 4;
  other.train_max_digits = 40;
  other.order = DigitOrder::Padded;
  other.digits_per_token = 3;
  const std::vector<Problem> same = testProblems(other, 12);
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(first[i].operands, same[i].operands);
}

TEST(TestProblems, DifferWithSeedAndLength) {
  plan::TaskPlan task = makeTask(2, 1, DigitOrder::Reversed);
  task.problems_per_length = 10;
  const std::vector<Problem> base = testProblems(task, 20);
  plan::TaskPlan reseeded = task;
  reseeded.test_seed = task.test_seed + 1;
  EXPECT_NE(base[0].operands, testProblems(reseeded, 20)[0].operands);
  // Neighbouring lengths get unrelated problems: their low digits do not coincide.
  const std::vector<Problem> longer = testProblems(task, 21);
  int same_prefix = 0;
  for (size_t i = 0; i < base.size(); ++i) {
    const auto& a = base[i].operands[0].digits;
    const auto& b = longer[i].operands[0].digits;
    same_prefix += std::equal(a.begin(), a.begin() + 10, b.begin());
  }
  EXPECT_LT(same_prefix, 2);
}

// Regression pins, recorded from this implementation: std::mt19937_64 output is
// fixed by the standard and the uniform draws are our own, so these values must
// not change between platforms or releases (that would silently change every
// test set and training stream).
TEST(Sampling, PinnedDraws) {
  std::mt19937_64 rng(42);
  EXPECT_EQ(randomNumber(12, rng).toString(), "157046812046");

  plan::TaskPlan task;  // test_seed 1234, two operands
  task.problems_per_length = 3;
  const std::vector<Problem> problems = testProblems(task, 5);
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0].operands[0].toString(), "94084");
  EXPECT_EQ(problems[0].operands[1].toString(), "63166");
  EXPECT_EQ(problems[0].answer.toString(), "157250");
  EXPECT_EQ(problems[2].operands[0].toString(), "16115");
  EXPECT_EQ(problems[2].operands[1].toString(), "27376");
}

}  // namespace
}  // namespace posc::task
