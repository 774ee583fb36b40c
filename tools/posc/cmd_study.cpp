// posc study FILE...: every experiment x seed of a study, one process per run
// on every core, warm starts after the runs they start from, finished runs
// skipped; then the comparison page of all of them.
#include <fmt/format.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "runtime/report/comparison.h"
#include "runtime/report/report.h"
#include "runtime/results/atomic_file.h"
#include "runtime/train/run_experiment.h"
#include "runtime/study/executor.h"
#include "runtime/study/jobs.h"
#include "tools/posc/cli.h"

namespace posc::cli {
namespace {

namespace fs = std::filesystem;

const char* kStudyHelp = R"(usage: posc study FILE... [options]

Runs every experiment of the given files for every seed, one `posc run`
process per (experiment, seed) with one thread each, as many at once as
there are cores, and writes the comparison page of all of them.

  OUT/seed<N>/<experiment>[-<preset>]/   each run's results folder (run.log,
                                         job.json when it ends)
  OUT/comparison.{md,html,csv}, reach.svg

A run that warm-starts from another experiment of the study (train.init_from)
starts after that run of the same seed has finished. A run whose job.json
says it finished with the same plan (settings, seed, the run it starts from)
is skipped, so the same command continues an interrupted study. A failed run
is reported and only the runs that start from it are left out.

options:
  --preset NAME       apply this preset to every experiment (e.g. mini)
  --set KEY=VALUE     override a setting in every experiment (repeatable)
  --seeds LIST        seeds, e.g. 0,1,2 (default: each experiment's train.seeds)
  --out DIR           the study folder (default: runs/study[-PRESET])
  --jobs N            runs at once (default: the number of cores; 1 with --device cuda)
  --device cpu|cuda   where each run trains (passed to posc run)
  --jit on|off        passed to posc run
  --force             run finished runs again
  --list              print the jobs in order with their state; run nothing
)";

std::vector<uint64_t> parseSeeds(const std::string& text) {
  std::vector<uint64_t> seeds;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) seeds.push_back(static_cast<uint64_t>(parseCount("--seeds", item)));
  if (seeds.empty()) throw UsageError{"--seeds needs a list such as 0,1,2"};
  return seeds;
}

std::string selfPath() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "posc";
}

// "10d 100.0% 20d 43.3%" (documents: "128t 97.0% ..."): a finished run's accuracy per length.
std::string accuracyLine(const report::RunSummary& run) {
  std::string line;
  const char* unit = run.unit == "tokens" ? "t" : "d";
  for (const auto& r : run.records) line += fmt::format(" {}{} {:.1f}%", r.digits, unit, 100.0 * r.accuracy());
  return line;
}

int runStudy(const std::vector<std::string>& args) {
  std::string out;
  int slots = 0;
  bool force = false, list = false;
  std::vector<std::string> run_flags;  // passed to every posc run
  std::optional<std::vector<uint64_t>> seeds;
  ExperimentOptions o = parseExperimentOptions(args, [&](const std::string& flag, const auto& value) {
    if (flag == "--out") out = value();
    else if (flag == "--jobs") slots = parseCount("--jobs", value());
    else if (flag == "--seeds") seeds = parseSeeds(value());
    else if (flag == "--force") force = true;
    else if (flag == "--list") list = true;
    else if (flag == "--device" || flag == "--jit") {
      const std::string v = value();
      if (flag == "--device" ? v != "cpu" && v != "cuda" : v != "on" && v != "off")
        throw UsageError{fmt::format("{} does not take '{}'", flag, v)};
      run_flags.insert(run_flags.end(), {flag, v});
      if (flag == "--device" && v == "cuda" && slots == 0) slots = 1;
    }
    else return false;
    return true;
  });
  if (o.help) {
    std::fputs(kStudyHelp, stdout);
    return 0;
  }
  if (o.files.empty()) throw UsageError{"posc study needs at least one FILE"};
  if (o.request.experiment) throw UsageError{"posc study runs the last experiment of each FILE; --experiment does not apply"};
  for (const auto& ov : o.request.overrides)
    if (ov.key == "train.seeds")
      throw UsageError{"posc study: give seeds with --seeds LIST (each run is one seed)"};

  study::StudyRequest request;
  request.files = o.files;
  request.preset = o.request.preset;
  request.overrides = o.request.overrides;
  request.seeds = seeds;
  request.out = out.empty() ? fs::path("runs") / (o.request.preset ? "study-" + *o.request.preset : "study") : fs::path(out);
  request.posc_binary = selfPath();
  // The cores shared out among the runs at once: with one run per core (the
  // default), each trains on one thread.
  const int cores = runtime::availableCores();
  run_flags.insert(run_flags.end(), {"--threads", std::to_string(std::max(1, cores / (slots > 0 ? slots : cores)))});
  request.placement = run_flags;

  std::vector<study::Job> jobs;
  try {
    std::string diagnostics;
    auto expanded = study::expandStudy(request, diagnostics, colorOutput());
    if (!expanded) {
      std::fputs(diagnostics.c_str(), stderr);
      return 2;
    }
    jobs = std::move(*expanded);
  } catch (const study::StudyError& e) {
    std::fprintf(stderr, "posc: error: %s\n", e.what());
    return 2;
  }

  if (list) {
    for (size_t i = 0; i < jobs.size(); ++i) {
      const study::Job& j = jobs[i];
      std::printf("%-40s %-22s %s%s\n", j.label().c_str(), study::describe(study::jobState(j)), j.out_dir.c_str(),
                  j.after ? fmt::format("  (after {})", jobs[*j.after].label()).c_str() : "");
    }
    return 0;
  }

  std::fprintf(stderr, "study: %zu runs into %s\n", jobs.size(), request.out.c_str());
  study::ExecuteOptions eo;
  eo.slots = slots;
  eo.force = force;
  eo.log = [](const std::string& line) {
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  };
  const std::vector<study::JobOutcome> outcomes = study::executeLocally(jobs, eo);

  // The comparison of every run that has results, in the study's order.
  std::vector<report::RunSummary> runs;
  int failed = 0, not_run = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const auto kind = outcomes[i].kind;
    if (kind == study::JobOutcome::Kind::Failed) ++failed;
    if (kind == study::JobOutcome::Kind::NotRun) ++not_run;
    if (kind != study::JobOutcome::Kind::Ran && kind != study::JobOutcome::Kind::Skipped) continue;
    try {
      for (report::RunSummary& r : report::readRun(jobs[i].out_dir)) {
        runs.push_back(std::move(r));
        std::fprintf(stderr, "  %-40s%s\n", runs.back().variant.c_str(), accuracyLine(runs.back()).c_str());
      }
      report::writeReport(jobs[i].out_dir, report::buildReport(jobs[i].out_dir));
    } catch (const std::runtime_error& e) {
      std::fprintf(stderr, "posc: warning: %s\n", e.what());
    }
  }
  if (!runs.empty()) {
    try {
      report::writeComparison(request.out, report::buildComparison(runs, request.out, "Study " + request.out.filename().string()));
      std::fprintf(stderr, "comparison in %s\n", (request.out / "comparison.html").c_str());
    } catch (const std::runtime_error& e) {
      std::fprintf(stderr, "posc: error: %s\n", e.what());
      return 1;
    }
  }
  if (failed || not_run) {
    std::fprintf(stderr, "posc: %d of %zu runs failed, %d not run (their warm start failed)\n", failed, jobs.size(),
                 not_run);
    return 1;
  }
  return 0;
}

const CommandRegistration reg{{"study", "posc study FILE... [--preset P] [--seeds 0,1,2] [--jobs N]",
                               "every experiment x seed, one process per run on every core; comparison page", 35,
                               false, runStudy}};

}  // namespace
}  // namespace posc::cli
