// `posc study` end to end on tiny settings: two variants (a run and its warm
// start) x two seeds in parallel processes, each run in its own folder; the
// comparison page's table equals the runs' accuracy.csv files, its chart has
// one series per variant; a second call skips every finished run, and one
// with another test length evaluates them again without training; headless
// Chromium renders the page with the table and the chart.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>

#include "tests/common/files.h"
#include "tests/common/run_posc.h"

namespace fs = std::filesystem;
using posc::testing::readFile;

namespace {

using posc::testing::sh;

int runPosc(const std::string& args, const fs::path& log) { return posc::testing::runPoscLogged(args, log); }

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

// variant -> digits -> seed -> accuracy (%), from the runs' own accuracy.csv files.
using Measured = std::map<std::string, std::map<int, std::map<int, double>>>;

Measured readRuns(const fs::path& study) {
  Measured m;
  for (int seed : {0, 1})
    for (const char* variant : {"rope2d_decay-small", "rope2d_decay_sink-small"}) {
      std::istringstream in(readFile(study / ("seed" + std::to_string(seed)) / variant / "accuracy.csv"));
      std::string line;
      std::getline(in, line);
      EXPECT_EQ(line, "seed,digits,correct,total,accuracy");
      while (std::getline(in, line)) {
        int s = 0, digits = 0, correct = 0, total = 0;
        EXPECT_EQ(std::sscanf(line.c_str(), "%d,%d,%d,%d", &s, &digits, &correct, &total), 4) << line;
        if (total <= 0) continue;
        EXPECT_EQ(s, seed);
        m[variant][digits][s] = 100.0 * correct / total;
      }
    }
  return m;
}

const char* kTiny =
    "examples/addition/rope2d_decay_sink.pos examples/addition/rope2d_decay.pos --preset small --seeds 0,1 "
    "--jobs 2 --set train.steps=12 --set model.width=16 --set 'task.test_digits=[2,4]' "
    "--set task.problems_per_length=12 ";

TEST(StudyCli, RunsEveryVariantAndSeedThenWritesTheComparisonPage) {
  const fs::path study = fs::path(::testing::TempDir()) / "study_tiny";
  fs::remove_all(study);
  const fs::path log = fs::path(::testing::TempDir()) / "study.log";
  ASSERT_EQ(runPosc(std::string("study ") + kTiny + "--out '" + study.string() + "'", log), 0) << readFile(log);
  const std::string first = readFile(log);
  EXPECT_EQ(count(first, "] done "), 4u) << first;
  // Each warm start started after its source had finished.
  for (int seed : {0, 1}) {
    const std::string seed_s = std::to_string(seed);
    const size_t source_done = first.find("done     rope2d_decay-small seed " + seed_s);
    const size_t sink_start = first.find("started  rope2d_decay_sink-small seed " + seed_s);
    ASSERT_NE(source_done, std::string::npos);
    ASSERT_NE(sink_start, std::string::npos);
    EXPECT_LT(source_done, sink_start);
    EXPECT_NE(readFile(study / ("seed" + seed_s) / "rope2d_decay_sink-small" / "run.log").find("warm start"),
              std::string::npos);
  }

  // The comparison's cells are the mean, min and max of the runs' accuracy.csv.
  const Measured measured = readRuns(study);
  // One row per variant and length: its identity as columns, a column per
  // setting the runs were given, accuracy as a fraction (accuracy.csv's unit).
  const auto csv = posc::testing::readCsv(study / "comparison.csv");
  ASSERT_FALSE(csv.empty());
  const std::vector<std::string>& header = csv[0];
  EXPECT_EQ(header, (std::vector<std::string>{"variant", "experiment", "preset", "train.steps", "model.width",
                                              "task.test_digits", "task.problems_per_length", "digits", "seeds",
                                              "mean", "min", "max", "published_mean"}));
  auto cell = [&](size_t row, const char* name) { return csv[row][posc::testing::csvColumn(header, name)]; };
  int rows = 0;
  for (size_t i = 1; i < csv.size(); ++i) {
    ASSERT_EQ(csv[i].size(), header.size());
    const std::string variant = cell(i, "variant");
    EXPECT_EQ(variant, cell(i, "experiment") + "-small");
    EXPECT_EQ(cell(i, "preset"), "small");
    EXPECT_EQ(cell(i, "train.steps"), "12");
    EXPECT_EQ(cell(i, "task.test_digits"), "[2,4]");
    const int digits = std::stoi(cell(i, "digits"));
    const auto& by_seed = measured.at(variant).at(digits);
    double sum = 0, mn = 1e9, mx = -1e9;
    for (const auto& [_, v] : by_seed) {
      sum += v;
      mn = std::min(mn, v);
      mx = std::max(mx, v);
    }
    EXPECT_EQ(cell(i, "seeds"), "2");
    EXPECT_NEAR(std::stod(cell(i, "mean")), sum / by_seed.size() / 100.0, 1e-12) << variant;
    EXPECT_NEAR(std::stod(cell(i, "min")), mn / 100.0, 1e-12) << variant;
    EXPECT_NEAR(std::stod(cell(i, "max")), mx / 100.0, 1e-12) << variant;
    ++rows;
  }
  EXPECT_EQ(rows, 4);  // 2 variants x 2 lengths

  const std::string svg = readFile(study / "reach.svg");
  EXPECT_EQ(count(svg, "class=\"series\""), 2u);
  EXPECT_EQ(count(svg, "data-name=\"rope2d_decay-small\""), 1u);
  EXPECT_EQ(count(svg, "data-name=\"rope2d_decay_sink-small\""), 1u);
  EXPECT_EQ(count(svg, "class=\"band\""), 2u);
  // The loss overlay: one line per variant, the mean over its two seeds.
  const std::string loss = readFile(study / "loss.svg");
  EXPECT_EQ(count(loss, "class=\"series\""), 2u);
  EXPECT_EQ(count(loss, "data-name=\"rope2d_decay-small (2 seeds)\""), 1u) << loss;
  const std::string md = readFile(study / "comparison.md");
  EXPECT_NE(md.find("![training loss](loss.svg)"), std::string::npos);
  EXPECT_NE(md.find("](seed0/rope2d_decay-small/report.html)"), std::string::npos) << md;
  EXPECT_TRUE(fs::exists(study / "seed1" / "rope2d_decay_sink-small" / "report.html"));

  // Again: every run is finished with the same plan, so nothing trains.
  ASSERT_EQ(runPosc(std::string("study ") + kTiny + "--out '" + study.string() + "'", log), 0) << readFile(log);
  const std::string second = readFile(log);
  EXPECT_EQ(count(second, "] skipped "), 4u) << second;
  EXPECT_EQ(count(second, "] started "), 0u) << second;
  // --list shows them done, in order.
  ASSERT_EQ(runPosc(std::string("study ") + kTiny + "--list --out '" + study.string() + "'", log), 0);
  const std::string listing = readFile(log);
  EXPECT_EQ(count(listing, " done "), 4u) << listing;
  EXPECT_LT(listing.find("rope2d_decay-small seed 0"), listing.find("rope2d_decay_sink-small seed 0"));

  // `posc report` on the study folder rebuilds the same table.
  const std::string before = readFile(study / "comparison.csv");
  ASSERT_EQ(runPosc("report '" + study.string() + "'", log), 0) << readFile(log);
  EXPECT_EQ(readFile(study / "comparison.csv"), before);

  // Headless Chromium: the rendered table holds the measured means, the chart is drawn.
  if (sh("command -v chromium >/dev/null 2>&1") != 0) GTEST_SKIP() << "chromium not installed (tools/setup.sh)";
  const std::string flags =
      "--headless --no-sandbox --disable-gpu --hide-scrollbars --disable-background-networking "
      "--disable-component-update --no-first-run ";
  const fs::path dom = study / "dom.html", png = study / "page.png";
  sh("cd '" + study.string() + "' && timeout 120 chromium " + flags + "--dump-dom 'file://" +
     (study / "comparison.html").string() + "' >'" + dom.string() + "' 2>chromium.log");
  const std::string rendered = readFile(dom);
  ASSERT_NE(rendered.find("<table>"), std::string::npos) << readFile(study / "chromium.log");
  std::smatch m;
  std::string rest = rendered;
  std::map<std::string, std::vector<std::string>> cells;  // variant -> its cells
  static const std::regex row_re(R"(<tr><td>([^<]+)</td>((?:<td>.*?</td>)+)</tr>)");
  while (std::regex_search(rest, m, row_re)) {
    std::string tds = m[2];
    static const std::regex td_re(R"(<td>(.*?)</td>)");
    for (std::sregex_iterator it(tds.begin(), tds.end(), td_re), end; it != end; ++it) cells[m[1]].push_back((*it)[1]);
    rest = m.suffix();
  }
  ASSERT_EQ(cells.size(), 2u) << rendered;
  for (const auto& [variant, row] : cells) {
    ASSERT_GE(row.size(), 3u);
    EXPECT_EQ(row[0], "2");  // seeds
    int column = 1;
    for (const auto& [digits, by_seed] : measured.at(variant)) {
      double sum = 0;
      for (const auto& [_, v] : by_seed) sum += v;
      char mean[32];
      std::snprintf(mean, sizeof mean, "%.1f", sum / by_seed.size());
      EXPECT_EQ(row[column].rfind(mean, 0), 0u) << variant << " at " << digits << ": " << row[column];
      ++column;
    }
  }
  EXPECT_EQ(count(rendered, "class=\"series\""), 4u);  // reach and loss, a line per variant each

  sh("cd '" + study.string() + "' && timeout 120 chromium " + flags + "--screenshot='" + png.string() +
     "' --window-size=1000,1400 'file://" + (study / "comparison.html").string() + "' >>chromium.log 2>&1");
  ASSERT_TRUE(fs::exists(png)) << readFile(study / "chromium.log");
  const std::string stats_file = (study / "png_stats.txt").string();
  ASSERT_EQ(sh("python3 '" POSC_SOURCE_DIR "/tests/cli/png_stats.py' '" + png.string() + "' >'" + stats_file + "'"), 0);
  std::istringstream stats(readFile(stats_file));
  int width = 0, height = 0, palette = 0, colours = 0;
  double non_white = 0;
  stats >> width >> height >> non_white >> palette >> colours;
  EXPECT_GT(non_white, 0.02) << "the page is blank";
  EXPECT_GT(palette, 200) << "no plot colours on the page: the chart did not render";
}

TEST(StudyCli, BadInputExitsWithTwoAndRunsNothing) {
  const fs::path study = fs::path(::testing::TempDir()) / "study_bad";
  fs::remove_all(study);
  const fs::path log = fs::path(::testing::TempDir()) / "study_bad.log";
  // A warm start whose source is not in the study.
  EXPECT_EQ(runPosc("study examples/addition/rope2d_decay_sink.pos --preset small --out '" + study.string() + "'", log), 2);
  EXPECT_NE(readFile(log).find("add its file to the study"), std::string::npos) << readFile(log);
  EXPECT_FALSE(fs::exists(study));
  // A bad setting: the located diagnostic, nothing run.
  EXPECT_EQ(runPosc("study examples/addition/rope2d.pos --preset small --set model.layers=0 --out '" + study.string() + "'",
                    log),
            2);
  EXPECT_FALSE(fs::exists(study));
  EXPECT_EQ(runPosc("study --seeds x examples/addition/rope2d.pos", log), 2);
}

// A study run again with another test length: every finished run keeps its
// trained weights and is evaluated again, the warm start's too (its source
// was not trained again); a changed training setting trains again.
TEST(StudyCli, AnotherTestLengthEvaluatesAgainWithoutTraining) {
  const fs::path study = fs::path(::testing::TempDir()) / "study_reevaluate";
  fs::remove_all(study);
  const fs::path log = fs::path(::testing::TempDir()) / "study_reevaluate.log";
  const std::string files =
      "study examples/addition/rope2d_decay_sink.pos examples/addition/rope2d_decay.pos --preset small --seeds 0 "
      "--jobs 1 --set train.steps=12 --set model.width=16 --set task.problems_per_length=12 --out '" +
      study.string() + "' ";
  ASSERT_EQ(runPosc(files + "--set 'task.test_digits=[2]'", log), 0) << readFile(log);
  const fs::path sink = study / "seed0" / "rope2d_decay_sink-small", decay = study / "seed0" / "rope2d_decay-small";
  const std::string sink_weights = readFile(sink / "seed0" / "final.pt");
  const std::string decay_weights = readFile(decay / "seed0" / "final.pt");
  ASSERT_FALSE(sink_weights.empty());

  ASSERT_EQ(runPosc(files + "--set 'task.test_digits=[2,3]'", log), 0) << readFile(log);
  const std::string again = readFile(log);
  EXPECT_EQ(count(again, "] evaluating again "), 2u) << again;
  EXPECT_EQ(count(again, "] started "), 0u) << again;
  EXPECT_EQ(readFile(sink / "seed0" / "final.pt"), sink_weights);
  EXPECT_EQ(readFile(decay / "seed0" / "final.pt"), decay_weights);
  for (const fs::path& run : {sink, decay}) {
    EXPECT_NE(readFile(run / "accuracy.csv").find("\n0,3,"), std::string::npos) << readFile(run / "accuracy.csv");
    EXPECT_NE(readFile(run / "run.log").find("only its evaluation or probes changed"), std::string::npos);
  }
  EXPECT_NE(readFile(study / "comparison.csv").find(",3,"), std::string::npos) << readFile(study / "comparison.csv");
  // Then nothing is left to do.
  ASSERT_EQ(runPosc(files + "--set 'task.test_digits=[2,3]'", log), 0) << readFile(log);
  EXPECT_EQ(count(readFile(log), "] skipped "), 2u) << readFile(log);

  // Another learning rate for the source: both train again.
  ASSERT_EQ(runPosc(files + "--set 'task.test_digits=[2,3]' --set train.lr=1e-4", log), 0) << readFile(log);
  EXPECT_EQ(count(readFile(log), "] started  "), 2u) << readFile(log);
  EXPECT_NE(readFile(sink / "seed0" / "final.pt"), sink_weights);
}

// `--only` (as a Slurm task runs one job) on a job whose folder holds an
// unfinished run of another plan with a resume point: the run is kept, not
// started over, and the call does not report success.
TEST(StudyCli, OnlyAJobKeptForItsTrainedWeightsIsNotASuccess) {
  const fs::path study = fs::path(::testing::TempDir()) / "study_only_kept";
  fs::remove_all(study);
  const fs::path run = study / "seed0" / "rope2d-small";
  fs::create_directories(run / "seed0");
  posc::testing::writeFile(run / "job.json",
                           R"({"experiment":"rope2d","preset":"small","seed":0,"plan_hash":"ffffffffffffffff",)"
                           R"("status":"interrupted","exit":143,"wall_s":60.0})"
                           "\n");
  posc::testing::writeFile(run / "status.json",
                           R"({"state":"interrupted","pid":1,"plan_hash":"ffffffffffffffff","seeds_done":[],)"
                           R"("metrics_lines":0,"seed":0,"step":2000,"message":""})"
                           "\n");
  posc::testing::writeFile(run / "seed0" / "resume.pt", "weights\n");
  const fs::path log = fs::path(::testing::TempDir()) / "study_only_kept.log";
  EXPECT_EQ(runPosc("study examples/addition/rope2d.pos --preset small --seeds 0 --only seed0/rope2d-small --out '" +
                        study.string() + "'",
                    log),
            1)
      << readFile(log);
  EXPECT_NE(readFile(log).find("not run  rope2d-small seed 0"), std::string::npos) << readFile(log);
  EXPECT_EQ(readFile(run / "seed0" / "resume.pt"), "weights\n");
  EXPECT_FALSE(fs::exists(run / "run.log"));
  // --list shows the kept run's own state beside the job's.
  const posc::testing::PoscResult list = posc::testing::runPosc(
      "study examples/addition/rope2d.pos --preset small --seeds 0 --list --out '" + study.string() + "'");
  EXPECT_EQ(list.status, 0) << list.err;
  EXPECT_NE(list.out.find("stale (plan or warm-start file changed)"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("its run: interrupted at seed 0, step 2000"), std::string::npos) << list.out;
}

}  // namespace
