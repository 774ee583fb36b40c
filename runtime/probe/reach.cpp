// The reach probe: exact-match accuracy against length on a grid (greedy
// decoding, the probe's own problems), per seed, the mean and the range
// across seeds; the reach is the longest grid length up to which every length
// keeps the declared accuracy.
#include <torch/torch.h>

#include <algorithm>

#include <fmt/format.h>

#include "runtime/eval/greedy.h"
#include "runtime/probe/probe.h"
#include "runtime/probe/problems.h"

namespace posc::probe {

namespace {

int reachOf(const std::vector<int>& lengths, const std::vector<double>& acc, double threshold) {
  int reach = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (acc[i] < threshold) break;
    reach = lengths[i];
  }
  return reach;
}

}  // namespace

ProbeResult runReach(const plan::ProbePlan& probe, const plan::ExperimentPlan& plan, std::vector<SeedModel>& models) {
  task::Tokenizer tokenizer(plan.task);
  std::vector<int> lengths = probe.lengths;
  std::sort(lengths.begin(), lengths.end());
  std::vector<std::vector<double>> acc(models.size());  // [seed][length]
  std::vector<std::vector<size_t>> right(models.size()), asked(models.size());  // [seed][length]: exact, posed
  for (size_t s = 0; s < models.size(); ++s) {
    models[s].model->eval();
    const eval::DecodeOptions options = eval::decodeOptionsFor(plan);
    for (int digits : lengths) {
      auto problems = probeProblems(plan.task, probe.problem_seed, digits, probe.problems);
      auto generated = eval::greedyDecode(models[s].model, tokenizer, problems, options);
      int correct = 0;
      for (size_t i = 0; i < problems.size(); ++i) correct += eval::isCorrect(tokenizer, problems[i], generated[i]);
      acc[s].push_back(static_cast<double>(correct) / static_cast<double>(problems.size()));
      right[s].push_back(static_cast<size_t>(correct));
      asked[s].push_back(problems.size());
    }
  }
  ProbeResult r;
  r.name = "reach";
  r.title = "Reach: exact-match accuracy against length";
  r.description = plan::describeProbe(probe);

  plot::Table table;
  table.columns = {"digits"};
  for (const SeedModel& m : models) table.columns.push_back(fmt::format("seed {} (%)", m.seed));
  for (const char* c : {"mean (%)", "min (%)", "max (%)"}) table.columns.push_back(c);
  std::vector<double> mean, lo, hi;
  for (size_t i = 0; i < lengths.size(); ++i) {
    std::vector<std::string> row{std::to_string(lengths[i])};
    double sum = 0, mn = 1, mx = 0;
    for (size_t s = 0; s < models.size(); ++s) {
      row.push_back(plot::formatNumber(100 * acc[s][i]));
      sum += acc[s][i];
      mn = std::min(mn, acc[s][i]);
      mx = std::max(mx, acc[s][i]);
    }
    mean.push_back(sum / static_cast<double>(models.size()));
    lo.push_back(mn);
    hi.push_back(mx);
    for (double v : {mean.back(), mn, mx}) row.push_back(plot::formatNumber(100 * v));
    table.addRow(row);
  }
  // The CSV: one row per seed and length, accuracy as a fraction (accuracy.csv's form).
  plot::Table tidy;
  tidy.columns = {"seed", "digits", "correct", "problems", "accuracy"};
  for (size_t s = 0; s < models.size(); ++s)
    for (size_t i = 0; i < lengths.size(); ++i)
      tidy.addRow({std::to_string(models[s].seed), std::to_string(lengths[i]), std::to_string(right[s][i]),
                   std::to_string(asked[s][i]), fmt::format("{}", acc[s][i])});
  r.tables.push_back({"Accuracy by length", "", table, true, tidy});

  plot::Table reach;
  reach.columns = {"model", fmt::format("reach (digits, accuracy >= {}%)", plot::formatNumber(100 * probe.threshold))};
  for (size_t s = 0; s < models.size(); ++s) {
    const int v = reachOf(lengths, acc[s], probe.threshold);
    reach.addRow({fmt::format("seed {}", models[s].seed), std::to_string(v)});
  }
  const int mean_reach = reachOf(lengths, mean, probe.threshold);
  reach.addRow({"mean", std::to_string(mean_reach)});
  // The CSV: one row per seed, the threshold a column (the mean's reach is on the page).
  plot::Table reach_tidy;
  reach_tidy.columns = {"seed", "threshold", "reach"};
  for (size_t s = 0; s < models.size(); ++s)
    reach_tidy.addRow({std::to_string(models[s].seed), fmt::format("{}", probe.threshold), reach.rows[s][1]});
  r.tables.push_back({"Reach", "reach", reach, true, reach_tidy});
  std::string per_seed;
  for (size_t s = 0; s < models.size(); ++s)
    per_seed += fmt::format("{}seed {}: {}", s ? ", " : "", models[s].seed, reach.rows[s][1]);
  r.findings.push_back(fmt::format("Reach at {}% accuracy (training operands up to {} digits): {} digits on the seed "
                                   "mean ({}).",
                                   plot::formatNumber(100 * probe.threshold), plan.task.train_max_digits, mean_reach,
                                   per_seed));

  plot::Chart& c = r.chart;
  c.title = fmt::format("{}: exact match against length", plan.name);
  c.x_label = "operand length (digits)";
  c.y_label = "exact match (%)";
  c.y_min = 0;
  c.y_max = 100;
  std::vector<double> xs(lengths.begin(), lengths.end());
  plot::Series m;
  m.name = "mean over seeds";
  m.x = xs;
  for (size_t i = 0; i < xs.size(); ++i) {
    m.y.push_back(100 * mean[i]);
    if (models.size() > 1) {
      m.lo.push_back(100 * lo[i]);
      m.hi.push_back(100 * hi[i]);
    }
  }
  c.series.push_back(m);
  for (size_t s = 0; s < models.size() && models.size() > 1; ++s) {
    plot::Series ss;
    ss.name = fmt::format("seed {}", models[s].seed);
    ss.x = xs;
    for (double a : acc[s]) ss.y.push_back(100 * a);
    ss.style = plot::Style::Line;
    ss.dashed = true;
    c.series.push_back(ss);
  }
  c.rules.push_back({static_cast<double>(plan.task.train_max_digits), true, "longest training operand"});
  c.rules.push_back({100 * probe.threshold, false, "threshold"});
  return r;
}

}  // namespace posc::probe
