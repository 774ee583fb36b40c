// The evidence-mass probe: how much of a trained head's attention on
// statements lands on the evidence when N distractor statements compete,
// and the margin m of the law p = 1 / (1 + N e^(-m)) that fits it
// (longctx::evidenceShare, longctx::fitMargin). The same law holds the
// analytic retrieval head of `posc analyze`'s retrieval(...), so a trained
// model's fitted margin per length reads directly against the control: a
// margin that holds as the context grows is a head that still finds its
// key; a margin that falls is attention being diluted.
//
// Documents: retrieval with the evidence present, problem i at depth
// (i + 0.5) / problems and template i mod 3, seeded by (seed, length, N, i).
// The attention read is each layer and head's at the last prompt token (the
// asked key's second half), from one full forward pass of the main prompts.
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "runtime/longctx/protocol.h"
#include "runtime/longctx/retrieval_head.h"
#include "runtime/longctx/sequence.h"
#include "runtime/model/batch.h"
#include "runtime/probe/probe.h"

namespace posc::probe {
namespace {

using HeadKey = std::pair<int, int>;  // (layer, head)

std::vector<longctx::Document> probeDocuments(const plan::ProbePlan& probe, int length, int distractors) {
  std::vector<longctx::Document> out;
  for (int i = 0; i < probe.problems; ++i) {
    longctx::DocumentSpec spec;
    spec.task = longctx::TaskType::Retrieval;
    spec.length = length;
    spec.distractors = distractors;
    spec.depth = (i + 0.5) / probe.problems;
    spec.template_index = i % longctx::kTemplates;
    spec.seed = longctx::mixSeed(
        longctx::mixSeed(longctx::mixSeed(probe.problem_seed, static_cast<uint64_t>(length)), static_cast<uint64_t>(distractors)),
        static_cast<uint64_t>(i));
    out.push_back(longctx::generate(spec));
  }
  return out;
}

// Per (layer, head): each document's evidence share.
std::map<HeadKey, std::vector<double>> shares(model::Gpt& model, const std::vector<longctx::Document>& docs) {
  const torch::Device device = model->parameters().front().device();
  std::map<HeadKey, std::vector<double>> out;
  constexpr size_t kChunk = 8;
  for (size_t start = 0; start < docs.size(); start += kChunk) {
    const size_t end = std::min(docs.size(), start + kChunk);
    std::vector<task::Sequence> prompts;
    for (size_t d = start; d < end; ++d) prompts.push_back(longctx::encode(docs[d], 0, false));
    const task::Batch batch = task::makeBatch(prompts, longctx::token::kPad);
    const int64_t B = batch.batch, L = batch.length;
    const model::BatchTensors t = model::toTensors(batch, device);
    model::AttentionTrace trace;
    model->forward(t.tokens, t.channels, torch::Tensor(), &trace);
    for (size_t l = 0; l < trace.weights.size(); ++l) {
      // (B, H, L): the last query's row.
      torch::Tensor last = trace.weights[l].select(2, L - 1).to(torch::kCPU, torch::kDouble).contiguous();
      auto a = last.accessor<double, 3>();
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < last.size(1); ++h) {
          std::vector<double> row(static_cast<size_t>(L));
          for (int64_t k = 0; k < L; ++k) row[static_cast<size_t>(k)] = a[b][h][k];
          out[{static_cast<int>(l), static_cast<int>(h)}].push_back(longctx::evidenceShare(docs[start + static_cast<size_t>(b)], row));
        }
    }
  }
  return out;
}

double mean(const std::vector<double>& xs) {
  double sum = 0;
  int n = 0;
  for (double x : xs)
    if (!std::isnan(x)) { sum += x; ++n; }
  return n ? sum / n : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

ProbeResult runEvidenceMass(const plan::ProbePlan& probe, const plan::ExperimentPlan& plan, std::vector<SeedModel>& models) {
  torch::NoGradGuard no_grad;
  std::vector<int> lengths = probe.lengths;
  std::sort(lengths.begin(), lengths.end());
  ProbeResult r;
  r.name = "evidence_mass";
  r.title = "Evidence mass: a head's attention on the evidence against N distractors";
  r.description = plan::describeProbe(probe);

  // The lengths where the largest N fits (the others are left out, and said).
  const int most = *std::max_element(probe.distractors.begin(), probe.distractors.end());
  std::vector<int> kept;
  for (int L : lengths) {
    longctx::DocumentSpec spec;
    spec.length = L;
    spec.distractors = most;
    int need = 0;
    for (int t = 0; t < longctx::kTemplates; ++t) {
      spec.template_index = t;
      need = std::max(need, longctx::minimumLength(spec));
    }
    if (need <= L) kept.push_back(L);
    else r.findings.push_back(fmt::format("Length {} left out: {} distractors need at least {} tokens.", L, most, need));
  }
  if (kept.empty()) throw std::runtime_error("evidence_mass: no length holds the largest distractor count");

  // [seed][(length, N)][(layer, head)] -> shares per document
  std::vector<std::map<std::pair<int, int>, std::map<HeadKey, std::vector<double>>>> measured(models.size());
  for (size_t s = 0; s < models.size(); ++s) {
    const bool was_training = models[s].model->is_training();
    models[s].model->eval();
    for (int L : kept)
      for (int n : probe.distractors) measured[s][{L, n}] = shares(models[s].model, probeDocuments(probe, L, n));
    models[s].model->train(was_training);
  }

  // Every head's mean share (CSV only: full precision).
  plot::Table all;
  all.columns = {"seed", "layer", "head", "length", "distractors", "documents", "evidence_share"};
  for (size_t s = 0; s < models.size(); ++s)
    for (const auto& [ln, heads] : measured[s])
      for (const auto& [lh, values] : heads)
        all.addRow({std::to_string(models[s].seed), std::to_string(lh.first), std::to_string(lh.second),
                    std::to_string(ln.first), std::to_string(ln.second), std::to_string(values.size()),
                    fmt::format("{}", mean(values))});

  // The head: the plan's, or per seed the one with the largest mean share at the shortest length.
  plot::Table fits;
  fits.columns = {"seed", "layer", "head", "length", "margin", "rms_residual", "points"};
  for (int n : probe.distractors) fits.columns.push_back(fmt::format("share N={}", n));
  // The CSV: one row per seed, length and distractor count (the page's
  // counts are in its column names), the length's fit repeated on each, in
  // full precision; empty fit cells where no document gave a point.
  plot::Table tidy;
  tidy.columns = {"seed",           "layer",  "head",         "length", "distractors",
                  "evidence_share", "margin", "rms_residual", "points"};
  plot::Chart& c = r.chart;
  c.title = fmt::format("{}: evidence share against distractors", plan.name);
  c.x_label = "distractors N";
  c.y_label = "attention share on the evidence statement";
  c.log_x = true;
  c.y_min = 0;
  c.y_max = 1;
  for (size_t s = 0; s < models.size(); ++s) {
    HeadKey head{probe.head.layer, probe.head.head};
    if (head.first < 0 || head.second < 0) {
      double best = -1;
      for (const auto& [lh, _] : measured[s][{kept.front(), probe.distractors.front()}]) {
        if (probe.head.layer >= 0 && lh.first != probe.head.layer) continue;
        if (probe.head.head >= 0 && lh.second != probe.head.head) continue;
        std::vector<double> pooled;
        for (int n : probe.distractors) {
          const auto& v = measured[s][{kept.front(), n}][lh];
          pooled.insert(pooled.end(), v.begin(), v.end());
        }
        if (mean(pooled) > best) { best = mean(pooled); head = lh; }
      }
    }
    std::string trend;
    for (int L : kept) {
      std::vector<std::pair<int, double>> samples;
      std::vector<std::string> row{std::to_string(models[s].seed), std::to_string(head.first), std::to_string(head.second),
                                   std::to_string(L)};
      std::vector<double> means;
      for (int n : probe.distractors) {
        for (double p : measured[s][{L, n}][head])
          if (!std::isnan(p)) samples.push_back({n, p});
        means.push_back(mean(measured[s][{L, n}][head]));
      }
      const longctx::MarginFit fit = longctx::fitMargin(samples);
      row.push_back(fit.points ? plot::formatNumber(fit.margin, 4) : "");
      row.push_back(fit.points ? plot::formatNumber(fit.rms_residual, 3) : "");
      row.push_back(std::to_string(fit.points));
      for (double m : means) row.push_back(plot::formatNumber(m, 4));
      fits.addRow(row);
      for (size_t i = 0; i < probe.distractors.size(); ++i)
        tidy.addRow({std::to_string(models[s].seed), std::to_string(head.first), std::to_string(head.second),
                     std::to_string(L), std::to_string(probe.distractors[i]), fmt::format("{}", means[i]),
                     fit.points ? fmt::format("{}", fit.margin) : "",
                     fit.points ? fmt::format("{}", fit.rms_residual) : "", std::to_string(fit.points)});
      trend += fmt::format("{}{} at {} tokens", trend.empty() ? "" : ", ",
                           fit.points ? plot::formatNumber(fit.margin, 3) : "none", L);
      if (s == 0) {
        plot::Series measured_series;
        measured_series.name = fmt::format("{} tokens", L);
        measured_series.style = plot::Style::LineAndPoints;
        plot::Series law;
        law.name = fmt::format("law, m = {}", plot::formatNumber(fit.margin, 3));
        law.style = plot::Style::Line;
        law.dashed = true;
        for (size_t i = 0; i < probe.distractors.size(); ++i) {
          const double n = probe.distractors[i];
          measured_series.x.push_back(n);
          measured_series.y.push_back(means[i]);
          law.x.push_back(n);
          law.y.push_back(1.0 / (1.0 + n * std::exp(-fit.margin)));
        }
        c.series.push_back(measured_series);
        if (fit.points) c.series.push_back(law);
      }
    }
    r.findings.insert(r.findings.begin(),
                      fmt::format("Seed {}, layer {} head {}: fitted margin {}.", models[s].seed, head.first,
                                  head.second, trend));
  }
  r.findings.push_back(fmt::format("Training prompts are {}..{} tokens; an analytic head with margin m puts "
                                   "1 / (1 + N e^-m) on the evidence at every length.",
                                   plan.task.documents.train_min_length, plan.task.documents.train_max_length));
  r.tables.push_back({"Fitted margin per length (the probed head)", "", fits, true, tidy});
  r.tables.push_back({"Mean evidence share of every head", "all_heads", all, false});
  return r;
}

}  // namespace posc::probe
