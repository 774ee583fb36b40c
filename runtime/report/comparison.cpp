// The comparison page: see comparison.h.
#include "runtime/report/comparison.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "runtime/longctx/protocol.h"
#include "runtime/plot/table.h"
#include "runtime/report/report.h"
#include "runtime/results/atomic_file.h"
#include "runtime/results/run_plan.h"

namespace posc::report {

namespace fs = std::filesystem;

namespace {

std::string pct(double v) { return fmt::format("{:.1f}", v); }

// A fraction in [0, 1] with every digit a double holds (the CSVs' unit of
// accuracy, as accuracy.csv's): shortest text that reads back the same.
std::string fraction(double percent) { return fmt::format("{}", percent / 100.0); }

// The plan's command-line settings, "train.lr=0.001" -> (train.lr, 0.001),
// but the seeds (a column of their own).
std::vector<std::pair<std::string, std::string>> givenSettings(const plan::ExperimentPlan& plan) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& o : plan.overrides) {
    const size_t eq = o.find('=');
    if (eq == std::string::npos) continue;
    if (o.compare(0, eq, "train.seeds") == 0) continue;
    out.emplace_back(o.substr(0, eq), o.substr(eq + 1));
  }
  return out;
}

// The identity of a run in its summary: experiment, preset and settings.
void identify(RunSummary& r, const plan::ExperimentPlan& plan) {
  r.experiment = plan.name;
  r.preset = plan.preset;
  r.settings = givenSettings(plan);
}

std::string relativeLink(const fs::path& target, const fs::path& base) {
  std::error_code ec;
  fs::path r = fs::relative(target, base, ec);
  return (ec || r.empty() ? target : r).generic_string();
}

}  // namespace

namespace {

// The cells of one line of a CSV file posc wrote (numbers and names, no
// quoted commas).
std::vector<std::string> splitCsvLine(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  for (std::string c; std::getline(in, c, ',');) cells.push_back(c);
  return cells;
}

// The index of column `name` in a CSV header; a missing one names the file.
size_t columnIndex(const std::vector<std::string>& header, const std::string& name, const fs::path& file) {
  auto it = std::find(header.begin(), header.end(), name);
  if (it == header.end()) throw std::runtime_error(fmt::format("'{}': no column '{}'", file.string(), name));
  return static_cast<size_t>(it - header.begin());
}

// The evidence_mass probe's fitted margin per (seed, prompt length) on
// retrieval documents, from probes/evidence_mass.csv (one fit per length:
// its rows per distractor count repeat it); empty without the probe, and no
// entry where the fit had no point. A damaged file names itself.
std::map<std::pair<uint64_t, int>, double> readMargins(const fs::path& dir) {
  std::map<std::pair<uint64_t, int>, double> out;
  const fs::path file = dir / "probes" / "evidence_mass.csv";
  const auto text = results::readFileText(file);
  if (!text) return out;
  std::istringstream in(*text);
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = splitCsvLine(line);
  auto column = [&](const char* name) { return columnIndex(header, name, file); };
  const size_t seed = column("seed"), length = column("length"), margin = column("margin");
  for (int row = 2; std::getline(in, line); ++row) {
    const std::vector<std::string> cells = splitCsvLine(line);
    try {
      if (cells.size() < header.size()) throw std::invalid_argument("short row");
      if (cells[margin].empty()) continue;  // no document gave the fit a point
      out.emplace(std::pair{std::stoull(cells[seed]), std::stoi(cells[length])}, std::stod(cells[margin]));
    } catch (const std::exception&) {
      throw std::runtime_error(fmt::format("'{}': line {} is malformed", file.string(), row));
    }
  }
  return out;
}

// A document run's protocol.csv as per-task records: correct answers and
// documents per (seed, length), pooled over depths and distractor counts,
// and the same over the cells with the most distractors alone.
std::vector<RunSummary> readDocumentRun(const fs::path& dir, const plan::ExperimentPlan& plan, const std::string& csv) {
  const int train = plan.task.documents.train_max_length;
  const std::string variant = results::runVariant(plan);
  std::istringstream in(csv);
  std::string line;
  std::vector<std::string> header;
  if (std::getline(in, line)) header = splitCsvLine(line);
  auto column = [&](const char* name) { return columnIndex(header, name, dir / "protocol.csv"); };
  const size_t seed = column("seed"), task = column("task"), length = column("length"), documents = column("documents"),
               correct = column("correct"), distractors = column("distractors"),
               prefill = column("prefill_tokens_per_s"), generation = column("generation_tokens_per_s");
  using Tally = std::map<std::pair<uint64_t, int>, std::pair<int, int>>;  // (seed, length) -> (correct, documents)
  std::map<std::string, Tally> tally;
  std::map<std::string, std::map<int, Tally>> by_distractors;  // task -> distractor count -> tally
  std::map<std::string, std::map<int, RunSummary::Throughput>> throughput;  // task -> length
  std::vector<std::string> tasks;
  for (int row = 2; std::getline(in, line); ++row) {
    const std::vector<std::string> cells = splitCsvLine(line);
    try {
      if (cells.size() < header.size()) throw std::invalid_argument("short row");
      if (std::find(tasks.begin(), tasks.end(), cells[task]) == tasks.end()) tasks.push_back(cells[task]);
      const std::pair<uint64_t, int> key{std::stoull(cells[seed]), std::stoi(cells[length])};
      RunSummary::Throughput& rate = throughput[cells[task]][key.second];
      if (!cells[prefill].empty()) {
        rate.prefill += std::stod(cells[prefill]);
        ++rate.prefill_cells;
      }
      if (!cells[generation].empty()) {
        rate.generation += std::stod(cells[generation]);
        ++rate.generation_cells;
      }
      const int k = std::stoi(cells[correct]), n = std::stoi(cells[documents]);
      for (auto* t : {&tally[cells[task]][key], &by_distractors[cells[task]][std::stoi(cells[distractors])][key]}) {
        t->first += k;
        t->second += n;
      }
    } catch (const std::exception&) {
      throw std::runtime_error(fmt::format("'{}': line {} is malformed", (dir / "protocol.csv").string(), row));
    }
  }
  const std::map<std::pair<uint64_t, int>, double> margin = readMargins(dir);
  std::vector<RunSummary> out;
  for (const std::string& t : tasks) {
    RunSummary r;
    r.dir = dir;
    r.variant = variant + " · " + t;
    identify(r, plan);
    r.task = t;
    r.train_max_digits = train;
    r.unit = "tokens";
    for (const auto& [key, counts] : tally[t]) r.records.push_back({key.first, key.second, counts.first, counts.second});
    const auto& [most, hardest] = *by_distractors[t].rbegin();
    r.hardest_distractors = most;
    for (const auto& [key, counts] : hardest)
      r.hardest.push_back({key.first, key.second, counts.first, counts.second});
    if (t == "retrieval") r.margin = margin;  // the probe measures retrieval documents
    r.throughput = throughput[t];
    out.push_back(std::move(r));
  }
  return out;
}

// The folder's training loss; a damaged metrics.jsonl names the folder.
std::vector<formats::LossPoint> readLoss(const fs::path& dir) {
  try {
    return formats::lossCurve(results::readFileText(dir / "metrics.jsonl").value_or(""));
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("'{}': {}", dir.string(), e.what()));
  }
}

}  // namespace

std::vector<RunSummary> readRun(const fs::path& dir) {
  const plan::ExperimentPlan plan = results::readRunPlan(dir);
  if (auto protocol = results::readFileText(dir / "protocol.csv")) {
    std::vector<RunSummary> tasks = readDocumentRun(dir, plan, *protocol);
    const std::vector<formats::LossPoint> loss = readLoss(dir);
    for (RunSummary& r : tasks) r.loss = loss;
    return tasks;
  }
  const auto csv = results::readFileText(dir / "accuracy.csv");
  if (!csv)
    throw std::runtime_error(fmt::format("'{}' has no accuracy.csv (the run did not finish a seed)", dir.string()));
  RunSummary r;
  r.dir = dir;
  r.variant = results::runVariant(plan);
  identify(r, plan);
  r.train_max_digits = plan.task.train_max_digits;
  r.published = plan.eval.published;
  r.published_source = plan.eval.published_source;
  try {
    r.records = results::parseAccuracyCsv(*csv);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("'{}': {}", (dir / "accuracy.csv").string(), e.what()));
  }
  r.loss = readLoss(dir);
  return {r};
}

// How far below a folder given to `posc report` runs are looked for: a
// study's runs are 3 levels down (grid point, seed, experiment), their
// files one more.
constexpr int kMaxRunDepth = 4;

// Folders below `dir` holding accuracy.csv or protocol.csv, looking at
// entries down to kMaxRunDepth levels below it. Folders that cannot be
// listed, or vanish while listed, are skipped; symbolic links to folders are
// not followed.
// Returns the error of listing `dir` itself (empty when it could be listed).
std::error_code findRunFolders(const fs::path& dir, int depth, std::vector<fs::path>& found) {
  std::error_code ec;
  fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  const std::error_code listing = ec;
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const fs::directory_entry& e = *it;
    std::error_code type_ec;
    const fs::path name = e.path().filename();
    if ((name == "accuracy.csv" || name == "protocol.csv") && e.is_regular_file(type_ec)) {
      found.push_back(dir);
    } else if (depth < kMaxRunDepth && e.is_directory(type_ec) && !e.is_symlink(type_ec)) {
      findRunFolders(e.path(), depth + 1, found);
    }
  }
  return listing;
}

std::vector<RunSummary> collectRuns(const std::vector<fs::path>& roots) {
  std::vector<RunSummary> runs;
  for (const fs::path& root : roots) {
    std::error_code probe_ec;
    if (fs::exists(root / "accuracy.csv", probe_ec) || fs::exists(root / "protocol.csv", probe_ec) ||
        fs::exists(root / "plan.txt", probe_ec)) {
      for (RunSummary& r : readRun(root)) runs.push_back(std::move(r));
      continue;
    }
    if (!fs::is_directory(root, probe_ec)) throw std::runtime_error(fmt::format("'{}' is not a folder", root.string()));
    // Runs sit a few levels below a study folder (OUT/<grid point>/seed<N>/
    // <experiment>): the search goes no deeper than that, and skips what it
    // may not read or what vanishes while it looks (a process's folder in
    // /proc), so `posc report /proc` ends quickly with "holds no runs".
    std::vector<fs::path> found;
    if (const std::error_code ec = findRunFolders(root, 0, found))
      throw std::runtime_error(fmt::format("cannot search '{}' for runs: {}", root.string(), ec.message()));
    if (found.empty())
      throw std::runtime_error(
          fmt::format("'{}' holds no finished runs (no accuracy.csv or protocol.csv in it or below it)", root.string()));
    std::sort(found.begin(), found.end());
    for (const fs::path& d : found)
      for (RunSummary& r : readRun(d)) runs.push_back(std::move(r));
  }
  return runs;
}

std::vector<VariantRow> compareRuns(const std::vector<RunSummary>& runs) {
  std::vector<VariantRow> rows;
  std::map<std::string, std::map<int, std::map<uint64_t, double>>> acc;  // variant -> digits -> seed -> %
  for (const RunSummary& run : runs) {
    auto it = std::find_if(rows.begin(), rows.end(), [&](const VariantRow& r) { return r.variant == run.variant; });
    if (it == rows.end()) {
      VariantRow row;
      row.variant = run.variant;
      row.experiment = run.experiment;
      row.preset = run.preset;
      row.task = run.task;
      row.settings = run.settings;
      row.published = run.published;
      row.published_source = run.published_source;
      row.train_max_digits = run.train_max_digits;
      row.unit = run.unit;
      rows.push_back(std::move(row));
      it = rows.end() - 1;
    }
    it->runs.push_back(run.dir);
    // The hardest cells of the row are those with the most distractors any of its folders has.
    if (run.hardest_distractors > it->hardest_distractors) {
      it->hardest_distractors = run.hardest_distractors;
      it->hardest.clear();
    }
    if (run.hardest_distractors == it->hardest_distractors)
      for (const results::LengthAccuracy& r : run.hardest) it->hardest[r.digits][r.seed] = r;  // a later folder wins
    for (const auto& [key, m] : run.margin) it->margin[key] = m;
    for (const auto& [L, rate] : run.throughput) {
      RunSummary::Throughput& sum = it->throughput[L];
      sum.prefill += rate.prefill;
      sum.generation += rate.generation;
      sum.prefill_cells += rate.prefill_cells;
      sum.generation_cells += rate.generation_cells;
    }
    for (const results::LengthAccuracy& r : run.records) {
      if (std::find(it->seeds.begin(), it->seeds.end(), r.seed) == it->seeds.end()) it->seeds.push_back(r.seed);
      acc[run.variant][r.digits][r.seed] = 100.0 * r.accuracy();  // a later folder of the same seed wins
    }
  }
  for (VariantRow& row : rows) {
    std::sort(row.seeds.begin(), row.seeds.end());
    for (const auto& [digits, by_seed] : acc[row.variant]) {
      VariantCell c;
      c.digits = digits;
      c.seeds = static_cast<int>(by_seed.size());
      c.min = 1e9;
      c.max = -1e9;
      for (const auto& [_, v] : by_seed) {
        c.mean += v;
        c.min = std::min(c.min, v);
        c.max = std::max(c.max, v);
      }
      c.mean /= c.seeds;
      for (const plan::PublishedAccuracy& p : row.published) {
        if (p.digits != digits || p.percent.empty()) continue;
        double s = 0;
        for (double v : p.percent) s += v;
        c.published_mean = s / p.percent.size();
      }
      row.cells.push_back(c);
    }
  }
  return rows;
}

plot::Chart reachChart(const std::vector<VariantRow>& rows, const std::string& title) {
  plot::Chart chart;
  chart.title = title;
  const bool tokens = !rows.empty() && rows.front().unit == "tokens";
  chart.x_label = tokens ? "prompt length (tokens)" : "digits per operand";
  chart.y_label = tokens ? "accuracy (%) over documents, mean and range over seeds"
                         : "exact-match accuracy (%), mean and range over seeds";
  chart.y_min = 0;
  chart.y_max = 100;
  int lo = 1 << 30, hi = 0, trained = 0;
  for (const VariantRow& row : rows) {
    plot::Series s;
    s.name = row.variant;
    for (const VariantCell& c : row.cells) {
      s.x.push_back(c.digits);
      s.y.push_back(c.mean);
      s.lo.push_back(c.min);
      s.hi.push_back(c.max);
      lo = std::min(lo, c.digits);
      hi = std::max(hi, c.digits);
    }
    trained = std::max(trained, row.train_max_digits);
    chart.series.push_back(std::move(s));
  }
  chart.log_x = lo > 0 && hi >= 8 * lo;
  chart.width = 860;
  if (trained > 0) chart.rules.push_back({static_cast<double>(trained), true, "longest training length"});
  return chart;
}

plot::Chart lossChart(const std::vector<RunSummary>& runs, const std::string& title) {
  // One line per variant (a document run's tasks share theirs): at each
  // logged step, the mean loss over the seeds logged there.
  std::vector<std::string> names;
  std::map<std::string, std::map<double, std::pair<double, int>>> by_name;  // name -> step -> (sum, count)
  std::map<std::string, std::set<fs::path>> folders;  // name -> folders counted
  std::map<std::string, std::set<uint64_t>> seeds;
  for (const RunSummary& run : runs) {
    const std::string name = run.task.empty() ? run.variant : run.variant.substr(0, run.variant.rfind(" · "));
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    // A document run's summaries repeat the folder's log once per task.
    if (!folders[name].insert(run.dir).second) continue;
    for (const formats::LossPoint& p : run.loss) {
      if (!std::isfinite(p.loss)) continue;
      auto& cell = by_name[name][p.step];
      cell.first += p.loss;
      cell.second += 1;
      seeds[name].insert(p.seed);
    }
  }
  plot::Chart c;
  c.title = title;
  c.x_label = "step";
  c.y_label = "training loss, the mean over seeds";
  for (const std::string& name : names) {
    if (by_name[name].empty()) continue;
    plot::Series s;
    s.name = fmt::format("{} ({} seed{})", name, seeds[name].size(), seeds[name].size() == 1 ? "" : "s");
    s.style = plot::Style::Line;
    for (const auto& [step, sum] : by_name[name]) {
      s.x.push_back(step);
      s.y.push_back(sum.first / sum.second);
    }
    c.series.push_back(std::move(s));
  }
  plot::showSinglePoints(c);
  plot::logYIfDecades(c);
  c.width = 860;
  return c;
}

namespace {

// Documents: the section of the page on each variant's hardest cells (the
// most distractors), seed by seed: correct/documents, accuracy and the Wilson
// 95% lower bound per prompt length, with the evidence_mass margin where the
// run measured it (seeds are never pooled here).
std::string hardestCells(const std::vector<VariantRow>& rows, const std::set<int>& lengths) {
  plot::Table table;
  table.columns = {"variant", "distractors"};
  for (int L : lengths) table.columns.push_back(fmt::format("{} tokens", L));
  for (const VariantRow& row : rows) {
    if (row.hardest.empty()) continue;
    std::vector<std::string> cells{row.variant, std::to_string(row.hardest_distractors)};
    for (int L : lengths) {
      auto at = row.hardest.find(L);
      if (at == row.hardest.end()) {
        cells.push_back("-");
        continue;
      }
      std::string text;
      for (const auto& [seed, r] : at->second) {
        const double bound = longctx::wilsonLowerBound(r.correct, r.total);
        text += fmt::format("{}s{}: {}/{} = {} [{}]", text.empty() ? "" : " · ", seed, r.correct, r.total,
                            pct(100.0 * r.accuracy()), plot::formatNumber(bound, 3));
        if (auto m = row.margin.find({seed, L}); m != row.margin.end())
          text += fmt::format(", m {}", plot::formatNumber(m->second, 3));
      }
      cells.push_back(text);
    }
    table.addRow(std::move(cells));
  }
  if (table.rows.empty()) return "";
  return "## The hardest cells, seed by seed\n\nEach seed's answers over the cells with the most distractors at each "
         "prompt length (pooled over depths only): correct/documents = accuracy (%) [Wilson 95% lower bound]; "
         "\"m\" is the evidence_mass probe's fitted margin of the retrieval head at that length, where the run "
         "measured it.\n\n" +
         plot::toMarkdown(table) + "\n";
}

// Documents: prefill and generation throughput per variant and length.
std::string throughputSection(const std::vector<VariantRow>& rows, const std::set<int>& lengths) {
  plot::Table rates;
  rates.columns = {"variant"};
  for (int L : lengths) rates.columns.push_back(fmt::format("{} tokens", L));
  for (const VariantRow& row : rows) {
    std::vector<std::string> cells{row.variant};
    for (int L : lengths) {
      auto at = row.throughput.find(L);
      auto mean = [](double sum, int n) { return n ? fmt::format("{:.0f}", sum / n) : std::string("-"); };
      cells.push_back(at == row.throughput.end() ? "-"
                                                 : mean(at->second.prefill, at->second.prefill_cells) + " / " +
                                                       mean(at->second.generation, at->second.generation_cells));
    }
    rates.addRow(std::move(cells));
  }
  return "## Throughput\n\nPrefill / generation tokens per second per prompt length, the mean over every cell and "
         "seed of the variant, timed apart (each run's protocol.csv has the cells; runs that shared the machine "
         "with others are slower).\n\n" +
         plot::toMarkdown(rates) + "\n";
}

// Where variants are compared and some have fewer than two seeds, the page
// says that their differences rank nothing: one seed's accuracy past the
// training length moves by tens of points between seeds, and between runs of
// one seed on another build or thread count (docs/reproduction.md).
std::string singleSeedCaveat(const std::vector<VariantRow>& rows) {
  if (rows.size() < 2) return "";
  std::vector<std::string> few;
  for (const VariantRow& row : rows)
    if (row.seeds.size() < 2) few.push_back(row.variant);
  if (few.empty()) return "";
  return fmt::format(
      "**{} {} measured on one seed.** A difference to {} is not a ranking: one seed's accuracy past the "
      "training length can move by tens of points with the seed, and with the build or the thread count of "
      "the run; compare variants over several seeds (`--seeds 0,1,2`) and their min-max ranges.\n\n",
      fmt::join(few, ", "), few.size() == 1 ? "is" : "are", few.size() == 1 ? "it" : "them");
}

}  // namespace

ComparisonPage buildComparison(const std::vector<RunSummary>& runs, const fs::path& page_dir, const std::string& title) {
  const std::vector<VariantRow> rows = compareRuns(runs);
  for (const VariantRow& row : rows)
    if (row.unit != rows.front().unit)
      throw std::runtime_error(fmt::format("'{}' is a run on {} and '{}' one on {}: compare them on separate pages",
                                           rows.front().variant, rows.front().unit == "tokens" ? "documents" : "addition",
                                           row.variant, row.unit == "tokens" ? "documents" : "addition"));
  const bool tokens = !rows.empty() && rows.front().unit == "tokens";
  std::set<int> lengths;
  for (const VariantRow& row : rows)
    for (const VariantCell& c : row.cells) lengths.insert(c.digits);

  ComparisonPage page;
  // Long-format CSV for scripts: a row's identity as columns (experiment,
  // preset, a document task, one column per setting any run was given),
  // accuracy as a fraction with full precision, as accuracy.csv has it.
  std::vector<std::string> setting_keys;
  for (const VariantRow& row : rows)
    for (const auto& [key, _] : row.settings)
      if (std::find(setting_keys.begin(), setting_keys.end(), key) == setting_keys.end()) setting_keys.push_back(key);
  plot::Table csv;
  csv.columns = {"variant", "experiment", "preset"};
  if (tokens) csv.columns.push_back("task");
  csv.columns.insert(csv.columns.end(), setting_keys.begin(), setting_keys.end());
  for (const char* c : {tokens ? "length" : "digits", "seeds", "mean", "min", "max", "published_mean"}) csv.columns.push_back(c);
  for (const VariantRow& row : rows)
    for (const VariantCell& c : row.cells) {
      std::vector<std::string> cells = {row.variant, row.experiment, row.preset};
      if (tokens) cells.push_back(row.task);
      for (const std::string& key : setting_keys) {
        auto it = std::find_if(row.settings.begin(), row.settings.end(), [&](const auto& kv) { return kv.first == key; });
        cells.push_back(it == row.settings.end() ? "" : it->second);
      }
      for (const std::string& v : {std::to_string(c.digits), std::to_string(c.seeds), fraction(c.mean), fraction(c.min),
                                   fraction(c.max), c.published_mean < 0 ? std::string() : fraction(c.published_mean)})
        cells.push_back(v);
      csv.addRow(cells);
    }
  page.csv = plot::toCsv(csv);

  // The page's table: variants as rows, lengths as columns.
  plot::Table table;
  table.columns = {"variant", "seeds"};
  for (int d : lengths) table.columns.push_back(fmt::format("{} {}", d, tokens ? "tokens" : "digits"));
  table.columns.push_back("runs");
  bool any_published_here = false;
  for (const VariantRow& row : rows) {
    std::vector<std::string> cells{row.variant, std::to_string(row.seeds.size())};
    for (int d : lengths) {
      auto c = std::find_if(row.cells.begin(), row.cells.end(), [&](const VariantCell& x) { return x.digits == d; });
      if (c == row.cells.end()) {
        cells.push_back("-");
        continue;
      }
      std::string text = pct(c->mean);
      if (c->seeds > 1) text += fmt::format(" ({}-{})", pct(c->min), pct(c->max));
      if (c->published_mean >= 0) {
        text += fmt::format(" · pub. {}", pct(c->published_mean));
        any_published_here = true;
      }
      cells.push_back(text);
    }
    std::string links;
    for (const fs::path& run : row.runs) {
      std::string seed_names;
      for (const RunSummary& r : runs)
        if (r.dir == run)
          for (const auto& rec : r.records)
            if (seed_names.find(fmt::format("s{}", rec.seed)) == std::string::npos)
              seed_names += (seed_names.empty() ? "s" : ",s") + std::to_string(rec.seed);
      links += fmt::format("{}[{}]({})", links.empty() ? "" : " ", seed_names.empty() ? run.filename().string() : seed_names,
                           relativeLink(run / "report.html", page_dir));
    }
    cells.push_back(links);
    table.addRow(std::move(cells));
  }

  std::string md = fmt::format("# {}\n\n", title);
  md += tokens ? "Accuracy (%) per prompt length over the protocol's documents (pooled over depths and distractor "
                "counts; each run's summary.md has every cell and its lower bound): the mean over seeds, with the "
                "min-max range in parentheses when there is more than one seed"
              : "Exact-match accuracy (%) per test length: the mean over seeds, with the min-max range in parentheses "
                "when there is more than one seed";
  md += any_published_here ? "; \"pub.\" is the source's published mean at that length, for the source's own "
                             "configuration (listed under Published figures), which a preset may shrink.\n\n"
                           : ".\n\n";
  md += plot::toMarkdown(table) + "\n";
  md += singleSeedCaveat(rows);
  if (tokens) md += hardestCells(rows, lengths) + throughputSection(rows, lengths);
  md += "![reach](reach.svg)\n\n";
  md += "Training loss of each variant, the mean over its seeds at each logged step:\n\n![training loss](loss.svg)\n\n";
  // The published tables, for variants whose source reports lengths this study did not test.
  std::string published;
  for (const VariantRow& row : rows) {
    if (row.published.empty()) continue;
    std::string figures;
    for (const plan::PublishedAccuracy& a : row.published) {
      std::string per_seed;
      for (double v : a.percent) per_seed += (per_seed.empty() ? "" : " / ") + fmt::format("{:g}", v);
      figures += fmt::format("{}{} digits: {}", figures.empty() ? "" : "; ", a.digits, per_seed);
    }
    published += fmt::format("- `{}`: {}{}\n", row.variant, figures,
                             row.published_source.empty() ? "" : " (" + row.published_source + ")");
  }
  if (!published.empty())
    md += "## Published figures\n\nAs declared in each experiment's `eval.published` (per seed, %):\n\n" + published + "\n";
  md += "## Runs\n\n";
  for (const RunSummary& r : runs) md += fmt::format("- `{}`: {}\n", r.variant, relativeLink(r.dir, page_dir));
  page.markdown = md;

  page.reach_svg = plot::renderSvg(reachChart(rows, title + ": accuracy against length"));
  page.loss_svg = plot::renderSvg(lossChart(runs, title + ": training loss"));
  auto image = [&](const std::string& src) -> std::optional<std::string> {
    const std::string* svg = src == "reach.svg" ? &page.reach_svg : src == "loss.svg" ? &page.loss_svg : nullptr;
    if (!svg) return std::nullopt;
    size_t start = svg->find("<svg");
    return start == std::string::npos ? std::nullopt : std::optional<std::string>(svg->substr(start));
  };
  page.html = htmlPage(title, markdownToHtml(md, image));
  return page;
}

void writeComparison(const fs::path& page_dir, const ComparisonPage& page) {
  fs::create_directories(page_dir);
  results::writeFileAtomic(page_dir / "reach.svg", page.reach_svg);
  results::writeFileAtomic(page_dir / "loss.svg", page.loss_svg);
  results::writeFileAtomic(page_dir / "comparison.csv", page.csv);
  results::writeFileAtomic(page_dir / "comparison.md", page.markdown);
  results::writeFileAtomic(page_dir / "comparison.html", page.html);
}

}  // namespace posc::report
