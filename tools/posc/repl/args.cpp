// Argument binding for REPL commands and analysis calls (see args.h).
#include "tools/posc/repl/args.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace posc::repl {

using analysis::Param;

std::optional<analysis::Values> Args::bind() {
  sema::CallShape shape;
  shape.callee = repl_ ? ":" + command_.name : command_.name;
  for (const Param& p : command_.params) shape.parameters.push_back({p.name, p.required, {}});
  shape.usage = "usage: " + command_.usage(repl_);
  sema::MatchedArguments matched = sema::matchArguments(shape, args_, call_, diags_);
  given_ = std::move(matched.given);
  if (!matched.ok) return std::nullopt;
  analysis::Values values;
  bool ok = true;
  for (const Param& p : command_.params) ok = bindOne(p, values) && ok;
  if (!ok) return std::nullopt;
  return values;
}

SourceRange Args::rangeOf(const std::string& name, int element) const {
  auto it = given_.find(name);
  if (it == given_.end()) return call_;
  const ast::Expr& e = *it->second->value;
  if (element >= 0 && e.kind == ast::Expr::Kind::List && static_cast<size_t>(element) < e.elements.size())
    return e.elements[static_cast<size_t>(element)]->range;
  return e.range;
}

void Args::report(const analysis::CommandError& e) {
  error(e.param.empty() ? call_ : rangeOf(e.param, e.element), e.what(), e.hint);
}

bool Args::error(SourceRange r, std::string message, std::string hint) {
  Diagnostic& d = diags_.error(r, std::move(message));
  d.hint = std::move(hint);
  return false;
}

std::optional<double> Args::number(const Param& p, const ast::Expr& e) {
  auto v = lowerConstant(e, defs_, diags_);
  if (!v) return std::nullopt;
  if (!(*v >= p.lo && *v <= p.hi) || (p.integer && *v != std::floor(*v))) {
    std::string want = p.integer ? "a whole number" : "a number";
    if (p.lo > -HUGE_VAL && p.hi < HUGE_VAL) want += fmt::format(" in {:g}..{:g}", p.lo, p.hi);
    else if (p.lo > -HUGE_VAL) want += fmt::format(" of at least {:g}", p.lo);
    error(e.range, fmt::format("'{}' must be {}, not {:g}", p.name, want, *v));
    return std::nullopt;
  }
  return v;
}

bool Args::bindOne(const Param& p, analysis::Values& out) {
  if (!has(p.name)) {
    if (!p.has_default) return true;  // the handler asks given()
    switch (p.kind) {
      case Param::Kind::Number: out.setNumber(p.name, p.number, false); break;
      case Param::Kind::Numbers: out.setNumbers(p.name, p.numbers, false); break;
      case Param::Kind::Range: out.setRange(p.name, p.range, false); break;
      case Param::Kind::Text:
      case Param::Kind::Symbol: out.setText(p.name, p.text, false); break;
      case Param::Kind::Kernel:
      case Param::Kind::Source: break;
    }
    return true;
  }
  const ast::Expr& e = expr(p.name);
  switch (p.kind) {
    case Param::Kind::Kernel: {
      if (e.kind == ast::Expr::Kind::Name) {
        auto it = defs_.find(e.name.text);
        if (it != defs_.end() && it->second.isKernel()) {
          out.setKernel(p.name, {it->second.program, e.name.text, true});
          return true;
        }
      }
      // Any expression of d: `:plot 20*cos(2*pi*d/6), -20..20`.
      std::optional<analysis::KernelProgram> k = lowerKernel(e, "d", defs_, diags_);
      if (!k) return false;
      out.setKernel(p.name, {std::move(*k), ast::dumpExpr(e), e.kind == ast::Expr::Kind::Name});
      return true;
    }
    case Param::Kind::Range: {
      if (e.kind != ast::Expr::Kind::Range)
        return error(e.range, "expected a range of distances", "write it as lo..hi, for example -50..50");
      auto lo = lowerConstant(*e.lhs, defs_, diags_);
      auto hi = lowerConstant(*e.rhs, defs_, diags_);
      if (!lo || !hi) return false;
      for (auto [end, value] : {std::pair{e.lhs.get(), *lo}, {e.rhs.get(), *hi}})
        if (!std::isfinite(value))
          return error(end->range, fmt::format("a range of distances needs finite ends, not {}",
                                               std::isnan(value) ? "NaN" : fmt::format("{:g}", value)));
      if (*hi < *lo)
        return error(e.range, fmt::format("the range {:g}..{:g} is empty", *lo, *hi), "the lower end comes first");
      out.setRange(p.name, {*lo, *hi}, true);
      return true;
    }
    case Param::Kind::Number: {
      auto v = number(p, e);
      if (!v) return false;
      out.setNumber(p.name, *v, true);
      return true;
    }
    case Param::Kind::Numbers: {
      std::vector<const ast::Expr*> items;
      if (e.kind == ast::Expr::Kind::List) {
        for (const auto& x : e.elements) items.push_back(x.get());
        if (items.empty()) return error(e.range, fmt::format("'{}' needs at least one number", p.name));
      } else {
        items.push_back(&e);
      }
      std::vector<double> values;
      for (const ast::Expr* x : items) {
        auto v = lowerConstant(*x, defs_, diags_);
        if (!v) return false;
        if (!(*v >= p.lo))
          return error(x->range, fmt::format("'{}' must hold numbers of at least {:g}, not {:g}", p.name, p.lo, *v));
        values.push_back(*v);
      }
      out.setNumbers(p.name, std::move(values), true);
      return true;
    }
    case Param::Kind::Text:
      if (e.kind != ast::Expr::Kind::String)
        return error(e.range, fmt::format("'{}' must be text in double quotes", p.name));
      out.setText(p.name, e.text, true);
      return true;
    case Param::Kind::Source:
      if (e.kind == ast::Expr::Kind::String) out.setText(p.name, e.text, true);
      else if (e.kind == ast::Expr::Kind::Name) out.setText(p.name, e.name.text, true);
      else out.setText(p.name, "", true);  // the front door says what it expected
      return true;
    case Param::Kind::Symbol: {
      const std::vector<std::string>& allowed = p.symbols;
      if (e.kind != ast::Expr::Kind::Name ||
          (!allowed.empty() && std::find(allowed.begin(), allowed.end(), e.name.text) == allowed.end())) {
        Diagnostic& d = diags_.error(e.range, fmt::format("'{}' must be {}", p.name,
                                                          allowed.empty() ? "a name"
                                                                          : "one of: " + fmt::format("{}", fmt::join(allowed, ", "))));
        if (e.kind == ast::Expr::Kind::Name) suggest(d, e.name.text, allowed);
        return false;
      }
      out.setText(p.name, e.name.text, true);
      return true;
    }
  }
  return false;
}

}  // namespace posc::repl
