// Analysis blocks (see analyze.h).
#include "tools/posc/repl/analyze.h"

#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <numbers>

#include "runtime/analysis/controls.h"
#include "runtime/analysis/figures.h"
#include "runtime/analysis/ladder.h"
#include "runtime/analysis/sweep.h"
#include "runtime/longctx/retrieval_control.h"
#include "runtime/plot/heatmap.h"
#include "runtime/plot/chart.h"
#include "runtime/plot/table.h"
#include "tools/posc/repl/args.h"

namespace posc::repl {

namespace {

using K = ArgSpec::Kind;

const std::vector<Signature>& calls() {
  static const std::vector<Signature> table = {
      {"rotation", {{K::Number, "omega"}, {K::Numbers, "scales"}, {K::Number, "max_distance"}},
       "rotation(omega = 1, scales = [1, 2, 4, 8], max_distance = 40)",
       "cos(omega d / s) against d per compression scale s, and the neighbour separation table"},
      {"recent_mass", {{K::Number, "h"}, {K::Numbers, "slopes"}, {K::Numbers, "lengths"}},
       "recent_mass(h = 16, slopes = [0, 0.01, 0.05, 0.1, 0.25], lengths = [16, 32, 64, ..., 4096])",
       "the linear-penalty recent-h mass against context length per slope (closed form and finite sum)"},
      {"checks", {}, "checks()",
       "the closed forms against explicit computation: translation invariance, separation, recent mass, margins"},
      {"ridge_table", {{K::Number, "train"}, {K::Number, "range"}, {K::Number, "ridge"}},
       "ridge_table(train = 20, range = 2000, ridge = 1e-5)",
       "the four-row ridge-fit table and a plot of each fitted kernel"},
      {"retrieval",
       {{K::Kernel, "bias"}, {K::Number, "margin"}, {K::Numbers, "lengths"}, {K::Numbers, "depths"},
        {K::Numbers, "distractors"}, {K::Number, "problems"}, {K::Number, "seed"}},
       "retrieval(bias, margin = 4, lengths = [64, 256, 1024, 4096], depths = [0, 0.25, 0.5, 0.75, 1], "
       "distractors = [1, 4, 16, 64], problems = 20, seed = 0)",
       "the analytic retrieval head on long-context documents: evidence mass per length, depth and distractor "
       "count under a positional bias kernel of the distance d (none when left out), and the effective margin "
       "per length and depth"},
      {"sweep", {{K::Kernel, "kernel", true}, {K::Range, "over", true}, {K::Number, "step"}},
       "sweep(k, over = -2000..2000, step = 1)", "the kernel over a range: CSV and SVG"},
      {"aliases",
       {{K::Kernel, "kernel", true}, {K::Range, "over", true}, {K::Number, "window"}, {K::Number, "fraction"},
        {K::Number, "target"}},
       "aliases(k, over = -2000..2000, window = 3, fraction = 0.5, target = 0)",
       "peaks beyond the window around the target reaching the fraction of its score"},
      {"windows",
       {{K::Kernel, "kernel", true}, {K::Range, "over", true}, {K::Number, "width"}, {K::Number, "target"}},
       "windows(k, over = -2000..2000, width = 10, target = 0)",
       "the highest value per window as a fraction of the target's, with a bar chart"},
  };
  return table;
}

std::string num(double v) { return plot::formatNumber(v, 6); }

struct Runner {
  DiagnosticEngine& diags;
  Definitions defs;
  AnalysisResult out;

  void add(const std::string& file, std::string content) { out.artefacts.push_back({file, std::move(content)}); }
  void addTable(const std::string& stem, const std::string& heading, const plot::Table& t, const std::string& note = {}) {
    add(stem + ".csv", plot::toCsv(t));
    std::string md = "## " + heading + "\n\n" + (note.empty() ? "" : note + "\n\n") + plot::toMarkdown(t) + "\n";
    add(stem + ".md", md);
    out.summary += md;
  }

  bool define(const ast::Item& item) {
    if (!item.options.empty()) {
      diags.error(item.options[0].name.range, "a definition in an analysis takes no options");
      return false;
    }
    auto p = lowerKernel(*item.value, "d", defs, diags);
    if (!p) return false;
    Definition def;
    def.name = item.name.text;
    def.source = std::string(item.name.text);
    if (p->isConstantKernel()) def.program = std::move(*p);  // a constant
    else {
      def.parameter = "d";
      def.program = std::move(*p);
    }
    defs[def.name] = std::move(def);
    return true;
  }

  bool call(const ast::Item& item) {
    const Signature* sig = nullptr;
    for (const Signature& s : calls())
      if (s.name == item.name.text) sig = &s;
    if (!sig) {
      Diagnostic& d = diags.error(item.name.range, fmt::format("unknown analysis '{}'", item.name.text));
      std::vector<std::string> names;
      for (const Signature& s : calls()) names.push_back(s.name);
      suggest(d, item.name.text, names);
      d.hint = "an analysis block holds definitions (k = ...) and the calls listed by `posc analyze --help`";
      return false;
    }
    Args args(*sig, item.args, item.range, defs, diags);
    if (!args.bind()) return false;
    const std::string& c = sig->name;
    if (c == "rotation") {
      auto omega = args.number("omega", 1, 1e-12);
      auto scales = args.numbers("scales", {1, 2, 4, 8}, 1e-12);
      auto max_d = args.number("max_distance", 40, 1e-9);
      if (!omega || !scales || !max_d) return false;
      add("rotation.svg", plot::renderSvg(analysis::rotationFigure(*omega, *scales, *max_d)));
      addTable("rotation", "Rotation similarity under compression", analysis::rotationTable(*omega, *scales, *max_d),
               fmt::format("omega = {:g}; similarity cos(omega d / s) on 0..{:g} (rotation.svg); neighbouring positions "
                           "sit 2 |sin(omega / (2 s))| apart, checked against explicitly rotated coordinates.",
                           *omega, *max_d));
      return true;
    }
    if (c == "recent_mass") {
      auto h = args.number("h", 16, 0, true);
      auto slopes = args.numbers("slopes", {0, 0.01, 0.05, 0.1, 0.25}, 0);
      auto lengths = args.numbers("lengths", {16, 32, 64, 128, 256, 512, 1024, 2048, 4096}, 1);
      if (!h || !slopes || !lengths) return false;
      for (double L : *lengths)
        if (L != std::floor(L) || L > 1e8) {
          args.error(args.rangeOf("lengths"), fmt::format("lengths must be whole numbers up to 1e8, not {:g}", L));
          return false;
        }
      add("recent_mass.svg", plot::renderSvg(analysis::recentMassFigure(*h, *slopes, *lengths)));
      addTable("recent_mass", fmt::format("Recent-{:g} mass under a linear distance penalty", *h),
               analysis::recentMassTable(*h, *slopes, *lengths),
               "A causal key at lag d scores -m d over lags 0..L-1; closed form (1 - e^(-m h)) / (1 - e^(-m L)) "
               "beside the finite sum; dashed lines in recent_mass.svg are the limits 1 - e^(-m h).");
      return true;
    }
    if (c == "checks") {
      addTable("checks", "Closed forms against explicit computation", checks());
      return true;
    }
    if (c == "ridge_table") {
      auto train = args.number("train", 20, 1, true, 1e6);
      auto range = args.number("range", 2000, 2, true, 1e7);
      auto ridge = args.number("ridge", 1e-5, 0);
      if (!train || !range || !ridge) return false;
      if (*range <= *train) return args.error(args.rangeOf("range"), "the evaluation range must extend beyond the training distances");
      analysis::FitSettings settings;
      settings.train = static_cast<int>(*train);
      settings.range = static_cast<int>(*range);
      settings.ridge = *ridge;
      std::vector<analysis::FitResult> fits;
      try {
        for (const analysis::Ladder& l : analysis::studyLadders()) {
          fits.push_back(analysis::fitLadder(l, settings));
          add(fmt::format("ridge_{}_{}.svg", l.kind == analysis::Ladder::Kind::Geometric ? "geometric" : "harmonic", l.terms),
              plot::renderSvg(analysis::ridgeFigure(fits.back())));
        }
      } catch (const std::exception& x) {
        return args.error(item.range, x.what());
      }
      addTable("ridge_table", "Ridge fits of frequency ladders to an ideal spike", analysis::ridgeTable(fits),
               "Fit settings: " + settings.describe() +
                   ". Geometric ladders: omega_i = 10000^(-i/M); harmonic: omega_k = 2 pi k / 4000, k = 1..M.");
      return true;
    }
    if (c == "retrieval") return retrieval(args, item);
    // Kernel calls.
    auto k = args.kernel("kernel");
    auto over = args.range("over");
    auto step = args.number("step", 1, 1e-9);
    if (!k || !over || !step) return false;
    if ((over->second - over->first) / *step > 5e7)
      return args.error(args.rangeOf("over"), "more than 5e7 points", "use a larger step or a smaller range");
    std::unique_ptr<analysis::KernelEvaluator> eval = analysis::makeEvaluator(k->program);
    analysis::Sweep s = analysis::sweep(*eval, over->first, over->second, *step);
    const std::string stem = item.args[0].value->kind == ast::Expr::Kind::Name ? item.args[0].value->name.text : "kernel";
    if (c == "sweep") {
      add(stem + "_sweep.svg", plot::renderSvg(analysis::sweepFigure(k->label, s)));
      const plot::Table t = analysis::sweepTable(s);
      add(stem + "_sweep.csv", plot::toCsv(t));
      out.summary += fmt::format("## Sweep of {}\n\n{} points on {}..{} (step {}): {}_sweep.csv, {}_sweep.svg\n\n", k->label,
                                 s.d.size(), num(over->first), num(over->second), num(*step), stem, stem);
      return true;
    }
    auto target = args.number("target", 0);
    if (!target) return false;
    double target_value = 0;
    try {
      target_value = analysis::valueAt(s, *target);
    } catch (const std::exception&) {
      return args.error(args.has("target") ? args.rangeOf("target") : args.rangeOf("over"),
                        fmt::format("the target distance {} is not on the swept grid", num(*target)));
    }
    if (c == "aliases") {
      auto window = args.number("window", 3, 0);
      auto fraction = args.number("fraction", 0.5);
      if (!window || !fraction) return false;
      plot::Table t;
      t.columns = {"d", "score", "fraction of target", "gap to target"};
      for (const auto& a : analysis::findAliases(s, *target, *window, *fraction))
        t.addRow({num(a.d), num(a.value), fmt::format("{:.3f}", a.fraction), num(a.gap)});
      addTable(stem + "_aliases", fmt::format("Aliases of {}", k->label), t,
               fmt::format("Target: d = {} scores {}. Peaks on {}..{} with |d - {}| > {} scoring at least {} of it, "
                           "highest first.",
                           num(*target), num(target_value), num(over->first), num(over->second), num(*target),
                           num(*window), num(*fraction)));
      return true;
    }
    auto width = args.number("width", 10, 1, true, 1e9);  // a whole number of points
    if (!width) return false;
    std::vector<analysis::WindowMax> w = analysis::windowMaxima(s, *target, static_cast<size_t>(*width));
    plot::Table t;
    t.columns = {"window start", "window end", "highest at", "score", "fraction of target"};
    plot::Chart chart;
    chart.title = fmt::format("Highest score per {}-point window as a fraction of the target, {}", *width, k->label);
    chart.x_label = "distance d (window start)";
    chart.y_label = "fraction of target";
    plot::Series bars;
    bars.name = "highest / target";
    bars.style = plot::Style::Bars;
    for (const auto& x : w) {
      t.addRow({num(x.lo), num(x.hi), num(x.d), num(x.value), fmt::format("{:.3f}", x.fraction)});
      bars.x.push_back(x.lo);
      bars.y.push_back(x.fraction);
    }
    chart.series.push_back(std::move(bars));
    add(stem + "_windows.svg", plot::renderSvg(chart));
    addTable(stem + "_windows", fmt::format("Windowed maxima of {}", k->label), t,
             fmt::format("Target: d = {} scores {}.", num(*target), num(target_value)));
    return true;
  }

  // The retrieval control over the protocol's retrieval cells.
  bool retrieval(Args& args, const ast::Item& item) {
    std::optional<KernelArg> bias;
    if (args.has("bias") && !(bias = args.kernel("bias"))) return false;
    auto margin = args.number("margin", 4, -1e6, false, 1e6);
    auto lengths = args.numbers("lengths", {64, 256, 1024, 4096}, 1);
    auto depths = args.numbers("depths", {0, 0.25, 0.5, 0.75, 1}, 0);
    auto distractors = args.numbers("distractors", {1, 4, 16, 64}, 0);
    auto problems = args.number("problems", 20, 1, true, 10000);
    auto seed = args.number("seed", 0, 0, true, 9.007199254740992e15);
    if (!margin || !lengths || !depths || !distractors || !problems || !seed) return false;
    // Where the i-th number of a list argument is written (the argument itself for one number).
    auto element = [&](const char* name, size_t i) {
      const ast::Expr& e = args.expr(name);
      return e.kind == ast::Expr::Kind::List && i < e.elements.size() ? e.elements[i]->range : e.range;
    };
    longctx::Factors f;
    f.lengths.clear();
    for (size_t i = 0; i < lengths->size(); ++i) {
      double L = (*lengths)[i];
      if (L != std::floor(L) || L > 1e6)
        return args.error(element("lengths", i), fmt::format("lengths must be whole numbers up to 1e6, not {:g}", L));
      f.lengths.push_back(static_cast<int>(L));
    }
    f.depths.clear();
    for (size_t i = 0; i < depths->size(); ++i) {
      double d = (*depths)[i];
      if (d > 1) return args.error(element("depths", i), fmt::format("depths are fractions in [0, 1], not {:g}", d));
      f.depths.push_back(d);
    }
    f.distractors.clear();
    for (size_t i = 0; i < distractors->size(); ++i) {
      double n = (*distractors)[i];
      if (n != std::floor(n) || n > 1e5)
        return args.error(element("distractors", i),
                          fmt::format("distractor counts must be whole numbers up to 1e5, not {:g}", n));
      f.distractors.push_back(static_cast<int>(n));
    }
    f.problems = static_cast<int>(*problems);
    f.seed = static_cast<uint64_t>(*seed);
    longctx::CellPlan plan = longctx::planCells(f);
    if (plan.cells.empty())
      return args.error(item.range, "no cell can be laid out: every length is too short for its distractors",
                        "use longer lengths or fewer distractors");
    std::unique_ptr<analysis::KernelEvaluator> evaluator;
    if (bias) evaluator = analysis::makeEvaluator(bias->program);
    std::vector<longctx::PooledValue> cells;
    try {
      cells = longctx::retrievalControl(f, *margin, evaluator.get());
    } catch (const std::invalid_argument& x) {
      return args.error(args.has("bias") ? args.rangeOf("bias") : item.range, x.what());
    }
    const std::string label = bias ? bias->label : "0";
    // Files: retrieval_*, or retrieval_NAME_* for a named bias (one call per bias).
    std::string stem = "retrieval";
    if (bias) stem += args.expr("bias").kind == ast::Expr::Kind::Name ? "_" + bias->label : "_bias";
    plot::Table t;
    t.columns = {"length", "depth", "distractors", "documents", "evidence mass", "without bias"};
    for (const auto& v : cells)
      t.addRow({std::to_string(v.cell.length), num(v.cell.depth), std::to_string(v.cell.distractors),
                std::to_string(v.documents), num(v.sum / v.documents),
                num(analysis::targetProbability(*margin, v.cell.distractors))});
    std::string skipped;
    for (const auto& [cell, why] : plan.skipped) skipped += fmt::format(" Skipped {}: {}.", longctx::describe(cell), why);
    addTable(stem + "_cells", fmt::format("Retrieval control: margin {}, bias {}", num(*margin), label), t,
             fmt::format("The analytic retrieval head on {} documents per cell (seed {}): the asked key scores the "
                         "margin, every key token adds the bias at its distance d from the question; evidence mass "
                         "is the softmax weight on the evidence key, beside the bias-free law 1 / (1 + N e^(-m)).{}",
                         f.problems, f.seed, skipped));
    for (auto& h : longctx::pooledHeatmaps(cells, "evidence_mass")) {  // "retrieval_evidence_mass_..."
      h.map.title += fmt::format(" (margin {}, bias {})", num(*margin), label);
      add(stem + h.name.substr(std::string("retrieval").size()) + ".svg", plot::renderHeatmapSvg(h.map));
    }
    plot::Table m;
    m.columns = {"length", "depth", "effective margin", "rms residual", "cells"};
    for (const auto& e : longctx::effectiveMargins(cells))
      m.addRow({std::to_string(e.length), num(e.depth), e.fit.points ? num(e.fit.margin) : "",
                e.fit.points ? num(e.fit.rms_residual) : "", std::to_string(e.fit.points)});
    addTable(stem + "_margins", fmt::format("Effective margin per length and depth, bias {}", label), m,
             "The margin m that fits 1 / (1 + N e^(-m)) to the cells of one length and depth (mean of "
             "log(N p / (1 - p)) over their distractor counts with N >= 1 and 0 < p < 1): the margin a head "
             "without the bias would need there. The rms residual is 0 when the bias leaves the law's shape in N "
             "intact; empty rows had no usable cell (mass 0 or 1 to double precision).");
    return true;
  }

  // The companion program's checks: each closed form against the explicit
  // computation it abbreviates, as the largest absolute difference.
  plot::Table checks() {
    plot::Table t;
    t.columns = {"check", "cases", "largest |difference|"};
    double worst = 0;
    int cases = 0;
    for (double w : {0.3, 1.0, 2.5})
      for (double s : {1.0, 4.0})
        for (double i = 0; i < 20; i += 3)
          for (double j = 0; j < 20; j += 5)
            for (double shift : {1.0, 37.0, 1000.0}) {
              worst = std::max(worst, std::fabs(analysis::rotatedInnerProduct(w, i + shift, j + shift, s) -
                                                analysis::rotatedInnerProduct(w, i, j, s)));
              ++cases;
            }
    t.addRow({"translation invariance of the rotated inner product", std::to_string(cases), num(worst)});
    worst = 0, cases = 0;
    for (double w : {0.1, 1.0, 2 * std::numbers::pi / 6, 3.0})
      for (double s : {1.0, 2.0, 4.0, 16.0})
        for (double p : {0.0, 17.0, 1000.0}) {
          worst = std::max(worst, std::fabs(analysis::neighbourSeparation(w, s) - analysis::rotatedNeighbourDistance(w, p, s)));
          ++cases;
        }
    t.addRow({"separation 2|sin(omega/(2s))| against rotated coordinates", std::to_string(cases), num(worst)});
    worst = 0, cases = 0;
    for (double m : {1e-4, 0.01, 0.1, 0.5, 2.0})
      for (long L : {16L, 100L, 4096L})
        for (long h : {1L, 8L, 16L}) {
          worst = std::max(worst, std::fabs(analysis::recentMass(m, h, L) - analysis::recentMassSum(m, h, L)));
          ++cases;
        }
    t.addRow({"recent mass: closed form against the finite sums", std::to_string(cases), num(worst)});
    worst = 0, cases = 0;
    for (long L : {1L, 16L, 1000L})
      for (long h = 0; h <= L; h += std::max(1L, L / 4)) {
        worst = std::max(worst, std::fabs(analysis::recentMass(0, h, L) - static_cast<double>(h) / L));
        ++cases;
      }
    t.addRow({"recent mass at slope 0 equals h / L", std::to_string(cases), num(worst)});
    worst = 0, cases = 0;
    for (double m : {0.0, 0.05, 1.0})
      for (long L : {1L, 16L, 500L}) {
        worst = std::max(worst, std::fabs(analysis::recentMass(m, L, L) - 1.0));
        ++cases;
      }
    t.addRow({"recent mass at h = L equals 1", std::to_string(cases), num(worst)});
    t.addRow({"recent mass at L = 4096 against the limit 1 - e^(-m h), m = 0.05, h = 16", "1",
              num(std::fabs(analysis::recentMass(0.05, 16, 4096) - analysis::recentMassLimit(0.05, 16)))});
    worst = 0, cases = 0;
    for (double n : {1.0, 10.0, 1000.0, 1e6})
      for (double p : {0.5, 0.9, 0.99}) {
        worst = std::max(worst, std::fabs(analysis::targetProbability(analysis::marginFor(p, n), n) - p));
        ++cases;
      }
    t.addRow({"margin log(N p / (1 - p)) gives probability p against N distractors", std::to_string(cases), num(worst)});
    return t;
  }
};

}  // namespace

std::string analysisCallsHelp() {
  std::string out;
  for (const Signature& s : calls()) out += fmt::format("  {}\n      {}\n", s.usage, s.summary);
  return out;
}

std::optional<std::vector<AnalysisResult>> runAnalyses(const ast::File& file, const std::string& only,
                                                       DiagnosticEngine& diags) {
  std::vector<AnalysisResult> results;
  bool found = only.empty();
  for (const ast::Analysis& a : file.analyses) {
    if (!only.empty() && a.name.text != only) continue;
    found = true;
    Runner r{diags, {}, {}};
    r.out.name = a.name.text;
    r.out.summary = fmt::format("# Analysis {}\n\n", a.name.text);
    for (const ast::Item& item : a.items) {
      if (item.kind == ast::Item::Kind::Assign) r.define(item);
      else if (item.kind == ast::Item::Kind::Call) r.call(item);
      else diags.error(item.range, "an analysis holds definitions (k = ...) and calls; this is neither")
               .hint = "see `posc analyze --help` for the calls";
    }
    r.add("summary.md", r.out.summary);
    results.push_back(std::move(r.out));
  }
  if (!found) {
    Diagnostic& d = diags.error(SourceRange{file.source, 0, 0}, fmt::format("no analysis named '{}' in this file", only));
    std::vector<std::string> names;
    for (const ast::Analysis& a : file.analyses) names.push_back(a.name.text);
    suggest(d, only, names);
  }
  if (results.empty() && only.empty())
    diags.error(SourceRange{file.source, 0, 0}, "this file has no analysis block").hint =
        "add one: analysis NAME { rotation() }";
  if (diags.hasErrors()) return std::nullopt;
  return results;
}

}  // namespace posc::repl
