// Probes and reports through the command line, on a tiny model trained for a
// few steps: the declared probes run after training and write CSV, Markdown
// and SVG; the CSVs are tidy, in full precision, and the Markdown tables show
// their numbers rounded; the SVGs parse as XML and carry their series; `posc
// probe` reruns one probe on the saved checkpoints; bad input exits with 2
// and writes nothing; `posc report` writes a self-contained HTML page, which
// headless Chromium renders with the plots visible.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "tests/common/files.h"
#include "tests/common/run_posc.h"

namespace fs = std::filesystem;
using posc::testing::readFile;

namespace {

using posc::testing::sh;

int runPosc(const std::string& args, const fs::path& log) { return posc::testing::runPoscLogged(args, log); }

// RFC 4180 rows (quoted cells may hold commas and doubled quotes).
std::vector<std::vector<std::string>> parseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string cell;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') { cell += '"'; ++i; }
      else if (c == '"') quoted = false;
      else cell += c;
    } else if (c == '"') quoted = true;
    else if (c == ',') { rows.back().push_back(cell); cell.clear(); }
    else if (c == '\n') { rows.back().push_back(cell); cell.clear(); rows.emplace_back(); }
    else if (c != '\r') cell += c;
  }
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

// The first Markdown table after the line `heading`.
std::vector<std::vector<std::string>> markdownTable(const std::string& md, const std::string& heading) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(md.substr(md.find(heading)));
  std::string line;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line.rfind("|", 0) != 0) {
      if (in_table) break;
      continue;
    }
    in_table = true;
    std::vector<std::string> cells;
    std::string cur;
    for (size_t i = 1; i < line.size(); ++i) {
      if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') { cur += '|'; ++i; }
      else if (line[i] == '|') {
        cur.erase(0, cur.find_first_not_of(' '));
        cur.erase(cur.find_last_not_of(' ') + 1);
        cells.push_back(cur);
        cur.clear();
      } else cur += line[i];
    }
    if (!cells.empty() && cells[0].find_first_not_of("-:") == std::string::npos) continue;  // the rule
    rows.push_back(cells);
  }
  return rows;
}

size_t column(const std::vector<std::string>& header, const std::string& name) {
  return posc::testing::csvColumn(header, name);
}

// What a page shows of a CSV's full-precision number: plot::formatNumber's
// rounding to `digits` significant digits (an integer without a point), or
// with how = 'f' `digits` decimals; printf here, independent of posc's.
std::string shown(const std::string& cell, int digits, char how = 'g') {
  const double v = std::stod(cell);
  char out[64];
  if (how == 'f') std::snprintf(out, sizeof out, "%.*f", digits, v);
  else if (v == std::floor(v) && std::fabs(v) < 1e15) std::snprintf(out, sizeof out, "%.0f", v);
  else std::snprintf(out, sizeof out, "%.*g", digits, v);
  return out;
}

// Significant digits of a number as written ("0.01234" has 4, "1.5e-08" 2).
int significantDigits(const std::string& cell) {
  std::string m = cell.substr(0, cell.find_first_of("eE"));
  m.erase(std::remove_if(m.begin(), m.end(), [](char c) { return !std::isdigit(static_cast<unsigned char>(c)); }),
          m.end());
  m.erase(0, std::min(m.size(), m.find_first_not_of('0')));
  return static_cast<int>(m.size());
}

// A tidy CSV: exactly these columns, every row complete, and no two rows
// with the same cells in the key columns (one observation per row).
void expectTidy(const std::vector<std::vector<std::string>>& csv, const std::vector<std::string>& columns,
                const std::vector<std::string>& keys) {
  ASSERT_FALSE(csv.empty());
  EXPECT_EQ(csv[0], columns);
  std::set<std::vector<std::string>> seen;
  for (size_t i = 1; i < csv.size(); ++i) {
    ASSERT_EQ(csv[i].size(), columns.size()) << i;
    std::vector<std::string> key;
    for (const std::string& k : keys) key.push_back(csv[i][column(csv[0], k)]);
    EXPECT_TRUE(seen.insert(key).second) << "row " << i << " repeats its key";
  }
}

const char* kExperiment = R"(
experiment tiny_probes {
  task { train_max_digits = 3  test_digits = [3, 5]  problems_per_length = 20 }
  model { layers = 1  width = 16  heads = 2 }
  attention { use rope2d() }
  train { steps = 30  batch = 16  lr = 3e-3  warmup = 5  seeds = [0, 1]  log_every = 10 }
  probes {
    reach(lengths = [2, 3, 5], problems = 10, threshold = 0.5)
    sink_share(lengths = [3, 5], problems = 4)
    kernel(place = 2, length = 3, sweep = -50..51, far = 20)
    bands(place = 2, lengths = [3, 6], problems = 3)
    teacher_forced(length = 6, problems = 10)
    stop(lengths = [3, 5], problems = 8)
  }
}
)";

const std::vector<std::string> kProbes = {"reach", "sink_share", "kernel", "bands", "teacher_forced", "stop"};

struct ProbeRun : ::testing::Test {
  static fs::path dir;
  static int run_status;
  static void SetUpTestSuite() {
    // One folder per process: ctest runs each test in its own process, maybe in parallel.
    dir = fs::path(::testing::TempDir()) / ("posc_probe_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "tiny.pos") << "import rope\n" << kExperiment;
    run_status = runPosc("run '" + (dir / "tiny.pos").string() + "' --out '" + (dir / "run").string() + "' --no-progress",
                      dir / "run.log");
  }
};
fs::path ProbeRun::dir;
int ProbeRun::run_status = -1;

}  // namespace

TEST_F(ProbeRun, DeclaredProbesRunAfterTrainingAndWriteTheirArtefacts) {
  ASSERT_EQ(run_status, 0) << readFile(dir / "run.log");
  for (const std::string& p : kProbes)
    for (const char* ext : {".csv", ".md", ".svg"}) EXPECT_TRUE(fs::exists(dir / "run" / "probes" / (p + ext))) << p << ext;
  // Stop: one row per seed and length, 8 decisions each, a share in [0, 1];
  // every head's groups sum to 1 (no null slot here: only float rounding).
  {
    auto stop = parseCsv(readFile(dir / "run" / "probes" / "stop.csv"));
    ASSERT_EQ(stop.size(), 5u);
    const size_t decisions = column(stop[0], "stop_decisions"), right = column(stop[0], "right"),
                 share = column(stop[0], "separator_share");
    for (size_t i = 1; i < stop.size(); ++i) {
      EXPECT_EQ(stop[i][decisions], "8");
      EXPECT_LE(std::stoi(stop[i][right]), 8);
      EXPECT_GE(std::stod(stop[i][share]), 0.0);
      EXPECT_LE(std::stod(stop[i][share]), 1.0);
    }
    auto heads = parseCsv(readFile(dir / "run" / "probes" / "stop-by_head.csv"));
    ASSERT_EQ(heads.size(), 1u + 2 * 2 * 2);  // seeds x lengths x heads
    for (size_t i = 1; i < heads.size(); ++i) {
      double sum = 0;
      for (const char* group : {"separators", "operand_near", "operand_far", "answer", "other"})
        sum += std::stod(heads[i][column(heads[0], group)]);
      EXPECT_NEAR(sum, 1.0, 1e-6) << i;  // full precision (cells rounded to 3 digits: up to 5e-3 off)
    }
  }
  // Reach: one row per seed and length, correct of problems as a full-precision fraction.
  auto reach = parseCsv(readFile(dir / "run" / "probes" / "reach.csv"));
  ASSERT_EQ(reach.size(), 1u + 2 * 3);  // seeds x lengths
  EXPECT_EQ(reach[0], (std::vector<std::string>{"seed", "digits", "correct", "problems", "accuracy"}));
  for (size_t i = 1; i < reach.size(); ++i) {
    EXPECT_EQ(reach[i][0], i <= 3 ? "0" : "1");
    EXPECT_EQ(std::stod(reach[i][4]), std::stod(reach[i][2]) / std::stod(reach[i][3])) << i;
  }
  // Its page keeps the wide table in percent: seeds as columns, mean within [min, max].
  const std::string reach_md = readFile(dir / "run" / "probes" / "reach.md");
  EXPECT_NE(reach_md.find("| digits | seed 0 (%) | seed 1 (%) | mean (%) | min (%) | max (%) |"), std::string::npos)
      << reach_md;
  // Kernel: the sweep covers the declared offsets for each seed.
  auto curve = parseCsv(readFile(dir / "run" / "probes" / "kernel-curve.csv"));
  EXPECT_EQ(curve.size(), 1u + 2u * 101u);
  for (const auto& row : curve)
    if (row[1] == "0") {
      EXPECT_EQ(row[3], "1");  // the target as a fraction of itself
    }
}

// The probe CSVs are tidy, for pandas: snake_case names, one observation per
// row (lengths, keys and distractor counts in columns, not in column names;
// no "layer.head" cells), every number in full precision. Their pages keep
// the wide tables, and show the same numbers rounded.
TEST_F(ProbeRun, ProbeCsvsAreTidyInFullPrecisionAndTheirPagesRoundThem) {
  ASSERT_EQ(run_status, 0) << readFile(dir / "run.log");
  const fs::path probes = dir / "run" / "probes";
  auto csvOf = [&](const std::string& file) { return parseCsv(readFile(probes / (file + ".csv"))); };
  auto pageOf = [&](const std::string& probe, const std::string& heading) {
    return markdownTable(readFile(probes / (probe + ".md")), heading);
  };
  auto cells = [](const std::vector<std::string>& row, size_t from, size_t to) {
    return std::vector<std::string>(row.begin() + static_cast<long>(from), row.begin() + static_cast<long>(to));
  };
  for (const auto& e : fs::directory_iterator(probes)) {
    if (e.path().extension() != ".csv") continue;
    const auto rows = parseCsv(readFile(e.path()));
    for (const std::string& c : rows[0]) {
      auto word = [](char x) { return (x >= 'a' && x <= 'z') || (x >= '0' && x <= '9') || x == '_'; };
      const bool snake = !c.empty() && c[0] >= 'a' && c[0] <= 'z' && std::all_of(c.begin(), c.end(), word);
      EXPECT_TRUE(snake) << e.path().filename() << ": " << c;
    }
  }

  {
    // Sink share: one row per seed, length, layer and head; the page's cell
    // (one column per length) is the share rounded to 3 digits.
    SCOPED_TRACE("sink_share");
    const auto csv = csvOf("sink_share");
    expectTidy(csv, {"seed", "digits", "layer", "head", "separator_share"}, {"seed", "digits", "layer", "head"});
    ASSERT_EQ(csv.size(), 1u + 2 * 2 * 1 * 2);  // seeds x lengths x layers x heads
    const auto page = pageOf("sink_share", "### Mean separator share");
    for (size_t i = 1; i < csv.size(); ++i) {
      const auto& r = csv[i];
      const auto row = std::find_if(page.begin() + 1, page.end(),
                                    [&](const auto& m) { return m[0] == r[0] && m[1] == r[2] && m[2] == r[3]; });
      ASSERT_NE(row, page.end()) << i;
      EXPECT_EQ((*row)[column(page[0], r[1] + " digits")], shown(r[4], 3)) << i;
      EXPECT_GT(significantDigits(r[4]), 4) << r[4] << ": rounded";
    }
    expectTidy(csvOf("sink_share-by_place"), {"seed", "digits", "layer", "head", "place", "separator_share"},
               {"seed", "digits", "layer", "head", "place"});
  }
  {
    // Kernel: the summary's numbers rounded on the page ("none" there is an
    // empty cell); every fraction is its score over the target's, exactly.
    SCOPED_TRACE("kernel");
    const auto csv = csvOf("kernel");
    expectTidy(csv,
               {"seed", "layer", "head", "target_score", "best_near_fraction", "best_far_fraction", "best_far_offset",
                "gap_to_target"},
               {"seed"});
    const auto page = pageOf("kernel", "### Kernel summary");
    ASSERT_EQ(page.size(), csv.size());
    std::map<std::string, double> target;
    for (size_t i = 1; i < csv.size(); ++i) {
      const auto& r = csv[i];
      target[r[0]] = std::stod(r[3]);
      EXPECT_EQ(cells(page[i], 0, 3), cells(r, 0, 3));
      EXPECT_EQ(page[i][3], shown(r[3], 4));
      EXPECT_EQ(page[i][4], shown(r[4], 3));
      EXPECT_EQ(page[i][5], r[5].empty() ? "none" : shown(r[5], 3));
      if (!r[5].empty()) {
        EXPECT_EQ(page[i][6], r[6]);
        EXPECT_EQ(page[i][7], shown(r[7], 3));
      }
    }
    const auto windows = csvOf("kernel-windows");
    expectTidy(windows, {"seed", "window_start", "window_end", "max_score", "fraction_of_target"},
               {"seed", "window_start"});
    for (size_t i = 1; i < windows.size(); ++i)
      EXPECT_EQ(std::stod(windows[i][4]), std::stod(windows[i][3]) / target.at(windows[i][0])) << i;
    const auto curve = csvOf("kernel-curve");
    expectTidy(curve, {"seed", "offset", "score", "fraction_of_target"}, {"seed", "offset"});
    for (size_t i = 1; i < curve.size(); ++i)
      EXPECT_EQ(std::stod(curve[i][3]), std::stod(curve[i][2]) / target.at(curve[i][0])) << i;
  }
  {
    // Bands: one row per seed, length, key and band; the page has a row per
    // band (in this order) and a column per length and key.
    SCOPED_TRACE("bands");
    const auto csv = csvOf("bands");
    expectTidy(csv, {"seed", "layer", "head", "digits", "key", "band", "contribution"},
               {"seed", "digits", "key", "band"});
    ASSERT_EQ(csv.size(), 1u + 2 * 2 * 3 * 7);  // seeds x lengths x keys x bands
    const std::vector<std::string> bands = {"fast", "mid", "slow", "row", "unrotated", "terms", "total"};
    const auto page = pageOf("bands", "### Band contributions");
    for (size_t i = 1; i < csv.size(); ++i) {
      const auto& r = csv[i];
      std::vector<std::vector<std::string>> of_seed;
      for (size_t j = 1; j < page.size(); ++j)
        if (page[j][0] == r[0]) of_seed.push_back(page[j]);
      const size_t band = static_cast<size_t>(std::find(bands.begin(), bands.end(), r[5]) - bands.begin());
      ASSERT_LT(band, of_seed.size()) << r[5];
      EXPECT_EQ(of_seed[band][column(page[0], r[3] + " digits: " + r[4])], shown(r[6], 3)) << i;
    }
    // The bands sum to the total (head_scores.h), which rounded cells would not.
    for (size_t i = 1; i + bands.size() - 1 < csv.size(); i += bands.size()) {
      double sum = 0;
      for (size_t b = 0; b + 1 < bands.size(); ++b) sum += std::stod(csv[i + b][6]);
      ASSERT_EQ(csv[i + bands.size() - 1][5], "total") << i;
      EXPECT_NEAR(sum, std::stod(csv[i + bands.size() - 1][6]), 1e-12) << i;
    }
  }
  {
    // Teacher-forced: the places CSV is the by_place rows with a wrong
    // decision; the page adds one "all other places" row per seed.
    SCOPED_TRACE("teacher_forced");
    const std::vector<std::string> place_columns = {"seed", "place", "decisions", "wrong", "separator_share"};
    const auto places = csvOf("teacher_forced"), every = csvOf("teacher_forced-by_place");
    expectTidy(places, place_columns, {"seed", "place"});
    expectTidy(every, place_columns, {"seed", "place"});
    std::vector<std::vector<std::string>> wrong = {every[0]};
    for (size_t i = 1; i < every.size(); ++i)
      if (std::stoi(every[i][3]) > 0) wrong.push_back(every[i]);
    EXPECT_EQ(places, wrong);
    const auto page = pageOf("teacher_forced", "### Wrong decisions by answer place");
    ASSERT_EQ(page.size(), places.size() + 2);  // one "all other places" row per seed
    size_t at = 1;
    for (size_t i = 1; i < page.size(); ++i) {
      if (page[i][1] == "all other places") continue;
      ASSERT_LT(at, places.size());
      const auto& r = places[at++];
      EXPECT_EQ(cells(page[i], 0, 4), cells(r, 0, 4));
      EXPECT_EQ(page[i][4], shown(r[4], 3));
    }
    const auto carry = csvOf("teacher_forced-carry");
    expectTidy(carry, {"seed", "carry_chain", "decisions", "wrong"}, {"seed", "carry_chain"});
    const auto carry_page = pageOf("teacher_forced", "### Errors by carry-chain length");
    EXPECT_EQ(cells(carry_page[0], 0, 1), cells(carry[0], 0, 1));
    EXPECT_EQ(std::vector(carry_page.begin() + 1, carry_page.end()), std::vector(carry.begin() + 1, carry.end()));

    // The summary names the lookup heads "L<layer>H<head>"; their attention
    // and the first errors are CSVs of their own, lists on the page.
    const auto summary = csvOf("teacher_forced-summary"), heads = csvOf("teacher_forced-lookup_heads"),
               first = csvOf("teacher_forced-first_error");
    expectTidy(summary,
               {"seed", "lookup_heads", "decisions", "wrong", "wrong_stops", "premature_stops", "wrong_answers",
                "wrong_length_answers"},
               {"seed"});
    expectTidy(heads, {"seed", "rank", "layer", "head", "target_share"}, {"seed", "rank"});
    expectTidy(first, {"seed", "place", "wrong_answers"}, {"seed", "place"});
    const auto summary_page = pageOf("teacher_forced", "### Summary");
    ASSERT_EQ(summary.size(), 3u);  // one row per seed
    ASSERT_EQ(summary_page.size(), summary.size());
    for (size_t i = 1; i < summary.size(); ++i) {
      const auto& r = summary[i];
      std::string words, listed, errors;
      int first_errors = 0;
      for (size_t j = 1; j < heads.size(); ++j)
        if (heads[j][0] == r[0]) {
          words += (words.empty() ? "" : " ") + ("L" + heads[j][2] + "H" + heads[j][3]);
          listed += (listed.empty() ? "" : ", ") +
                    (heads[j][2] + "." + heads[j][3] + " (" + shown(heads[j][4], 2) + ")");
        }
      for (size_t j = 1; j < first.size(); ++j)
        if (first[j][0] == r[0]) {
          errors += (errors.empty() ? "" : ", ") + (first[j][1] + ": " + first[j][2]);
          first_errors += std::stoi(first[j][2]);
        }
      EXPECT_EQ(r[1], words);
      EXPECT_EQ(summary_page[i][0], r[0]);
      EXPECT_EQ(summary_page[i][1], listed);
      EXPECT_EQ(cells(summary_page[i], 2, 8), cells(r, 2, 8));
      EXPECT_EQ(summary_page[i][8], errors.empty() ? "none" : errors);
      EXPECT_EQ(first_errors, std::stoi(r[6]));  // every wrong answer has a first error
    }
  }
  {
    // Stop: the stop head as two integer columns; the page's "layer.head"
    // and rounded numbers; the stop head's share is its by_head row's.
    SCOPED_TRACE("stop");
    const auto csv = csvOf("stop"), by_head = csvOf("stop-by_head"), far = csvOf("stop-far");
    expectTidy(csv,
               {"seed", "digits", "stop_decisions", "right", "p_eos", "stop_layer", "stop_head", "separator_share",
                "separator_logsumexp", "rest_logsumexp", "keys"},
               {"seed", "digits"});
    expectTidy(by_head,
               {"seed", "digits", "layer", "head", "separators", "operand_near", "operand_far", "answer", "other",
                "separator_logsumexp", "rest_logsumexp"},
               {"seed", "digits", "layer", "head"});
    expectTidy(far, {"seed", "digits", "stop_layer", "stop_head", "column_offset", "share"},
               {"seed", "digits", "column_offset"});
    const auto page = pageOf("stop", "### Stop decisions and the stop head");
    ASSERT_EQ(page.size(), csv.size());
    for (size_t i = 1; i < csv.size(); ++i) {
      const auto& r = csv[i];
      EXPECT_EQ(cells(page[i], 0, 4), cells(r, 0, 4));
      EXPECT_EQ(page[i][4], shown(r[4], 3));
      EXPECT_EQ(page[i][5], r[5] + "." + r[6]);
      EXPECT_EQ(page[i][6], shown(r[7], 3));
      EXPECT_EQ(page[i][7], shown(r[8], 2, 'f'));
      EXPECT_EQ(page[i][8], shown(r[9], 2, 'f'));
      EXPECT_EQ(page[i][9], shown(r[10], 1, 'f'));
      const auto own = std::find_if(by_head.begin() + 1, by_head.end(), [&](const auto& h) {
        return h[0] == r[0] && h[1] == r[1] && h[2] == r[5] && h[3] == r[6];
      });
      ASSERT_NE(own, by_head.end()) << i;
      EXPECT_EQ((*own)[4], r[7]);
      for (size_t j = 1; j < far.size(); ++j)
        if (far[j][0] == r[0] && far[j][1] == r[1]) {
          EXPECT_EQ(cells(far[j], 2, 4), cells(r, 5, 7)) << j;
        }
    }
    const auto head_page = pageOf("stop", "### Attention at the stop decision, every head");
    ASSERT_EQ(head_page.size(), by_head.size());
    for (size_t i = 1; i < by_head.size(); ++i) {
      const auto& r = by_head[i];
      EXPECT_EQ(cells(head_page[i], 0, 4), cells(r, 0, 4));
      for (size_t c = 4; c <= 8; ++c) EXPECT_EQ(head_page[i][c], shown(r[c], 3)) << i << " " << c;
      for (size_t c = 9; c <= 10; ++c) EXPECT_EQ(head_page[i][c], shown(r[c], 2, 'f')) << i << " " << c;
    }
  }
}

TEST_F(ProbeRun, SvgsParseAsXmlAndCarryTheirSeries) {
  ASSERT_EQ(run_status, 0);
  if (sh("python3 -c 'import xml' 2>/dev/null") != 0) GTEST_SKIP() << "python3 not installed";
  for (const std::string& p : kProbes) {
    SCOPED_TRACE(p);
    const fs::path svg = dir / "run" / "probes" / (p + ".svg");
    std::string cmd = "python3 -c 'import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); "
                      "g = [e for e in r.iter() if e.get(\"class\") == \"series\" and e.get(\"data-points\")]; "
                      "sys.exit(0 if g else 1)' '" + svg.string() + "'";
    EXPECT_EQ(sh(cmd), 0) << readFile(svg).substr(0, 400);
  }
}

TEST_F(ProbeRun, ProbeCommandRerunsOneProbeOnSavedCheckpoints) {
  ASSERT_EQ(run_status, 0);
  const fs::path run = dir / "run";
  const std::string reach_after_training = readFile(run / "probes" / "reach.csv");
  const std::string tf_after_training = readFile(run / "probes" / "teacher_forced.csv");
  fs::remove_all(run / "probes");
  ASSERT_EQ(runPosc("probe '" + (dir / "tiny.pos").string() + "' --from '" + run.string() + "' --probe kernel",
                 dir / "probe.log"), 0) << readFile(dir / "probe.log");
  EXPECT_TRUE(fs::exists(run / "probes" / "kernel.csv"));
  EXPECT_FALSE(fs::exists(run / "probes" / "reach.csv"));
  // Same checkpoints, same problems: the same numbers as after training.
  ASSERT_EQ(runPosc("probe '" + (dir / "tiny.pos").string() + "' --from '" + run.string() + "'", dir / "probe_all.log"), 0)
      << readFile(dir / "probe_all.log");
  for (const std::string& p : kProbes) EXPECT_TRUE(fs::exists(run / "probes" / (p + ".svg"))) << p;
  EXPECT_EQ(readFile(run / "probes" / "reach.csv"), reach_after_training);
  EXPECT_EQ(readFile(run / "probes" / "teacher_forced.csv"), tf_after_training);
}

TEST_F(ProbeRun, BadInputExitsWithTwoAndWritesNothing) {
  ASSERT_EQ(run_status, 0);
  const fs::path missing = dir / "no_such_run";
  EXPECT_EQ(runPosc("probe '" + (dir / "tiny.pos").string() + "' --from '" + missing.string() + "'", dir / "bad1.log"), 2);
  EXPECT_FALSE(fs::exists(missing));
  // A folder without checkpoints: nothing is written into it.
  fs::create_directories(dir / "empty_run");
  EXPECT_EQ(runPosc("probe '" + (dir / "tiny.pos").string() + "' --from '" + (dir / "empty_run").string() + "'",
                 dir / "bad2.log"), 2);
  EXPECT_NE(readFile(dir / "bad2.log").find("seed0/final.pt' not found"), std::string::npos) << readFile(dir / "bad2.log");
  EXPECT_FALSE(fs::exists(dir / "empty_run" / "probes"));
  EXPECT_EQ(runPosc("probe '" + (dir / "tiny.pos").string() + "' --from '" + (dir / "run").string() + "' --probe reech",
                 dir / "bad3.log"), 2);
  EXPECT_NE(readFile(dir / "bad3.log").find("declares no probe 'reech'"), std::string::npos);
  EXPECT_EQ(runPosc("report '" + (dir / "empty_run").string() + "'", dir / "bad4.log"), 2);
  EXPECT_FALSE(fs::exists(dir / "empty_run" / "report.html"));
}

// A probe call on the command line runs in place of the declared probe of its
// kind: on the same problems (so the same figures at a length both ask for),
// into the folder --out names, leaving the run's own probe files as they were.
// A bad call is an error located in the argument, and writes nothing.
TEST_F(ProbeRun, ProbeCallFromTheCommandLineRunsInPlaceOfTheDeclaredOne) {
  ASSERT_EQ(run_status, 0);
  const fs::path run = dir / "run", out = dir / "adhoc";
  const std::string probe = "probe '" + (dir / "tiny.pos").string() + "' --from '" + run.string() + "' ";
  const std::string declared = readFile(run / "probes" / "reach.csv");
  ASSERT_EQ(runPosc(probe + "--probe 'reach(lengths = [3, 4], problems = 10)' --out '" + out.string() + "'",
                    dir / "call.log"), 0) << readFile(dir / "call.log");
  EXPECT_EQ(readFile(run / "probes" / "reach.csv"), declared);
  const auto rows = parseCsv(readFile(out / "reach.csv")), declared_rows = parseCsv(declared);
  ASSERT_EQ(rows.size(), 1u + 2 * 2) << readFile(out / "reach.csv");  // seeds x lengths
  EXPECT_EQ(rows[0], declared_rows[0]);
  EXPECT_EQ(rows[1][1], "3");
  EXPECT_EQ(rows[2][1], "4");
  EXPECT_EQ(rows[1][3], "10");  // problems
  // Seed 0 at 3 digits: the declared probe's row, figure for figure.
  const auto three = std::find_if(declared_rows.begin(), declared_rows.end(),
                                  [](const auto& r) { return r[0] == "0" && r[1] == "3"; });
  ASSERT_NE(three, declared_rows.end());
  EXPECT_EQ(rows[1], *three);
  EXPECT_NE(readFile(out / "reach.md").find("accuracy at [3 4] digits"), std::string::npos) << readFile(out / "reach.md");
  EXPECT_FALSE(fs::exists(out / "stop.csv"));

  const fs::path bad = dir / "adhoc_bad";
  EXPECT_EQ(runPosc(probe + "--probe 'reach(lengths = [3], threshold = 2)' --out '" + bad.string() + "'",
                    dir / "call_bad1.log"), 2);
  const std::string log1 = readFile(dir / "call_bad1.log");
  EXPECT_NE(log1.find("--probe:1:"), std::string::npos) << log1;
  EXPECT_NE(log1.find("threshold"), std::string::npos) << log1;
  EXPECT_EQ(runPosc(probe + "--probe 'rech(lengths = [3])' --out '" + bad.string() + "'", dir / "call_bad2.log"), 2);
  const std::string log2 = readFile(dir / "call_bad2.log");
  EXPECT_NE(log2.find("--probe:1:1: error: unknown probe 'rech'"), std::string::npos) << log2;
  EXPECT_NE(log2.find("did you mean 'reach'?"), std::string::npos) << log2;
  EXPECT_EQ(runPosc(probe + "--probe 'reach(lengths = [3]' --out '" + bad.string() + "'", dir / "call_bad3.log"), 2);
  EXPECT_NE(readFile(dir / "call_bad3.log").find("--probe:1:"), std::string::npos) << readFile(dir / "call_bad3.log");
  EXPECT_FALSE(fs::exists(bad));
}

// The checkpoints would load into a plan with another rotation base (same
// shapes), and the probes would measure a model that was never trained.
TEST_F(ProbeRun, ProbingWithAnotherModelIsRefusedAndWritesNothing) {
  ASSERT_EQ(run_status, 0);
  const fs::path run = dir / "run";
  std::string other = kExperiment;
  const std::string rope = "use rope2d()";
  other.replace(other.find(rope), rope.size(), "use rope2d(base = 500)");
  std::ofstream(dir / "other.pos") << "import rope\n" << other;
  const std::string before = readFile(run / "probes" / "stop.csv");
  EXPECT_EQ(runPosc("probe '" + (dir / "other.pos").string() + "' --from '" + run.string() + "' --probe stop",
                    dir / "other.log"), 2);
  const std::string log = readFile(dir / "other.log");
  EXPECT_NE(log.find("was trained with another model than this plan"), std::string::npos) << log;
  EXPECT_NE(log.find("base 10000"), std::string::npos) << log;
  EXPECT_NE(log.find("base 500"), std::string::npos) << log;
  EXPECT_EQ(readFile(run / "probes" / "stop.csv"), before);
  // Another probes section, one seed of the two, and another file (so other
  // source locations in the dump) are no obstacle.
  std::string more = kExperiment;
  more.replace(more.find("stop(lengths = [3, 5], problems = 8)"), 36, "stop(lengths = [4], problems = 5)");
  std::ofstream(dir / "more.pos") << "import rope\n" << more;
  EXPECT_EQ(runPosc("probe '" + (dir / "more.pos").string() + "' --from '" + run.string() + "' --probe stop --seed 1",
                    dir / "more.log"), 0) << readFile(dir / "more.log");
}

TEST_F(ProbeRun, ReportIsOneSelfContainedPageThatRendersItsPlots) {
  ASSERT_EQ(run_status, 0);
  const fs::path run = dir / "run";
  ASSERT_EQ(runPosc("report '" + run.string() + "'", dir / "report.log"), 0) << readFile(dir / "report.log");
  const std::string html = readFile(run / "report.html");
  const std::string md = readFile(run / "report.md");
  // Training loss, learning rate and throughput plus one chart per probe,
  // inlined; nothing loaded from outside.
  size_t svgs = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) ++svgs;
  EXPECT_EQ(svgs, 3 + kProbes.size());
  for (const char* figure : {"training.svg", "training-lr.svg", "training-throughput.svg"})
    EXPECT_TRUE(fs::exists(run / figure)) << figure;
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  for (const char* part : {"## Plan", "## Training curve", "## Accuracy", "Reach: exact-match accuracy", "Kernel:",
                           "Fourier bands", "Sink share", "Teacher-forced decisions"})
    EXPECT_NE(md.find(part), std::string::npos) << part;
  EXPECT_NE(md.find("](probes/kernel.svg)"), std::string::npos);

  if (sh("command -v chromium >/dev/null 2>&1") != 0) GTEST_SKIP() << "chromium not installed (tools/setup.sh)";
  const fs::path png = dir / "report.png";
  fs::remove(png);
  sh("cd '" + dir.string() + "' && timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars "
     "--screenshot='" + png.string() + "' --window-size=1000,2400 'file://" + (run / "report.html").string() +
     "' >chromium.log 2>&1");
  ASSERT_TRUE(fs::exists(png)) << readFile(dir / "chromium.log");
  const std::string stats_file = (dir / "png_stats.txt").string();
  ASSERT_EQ(sh("python3 '" POSC_SOURCE_DIR "/tests/cli/png_stats.py' '" + png.string() + "' >'" + stats_file + "'"), 0);
  std::istringstream stats(readFile(stats_file));
  int width = 0, height = 0, palette = 0, colours = 0;
  double non_white = 0;
  stats >> width >> height >> non_white >> palette >> colours;
  EXPECT_EQ(width, 1000);
  EXPECT_EQ(height, 2400);
  EXPECT_GT(non_white, 0.02) << "the page is blank";
  EXPECT_GT(palette, 500) << "no plot colours on the page: the plots did not render";
  EXPECT_GT(colours, 20);
}

// The results files' columns are an interface (docs/results.md loads them
// in pandas by name): the header of every CSV and the keys of metrics.jsonl
// and status.json, against tests/golden/results/headers.txt
// (POSC_UPDATE_GOLDEN=1 rewrites it; a change there is a change for users).
TEST_F(ProbeRun, ResultFileHeadersAreStable) {
  ASSERT_EQ(run_status, 0) << readFile(dir / "run.log");
  const fs::path run = dir / "run";
  std::vector<std::string> files = {"accuracy.csv"};
  for (const auto& e : fs::directory_iterator(run / "probes"))
    if (e.path().extension() == ".csv") files.push_back("probes/" + e.path().filename().string());
  std::sort(files.begin() + 1, files.end());
  std::string actual;
  auto firstLine = [](const std::string& text) { return text.substr(0, text.find('\n')); };
  for (const std::string& f : files) actual += f + ": " + firstLine(readFile(run / f)) + "\n";
  // JSON keys in order of appearance, "a.b" for nested objects.
  auto keys = [](const std::string& json) {
    std::string out, prefix;
    std::vector<std::string> stack;
    for (size_t i = 0; i < json.size(); ++i) {
      if (json[i] == '}') {
        if (!stack.empty()) stack.pop_back();
        continue;
      }
      if (json[i] != '"') continue;
      const size_t end = json.find('"', i + 1);
      const std::string word = json.substr(i + 1, end - i - 1);
      size_t after = json.find_first_not_of(' ', end + 1);
      i = end;
      if (after == std::string::npos || json[after] != ':') continue;  // a string value
      std::string name;
      for (const std::string& s : stack) name += s + ".";
      out += (out.empty() ? "" : ", ") + name + word;
      const size_t value = json.find_first_not_of(' ', after + 1);
      if (value != std::string::npos && json[value] == '{') {
        stack.push_back(word);
        i = value;
      }
    }
    return out;
  };
  actual += "metrics.jsonl (a training line): " + keys(firstLine(readFile(run / "metrics.jsonl"))) + "\n";
  actual += "status.json: " + keys(readFile(run / "status.json")) + "\n";
  const fs::path golden = fs::path(POSC_SOURCE_DIR) / "tests/golden/results/headers.txt";
  if (std::getenv("POSC_UPDATE_GOLDEN")) {
    fs::create_directories(golden.parent_path());
    std::ofstream(golden) << actual;
    return;
  }
  ASSERT_TRUE(fs::exists(golden)) << "missing " << golden << " (run with POSC_UPDATE_GOLDEN=1)\n" << actual;
  EXPECT_EQ(readFile(golden), actual);
}
