// The retrieval control as a command: see runtime/longctx/retrieval_command.h.
#include "runtime/longctx/retrieval_command.h"

#include <fmt/format.h>

#include <cmath>
#include <memory>

#include "runtime/analysis/controls.h"
#include "runtime/longctx/retrieval_control.h"
#include "runtime/plot/heatmap.h"

namespace posc::longctx {
namespace {

using analysis::CommandError;
using analysis::Param;

std::string num(double v) { return plot::formatNumber(v, 6); }

analysis::Result retrieval(const analysis::Values& v, const analysis::Limits&) {
  const analysis::KernelValue* bias = v.kernel("bias");
  const double margin = v.number("margin");
  Factors f;
  f.lengths.clear();
  const std::vector<double>& lengths = v.numbers("lengths");
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (lengths[i] != std::floor(lengths[i]) || lengths[i] > 1e6)
      throw CommandError("lengths", fmt::format("lengths must be whole numbers up to 1e6, not {:g}", lengths[i]), {},
                         static_cast<int>(i));
    f.lengths.push_back(static_cast<int>(lengths[i]));
  }
  f.depths.clear();
  const std::vector<double>& depths = v.numbers("depths");
  for (size_t i = 0; i < depths.size(); ++i) {
    if (depths[i] > 1)
      throw CommandError("depths", fmt::format("depths are fractions in [0, 1], not {:g}", depths[i]), {},
                         static_cast<int>(i));
    f.depths.push_back(depths[i]);
  }
  f.distractors.clear();
  const std::vector<double>& distractors = v.numbers("distractors");
  for (size_t i = 0; i < distractors.size(); ++i) {
    const double n = distractors[i];
    if (n != std::floor(n) || n > 1e5)
      throw CommandError("distractors",
                         fmt::format("distractor counts must be whole numbers up to 1e5, not {:g}", n), {},
                         static_cast<int>(i));
    f.distractors.push_back(static_cast<int>(n));
  }
  f.problems = static_cast<int>(v.number("problems"));
  f.seed = static_cast<uint64_t>(v.number("seed"));
  const CellPlan plan = planCells(f);
  if (plan.cells.empty())
    throw CommandError("", "no cell can be laid out: every length is too short for its distractors",
                       "use longer lengths or fewer distractors");
  std::unique_ptr<analysis::KernelEvaluator> evaluator;
  if (bias) evaluator = analysis::makeEvaluator(bias->program);
  std::vector<PooledValue> cells;
  try {
    cells = retrievalControl(f, margin, evaluator.get());
  } catch (const std::invalid_argument& x) {
    throw CommandError(bias ? "bias" : "", x.what());
  }
  const std::string label = bias ? bias->label : "0";
  // Files: retrieval_*, or retrieval_NAME_* for a named bias (one call per bias).
  std::string stem = "retrieval";
  if (bias) stem += bias->named ? "_" + bias->label : "_bias";
  analysis::Result r;
  plot::Table t;
  t.columns = {"length", "depth", "distractors", "documents", "evidence mass", "without bias"};
  for (const auto& c : cells)
    t.addRow({std::to_string(c.cell.length), num(c.cell.depth), std::to_string(c.cell.distractors),
              std::to_string(c.documents), num(c.sum / c.documents),
              num(analysis::targetProbability(margin, c.cell.distractors))});
  std::string skipped;
  for (const auto& [cell, why] : plan.skipped) skipped += fmt::format(" Skipped {}: {}.", describe(cell), why);
  r.tables.push_back({stem + "_cells", fmt::format("Retrieval control: margin {}, bias {}", num(margin), label),
                      fmt::format("The analytic retrieval head on {} documents per cell (seed {}): the asked key "
                                  "scores the margin, every key token adds the bias at its distance d from the "
                                  "question; evidence mass is the softmax weight on the evidence key, beside the "
                                  "bias-free law 1 / (1 + N e^(-m)).{}",
                                  f.problems, f.seed, skipped),
                      std::move(t)});
  for (auto& h : pooledHeatmaps(cells, "evidence_mass")) {  // "retrieval_evidence_mass_..."
    h.map.title += fmt::format(" (margin {}, bias {})", num(margin), label);
    r.figures.push_back({stem + h.name.substr(std::string("retrieval").size()) + ".svg", plot::renderHeatmapSvg(h.map)});
  }
  plot::Table m;
  m.columns = {"length", "depth", "effective margin", "rms residual", "cells"};
  for (const auto& e : effectiveMargins(cells))
    m.addRow({std::to_string(e.length), num(e.depth), e.fit.points ? num(e.fit.margin) : "",
              e.fit.points ? num(e.fit.rms_residual) : "", std::to_string(e.fit.points)});
  r.tables.push_back({stem + "_margins", fmt::format("Effective margin per length and depth, bias {}", label),
                      "The margin m that fits 1 / (1 + N e^(-m)) to the cells of one length and depth (mean of "
                      "log(N p / (1 - p)) over their distractor counts with N >= 1 and 0 < p < 1): the margin a head "
                      "without the bias would need there. The rms residual is 0 when the bias leaves the law's shape "
                      "in N intact; empty rows had no usable cell (mass 0 or 1 to double precision).",
                      std::move(m)});
  return r;
}

}  // namespace

const analysis::Command& retrievalCommand() {
  static const analysis::Command command{
      "retrieval",
      {},
      {Param::kernel("bias", false), Param::num("margin", 4).atLeast(-1e6).atMost(1e6),
       Param::nums("lengths", {64, 256, 1024, 4096}).atLeast(1), Param::nums("depths", {0, 0.25, 0.5, 0.75, 1}).atLeast(0),
       Param::nums("distractors", {1, 4, 16, 64}).atLeast(0), Param::num("problems", 20).atLeast(1).whole().atMost(10000),
       Param::num("seed", 0).atLeast(0).whole().atMost(9.007199254740992e15)},
      "the analytic retrieval head on long-context documents: evidence mass per length, depth and distractor count "
      "under a positional bias kernel of the distance d (none when left out), and the effective margin per length "
      "and depth",
      retrieval};
  return command;
}

}  // namespace posc::longctx
