// Score formulas as kernels over distance (see score.h).
#include "tools/posc/repl/score.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "compiler/driver/compile.h"
#include "runtime/plot/table.h"

namespace fs = std::filesystem;

namespace posc::repl {

namespace {

using F = plan::FormulaNode::Op;
using analysis::NodeId;

double paramValue(const plan::Param& p, int head) {
  if (p.init.empty()) return 0.0;
  return p.per_head ? p.init.at(static_cast<size_t>(head) % p.init.size()) : p.init.front();
}

// The entries of a table that `head` reads (its row of a per-head table).
std::vector<double> tableRow(const plan::Param& p, int head) {
  const size_t w = static_cast<size_t>(p.width());
  const size_t rows = p.init.size() / w, r = p.per_head && rows ? static_cast<size_t>(head) % rows : 0;
  return {p.init.begin() + static_cast<std::ptrdiff_t>(r * w), p.init.begin() + static_cast<std::ptrdiff_t>((r + 1) * w)};
}

// The stdlib module (file stem) that defines `component`, by a scan of the
// stdlib folders; all component names seen go to `known`.
std::optional<std::string> moduleDefining(const std::string& component, std::vector<std::string>& known) {
  std::optional<std::string> found;
  for (const std::string& dir : sema::defaultStdlibDirs()) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.path().extension() != ".pos") continue;
      std::ifstream in(entry.path());
      std::string line;
      while (std::getline(in, line)) {
        const std::string kw = "component ";
        if (line.rfind(kw, 0) != 0) continue;
        const std::string rest = line.substr(kw.size());
        const std::string name = rest.substr(0, rest.find_first_of("( {"));
        known.push_back(name);
        if (name == component && !found) found = entry.path().stem().string();
      }
    }
  }
  return found;
}

}  // namespace

ScoreKernel scoreKernel(const plan::AttentionPlan& attention, int head, double s) {
  ScoreKernel out;
  analysis::KernelProgram& p = out.program;
  NodeId score = p.constant(s);
  for (const plan::ScoreTerm& t : attention.score_terms) {
    if (!t.heads.empty() && std::find(t.heads.begin(), t.heads.end(), head) == t.heads.end()) {
      out.lines.push_back(fmt::format("{}: not on head {} (heads {})", t.name, head, fmt::join(t.heads, ", ")));
      continue;
    }
    // The term as a kernel of d = q.c - k.c: the query's channel reads d,
    // the key's 0, the head and the parameters their values.
    std::set<int> params;
    score = p.graph.import(t.formula, [&](const plan::FormulaNode& n) -> NodeId {
      switch (n.op) {
        case F::Score: return score;
        case F::QChannel: return p.graph.leaf(F::Var, 0);
        case F::Head: return p.graph.constant(head);
        case F::Param:
          params.insert(n.param);
          return p.graph.constant(paramValue(attention.params.at(static_cast<size_t>(n.param)), head));
        default: return p.graph.constant(0.0);  // the key's channel
      }
    }, [&](const plan::FormulaNode& n, NodeId index) -> NodeId {
      params.insert(n.param);
      return formula::tableSelect(p.graph, tableRow(attention.params.at(static_cast<size_t>(n.param)), head), index);
    });
    std::string line = fmt::format("{}: s <- {}", t.name, plan::renderFormula(t.formula, attention));
    std::vector<std::string> values;
    for (int k : params) {
      const plan::Param& prm = attention.params.at(static_cast<size_t>(k));
      if (prm.table()) {
        std::vector<std::string> entries;
        for (double v : tableRow(prm, head)) entries.push_back(plot::formatNumber(v, 6));
        values.push_back(fmt::format("{}{} = [{}]", prm.name, prm.per_head ? fmt::format("[{}]", head) : "",
                                     fmt::join(entries, ", ")));
        continue;
      }
      values.push_back(fmt::format("{}{} = {}", prm.name, prm.per_head ? fmt::format("[{}]", head) : "",
                                   plot::formatNumber(paramValue(prm, head), 6)));
    }
    if (!values.empty()) line += fmt::format(" with {}", fmt::join(values, ", "));
    if (!t.exempt_keys.empty() || !t.exempt_queries.empty())
      line += " (kind exemptions left out: both tokens are digits)";
    out.lines.push_back(line);
  }
  p.root = score;
  return out;
}

std::optional<plan::ExperimentPlan> compileScoreSource(const ScoreSource& source, std::string& errors, bool color) {
  driver::Compilation c;
  driver::CompileRequest request;
  if (!source.file.empty()) {
    request.path = source.file;
    if (!source.experiment.empty()) request.experiment.experiment = source.experiment;
  } else {
    std::vector<std::string> known;
    std::optional<std::string> module = moduleDefining(source.component, known);
    if (!module) {
      std::string hint = known.empty() ? "" : fmt::format(" (the stdlib has: {})", fmt::join(known, ", "));
      const std::string near = closestMatch(source.component, known);
      errors = fmt::format("error: no stdlib component '{}'{}{}\n", source.component,
                           near.empty() ? "" : fmt::format("; did you mean '{}'?", near), hint);
      return std::nullopt;
    }
    // An experiment around the component, compiled like a file: its
    // diagnostics point into this text, whose third line is the `use`.
    request.path = "<:load " + source.component + ">";
    request.text = fmt::format(
        "import {}\n"
        "experiment load {{ model {{ heads = {}\n width = {} }} attention {{\n"
        "  use {}({})\n"
        "}} }}\n",
        *module, source.heads, 32 * source.heads, source.component, source.arguments);
  }
  if (!c.compile(request)) {
    errors = c.diags.render(color);
    if (errors.empty()) errors = "error: the experiment did not compile\n";
    return std::nullopt;
  }
  return c.plan;
}

}  // namespace posc::repl
