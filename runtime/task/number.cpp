// Exact decimal arithmetic for the addition task: operands reach 200+ digits,
// so numbers are digit vectors (units first) and addition is schoolbook.
#include <stdexcept>

#include "runtime/task/addition.h"

namespace posc::task {
namespace {

// Drops most-significant zeros, keeping a single 0 for zero.
void trimLeadingZeros(std::vector<uint8_t>& digits) {
  while (digits.size() > 1 && digits.back() == 0) digits.pop_back();
  if (digits.empty()) digits.push_back(0);
}

// acc += term, digit by digit with carry; acc grows as needed.
void addInto(std::vector<uint8_t>& acc, const std::vector<uint8_t>& term) {
  if (acc.size() < term.size()) acc.resize(term.size(), 0);
  unsigned carry = 0;
  size_t i = 0;
  for (; i < term.size(); ++i) {
    const unsigned d = acc[i] + term[i] + carry;
    acc[i] = static_cast<uint8_t>(d % 10);
    carry = d / 10;
  }
  for (; carry != 0 && i < acc.size(); ++i) {
    const unsigned d = acc[i] + carry;
    acc[i] = static_cast<uint8_t>(d % 10);
    carry = d / 10;
  }
  if (carry != 0) acc.push_back(static_cast<uint8_t>(carry));
}

}  // namespace

Number Number::fromString(const std::string& most_significant_first) {
  if (most_significant_first.empty())
    throw std::invalid_argument("Number::fromString: empty string");
  Number n;
  n.digits.reserve(most_significant_first.size());
  for (auto it = most_significant_first.rbegin(); it != most_significant_first.rend(); ++it) {
    if (*it < '0' || *it > '9')
      throw std::invalid_argument("Number::fromString: not a decimal digit string: \"" +
                                  most_significant_first + "\"");
    n.digits.push_back(static_cast<uint8_t>(*it - '0'));
  }
  trimLeadingZeros(n.digits);
  return n;
}

std::string Number::toString() const {
  if (digits.empty()) return "0";
  std::string text;
  text.reserve(digits.size());
  for (auto it = digits.rbegin(); it != digits.rend(); ++it)
    text.push_back(static_cast<char>('0' + *it));
  return text;
}

Number add(const Number& a, const Number& b) {
  Number result = a;
  addInto(result.digits, b.digits);
  trimLeadingZeros(result.digits);
  return result;
}

Number sum(const std::vector<Number>& terms) {
  Number result;
  result.digits.push_back(0);
  for (const Number& term : terms) addInto(result.digits, term.digits);
  trimLeadingZeros(result.digits);
  return result;
}

}  // namespace posc::task
