// posc check FILE...: parse and check every experiment of each file, and warn
// of far aliases that the positional components predict before any training
// (`--aliases` prints the whole prediction; runtime/probe/alias_check.h).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "runtime/plot/table.h"
#include "runtime/probe/alias_check.h"
#include "tools/posc/cli.h"

namespace posc::cli {
namespace {

constexpr const char* kHelp = R"(usage: posc check FILE... [--aliases [--csv]] [--model fitted|aligned] [--target-score X]
                  [--experiment NAME] [--preset NAME] [--set K=V]...

Parses and checks every experiment of each file (and the components they
use). Prints located errors and exits with 2 if there are any.

Then, for each experiment of the file, the alias check: each head's score as
a function of the key's column offset from its target, predicted from the
positional components alone (no training). A head whose best window beyond
the far distance reaches half of the target's score gets a warning: the
kernel probe will likely find far aliases there after training.

  --aliases          print the prediction for every head: the target's score,
                     the best window within and beyond the far distance (as a
                     fraction of the target), where the far maximum sits, and
                     whether the score is translation-invariant and bounded
  --csv              with --aliases: the table as CSV on standard output
  --model fitted     the modelled head (default): each rotation pair's height
                     and phase ridge-fitted to a spike at the target over the
                     offsets a training problem has, as the study's ladder fit
  --model aligned    every pair aligned on the target with the same weight
  --target-score X   the modelled content score at the target (default 20, the
                     scale of the study's trained lookup heads)

The sweep is the experiment's kernel probe's (place, length, offsets, window,
far) when it declares one, so that the check and the probe compare directly.)";

struct CheckOptions {
  bool aliases = false, csv = false;
  double target_score = 20;
  probe::AliasModel model = probe::AliasModel::Fitted;
};

plot::Table aliasTable(const probe::AliasReport& r) {
  plot::Table t;
  t.columns = {"head", "spike height", "target score", "best near window (fraction)", "best far window (fraction)", "at offset",
               "gap to target", "translation-invariant", "bounded", "prediction"};
  for (const probe::HeadAliases& h : r.heads)
    t.addRow({std::to_string(h.head), plot::formatNumber(h.spike, 3), plot::formatNumber(h.target, 4),
              h.target > 0 ? plot::formatNumber(h.near, 3) : "n/a",
              !h.has_far ? "none" : h.target > 0 ? plot::formatNumber(h.far, 3) : "n/a", h.has_far ? std::to_string(h.far_at) : "",
              h.has_far ? plot::formatNumber(h.target - h.far_score, 4) : "",
              h.translation_invariant ? "yes" : "no", h.bounded ? "yes" : "no", probe::aliasVerdict(h)});
  return t;
}

void printAliases(const plan::ExperimentPlan& plan, const probe::AliasReport& r, bool csv) {
  if (csv) {
    std::fputs(plot::toCsv(aliasTable(r)).c_str(), stdout);
    return;
  }
  const probe::AliasGeometry& g = r.geometry;
  // The spike height is the fitted model's; the aligned model has none.
  plot::Table table = aliasTable(r);
  if (g.model == probe::AliasModel::Aligned) {
    table.columns.erase(table.columns.begin() + 1);
    for (auto& row : table.rows) row.erase(row.begin() + 1);
  }
  std::printf("alias check: %s%s\n", plan.name.c_str(), plan.preset.empty() ? "" : fmt::format(" (preset {})", plan.preset).c_str());
  std::printf("  query: answer place %d of a %d-digit problem; target: the digit of row %d in its column\n", g.place,
              g.length, g.operand);
  std::printf("  key swept over column offsets %lld..%lld; windows of %d; far: |offset| >= %lld (%s)\n",
              static_cast<long long>(g.sweep_begin), static_cast<long long>(g.sweep_end - 1), g.window,
              static_cast<long long>(g.far), g.from.c_str());
  if (r.last_causal_offset < g.sweep_end - 1)
    std::printf("  keys past offset %lld follow the query (masked in attention): left out\n",
                static_cast<long long>(r.last_causal_offset));
  if (g.model == probe::AliasModel::Fitted)
    std::printf("  modelled head: every pair's height and phase ridge-fitted (penalty %s) to a spike at the target over "
                "the training offsets (|offset| <= %lld); content score %s at the target\n\n",
                plot::formatNumber(g.ridge, 3).c_str(), static_cast<long long>(g.trained),
                plot::formatNumber(g.target_score, 4).c_str());
  else
    std::printf("  modelled head: query and key aligned on the target, the same weight on every pair, content score %s\n\n",
                plot::formatNumber(g.target_score, 4).c_str());
  std::fputs(plot::toMarkdown(table).c_str(), stdout);
  for (const std::string& n : r.notes) std::printf("\nnote: %s\n", n.c_str());
}

// The warning of a plain `posc check`: one per experiment with flagged heads,
// heads of the same prediction named together.
void warnAliases(const std::string& file, const plan::ExperimentPlan& plan, const probe::AliasReport& r) {
  int flagged = 0;
  for (const probe::HeadAliases& h : r.heads) flagged += probe::isFarAlias(h);
  if (flagged == 0) return;
  // Heads with the same prediction are named together.
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (const probe::HeadAliases& h : r.heads) {
    if (!probe::isFarAlias(h)) continue;
    const std::string what = h.target > 0 ? fmt::format("{} of the target at offset {}", plot::formatNumber(h.far, 3), h.far_at)
                                          : fmt::format("{} points above the target at offset {}",
                                                        plot::formatNumber(h.far_score - h.target, 3), h.far_at);
    if (groups.empty() || groups.back().first != what) groups.push_back({what, {}});
    groups.back().second.push_back(h.head);
  }
  std::string heads;
  for (const auto& [what, members] : groups) {
    std::string names = members.size() == r.heads.size() ? "every head" : members.size() == 1 ? "head " : "heads ";
    if (members.size() != r.heads.size())
      for (size_t i = 0; i < members.size(); ++i) names += (i ? ", " : "") + std::to_string(members[i]);
    heads += fmt::format("{}{}: {}", heads.empty() ? "" : "; ", names, what);
  }
  std::fprintf(stderr,
               "%s: warning: experiment '%s': far aliases predicted: beyond |offset| >= %lld columns, %d of %zu heads can "
               "score at least half of their target: %s\n  hint: `posc check --aliases %s` prints every head's "
               "prediction\n",
               file.c_str(), plan.name.c_str(), static_cast<long long>(r.geometry.far), flagged, r.heads.size(),
               heads.c_str(), file.c_str());
}

int runCheck(const std::vector<std::string>& args) {
  CheckOptions co;
  ExperimentOptions o = parseExperimentOptions(args, [&](const std::string& flag, const std::function<std::string()>& value) {
    if (flag == "--aliases") co.aliases = true;
    else if (flag == "--csv") co.csv = true;
    else if (flag == "--model") {
      const std::string v = value();
      if (v == "fitted") co.model = probe::AliasModel::Fitted;
      else if (v == "aligned") co.model = probe::AliasModel::Aligned;
      else throw UsageError{fmt::format("--model takes fitted or aligned, not '{}'", v)};
    }
    else if (flag == "--target-score") {
      const std::string v = value();
      try {
        size_t used = 0;
        co.target_score = std::stod(v, &used);
        if (used != v.size() || !(co.target_score > 0)) throw std::invalid_argument(v);
      } catch (const std::exception&) {
        throw UsageError{fmt::format("--target-score needs a positive number, got '{}'", v)};
      }
    } else return false;
    return true;
  });
  if (o.help) {
    std::puts(kHelp);
    return 0;
  }
  if (o.files.empty()) throw UsageError{"posc check needs at least one FILE"};
  if (co.csv && !co.aliases) throw UsageError{"--csv goes with --aliases"};
  int status = 0;
  for (const std::string& f : o.files) {
    driver::Compilation c;
    c.checkAll(requestFor(o, f));
    if (reportDiagnostics(c) != 0) {
      status = 2;
      continue;
    }
    // The experiments checkAll compiled, or the one --experiment names.
    std::vector<plan::ExperimentPlan> plans = c.plans;
    if (o.request.experiment) {
      driver::Compilation one;
      if (!one.compile(requestFor(o, f))) {
        status = std::max(status, reportDiagnostics(one));
        continue;
      }
      plans = {*one.plan};
    }
    for (const plan::ExperimentPlan& plan : plans) {
      if (plan.handset) {  // hand-set weights: there is no initialisation to predict from
        if (co.aliases) std::printf("alias check: %s has hand-set weights; nothing to predict\n\n", plan.name.c_str());
        continue;
      }
      if (plan.task.kind == plan::TaskKind::Documents) {  // the check's geometry is addition's columns
        if (co.aliases)
          std::printf("alias check: %s is a document task; the check predicts aliases of addition's digit lookups\n\n",
                      plan.name.c_str());
        continue;
      }
      probe::AliasGeometry geometry = probe::aliasGeometry(plan, co.target_score);
      geometry.model = co.model;
      probe::AliasReport report;
      try {
        report = probe::checkAliases(plan, geometry);
      } catch (const std::invalid_argument& e) {  // a geometry this task cannot pose
        if (co.aliases) {
          std::fprintf(stderr, "%s: error: experiment '%s': %s\n", f.c_str(), plan.name.c_str(), e.what());
          status = 2;
        } else {
          std::fprintf(stderr, "%s: note: experiment '%s': no alias check: %s\n", f.c_str(), plan.name.c_str(), e.what());
        }
        continue;
      }
      if (co.aliases) printAliases(plan, report, co.csv);
      else warnAliases(f, plan, report);
    }
  }
  return status;
}

const CommandRegistration reg{{"check", "posc check FILE... [--aliases]",
                               "check .pos files (every experiment in each); predict far aliases", 10, false,
                               runCheck}};

}  // namespace
}  // namespace posc::cli
