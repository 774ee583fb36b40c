// The sink-share probe: attention mass on separator keys per layer and head,
// by answer place and by problem length, teacher-forced on the probe's
// problems. The strongest sink head is the one with the highest mean share at
// the shortest length; its share by place is plotted for every length.
#include <torch/torch.h>

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "runtime/probe/probe.h"
#include "runtime/probe/problems.h"
#include "runtime/probe/sink_share.h"

namespace posc::probe {

ProbeResult runSinkShare(const plan::ProbePlan& probe, const plan::ExperimentPlan& plan, std::vector<SeedModel>& models) {
  torch::NoGradGuard no_grad;
  task::Tokenizer tokenizer(plan.task);
  std::vector<int> lengths = probe.lengths;
  std::sort(lengths.begin(), lengths.end());
  // [seed][length][(layer, head)][place] -> (sum, count)
  using PerPlace = std::map<int, std::pair<double, int>>;
  std::vector<std::vector<std::map<std::pair<int, int>, PerPlace>>> shares(models.size());
  for (size_t s = 0; s < models.size(); ++s) {
    models[s].model->eval();
    const torch::Device device = models[s].model->parameters().front().device();
    for (int digits : lengths) {
      std::map<std::pair<int, int>, PerPlace> at;
      auto problems = probeProblems(plan.task, probe.problem_seed, digits, probe.problems);
      for (size_t start = 0; start < problems.size(); start += 16) {
        std::vector<task::Problem> chunk(problems.begin() + static_cast<long>(start),
                                         problems.begin() + static_cast<long>(std::min(problems.size(), start + 16)));
        ForcedBatch fb = forcedBatch(tokenizer, chunk, plan.attention.sampled_channels);
        model::AttentionTrace trace;
        models[s].model->forward(fb.tokens.to(device), fb.channels.to(device), torch::Tensor(), &trace);
        auto kinds = fb.channels.select(0, static_cast<int64_t>(plan::Channel::Kind));
        for (size_t l = 0; l < trace.weights.size(); ++l) {
          auto share = separatorShare(trace.weights[l].to(torch::kCPU, torch::kDouble), kinds).contiguous();
          auto a = share.accessor<double, 3>();
          for (size_t b = 0; b < chunk.size(); ++b) {
            const task::Sequence& seq = fb.sequences[b];
            const int answer = static_cast<int>(seq.tokens.size()) - seq.prompt_length - 1;  // digit decisions
            for (int place = 1; place <= answer; ++place) {
              const int q = decisionIndex(seq, place);
              for (int64_t h = 0; h < share.size(1); ++h) {
                auto& cell = at[{static_cast<int>(l), static_cast<int>(h)}][place];
                cell.first += a[static_cast<int64_t>(b)][h][q];
                ++cell.second;
              }
            }
          }
        }
      }
      shares[s].push_back(std::move(at));
    }
  }
  auto mean = [](const PerPlace& p) {
    double sum = 0;
    int n = 0;
    for (const auto& [_, c] : p) { sum += c.first; n += c.second; }
    return n ? sum / n : 0.0;
  };

  ProbeResult r;
  r.name = "sink_share";
  r.title = "Sink share: attention on separator keys";
  r.description = plan::describeProbe(probe);

  // Mean share over answer places, per seed, layer and head, by length: the
  // page shows one column per length, rounded; the CSV one row per seed,
  // length, layer and head with the share in full precision (tidy, for pandas).
  plot::Table table;
  table.columns = {"seed", "layer", "head"};
  for (int d : lengths) table.columns.push_back(fmt::format("{} digits", d));
  plot::Table tidy;
  tidy.columns = {"seed", "digits", "layer", "head", "separator_share"};
  plot::Table by_place;  // CSV only: full precision
  by_place.columns = {"seed", "digits", "layer", "head", "place", "separator_share"};
  for (size_t s = 0; s < models.size(); ++s) {
    for (const auto& [lh, _] : shares[s][0]) {
      std::vector<std::string> row{std::to_string(models[s].seed), std::to_string(lh.first), std::to_string(lh.second)};
      for (size_t i = 0; i < lengths.size(); ++i) row.push_back(plot::formatNumber(mean(shares[s][i][lh]), 3));
      table.addRow(row);
    }
    for (size_t i = 0; i < lengths.size(); ++i)
      for (const auto& [lh, places] : shares[s][i]) {
        tidy.addRow({std::to_string(models[s].seed), std::to_string(lengths[i]), std::to_string(lh.first),
                     std::to_string(lh.second), fmt::format("{}", mean(places))});
        for (const auto& [place, c] : places)
          by_place.addRow({std::to_string(models[s].seed), std::to_string(lengths[i]), std::to_string(lh.first),
                           std::to_string(lh.second), std::to_string(place),
                           fmt::format("{}", c.second ? c.first / c.second : 0.0)});
      }
  }
  r.tables.push_back({"Mean separator share over answer places", "", table, true, tidy});
  r.tables.push_back({"Separator share by answer place", "by_place", by_place, false});

  // The strongest sink head of the first seed: highest mean share at the shortest length.
  std::pair<int, int> strongest{0, 0};
  double best = -1;
  for (const auto& [lh, p] : shares[0][0])
    if (mean(p) > best) { best = mean(p); strongest = lh; }
  std::string trend;
  for (size_t i = 0; i < lengths.size(); ++i)
    trend += fmt::format("{}{} at {} digits", i ? ", " : "", plot::formatNumber(mean(shares[0][i][strongest]), 2), lengths[i]);
  r.findings.push_back(fmt::format("Strongest sink head (seed {}, layer {} head {}): mean separator share {}.",
                                   models[0].seed, strongest.first, strongest.second, trend));
  {
    const PerPlace& longest = shares[0].back()[strongest];
    double lo = 1, hi = 0;
    for (const auto& [_, c] : longest) {
      const double v = c.second ? c.first / c.second : 0;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    r.findings.push_back(fmt::format("At {} digits its share ranges from {} to {} across answer places.", lengths.back(),
                                     plot::formatNumber(hi, 2), plot::formatNumber(lo, 2)));
  }

  plot::Chart& c = r.chart;
  c.title = fmt::format("{}: separator share, seed {} layer {} head {}", plan.name, models[0].seed, strongest.first,
                        strongest.second);
  c.x_label = "answer place (decision for digit p, units = 1)";
  c.y_label = "attention on separator keys";
  c.y_min = 0;
  c.y_max = 1;
  for (size_t i = 0; i < lengths.size(); ++i) {
    plot::Series ser;
    ser.name = fmt::format("{} digits", lengths[i]);
    ser.style = plot::Style::Line;
    for (const auto& [place, cell] : shares[0][i][strongest]) {
      ser.x.push_back(place);
      ser.y.push_back(cell.second ? cell.first / cell.second : 0);
    }
    c.series.push_back(ser);
  }
  c.rules.push_back({static_cast<double>(plan.task.train_max_digits), true, "longest training operand"});
  return r;
}

}  // namespace posc::probe
