// Requirements, kind-specific settings and defaults of document tasks; see documents.h.
#include "compiler/sema/documents.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "compiler/sema/evaluate.h"

namespace posc::sema {
namespace {

std::string number(double v) { return fmt::format("{:g}", v); }

// Settings that mean something for one task kind only ("section.name").
const std::set<std::string>& additionOnly() {
  static const std::set<std::string> s = {"task.operands",       "task.digits_per_token",   "task.order",
                                          "task.train_min_digits", "task.train_max_digits", "task.padded_width", "task.sampling", "task.test_digits",
                                          "task.problems_per_length", "task.bos",       "eval.protocol",      "eval.published",
                                          "eval.published_source"};
  return s;
}
const std::set<std::string>& documentsOnly() {
  static const std::set<std::string> s = {
      "task.tasks",    "task.train_min_length", "task.train_max_length", "task.train_distractors",
      "task.templates", "task.absent_share",    "task.near_duplicates",  "task.authority", "task.filler",
      "eval.tasks",    "eval.lengths",          "eval.depths",           "eval.distractors",
      "eval.templates", "eval.problems",        "eval.absent_share",     "eval.fraction"};
  return s;
}

bool isRequirement(const std::string& key) { return key.rfind("eval.require.", 0) == 0; }

// Even a model that answers every pooled document gets a Wilson bound of
// n / (n + z^2) from n documents, so a threshold above it can never be met
// (24 documents reach 0.862): refuse it, and say how many documents it needs.
void checkReachable(const plan::DocumentRequirement& r, const plan::DocumentEvalPlan& e, SourceRange range,
                    DiagnosticEngine& diags) {
  const double z2 = plan::kWilsonZ95 * plan::kWilsonZ95;
  const long long cells = (r.length ? 1 : static_cast<long long>(e.lengths.size())) *
                          (r.depth ? 1 : static_cast<long long>(e.depths.size())) *
                          (r.distractors ? 1 : static_cast<long long>(e.distractors.size()));
  const long long documents = cells * e.problems;
  const double best = documents / (documents + z2);
  if (best >= r.threshold) return;
  Diagnostic& d = diags.error(range, fmt::format("'{}' can never be met: its {} {} {} documents, and even "
                                                 "all of them right give a lower bound of {:.3f}",
                                                 r.text, cells, cells == 1 ? "cell pools" : "cells pool", documents, best));
  if (r.threshold >= 1.0) {
    d.hint = "a lower bound from finitely many documents stays below 1: lower the threshold";
    return;
  }
  const long long needed = static_cast<long long>(std::ceil(z2 * r.threshold / (1.0 - r.threshold) - 1e-9));
  d.hint = fmt::format("the bound reaches {} from {} documents: raise eval.problems to at least {}, or lower the "
                       "threshold",
                       number(r.threshold), needed, (needed + cells - 1) / cells);
}

}  // namespace

std::optional<plan::DocumentRequirement> buildRequirement(const ast::Item& item, DiagnosticEngine& diags) {
  auto usage = [&](SourceRange at, const std::string& message) {
    Diagnostic& d = diags.error(at, message);
    d.hint = "write require(lower_bound(TASK[, length = N][, depth = D][, distractors = N]) >= THRESHOLD)";
    return std::nullopt;
  };
  if (item.args.size() != 1 || !item.args[0].name.text.empty())
    return usage(item.range, "require takes one comparison");
  const ast::Expr& e = *item.args[0].value;
  if (e.kind != ast::Expr::Kind::Binary || e.op != ">=")
    return usage(e.range, "a requirement compares a lower bound with '>='");
  const ast::Expr& call = *e.lhs;
  if (call.kind != ast::Expr::Kind::Call || call.name.text != "lower_bound") {
    Diagnostic& d = diags.error(call.range, "a requirement is on lower_bound(...)");
    d.hint = "the Wilson 95% lower bound of the matching cells' accuracy: lower_bound(retrieval, length = 1024)";
    return std::nullopt;
  }

  plan::DocumentRequirement r;
  bool have_task = false;
  std::set<std::string> seen;
  Env env;
  for (const ast::Arg& a : call.args) {
    if (a.name.text.empty()) {
      if (have_task) return usage(a.range, "lower_bound takes one task");
      const ast::Expr& t = *a.value;
      std::vector<std::string> names;
      for (int i = 0; i < plan::kDocumentTaskCount; ++i)
        names.push_back(plan::documentTaskName(static_cast<plan::DocumentTask>(i)));
      auto it = t.kind == ast::Expr::Kind::Name ? std::find(names.begin(), names.end(), t.name.text) : names.end();
      if (it == names.end()) {
        Diagnostic& d = diags.error(t.range, "lower_bound's first argument is a task: retrieval, composition, "
                                             "contradiction or order");
        if (t.kind == ast::Expr::Kind::Name) suggest(d, t.name.text, names);
        return std::nullopt;
      }
      r.task = static_cast<plan::DocumentTask>(it - names.begin());
      have_task = true;
      continue;
    }
    const std::string& name = a.name.text;
    if (!seen.insert(name).second) return usage(a.name.range, fmt::format("'{}' is given twice", name));
    auto v = evaluate(*a.value, env, diags);
    if (!v) return std::nullopt;
    if (name == "length" || name == "distractors") {
      if (!v->isInteger() || v->number < 0) {
        diags.error(v->range, fmt::format("'{}' takes an integer >= 0, not {}", name, v->describe()));
        return std::nullopt;
      }
      (name == "length" ? r.length : r.distractors) = static_cast<int>(v->number);
    } else if (name == "depth") {
      if (v->kind != Value::Kind::Number || v->number < 0 || v->number > 1) {
        diags.error(v->range, fmt::format("'depth' takes a number in [0, 1], not {}", v->describe()));
        return std::nullopt;
      }
      r.depth = v->number;
    } else {
      Diagnostic& d = diags.error(a.name.range, fmt::format("lower_bound has no filter '{}'", name));
      suggest(d, name, {"length", "depth", "distractors"});
      return std::nullopt;
    }
  }
  if (!have_task) return usage(call.range, "lower_bound needs the task it bounds");
  auto threshold = evaluate(*e.rhs, env, diags);
  if (!threshold) return std::nullopt;
  if (threshold->kind != Value::Kind::Number || threshold->number < 0 || threshold->number > 1) {
    diags.error(threshold->range, fmt::format("a lower bound is compared with a number in [0, 1], not {}",
                                              threshold->describe()));
    return std::nullopt;
  }
  r.threshold = threshold->number;
  r.text = fmt::format("lower_bound({}{}{}{}) >= {}", plan::documentTaskName(r.task),
                       r.length ? fmt::format(", length = {}", *r.length) : "",
                       r.depth ? fmt::format(", depth = {}", number(*r.depth)) : "",
                       r.distractors ? fmt::format(", distractors = {}", *r.distractors) : "", number(r.threshold));
  return r;
}

void checkDocumentSettings(SourceRange at, SettingsContext& ctx) {
  plan::ExperimentPlan& p = ctx.plan;
  const bool documents = p.task.kind == plan::TaskKind::Documents;
  for (const auto& [key, range] : ctx.written) {
    const bool wrong = documents ? additionOnly().count(key) > 0
                                 : documentsOnly().count(key) > 0 || isRequirement(key);
    if (!wrong) continue;
    const std::string shown = isRequirement(key) ? "require" : key;
    Diagnostic& d = ctx.diags.error(range, fmt::format("'{}' belongs to the {} task, and this experiment's task is {}",
                                                       shown, documents ? "addition" : "documents",
                                                       documents ? "documents" : "addition"));
    d.hint = documents ? "document experiments set tasks, lengths, distractors and templates (posc help settings)"
                       : "write task { kind = documents } to run the long-context document tasks";
  }
  if (!documents) return;

  auto where = [&](const std::string& key) {
    auto it = ctx.written.find(key);
    return it == ctx.written.end() ? at : it->second;
  };
  plan::DocumentTaskPlan& t = p.task.documents;
  plan::DocumentEvalPlan& e = p.eval.documents;
  if (!t.filler && std::any_of(t.tasks.begin(), t.tasks.end(),
                               [](plan::DocumentTask k) { return k != plan::DocumentTask::Retrieval; })) {
    Diagnostic& d = ctx.diags.error(where("task.filler"), "training documents without filler are retrieval documents only");
    d.hint = "set task.tasks = [retrieval], or keep filler = true";
  }
  if (t.train_min_length > t.train_max_length)
    ctx.diags.error(where("task.train_min_length"),
                    fmt::format("train_min_length ({}) is larger than train_max_length ({})", t.train_min_length,
                                t.train_max_length));
  if (e.tasks.empty()) e.tasks = t.tasks;
  if (e.lengths.empty())
    for (int factor : {1, 2, 4, 8, 16}) e.lengths.push_back(t.train_max_length * factor);
  if (e.distractors.empty()) e.distractors = {*std::max_element(t.train_distractors.begin(), t.train_distractors.end())};
  if (std::none_of(e.lengths.begin(), e.lengths.end(), [&](int l) { return l <= t.train_max_length; })) {
    Diagnostic& d = ctx.diags.warning(where("eval.lengths"),
                                      fmt::format("no protocol length is at or below the longest training length ({}): "
                                                  "the run has no short-context regression set",
                                                  t.train_max_length));
    d.hint = fmt::format("add {} to eval.lengths", t.train_max_length);
  }
  for (size_t i = 0; i < e.requirements.size(); ++i) {
    const plan::DocumentRequirement& r = e.requirements[i];
    const SourceRange range = where(fmt::format("eval.require.{}", i));
    auto missing = [&](const std::string& what) {
      Diagnostic& d = ctx.diags.error(range, fmt::format("'{}' matches no cell: the protocol runs no {}", r.text, what));
      d.hint = "a requirement pools the protocol's cells; its filters must name levels of eval.tasks, lengths, depths "
               "and distractors";
    };
    if (std::find(e.tasks.begin(), e.tasks.end(), r.task) == e.tasks.end())
      missing(fmt::format("{} cells", plan::documentTaskName(r.task)));
    else if (r.length && std::find(e.lengths.begin(), e.lengths.end(), *r.length) == e.lengths.end())
      missing(fmt::format("length {}", *r.length));
    else if (r.depth && std::find(e.depths.begin(), e.depths.end(), *r.depth) == e.depths.end())
      missing(fmt::format("depth {}", number(*r.depth)));
    else if (r.distractors && std::find(e.distractors.begin(), e.distractors.end(), *r.distractors) == e.distractors.end())
      missing(fmt::format("distractor count {}", *r.distractors));
    else
      checkReachable(r, e, range, ctx.diags);
  }
}

}  // namespace posc::sema
