// The teacher-forced probe: per seed, the decision map of teacher_forced.h on
// the probe's problems, plus a free-running greedy decode of the same
// problems for wrong answers, wrong-length answers and where a wrong
// answer's first error sits.
#include <torch/torch.h>

#include <fmt/format.h>

#include "runtime/eval/greedy.h"
#include "runtime/probe/probe.h"
#include "runtime/probe/problems.h"
#include "runtime/probe/teacher_forced.h"

namespace posc::probe {

namespace {

std::string histogram(const std::map<int, int>& h) {
  std::string out;
  for (const auto& [k, v] : h) out += fmt::format("{}{}: {}", out.empty() ? "" : ", ", k, v);
  return out.empty() ? "none" : out;
}

}  // namespace

ProbeResult runTeacherForced(const plan::ProbePlan& probe, const plan::ExperimentPlan& plan,
                             std::vector<SeedModel>& models) {
  task::Tokenizer tokenizer(plan.task);
  auto problems = probeProblems(plan.task, probe.problem_seed, probe.length, probe.problems);
  ProbeResult r;
  r.name = "teacher_forced";
  r.title = fmt::format("Teacher-forced decisions at {} digits", probe.length);
  r.description = plan::describeProbe(probe);
  plot::Table places;  // places with a wrong decision, and the rest together
  places.columns = {"seed", "answer place", "decisions", "wrong", "separator share"};
  // The CSVs: snake_case names, full precision, one observation per row. The
  // places CSV leaves out the page's "all other places" row (a sum, with text
  // in the place column): every place is in the by_place CSV.
  plot::Table places_csv;
  places_csv.columns = {"seed", "place", "decisions", "wrong", "separator_share"};
  plot::Table all;  // CSV only
  all.columns = places_csv.columns;
  plot::Table chains;
  chains.columns = {"seed", "carry chain", "decisions", "wrong"};
  plot::Table chains_csv;
  chains_csv.columns = {"seed", "carry_chain", "decisions", "wrong"};
  plot::Table summary;
  summary.columns = {"seed", "lookup heads (layer.head)", "decisions", "wrong", "wrong stops", "premature stops",
                     "wrong answers (greedy)", "wrong-length answers", "first error of a wrong answer (place: count)"};
  // The summary's CSV names the lookup heads as "L<layer>H<head>" words (a
  // "2.5" would read as a number); their attention and the first errors,
  // lists on the page, are CSVs of their own.
  plot::Table summary_csv;
  summary_csv.columns = {"seed", "lookup_heads", "decisions", "wrong", "wrong_stops", "premature_stops",
                         "wrong_answers", "wrong_length_answers"};
  plot::Table heads_csv;
  heads_csv.columns = {"seed", "rank", "layer", "head", "target_share"};
  plot::Table first_error_csv;
  first_error_csv.columns = {"seed", "place", "wrong_answers"};

  for (size_t s = 0; s < models.size(); ++s) {
    model::Gpt& m = models[s].model;
    m->eval();
    const Forward forward = modelForward(m);
    TeacherForcedMap map =
        teacherForcedMap(forward, tokenizer, problems, probe.lookup_heads, 25, plan.attention.sampled_channels);
    const std::string seed = std::to_string(models[s].seed);
    int other_decisions = 0, other_wrong = 0;
    double other_share = 0;
    for (const auto& [place, ps] : map.by_place) {
      const std::vector<std::string> row{seed, std::to_string(place), std::to_string(ps.decisions),
                                         std::to_string(ps.wrong), fmt::format("{}", ps.separator_share)};
      all.addRow(row);
      if (ps.wrong > 0) {
        places.addRow({seed, std::to_string(place), std::to_string(ps.decisions), std::to_string(ps.wrong),
                       plot::formatNumber(ps.separator_share, 3)});
        places_csv.addRow(row);
      } else {
        other_decisions += ps.decisions;
        other_share += ps.separator_share * ps.decisions;
      }
    }
    places.addRow({seed, "all other places", std::to_string(other_decisions), std::to_string(other_wrong),
                   plot::formatNumber(other_decisions ? other_share / other_decisions : 0.0, 3)});
    for (const auto& [len, c] : map.by_chain) {
      chains.addRow({seed, std::to_string(len), std::to_string(c.first), std::to_string(c.second)});
      chains_csv.addRow(chains.rows.back());
    }

    const eval::DecodeOptions options = eval::decodeOptionsFor(plan);
    auto generated = eval::greedyDecode(m, tokenizer, problems, options);
    int wrong_answers = 0, wrong_length = 0;
    std::map<int, int> first_error;
    for (size_t i = 0; i < problems.size(); ++i) {
      if (eval::isCorrect(tokenizer, problems[i], generated[i])) continue;
      ++wrong_answers;
      const task::Sequence seq = tokenizer.encode(problems[i]);
      const std::vector<int64_t> truth(seq.tokens.begin() + seq.prompt_length, seq.tokens.end());
      if (generated[i].size() != truth.size() || generated[i].empty() || generated[i].back() != tokenizer.vocabulary().eos())
        ++wrong_length;
      for (size_t j = 0; j < std::max(truth.size(), generated[i].size()); ++j)
        if (j >= truth.size() || j >= generated[i].size() || truth[j] != generated[i][j]) {
          ++first_error[static_cast<int>(j) + 1];
          break;
        }
    }
    std::string heads, head_words;
    for (size_t i = 0; i < map.lookup_heads.size(); ++i) {
      const auto [layer, head] = map.lookup_heads[i];
      heads += fmt::format("{}{}.{} ({})", i ? ", " : "", layer, head,
                           plot::formatNumber(map.lookup_target_share[i], 2));
      head_words += fmt::format("{}L{}H{}", i ? " " : "", layer, head);
      heads_csv.addRow({seed, std::to_string(i + 1), std::to_string(layer), std::to_string(head),
                        fmt::format("{}", map.lookup_target_share[i])});
    }
    summary.addRow({seed, heads, std::to_string(map.decisions), std::to_string(map.wrong), std::to_string(map.wrong_stops),
                    std::to_string(map.premature_stops), std::to_string(wrong_answers), std::to_string(wrong_length),
                    histogram(first_error)});
    summary_csv.addRow({seed, head_words, std::to_string(map.decisions), std::to_string(map.wrong),
                        std::to_string(map.wrong_stops), std::to_string(map.premature_stops),
                        std::to_string(wrong_answers), std::to_string(wrong_length)});
    for (const auto& [place, count] : first_error)
      first_error_csv.addRow({seed, std::to_string(place), std::to_string(count)});
    std::string wrong_places;
    for (const auto& [place, ps] : map.by_place)
      if (ps.wrong > 0) wrong_places += fmt::format("{}{} ({} wrong, share {})", wrong_places.empty() ? "" : ", ", place,
                                                    ps.wrong, plot::formatNumber(ps.separator_share, 2));
    int long_chain_wrong = 0;
    for (const auto& [len, c] : map.by_chain)
      if (len >= 8) long_chain_wrong += c.second;
    r.findings.push_back(fmt::format(
        "Seed {}: {} wrong decisions out of {}; wrong places: {}; {} wrong at carry chains of 8 or more; {} wrong stop "
        "decisions; greedy: {} wrong answers, {} of the wrong length.",
        seed, map.wrong, map.decisions, wrong_places.empty() ? "none" : wrong_places, long_chain_wrong, map.wrong_stops,
        wrong_answers, wrong_length));
    if (s == 0) {
      plot::Chart& c = r.chart;
      c.title = fmt::format("{}: teacher-forced errors by answer place, seed {}", plan.name, seed);
      c.x_label = "answer place (units = 1)";
      c.y_label = "wrong fraction; separator share of the lookup heads";
      c.y_min = 0;
      c.y_max = 1;
      plot::Series err;
      err.name = "wrong / decisions";
      err.style = plot::Style::Bars;
      plot::Series share;
      share.name = "separator share";
      share.style = plot::Style::Line;
      for (const auto& [place, ps] : map.by_place) {
        err.x.push_back(place);
        err.y.push_back(ps.decisions ? static_cast<double>(ps.wrong) / ps.decisions : 0);
        share.x.push_back(place);
        share.y.push_back(ps.separator_share);
      }
      c.series = {err, share};
      c.rules.push_back({static_cast<double>(plan.task.train_max_digits), true, "longest training operand"});
    }
  }
  r.tables.push_back({"Wrong decisions by answer place", "", places, true, places_csv});
  r.tables.push_back({"Summary", "summary", summary, true, summary_csv});
  r.tables.push_back({"Errors by carry-chain length", "carry", chains, true, chains_csv});
  r.tables.push_back({"Every answer place", "by_place", all, false});
  r.tables.push_back({"Lookup heads and their attention on the target digits", "lookup_heads", heads_csv, false});
  r.tables.push_back({"First error of a wrong answer (greedy), by place", "first_error", first_error_csv, false});
  return r;
}

}  // namespace posc::probe
