// The kernel probe: a real query (the decision for one answer place) and its
// real target key (an operand digit in that column) are held fixed and only
// the key's column is swept; every positional component applies. Reported:
// score against column offset, and the highest score in each window as a
// fraction of the target's score, near and far.
#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "runtime/probe/head_scores.h"
#include "runtime/probe/lookup.h"
#include "runtime/probe/probe.h"

namespace posc::probe {

namespace {

// A number for the CSVs: the shortest form that reads back to the same double.
std::string full(double x) { return fmt::format("{}", x); }

}  // namespace

ProbeResult runKernel(const plan::ProbePlan& probe, const plan::ExperimentPlan& plan, std::vector<SeedModel>& models) {
  task::Tokenizer tokenizer(plan.task);
  auto problems = probeProblems(plan.task, probe.problem_seed, probe.length, 1);
  std::vector<int64_t> offsets;
  for (int64_t o = probe.sweep_begin; o < probe.sweep_end; ++o) offsets.push_back(o);

  ProbeResult r;
  r.name = "kernel";
  r.title = "Kernel: score against the key's column";
  r.description = plan::describeProbe(probe);
  plot::Table summary;
  summary.columns = {"seed", "layer", "head", "target score", "best near window (fraction)", "best far window (fraction)",
                     "at offset", "gap to target"};
  // The summary's CSV: the same row per seed in full precision, snake_case
  // names, and empty cells (not "none") where no window is far enough.
  plot::Table summary_csv;
  summary_csv.columns = {"seed", "layer", "head", "target_score", "best_near_fraction", "best_far_fraction",
                         "best_far_offset", "gap_to_target"};
  plot::Table curve;  // CSV only, as are the windows: full precision
  curve.columns = {"seed", "offset", "score", "fraction_of_target"};
  plot::Table windows;
  windows.columns = {"seed", "window_start", "window_end", "max_score", "fraction_of_target"};

  for (size_t s = 0; s < models.size(); ++s) {
    models[s].model->eval();
    Traced t = traceProblems(models[s].model, tokenizer, problems, plan.attention.sampled_channels);
    const task::Sequence& seq = t.batch.sequences[0];
    const int q = decisionIndex(seq, probe.place), k = digitIndex(seq, probe.operand, probe.place);
    if (q < 0 || k < 0) throw std::runtime_error(fmt::format("kernel probe: no answer place {} at {} digits", probe.place, probe.length));
    plan::HeadChoice hc = lookupHead(t, probe.place, probe.operand, probe.head);
    QueryKey qk = queryKey(t, hc.layer, 0, q, k);
    const int64_t target_column = qk.k_channels[static_cast<size_t>(plan::Channel::Column)];
    std::vector<int64_t> columns;
    for (int64_t o : offsets) columns.push_back(target_column + o);
    const std::vector<double> scores = sweepKeyColumn(plan, models[s].model->scoreParams(), qk, hc.head, columns);
    const double target = scores[static_cast<size_t>(-probe.sweep_begin)];
    for (size_t i = 0; i < offsets.size(); ++i)
      curve.addRow({std::to_string(models[s].seed), std::to_string(offsets[i]), full(scores[i]),
                    full(scores[i] / target)});
    double near = -INFINITY, far = -INFINITY;
    int64_t far_at = 0;
    double far_score = 0;
    auto maxima = windowMaxima(offsets, scores, probe.window);
    plot::Series tops;
    tops.name = fmt::format("window max, seed {}", models[s].seed);
    tops.style = plot::Style::Points;
    for (const auto& [w0, best] : maxima) {
      windows.addRow({std::to_string(models[s].seed), std::to_string(w0), std::to_string(w0 + probe.window - 1),
                      full(best), full(best / target)});
      const bool is_far = std::min(std::llabs(w0), std::llabs(w0 + probe.window - 1)) >= probe.far;
      if (is_far && best / target > far) {
        far = best / target;
        far_score = best;
        for (size_t i = 0; i < offsets.size(); ++i)
          if (offsets[i] >= w0 && offsets[i] < w0 + probe.window && scores[i] == best) far_at = offsets[i];
      }
      if (!is_far) near = std::max(near, best / target);
      tops.x.push_back(static_cast<double>(w0) + probe.window / 2.0);
      tops.y.push_back(best / target);
    }
    summary.addRow({std::to_string(models[s].seed), std::to_string(hc.layer), std::to_string(hc.head),
                    plot::formatNumber(target, 4), plot::formatNumber(near, 3),
                    std::isfinite(far) ? plot::formatNumber(far, 3) : "none", std::to_string(far_at),
                    std::isfinite(far) ? plot::formatNumber(target - far_score, 3) : "none"});
    summary_csv.addRow({std::to_string(models[s].seed), std::to_string(hc.layer), std::to_string(hc.head), full(target),
                        std::isfinite(near) ? full(near) : "", std::isfinite(far) ? full(far) : "",
                        std::isfinite(far) ? std::to_string(far_at) : "",
                        std::isfinite(far) ? full(target - far_score) : ""});
    r.findings.push_back(fmt::format(
        "Seed {} (layer {} head {}): target score {}; the highest far window (|offset| >= {}) reaches {} of it at offset "
        "{} (gap {} points); the highest near window {}.",
        models[s].seed, hc.layer, hc.head, plot::formatNumber(target, 4), probe.far,
        std::isfinite(far) ? plot::formatNumber(far, 3) : "none", far_at,
        std::isfinite(far) ? plot::formatNumber(target - far_score, 3) : "none", plot::formatNumber(near, 3)));
    if (s == 0) {
      plot::Series line;
      line.name = fmt::format("score, seed {}", models[s].seed);
      line.style = plot::Style::Line;
      for (size_t i = 0; i < offsets.size(); ++i) {
        line.x.push_back(static_cast<double>(offsets[i]));
        line.y.push_back(scores[i] / target);
      }
      r.chart.series.push_back(line);
    }
    r.chart.series.push_back(tops);
  }
  r.tables.push_back({"Kernel summary", "", summary, true, summary_csv});
  r.tables.push_back({"Windowed maxima", "windows", windows, false});
  r.tables.push_back({"Score against offset", "curve", curve, false});
  plot::Chart& c = r.chart;
  c.title = fmt::format("{}: kernel of the lookup head (answer place {}, {} digits)", plan.name, probe.place, probe.length);
  c.x_label = "key column offset from the target";
  c.y_label = fmt::format("score / target score (window max per {} columns)", probe.window);
  c.rules.push_back({1.0, false, "target"});
  c.rules.push_back({0.0, false, ""});
  return r;
}

}  // namespace posc::probe
