// Descriptions and renderings of compile-time values.
#include "compiler/sema/value.h"

#include <fmt/format.h>

#include <cmath>

namespace posc::sema {

bool Value::isInteger() const {
  return kind == Kind::Number && std::isfinite(number) && std::floor(number) == number &&
         std::fabs(number) < 9.0e15;
}

std::string Value::describe() const {
  switch (kind) {
    case Kind::Number: return fmt::format("the number {}", render());
    case Kind::Bool: return fmt::format("the boolean {}", render());
    case Kind::String: return fmt::format("the string \"{}\"", text);
    case Kind::Symbol: return fmt::format("the name '{}'", text);
    case Kind::List: return fmt::format("a list of {} value{}", elements.size(), elements.size() == 1 ? "" : "s");
    case Kind::Tuple: return fmt::format("a tuple of {} values", elements.size());
    case Kind::Range: return fmt::format("the range {}..{}", lo, hi);
    case Kind::Dist: return "a distribution";
    case Kind::None: return "none";
  }
  return "a value";
}

std::string Value::render() const {
  switch (kind) {
    case Kind::Number: return fmt::format("{:g}", number);
    case Kind::Bool: return boolean ? "true" : "false";
    case Kind::String: return "\"" + text + "\"";
    case Kind::Symbol: return text;
    case Kind::List:
    case Kind::Tuple: {
      std::string s;
      for (const Value& v : elements) s += (s.empty() ? "" : ", ") + v.render();
      return kind == Kind::List ? "[" + s + "]" : "(" + s + ")";
    }
    case Kind::Range: return fmt::format("{}..{}", lo, hi);
    case Kind::Dist:
      switch (dist.kind) {
        case plan::Distribution::Kind::Fixed: return fmt::format("fixed({:g})", dist.a);
        case plan::Distribution::Kind::Uniform: return fmt::format("uniform({:g}, {:g})", dist.a, dist.b);
        case plan::Distribution::Kind::LogUniform: return fmt::format("log_uniform({:g}, {:g})", dist.a, dist.b);
      }
      return "?";
    case Kind::None: return "none";
  }
  return "?";
}

}  // namespace posc::sema
