// posc report RUN_DIR: one page (report.md and a self-contained report.html)
// with the plan, the training curve, the accuracy table and every probe.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "runtime/report/report.h"
#include "tools/posc/cli.h"

namespace posc::cli {
namespace {

const char* kReportHelp = R"(usage: posc report RUN_DIR

Assembles RUN_DIR/report.md and RUN_DIR/report.html (self-contained: the SVG
plots are inlined) from the results folder: plan.txt, the training curve from
metrics.jsonl (also written as training.svg), summary.md and probes/*.
)";

int runReport(const std::vector<std::string>& args) {
  std::vector<std::string> dirs;
  for (const std::string& a : args) {
    if (a == "-h" || a == "--help") {
      std::fputs(kReportHelp, stdout);
      return 0;
    }
    if (a.rfind("-", 0) == 0) throw UsageError{fmt::format("posc report: unknown option '{}'", a)};
    dirs.push_back(a);
  }
  if (dirs.size() != 1) throw UsageError{"posc report needs exactly one RUN_DIR"};
  try {
    const report::Report r = report::buildReport(dirs[0]);
    report::writeReport(dirs[0], r);
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "posc: error: %s\n", e.what());
    return 2;
  }
  std::fprintf(stderr, "report in %s\n", (std::filesystem::path(dirs[0]) / "report.html").string().c_str());
  return 0;
}

const CommandRegistration reg{{"report", "posc report RUN_DIR",
                               "one page (Markdown and HTML) with plan, training curve, accuracy and probes", 50,
                               false, runReport}};

}  // namespace
}  // namespace posc::cli
