// Probes and reports through the command line, on a tiny model trained for a
// few steps: the declared probes run after training and write CSV, Markdown
// and SVG; the Markdown tables hold exactly the CSV cells; the SVGs parse as
// XML and carry their series; `posc probe` reruns one probe on the saved
// checkpoints; bad input exits with 2 and writes nothing; `posc report`
// writes a self-contained HTML page, which headless Chromium renders with
// the plots visible.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
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
  // Every Markdown table is its CSV, cell for cell (but reach's, whose CSV is
  // the tidy form: checked below).
  const std::vector<std::pair<std::string, std::string>> tables = {
      {"sink_share", "### Mean separator share"},
      {"kernel", "### Kernel summary"},            {"bands", "### Band contributions"},
      {"teacher_forced", "### Wrong decisions by answer place"},
      {"stop", "### Stop decisions and the stop head"}};
  for (const auto& [p, heading] : tables) {
    SCOPED_TRACE(p);
    auto csv = parseCsv(readFile(dir / "run" / "probes" / (p + ".csv")));
    auto md = markdownTable(readFile(dir / "run" / "probes" / (p + ".md")), heading);
    ASSERT_GE(csv.size(), 2u);
    EXPECT_EQ(md, csv);
  }
  {
    auto md = readFile(dir / "run" / "probes" / "teacher_forced.md");
    auto csv = parseCsv(readFile(dir / "run" / "probes" / "teacher_forced-summary.csv"));
    EXPECT_EQ(markdownTable(md, "### Summary"), csv);
    // Two seeds, so one summary row each.
    EXPECT_EQ(csv.size(), 3u);
  }
  {
    // Stop: one row per seed and length, 8 decisions each, a share in [0, 1];
    // every head's groups sum to 1 (no null slot here).
    auto stop = parseCsv(readFile(dir / "run" / "probes" / "stop.csv"));
    ASSERT_EQ(stop.size(), 5u);
    for (size_t i = 1; i < stop.size(); ++i) {
      EXPECT_EQ(stop[i][2], "8");
      EXPECT_LE(std::stoi(stop[i][3]), 8);
      EXPECT_GE(std::stod(stop[i][6]), 0.0);
      EXPECT_LE(std::stod(stop[i][6]), 1.0);
    }
    auto heads = parseCsv(readFile(dir / "run" / "probes" / "stop-by_head.csv"));
    ASSERT_EQ(heads.size(), 1u + 2 * 2 * 2);  // seeds x lengths x heads
    for (size_t i = 1; i < heads.size(); ++i) {
      double sum = 0;
      for (size_t c = 4; c <= 8; ++c) sum += std::stod(heads[i][c]);
      EXPECT_NEAR(sum, 1.0, 5e-3) << i;  // five cells rounded to 3 significant digits
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
