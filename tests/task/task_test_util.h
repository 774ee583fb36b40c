// Shared helpers for the addition-task tests: task construction, channel
// access and an independent string-based schoolbook addition used as the
// reference for the digit-vector arithmetic.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/task/addition.h"

namespace posc::task::testing {

inline plan::TaskPlan makeTask(int operands, int k, plan::DigitOrder order, int min_digits = 1,
                               int max_digits = 10) {
  plan::TaskPlan task;
  task.operands = operands;
  task.digits_per_token = k;
  task.order = order;
  task.train_min_digits = min_digits;
  task.train_max_digits = max_digits;
  return task;
}

inline const std::vector<int64_t>& channel(const Sequence& s, plan::Channel c) {
  return s.channels[static_cast<int>(c)];
}

inline Problem problemOf(const std::vector<std::string>& operands) {
  Problem p;
  for (const std::string& text : operands) p.operands.push_back(Number::fromString(text));
  p.answer = sum(p.operands);
  return p;
}

// Schoolbook addition on most-significant-first strings, written without
// Number so that it checks it independently.
inline std::string addDecimalStrings(const std::string& a, const std::string& b) {
  std::string result;
  int carry = 0;
  for (size_t i = 0; i < std::max(a.size(), b.size()) || carry != 0; ++i) {
    int digit = carry;
    if (i < a.size()) digit += a[a.size() - 1 - i] - '0';
    if (i < b.size()) digit += b[b.size() - 1 - i] - '0';
    result.push_back(static_cast<char>('0' + digit % 10));
    carry = digit / 10;
  }
  while (result.size() > 1 && result.back() == '0') result.pop_back();
  std::reverse(result.begin(), result.end());
  return result;
}

}  // namespace posc::task::testing
