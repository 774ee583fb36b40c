// The commands over frequency ladders (runtime/analysis/command.h): fit one
// ladder to a target and define the fitted kernel, and the study's four-row
// ridge-fit table.
#include <fmt/format.h>

#include <memory>

#include "runtime/analysis/command.h"
#include "runtime/analysis/command_parts.h"
#include "runtime/analysis/figures.h"
#include "runtime/analysis/ladder.h"

namespace posc::analysis {
namespace {

std::string num(double v) { return plot::formatNumber(v, 6); }

std::string twoDecimals(double v) {
  std::string s = fmt::format("{:.2f}", v);
  return s == "-0.00" ? "0.00" : s;
}

// train, range and ridge as every fit takes them.
FitSettings fitSettings(const Values& v) {
  if (v.number("range") <= v.number("train"))
    throw CommandError("range", "the evaluation range must extend beyond the training distances");
  FitSettings settings;
  settings.train = static_cast<int>(v.number("train"));
  settings.range = static_cast<int>(v.number("range"));
  settings.ridge = v.number("ridge");
  return settings;
}

std::vector<Param> fitParams() {
  return {Param::num("train", 20).atLeast(1).whole().atMost(1e6),
          Param::num("range", 2000).atLeast(2).whole().atMost(1e7), Param::num("ridge", 1e-5).atLeast(0)};
}

Result fit(const Values& v, const Limits& limits) {
  const double terms = v.number("terms");
  if (terms > limits.max_fit_terms)
    throw CommandError("terms", fmt::format("'terms' must be a whole number in 1..{:g}, not {:g}",
                                            limits.max_fit_terms, terms));
  Ladder ladder;
  ladder.kind = v.text("ladder") == "geometric" ? Ladder::Kind::Geometric : Ladder::Kind::Harmonic;
  ladder.terms = static_cast<int>(terms);
  ladder.base = v.number("base");
  ladder.period = v.number("period");
  FitSettings settings = fitSettings(v);
  std::unique_ptr<KernelEvaluator> target;
  if (const KernelValue* k = v.kernel("target")) {
    target = makeEvaluator(k->program);
    settings.target = target.get();
  }
  FitResult f;
  try {
    f = fitLadder(ladder, settings);
  } catch (const std::exception& x) {
    throw CommandError("", x.what());
  }
  const std::string& as = v.text("as");
  Result r;
  r.text = fmt::format(
      "{}, {} terms; {}\n  peak {}  worst side bump in range {} (at {})  highest beyond training {} (at {}, {:.1f}x "
      "the peak)  rms error on the training distances {}\n{}(d) defined: the fitted kernel\n",
      ladder.describe(), ladder.terms, settings.describe(), twoDecimals(f.peak), twoDecimals(f.side_bump),
      num(f.side_bump_at), twoDecimals(f.beyond), num(f.beyond_at), f.beyond / f.peak, num(f.fit_residual), as);
  r.figures.push_back({"fit_" + as + ".svg", plot::renderSvg(ridgeFigure(f))});
  r.defines = Result::Definition{
      as, f.program(), fmt::format("{}(d) = <{} ladder, {} terms, fitted by :fit>", as, v.text("ladder"), ladder.terms)};
  return r;
}

Result ridge(const Values& v, const Limits&) {
  const FitSettings settings = fitSettings(v);
  Result r;
  std::vector<FitResult> fits;
  try {
    for (const Ladder& l : studyLadders()) {
      fits.push_back(fitLadder(l, settings));
      r.figures.push_back({fmt::format("ridge_{}_{}.svg", l.kind == Ladder::Kind::Geometric ? "geometric" : "harmonic",
                                       l.terms),
                           plot::renderSvg(ridgeFigure(fits.back()))});
    }
  } catch (const std::exception& x) {
    throw CommandError("", x.what());
  }
  plot::Table t = ridgeTable(fits);
  r.text = "Fit: " + settings.describe() + "\n";
  if (v.given("csv")) r.files.push_back({"csv", v.text("csv"), plot::toCsv(t)});
  r.tables.push_back({"ridge_table", "Ridge fits of frequency ladders to an ideal spike",
                      "Fit settings: " + settings.describe() +
                          ". Geometric ladders: omega_i = 10000^(-i/M); harmonic: omega_k = 2 pi k / 4000, k = 1..M.",
                      std::move(t)});
  return r;
}

}  // namespace

std::vector<Command> ladderCommands() {
  std::vector<Command> out;
  {
    Command c{"fit", {}, {Param::symbol("ladder", {"geometric", "harmonic"}, {}, true),
                          Param::num("terms", 16).atLeast(1).whole(), Param::num("base", 10000).atLeast(1.000001),
                          Param::num("period", 4000).atLeast(1e-9)},
              "ridge-fit a frequency ladder to a target (a spike at 0 by default) on -train..train; defines the "
              "fitted kernel",
              fit};
    for (Param& p : fitParams()) c.params.push_back(std::move(p));
    c.params.push_back(Param::kernel("target", false));
    c.params.push_back(Param::symbol("as", {}, "fit"));
    out.push_back(std::move(c));
  }
  {
    Command c{"ridge", {"ridge_table"}, fitParams(),
              "the study's four-row ridge-fit table (geometric 16 and 2000 terms, harmonic 256 and 2000) and a plot "
              "of each fitted kernel",
              ridge};
    c.params.push_back(Param::str("csv").showDefault("\"ridge.csv\""));
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace posc::analysis
