// Argument binding for REPL commands and analysis calls (see args.h).
#include "tools/posc/repl/args.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace posc::repl {

bool Args::bind() {
  sema::CallShape shape;
  shape.callee = signature_.name;
  for (const ArgSpec& s : signature_.args) shape.parameters.push_back({s.name, s.required, {}});
  shape.usage = "usage: " + signature_.usage;
  sema::MatchedArguments matched = sema::matchArguments(shape, args_, range_, diags_);
  values_ = std::move(matched.given);
  return matched.ok;
}


std::optional<KernelArg> Args::kernel(const std::string& name) {
  const ast::Expr& e = *values_.at(name)->value;
  if (e.kind == ast::Expr::Kind::Name) {
    auto it = defs_.find(e.name.text);
    if (it != defs_.end() && it->second.isKernel()) return KernelArg{it->second.program, e.name.text};
  }
  // Any expression of d: `:plot 20*cos(2*pi*d/6), -20..20`.
  std::optional<analysis::KernelProgram> p = lowerKernel(e, "d", defs_, diags_);
  if (!p) return std::nullopt;
  return KernelArg{std::move(*p), ast::dumpExpr(e)};
}

std::optional<std::pair<double, double>> Args::range(const std::string& name) {
  const ast::Expr& e = *values_.at(name)->value;
  if (e.kind != ast::Expr::Kind::Range) {
    error(e.range, "expected a range of distances", "write it as lo..hi, for example -50..50");
    return std::nullopt;
  }
  auto lo = lowerConstant(*e.lhs, defs_, diags_);
  auto hi = lowerConstant(*e.rhs, defs_, diags_);
  if (!lo || !hi) return std::nullopt;
  for (auto [end, value] : {std::pair{e.lhs.get(), *lo}, {e.rhs.get(), *hi}})
    if (!std::isfinite(value)) {
      error(end->range, fmt::format("a range of distances needs finite ends, not {}",
                                     std::isnan(value) ? "NaN" : fmt::format("{:g}", value)));
      return std::nullopt;
    }
  if (*hi < *lo) {
    error(e.range, fmt::format("the range {:g}..{:g} is empty", *lo, *hi), "the lower end comes first");
    return std::nullopt;
  }
  return std::make_pair(*lo, *hi);
}

std::optional<double> Args::number(const std::string& name, double fallback, double lo, bool integer, double hi) {
  if (!has(name)) return fallback;
  const ast::Expr& e = *values_.at(name)->value;
  auto v = lowerConstant(e, defs_, diags_);
  if (!v) return std::nullopt;
  if (!(*v >= lo && *v <= hi) || (integer && *v != std::floor(*v))) {
    std::string want = integer ? "a whole number" : "a number";
    if (lo > -HUGE_VAL && hi < HUGE_VAL) want += fmt::format(" in {:g}..{:g}", lo, hi);
    else if (lo > -HUGE_VAL) want += fmt::format(" of at least {:g}", lo);
    error(e.range, fmt::format("'{}' must be {}, not {:g}", name, want, *v));
    return std::nullopt;
  }
  return v;
}

std::optional<std::string> Args::text(const std::string& name) {
  const ast::Expr& e = *values_.at(name)->value;
  if (e.kind != ast::Expr::Kind::String) {
    error(e.range, fmt::format("'{}' must be text in double quotes", name));
    return std::nullopt;
  }
  return e.text;
}

std::optional<std::string> Args::symbol(const std::string& name, const std::vector<std::string>& allowed) {
  const ast::Expr& e = *values_.at(name)->value;
  if (e.kind != ast::Expr::Kind::Name || (!allowed.empty() && std::find(allowed.begin(), allowed.end(), e.name.text) == allowed.end())) {
    Diagnostic& d = diags_.error(e.range, fmt::format("'{}' must be {}", name, allowed.empty() ? "a name" : "one of: " + fmt::format("{}", fmt::join(allowed, ", "))));
    if (e.kind == ast::Expr::Kind::Name) suggest(d, e.name.text, allowed);
    return std::nullopt;
  }
  return e.name.text;
}


bool Args::error(SourceRange r, std::string message, std::string hint) {
  Diagnostic& d = diags_.error(r, std::move(message));
  d.hint = std::move(hint);
  return false;
}


std::optional<std::vector<double>> Args::numbers(const std::string& name, std::vector<double> fallback, double lo) {
  if (!has(name)) return fallback;
  const ast::Expr& e = *values_.at(name)->value;
  std::vector<const ast::Expr*> items;
  if (e.kind == ast::Expr::Kind::List) {
    for (const auto& x : e.elements) items.push_back(x.get());
    if (items.empty()) {
      error(e.range, fmt::format("'{}' needs at least one number", name));
      return std::nullopt;
    }
  } else {
    items.push_back(&e);
  }
  std::vector<double> out;
  for (const ast::Expr* x : items) {
    auto v = lowerConstant(*x, defs_, diags_);
    if (!v) return std::nullopt;
    if (!(*v >= lo)) {
      error(x->range, fmt::format("'{}' must hold numbers of at least {:g}, not {:g}", name, lo, *v));
      return std::nullopt;
    }
    out.push_back(*v);
  }
  return out;
}


}  // namespace posc::repl
