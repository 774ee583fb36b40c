// Commands, their parameters and bound values: see runtime/analysis/command.h.
#include "runtime/analysis/command.h"

#include <fmt/format.h>

#include "runtime/plot/table.h"

namespace posc::analysis {

namespace {

Param make(Param::Kind kind, std::string name, bool required) {
  Param p;
  p.kind = kind;
  p.name = std::move(name);
  p.required = required;
  return p;
}

}  // namespace

Param Param::kernel(std::string name, bool required) { return make(Kind::Kernel, std::move(name), required); }

Param Param::distances(std::string name, bool required) { return make(Kind::Range, std::move(name), required); }

Param Param::num(std::string name, double fallback) {
  Param p = make(Kind::Number, std::move(name), false);
  p.number = fallback;
  p.has_default = true;
  return p;
}

Param Param::nums(std::string name, std::vector<double> fallback, std::string shown) {
  Param p = make(Kind::Numbers, std::move(name), false);
  p.numbers = std::move(fallback);
  p.shown = std::move(shown);
  p.has_default = true;
  return p;
}

Param Param::str(std::string name, bool required) { return make(Kind::Text, std::move(name), required); }

Param Param::symbol(std::string name, std::vector<std::string> allowed, std::string fallback, bool required) {
  Param p = make(Kind::Symbol, std::move(name), required);
  p.symbols = std::move(allowed);
  if (!fallback.empty()) {
    p.text = std::move(fallback);
    p.has_default = true;
  }
  return p;
}

const KernelValue* Values::kernel(const std::string& name) const {
  auto it = kernels_.find(name);
  return it == kernels_.end() ? nullptr : &it->second;
}

void Values::setNumber(const std::string& name, double v, bool given) {
  numbers_[name] = v;
  if (given) given_[name] = true;
}

void Values::setNumbers(const std::string& name, std::vector<double> v, bool given) {
  lists_[name] = std::move(v);
  if (given) given_[name] = true;
}

void Values::setRange(const std::string& name, std::pair<double, double> v, bool given) {
  ranges_[name] = v;
  if (given) given_[name] = true;
}

void Values::setText(const std::string& name, std::string v, bool given) {
  texts_[name] = std::move(v);
  if (given) given_[name] = true;
}

void Values::setKernel(const std::string& name, KernelValue v) {
  kernels_[name] = std::move(v);
  given_[name] = true;
}

std::string showDefault(const Param& p) {
  if (!p.shown.empty()) return p.shown;
  auto num = [](double v) { return plot::formatNumber(v, 6); };
  switch (p.kind) {
    case Param::Kind::Number:
      return num(p.number);
    case Param::Kind::Numbers: {
      std::string out = "[";
      for (size_t i = 0; i < p.numbers.size(); ++i) out += (i ? ", " : "") + num(p.numbers[i]);
      return out + "]";
    }
    case Param::Kind::Range:
      return num(p.range.first) + ".." + num(p.range.second);
    case Param::Kind::Text:
      return "\"" + p.text + "\"";
    default:
      return p.text;
  }
}

std::string Command::usage(bool repl) const {
  // What a required parameter looks like in an example call.
  auto example = [](const Param& p) -> std::string {
    if (!p.shown.empty()) return p.shown;
    switch (p.kind) {
      case Param::Kind::Kernel: return p.name == "kernel" ? "k" : p.name;
      case Param::Kind::Range: return "-2000..2000";
      case Param::Kind::Text: return "\"" + p.name + "\"";
      case Param::Kind::Symbol: {
        std::string out;
        for (size_t i = 0; i < p.symbols.size(); ++i) out += (i ? " | " : "") + p.symbols[i];
        return out.empty() ? p.name : out;
      }
      default: return p.name;
    }
  };
  std::vector<std::string> required, optional;
  for (const Param& p : params) {
    if (p.required) required.push_back(repl || p.kind == Param::Kind::Kernel || p.kind == Param::Kind::Symbol
                                           ? example(p)
                                           : p.name + " = " + example(p));
    else optional.push_back(p.has_default || !p.shown.empty() ? p.name + " = " + showDefault(p) : p.name);
  }
  std::string req, opt;
  for (size_t i = 0; i < required.size(); ++i) req += (i ? ", " : "") + required[i];
  for (size_t i = 0; i < optional.size(); ++i) opt += (i ? ", " : "") + optional[i];
  if (repl) {
    std::string out = ":" + name + (req.empty() ? "" : " " + req);
    if (!opt.empty()) out += req.empty() ? " [" + opt + "]" : " [, " + opt + "]";
    return out;
  }
  return name + "(" + req + (req.empty() || opt.empty() ? "" : ", ") + opt + ")";
}

bool Command::answersTo(const std::string& n) const {
  if (n == name) return true;
  for (const std::string& a : aliases)
    if (n == a) return true;
  return false;
}

const Command* findCommand(const std::vector<Command>& commands, const std::string& name) {
  for (const Command& c : commands)
    if (c.answersTo(name)) return &c;
  return nullptr;
}

}  // namespace posc::analysis
