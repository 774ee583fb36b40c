// The band probe: a lookup head's score on its target, on its strongest alias
// (the highest-scoring operand digit outside the decided column) and on the
// separator sink, split into the contributions of rotation-pair groups by
// period (fast, mid, slow, row pairs, unrotated pairs, score terms), averaged
// over the probe's problems, within and beyond the training lengths.
#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>

#include <fmt/format.h>

#include "runtime/probe/head_scores.h"
#include "runtime/probe/lookup.h"
#include "runtime/probe/probe.h"

namespace posc::probe {

namespace {

void accumulate(BandSplit& a, const BandSplit& b) {
  a.fast += b.fast;
  a.mid += b.mid;
  a.slow += b.slow;
  a.row += b.row;
  a.unrotated += b.unrotated;
  a.terms += b.terms;
  a.total += b.total;
}

BandSplit scaled(BandSplit a, double f) {
  for (double* v : {&a.fast, &a.mid, &a.slow, &a.row, &a.unrotated, &a.terms, &a.total}) *v *= f;
  return a;
}

// A split's parts in the order of the table's rows and of kBands.
std::array<double, 7> parts(const BandSplit& b) {
  return {b.fast, b.mid, b.slow, b.row, b.unrotated, b.terms, b.total};
}

// The CSV's names of the parts (`band`) and of the three keys (`key`).
constexpr const char* kBands[] = {"fast", "mid", "slow", "row", "unrotated", "terms", "total"};
constexpr const char* kKeys[] = {"target", "alias", "separator"};

}  // namespace

ProbeResult runBands(const plan::ProbePlan& probe, const plan::ExperimentPlan& plan, std::vector<SeedModel>& models) {
  task::Tokenizer tokenizer(plan.task);
  ProbeResult r;
  r.name = "bands";
  r.title = "Fourier bands: score split by rotation-pair period";
  r.description = plan::describeProbe(probe);
  plot::Table table;
  table.columns = {"seed", "contribution"};
  for (int d : probe.lengths)
    for (const char* who : kKeys) table.columns.push_back(fmt::format("{} digits: {}", d, who));
  // The CSV: one row per seed, length, key and band, in full precision (the
  // page's lengths and keys are in its column names).
  plot::Table tidy;
  tidy.columns = {"seed", "layer", "head", "digits", "key", "band", "contribution"};
  const std::vector<std::string> labels = {
      fmt::format("fast pairs (period < {})", plot::formatNumber(probe.fast_period)),
      fmt::format("mid pairs ({}-{})", plot::formatNumber(probe.fast_period), plot::formatNumber(probe.slow_period)),
      fmt::format("slow pairs (period > {})", plot::formatNumber(probe.slow_period)),
      "row pairs", "unrotated pairs", "score terms", "total"};
  const std::vector<std::string> short_labels = {
      fmt::format("fast < {}", plot::formatNumber(probe.fast_period)), "mid",
      fmt::format("slow > {}", plot::formatNumber(probe.slow_period)), "row", "unrotated", "score terms", "total"};

  for (size_t s = 0; s < models.size(); ++s) {
    models[s].model->eval();
    const auto& params = models[s].model->scoreParams();
    plan::HeadChoice hc = probe.head;
    std::vector<std::array<BandSplit, 3>> per_length;
    std::vector<double> alias_offset;
    for (size_t li = 0; li < probe.lengths.size(); ++li) {
      auto problems = probeProblems(plan.task, probe.problem_seed, probe.lengths[li], probe.problems);
      Traced t = traceProblems(models[s].model, tokenizer, problems, plan.attention.sampled_channels);
      if (li == 0) hc = lookupHead(t, probe.place, probe.operand, probe.head);
      std::array<BandSplit, 3> sum{};
      double offset_sum = 0;
      int n = 0;
      for (size_t b = 0; b < problems.size(); ++b) {
        const task::Sequence& seq = t.batch.sequences[b];
        const int q = decisionIndex(seq, probe.place), k = digitIndex(seq, probe.operand, probe.place);
        if (q < 0 || k < 0) continue;
        auto scores = t.trace.scores[hc.layer][static_cast<int64_t>(b)][hc.head][q];  // post-term, (L)
        const auto& rows = seq.channels[static_cast<size_t>(plan::Channel::Row)];
        const auto& cols = seq.channels[static_cast<size_t>(plan::Channel::Column)];
        const auto& kinds = seq.channels[static_cast<size_t>(plan::Channel::Kind)];
        int alias = -1, sep = -1;
        for (int j = 0; j <= q; ++j) {
          const double v = scores[j].item<double>();
          if (kinds[j] == 0 && rows[j] < plan.task.operands && cols[j] != probe.place &&
              (alias < 0 || v > scores[alias].item<double>()))
            alias = j;
          if (kinds[j] == 1 && (sep < 0 || v > scores[sep].item<double>())) sep = j;
        }
        if (alias < 0 || sep < 0) continue;
        int idx = 0;
        for (int key : {k, alias, sep})
          accumulate(sum[static_cast<size_t>(idx++)],
                     splitBands(plan, params, queryKey(t, hc.layer, static_cast<int>(b), q, key), hc.head,
                                probe.fast_period, probe.slow_period));
        offset_sum += static_cast<double>(cols[alias] - cols[k]);
        ++n;
      }
      for (auto& x : sum) x = scaled(x, n ? 1.0 / n : 0.0);
      per_length.push_back(sum);
      alias_offset.push_back(n ? offset_sum / n : 0);
    }
    for (size_t row = 0; row < labels.size(); ++row) {
      std::vector<std::string> cells{std::to_string(models[s].seed), labels[row]};
      for (const auto& sums : per_length)
        for (const BandSplit& bs : sums) cells.push_back(plot::formatNumber(parts(bs)[row], 3));
      table.addRow(cells);
    }
    for (size_t li = 0; li < probe.lengths.size(); ++li)
      for (size_t key = 0; key < std::size(kKeys); ++key)
        for (size_t band = 0; band < labels.size(); ++band)
          tidy.addRow({std::to_string(models[s].seed), std::to_string(hc.layer), std::to_string(hc.head),
                       std::to_string(probe.lengths[li]), kKeys[key], kBands[band],
                       fmt::format("{}", parts(per_length[li][key])[band])});
    std::string per;
    for (size_t li = 0; li < probe.lengths.size(); ++li)
      per += fmt::format("{}at {} digits target {}, strongest alias {} (mean column offset {}), separator {}",
                         li ? "; " : "", probe.lengths[li], plot::formatNumber(per_length[li][0].total, 3),
                         plot::formatNumber(per_length[li][1].total, 3), plot::formatNumber(alias_offset[li], 3),
                         plot::formatNumber(per_length[li][2].total, 3));
    r.findings.push_back(fmt::format("Seed {} layer {} head {}: {}.", models[s].seed, hc.layer, hc.head, per));
    if (s == 0) {
      plot::Chart& c = r.chart;
      c.title = fmt::format("{}: band contributions to the alias score, seed {} layer {} head {}", plan.name,
                            models[s].seed, hc.layer, hc.head);
      c.x_label = "operand length (digits)";
      c.y_label = "contribution to the score";
      for (size_t row = 0; row < labels.size(); ++row) {
        plot::Series ser;
        ser.name = short_labels[row];
        for (size_t li = 0; li < probe.lengths.size(); ++li) {
          ser.x.push_back(probe.lengths[li]);
          ser.y.push_back(parts(per_length[li][1])[row]);
        }
        ser.dashed = row + 1 == labels.size();
        c.series.push_back(ser);
      }
      c.rules.push_back({0.0, false, ""});
    }
  }
  r.tables.push_back({"Band contributions (mean over problems)", "", table, true, tidy});
  return r;
}

}  // namespace posc::probe
