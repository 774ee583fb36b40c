// posc report RUN_DIR: one page (report.md and a self-contained report.html)
// with the plan, the training curve, the accuracy table and every probe.
// posc report DIR... (several runs, or a study folder): the comparison page.
#include <fmt/format.h>

#include <cstdio>
#include <algorithm>
#include <filesystem>

#include "runtime/report/comparison.h"
#include "runtime/report/report.h"
#include "tools/posc/cli.h"

namespace posc::cli {
namespace {

namespace fs = std::filesystem;

const char* kReportHelp = R"(usage: posc report RUN_DIR
       posc report DIR... [--out PAGE_DIR]

With one results folder: assembles RUN_DIR/report.md and RUN_DIR/report.html
(self-contained: the SVG plots are inlined) from plan.txt, the training curves
from metrics.jsonl (loss, learning rate, throughput and, where the run
evaluated during training, accuracy; also written as training*.svg),
summary.md and probes/*.

With several results folders, or a folder holding runs (a `posc study`
folder): the comparison page, variants as rows and test lengths as columns
(mean and min-max over seeds, the published figures beside them), a reach
chart with one line and band per variant, and links to each run's report
(written too): PAGE_DIR/comparison.{md,html,csv}, reach.svg and loss.svg
(each variant's training loss, the mean over its seeds). PAGE_DIR
defaults to the folder given when there is one.
)";

bool isRunFolder(const fs::path& dir) { return fs::exists(dir / "plan.txt"); }

int runReport(const std::vector<std::string>& args) {
  std::vector<fs::path> dirs;
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kReportHelp, stdout);
      return 0;
    }
    if (a == "--out" || a.rfind("--out=", 0) == 0) {
      if (a == "--out" && i + 1 >= args.size()) throw UsageError{"--out needs a value"};
      out = a == "--out" ? args[++i] : a.substr(6);
      continue;
    }
    if (a.rfind("-", 0) == 0) throw UsageError{fmt::format("posc report: unknown option '{}'", a)};
    dirs.emplace_back(a);
  }
  if (dirs.empty()) throw UsageError{"posc report needs a RUN_DIR (or several, or a study folder)"};
  try {
    if (dirs.size() == 1 && isRunFolder(dirs[0]) && out.empty()) {
      report::writeReport(dirs[0], report::buildReport(dirs[0]));
      std::fprintf(stderr, "report in %s\n", (dirs[0] / "report.html").string().c_str());
      return 0;
    }
    if (out.empty() && dirs.size() > 1)
      throw UsageError{"posc report: several folders need --out PAGE_DIR for the comparison page"};
    const fs::path page_dir = out.empty() ? dirs[0] : fs::path(out);
    std::error_code ec;
    const fs::path resolved = fs::weakly_canonical(fs::absolute(page_dir, ec), ec);
    if (!ec && resolved == resolved.root_path())
      throw UsageError{fmt::format("the comparison page would be written into '{}', the root of the file system; "
                                   "give --out PAGE_DIR",
                                   page_dir.string())};
    const std::vector<report::RunSummary> runs = report::collectRuns(dirs);
    std::vector<fs::path> written;  // a document run is one summary per task, one report
    for (const report::RunSummary& run : runs) {
      if (std::find(written.begin(), written.end(), run.dir) != written.end()) continue;
      report::writeReport(run.dir, report::buildReport(run.dir));
      written.push_back(run.dir);
    }
    std::string title = "Comparison";
    if (dirs.size() == 1) {
      fs::path p = dirs[0].lexically_normal();
      if (p.filename().empty()) p = p.parent_path();
      title += " of " + p.filename().string();
    }
    report::writeComparison(page_dir, report::buildComparison(runs, page_dir, title));
    std::fprintf(stderr, "comparison of %zu runs in %s\n", written.size(), (page_dir / "comparison.html").string().c_str());
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "posc: error: %s\n", e.what());
    return 2;
  }
  return 0;
}

const CommandRegistration reg{{"report", "posc report RUN_DIR | DIR... [--out PAGE_DIR]",
                               "one run's page, or the comparison page of several runs or a study", 50, false,
                               runReport}};

}  // namespace
}  // namespace posc::cli
