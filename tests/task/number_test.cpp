// Exact arithmetic on long decimal numbers: parsing, printing, addition of
// two and of many operands, checked against known values and an independent
// string-based schoolbook addition.
#include <gtest/gtest.h>

#include <random>
#include <stdexcept>

#include "tests/task/task_test_util.h"

namespace posc::task {
namespace {

using testing::addDecimalStrings;

std::string randomDigitString(int length, std::mt19937_64& rng) {
  std::string text(1, static_cast<char>('1' + rng() % 9));
  while (static_cast<int>(text.size()) < length) text.push_back(static_cast<char>('0' + rng() % 10));
  return text;
}

TEST(Number, ParsesAndPrintsMostSignificantFirst) {
  const Number n = Number::fromString("12345");
  EXPECT_EQ(n.digits, (std::vector<uint8_t>{5, 4, 3, 2, 1}));
  EXPECT_EQ(n.length(), 5);
  EXPECT_EQ(n.toString(), "12345");
}

TEST(Number, StripsLeadingZerosAndKeepsZero) {
  EXPECT_EQ(Number::fromString("000780").toString(), "780");
  EXPECT_EQ(Number::fromString("0000").digits, (std::vector<uint8_t>{0}));
  EXPECT_EQ(Number::fromString("0").toString(), "0");
}

TEST(Number, RejectsNonDigitText) {
  EXPECT_THROW(Number::fromString(""), std::invalid_argument);
  EXPECT_THROW(Number::fromString("12a4"), std::invalid_argument);
  EXPECT_THROW(Number::fromString("-5"), std::invalid_argument);
}

TEST(Number, AddsSmallNumbers) {
  EXPECT_EQ(add(Number::fromString("12345"), Number::fromString("678")).toString(), "13023");
  EXPECT_EQ(add(Number::fromString("0"), Number::fromString("0")).toString(), "0");
  EXPECT_EQ(add(Number::fromString("999"), Number::fromString("1")).toString(), "1000");
  EXPECT_EQ(add(Number::fromString("1"), Number::fromString("999")).toString(), "1000");
}

TEST(Number, TenToThe200MinusOnePlusOne) {
  const Number nines = Number::fromString(std::string(200, '9'));
  const Number result = add(nines, Number::fromString("1"));
  EXPECT_EQ(result.length(), 201);
  EXPECT_EQ(result.toString(), "1" + std::string(200, '0'));
}

TEST(Number, ThreeTimesTenToThe250MinusOne) {
  // 3 (10^250 - 1) = 3 * 10^250 - 3 = 2 99...9 7 (249 nines).
  const Number nines = Number::fromString(std::string(250, '9'));
  EXPECT_EQ(sum({nines, nines, nines}).toString(), "2" + std::string(249, '9') + "7");
}

TEST(Number, LongSumsMatchSchoolbookStrings) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    const std::string a = randomDigitString(200 + static_cast<int>(rng() % 60), rng);
    const std::string b = randomDigitString(1 + static_cast<int>(rng() % 260), rng);
    EXPECT_EQ(add(Number::fromString(a), Number::fromString(b)).toString(), addDecimalStrings(a, b));
  }
}

TEST(Number, ManyOperandSumMatchesRepeatedAddition) {
  std::mt19937_64 rng(11);
  for (int operands : {2, 3, 12, 150}) {
    std::vector<Number> terms;
    std::string expected = "0";
    for (int i = 0; i < operands; ++i) {
      const std::string text = randomDigitString(180 + static_cast<int>(rng() % 40), rng);
      terms.push_back(Number::fromString(text));
      expected = addDecimalStrings(expected, text);
    }
    EXPECT_EQ(sum(terms).toString(), expected) << operands << " operands";
  }
}

TEST(Number, SumOfNothingIsZero) { EXPECT_EQ(sum({}).toString(), "0"); }

}  // namespace
}  // namespace posc::task
