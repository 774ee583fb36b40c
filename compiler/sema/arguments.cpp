// Matching a call's arguments to its callee's parameters (see arguments.h).
#include "compiler/sema/arguments.h"

#include <fmt/format.h>

#include <algorithm>

namespace posc::sema {

namespace {

std::vector<std::string> namesOf(const CallShape& shape) {
  std::vector<std::string> names;
  for (const Parameter& p : shape.parameters) names.push_back(p.name);
  return names;
}

Diagnostic& shapeError(const CallShape& shape, DiagnosticEngine& diags, SourceRange at, std::string message) {
  Diagnostic& d = diags.error(at, std::move(message));
  if (shape.declared.valid()) d.notes.push_back({shape.declared, "declared here"});
  d.notes.insert(d.notes.end(), shape.context.begin(), shape.context.end());
  d.hint = shape.usage;
  return d;
}

}  // namespace

std::vector<std::pair<std::string, const ast::Arg*>> MatchedArguments::inSourceOrder() const {
  // A call's arguments are one vector, so their addresses are in source order.
  std::vector<std::pair<std::string, const ast::Arg*>> out(given.begin(), given.end());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  return out;
}

MatchedArguments matchArguments(const CallShape& shape, const std::vector<ast::Arg>& args, SourceRange call,
                                DiagnosticEngine& diags) {
  MatchedArguments out;
  size_t next = 0;  // the next parameter a positional argument fills
  bool named_seen = false;
  for (const ast::Arg& a : args) {
    const Parameter* p = nullptr;
    if (a.name.text.empty()) {
      if (!shape.positional) {
        shapeError(shape, diags, a.range, fmt::format("{} takes its arguments by name: write 'name = value'", shape.callee));
        out.ok = false;
        continue;
      }
      if (named_seen) {
        shapeError(shape, diags, a.range, "positional arguments go before named ones");
        out.ok = false;
        continue;
      }
      if (next >= shape.parameters.size()) {
        size_t n = shape.parameters.size();
        shapeError(shape, diags, a.range,
                   n == 0 ? fmt::format("{} takes no arguments", shape.callee)
                          : fmt::format("{} takes at most {} positional argument{}", shape.callee, n, n == 1 ? "" : "s"));
        out.ok = false;
        continue;
      }
      p = &shape.parameters[next++];
    } else {
      named_seen = true;
      auto it = std::find_if(shape.parameters.begin(), shape.parameters.end(),
                             [&](const Parameter& x) { return x.name == a.name.text; });
      if (it == shape.parameters.end()) {
        Diagnostic& d = diags.error(a.name.range, fmt::format("{} has no {} '{}'", shape.callee, shape.noun, a.name.text));
        suggest(d, a.name.text, namesOf(shape));
        if (shape.declared.valid()) d.notes.push_back({shape.declared, "declared here"});
        d.notes.insert(d.notes.end(), shape.context.begin(), shape.context.end());
        d.hint = shape.usage;
        out.ok = false;
        continue;
      }
      p = &*it;
    }
    if (!out.given.emplace(p->name, &a).second) {
      Diagnostic& d = diags.error(a.range, fmt::format("argument '{}' is given twice", p->name));
      d.notes.insert(d.notes.end(), shape.context.begin(), shape.context.end());
      out.ok = false;
    }
  }
  for (const Parameter& p : shape.parameters) {
    if (!p.required || out.has(p.name)) continue;
    Diagnostic& d = diags.error(call, fmt::format("{} needs the argument '{}'", shape.callee, p.name));
    if (p.declared.valid()) d.notes.push_back({p.declared, "declared here"});
    else d.hint = shape.usage;
    d.notes.insert(d.notes.end(), shape.context.begin(), shape.context.end());
    out.ok = false;
  }
  return out;
}

}  // namespace posc::sema
