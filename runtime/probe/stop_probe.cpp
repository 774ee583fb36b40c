// The stop probe: per seed and length, the stop decisions (right, P(<eos>))
// and every head's attention at them by key group (stop_attention.h).
//
// The stop head of a seed is the head with the largest separator share at
// the stop decision at the shortest length: the sink the stop uses where it
// is trained. Its share across lengths is the chart, beside the fraction of
// stop decisions that are right, and the findings split the change of its
// sink logit into the separators' score and the rest's.
#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "runtime/probe/probe.h"
#include "runtime/probe/problems.h"
#include "runtime/probe/stop_attention.h"

namespace posc::probe {

namespace {

std::string fixed(double x, int decimals) { return fmt::format("{:.{}f}", x, decimals); }

// A number for the CSVs: the shortest form that reads back to the same double.
std::string full(double x) { return fmt::format("{}", x); }

// A head's means at one length; zeros where the length had no stop decision.
const StopHead& headAt(const StopMap& map, const std::pair<int, int>& head) {
  static const StopHead none;
  const auto it = map.heads.find(head);
  return it == map.heads.end() ? none : it->second;
}

std::pair<int, int> stopHead(const StopMap& shortest) {
  std::pair<int, int> best{0, 0};
  double share = -1;
  for (const auto& [lh, h] : shortest.heads)
    if (h.separators > share) {
      share = h.separators;
      best = lh;
    }
  return best;
}

}  // namespace

ProbeResult runStop(const plan::ProbePlan& probe, const plan::ExperimentPlan& plan, std::vector<SeedModel>& models) {
  task::Tokenizer tokenizer(plan.task);
  std::vector<int> lengths = probe.lengths;
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());

  ProbeResult r;
  r.name = "stop";
  r.title = "Attention at the stop decision";
  r.description = plan::describeProbe(probe);
  plot::Table summary;
  summary.columns = {"seed",        "digits",           "stop decisions", "right",
                     "P(eos)",    "stop head (layer.head)", "separator share", "separator logsumexp",
                     "rest logsumexp", "keys"};
  plot::Table by_head;
  by_head.columns = {"seed",    "digits", "layer",  "head",  "separators",          "operand near",
                     "operand far", "answer", "other", "separator logsumexp", "rest logsumexp"};
  // The CSVs: snake_case names, full precision, and the stop head as two
  // integer columns (a "2.5" would read as a number).
  plot::Table summary_csv;
  summary_csv.columns = {"seed",      "digits",          "stop_decisions",      "right",          "p_eos", "stop_layer",
                         "stop_head", "separator_share", "separator_logsumexp", "rest_logsumexp", "keys"};
  plot::Table by_head_csv;
  by_head_csv.columns = {"seed",        "digits", "layer", "head",  "separators",          "operand_near",
                         "operand_far", "answer", "other", "separator_logsumexp", "rest_logsumexp"};
  plot::Table far;  // CSV only
  far.columns = {"seed", "digits", "stop_layer", "stop_head", "column_offset", "share"};

  plot::Chart& c = r.chart;
  c.title = fmt::format("{}: the stop decision against length", plan.name);
  c.x_label = "operand length (digits)";
  c.y_label = "fraction";
  c.y_min = 0;
  c.y_max = 1;

  for (size_t s = 0; s < models.size(); ++s) {
    model::Gpt& m = models[s].model;
    m->eval();
    const Forward forward = modelForward(m);
    std::vector<StopMap> maps;
    for (int digits : lengths)
      maps.push_back(stopAttention(forward, tokenizer, probeProblems(plan.task, probe.problem_seed, digits, probe.problems),
                                   plan.attention.null_slot, 25, plan.attention.sampled_channels));
    const std::pair<int, int> head = stopHead(maps.front());
    const std::string seed = std::to_string(models[s].seed);
    plot::Series right, share;
    right.name = fmt::format("seed {}: stop decisions right", seed);
    share.name = fmt::format("seed {}: separator share of head {}.{}", seed, head.first, head.second);
    share.dashed = true;
    for (size_t i = 0; i < lengths.size(); ++i) {
      const StopMap& map = maps[i];
      const StopHead& h = headAt(map, head);
      summary.addRow({seed, std::to_string(lengths[i]), std::to_string(map.decisions), std::to_string(map.right),
                      plot::formatNumber(map.eos_probability, 3), fmt::format("{}.{}", head.first, head.second),
                      plot::formatNumber(h.separators, 3), fixed(h.separator_lse, 2), fixed(h.rest_lse, 2),
                      fixed(map.keys, 1)});
      summary_csv.addRow({seed, std::to_string(lengths[i]), std::to_string(map.decisions), std::to_string(map.right),
                          full(map.eos_probability), std::to_string(head.first), std::to_string(head.second),
                          full(h.separators), full(h.separator_lse), full(h.rest_lse), full(map.keys)});
      for (const auto& [lh, x] : map.heads) {
        by_head.addRow({seed, std::to_string(lengths[i]), std::to_string(lh.first), std::to_string(lh.second),
                        plot::formatNumber(x.separators, 3), plot::formatNumber(x.operand_near, 3),
                        plot::formatNumber(x.operand_far, 3), plot::formatNumber(x.answer, 3),
                        plot::formatNumber(x.other, 3), fixed(x.separator_lse, 2), fixed(x.rest_lse, 2)});
        by_head_csv.addRow({seed, std::to_string(lengths[i]), std::to_string(lh.first), std::to_string(lh.second),
                            full(x.separators), full(x.operand_near), full(x.operand_far), full(x.answer),
                            full(x.other), full(x.separator_lse), full(x.rest_lse)});
      }
      for (const auto& [offset, x] : h.far_by_offset)
        far.addRow({seed, std::to_string(lengths[i]), std::to_string(head.first), std::to_string(head.second),
                    std::to_string(offset), full(x)});
      right.x.push_back(lengths[i]);
      right.y.push_back(map.decisions ? static_cast<double>(map.right) / map.decisions : 0.0);
      share.x.push_back(lengths[i]);
      share.y.push_back(h.separators);
    }
    c.series.push_back(right);
    c.series.push_back(share);

    // Findings: the stop decisions at the shortest and longest length, and
    // what moved the stop head's sink logit between them.
    const StopMap& a = maps.front();
    const StopMap& z = maps.back();
    std::string finding = fmt::format("Seed {}: {} of {} stop decisions right at {} digits (mean P(eos) {})", seed,
                                      a.right, a.decisions, lengths.front(), plot::formatNumber(a.eos_probability, 2));
    if (lengths.size() > 1)
      finding += fmt::format(", {} of {} at {} digits ({})", z.right, z.decisions, lengths.back(),
                             plot::formatNumber(z.eos_probability, 2));
    r.findings.push_back(finding + ".");
    const StopHead& ha = headAt(a, head);
    const StopHead& hz = headAt(z, head);
    std::string sink = fmt::format("Seed {}: stop head {}.{} (the largest separator share at {} digits) puts {} on the "
                                   "separators at {} digits",
                                   seed, head.first, head.second, lengths.front(), plot::formatNumber(ha.separators, 2),
                                   lengths.front());
    if (lengths.size() > 1 && a.keys > 0) {
      sink += fmt::format(" and {} at {}; its separator log-sum-exp moves by {:+.2f} and the rest's by {:+.2f} "
                          "(log of the key-count ratio: {:+.2f})",
                          plot::formatNumber(hz.separators, 2), lengths.back(), hz.separator_lse - ha.separator_lse,
                          hz.rest_lse - ha.rest_lse, std::log(z.keys / a.keys));
      // Where the head's attention went instead.
      const std::pair<const char*, double> moved[] = {{"the operand digits near the query's column",
                                                        hz.operand_near - ha.operand_near},
                                                       {"the far operand digits", hz.operand_far - ha.operand_far},
                                                       {"the answer digits", hz.answer - ha.answer},
                                                       {"the null slot", hz.other - ha.other}};
      const auto* top = std::max_element(std::begin(moved), std::end(moved),
                                         [](const auto& x, const auto& y) { return x.second < y.second; });
      if (hz.separators < ha.separators && top->second > 0)
        sink += fmt::format("; most of the share it lost went to {} ({:+.2f})", top->first, top->second);
      if (!hz.far_by_offset.empty()) {
        const auto peak = std::max_element(hz.far_by_offset.begin(), hz.far_by_offset.end(),
                                           [](const auto& x, const auto& y) { return x.second < y.second; });
        if (peak->second >= 0.05)
          sink += fmt::format("; at {} digits its largest share on one far column is {} at column offset {}",
                              lengths.back(), plot::formatNumber(peak->second, 2), peak->first);
      }
    }
    r.findings.push_back(sink + ".");
  }
  c.rules.push_back({static_cast<double>(plan.task.train_max_digits), true, "longest training operand"});

  r.tables.push_back({"Stop decisions and the stop head", "", summary, true, summary_csv});
  r.tables.push_back(
      {"Attention at the stop decision, every head", "by_head", by_head, by_head.rows.size() <= 48, by_head_csv});
  r.tables.push_back({"The stop head's attention on far operand digits by column offset", "far", far, false});
  return r;
}

}  // namespace posc::probe
