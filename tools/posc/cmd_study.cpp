// posc study FILE...: every experiment x seed (x grid point) of a study, one
// process per run on every core or one Slurm array task per run, warm starts
// after the runs they start from, finished runs skipped; then the comparison
// page of all of them.
#include <fmt/format.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <algorithm>
#include <map>

#include "runtime/model/device.h"
#include "runtime/report/comparison.h"
#include "runtime/report/report.h"
#include "runtime/results/atomic_file.h"
#include "runtime/results/run_folder.h"
#include "runtime/run/run_experiment.h"
#include "runtime/study/executor.h"
#include "runtime/study/jobs.h"
#include "runtime/study/slurm.h"
#include "runtime/study/stop_signals.h"
#include "tools/posc/cli.h"

namespace posc::cli {
namespace {

namespace fs = std::filesystem;

const char* kStudyHelp = R"(usage: posc study FILE... [options]

Runs every experiment the given files declare (not those they import) for
every seed, one `posc run` process per (experiment, seed) with one thread each, as many at once as
there are cores, and writes the comparison page of all of them.

  OUT/seed<N>/<experiment>[-<preset>]/   each run's results folder (run.log,
                                         job.json when it ends)
  OUT/comparison.{md,html,csv}, reach.svg

A run that warm-starts from another experiment of the study (train.init_from)
starts after that run of the same seed has finished. A run whose job.json
says it finished with the same plan (settings, seed, the run it starts from,
the content of a warm-start file from outside the study) is skipped, so the
same command continues an interrupted study. A finished run whose plan has
changed only in what is evaluated after training (eval settings, test
lengths, probes) keeps its trained weights and is evaluated again, as are the
runs that start from it. A failed run is reported and only the runs that
start from it are left out.

Ctrl-C or SIGTERM stops the study: it starts nothing more, passes the signal
on to its runs (each stops at its next step boundary with a resume point),
waits for them, records each one in its job.json (done, interrupted, failed)
and exits (130 or 143). The same command then skips the finished runs and
continues the others from their resume points (--threads and --jobs may
differ). A second signal stops the runs at once, at their last resume point.
A run stopped part-way whose plan has changed since is kept, not run: start
it over with --force --only ID.

A sweep: `--set KEY=A,B` (values split at top-level commas) runs every
experiment x seed once per value; several such settings give every
combination. Each combination is a grid point with its own folder,
OUT/<KEY=A>/seed<N>/..., and its own rows on the comparison page.

options:
  --preset NAME       apply this preset to every experiment (e.g. mini)
  --set KEY=VALUE     override a setting in every experiment (repeatable)
  --set KEY=A,B,...   a sweep over these values (repeatable: every combination)
  --seeds LIST        seeds, e.g. 0,1,2 (default: each experiment's train.seeds)
  --out DIR           the study folder (default: runs/study[-PRESET])
  --jobs N            runs at once (default: the number of cores; 1 with --device cuda)
  --threads N         CPU threads of each run (default: the cores / --jobs)
  --device cpu|cuda   where each run trains (passed to posc run)
  --jit on|off        passed to posc run
  --force             run finished runs again
  --list              print the jobs in order with their state (and their
                      Slurm state while they are queued; for a run going on
                      or left unfinished, its own status); run nothing

on Slurm (docs/scale.md):
  --slurm             write one job array per wave of runs (a warm start one
                      wave after its source) to OUT/slurm/wave<K>.sbatch and
                      submit them with sbatch; only unfinished runs are
                      submitted. Without sbatch on the PATH the scripts are
                      written and the commands to submit them printed.
  --sbatch OPTION     an extra sbatch option, e.g. --sbatch --partition=short
                      (repeatable; overrides the scripts' own lines)
  --max-running K     at most K tasks of each array run at once (--array=0-N%K)
  --no-submit         write the scripts, print the sbatch commands, submit nothing
  --wait              after submitting, wait until the arrays have left the
                      queue, then write the comparison page
  --only ID           run one job of the study by its id (its folder under OUT,
                      e.g. seed0/rope2d-mini): what each array task runs
)";

std::vector<uint64_t> parseSeeds(const std::string& text) {
  std::vector<uint64_t> seeds;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto seed = static_cast<uint64_t>(parseCount("--seeds", item));
    if (std::find(seeds.begin(), seeds.end(), seed) != seeds.end())
      throw UsageError{fmt::format("--seeds lists {} twice; each run is one seed, given once", seed)};
    seeds.push_back(seed);
  }
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

// The comparison of every run that has results, in the study's order, with
// one row per variant and grid point; then the page. Returns 1 when it
// cannot be written.
int writeComparisonPage(const std::vector<study::Job>& jobs, const std::vector<bool>& has_results,
                        const std::filesystem::path& out) {
  std::vector<report::RunSummary> runs;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!has_results[i]) continue;
    try {
      for (report::RunSummary& r : report::readRun(jobs[i].out_dir)) {
        // "variant" or "variant · task" (documents): the grid point after the variant.
        if (!jobs[i].point.empty() && r.variant.rfind(jobs[i].variant(), 0) == 0)
          r.variant = jobs[i].row() + r.variant.substr(jobs[i].variant().size());
        runs.push_back(std::move(r));
        std::fprintf(stderr, "  %-40s%s\n", runs.back().variant.c_str(), accuracyLine(runs.back()).c_str());
      }
      report::writeReport(jobs[i].out_dir, report::buildReport(jobs[i].out_dir));
    } catch (const std::runtime_error& e) {
      std::fprintf(stderr, "posc: warning: %s\n", e.what());
    }
  }
  if (runs.empty()) return 0;
  try {
    report::writeComparison(out, report::buildComparison(runs, out, "Study " + out.filename().string()));
    std::fprintf(stderr, "comparison in %s\n", (out / "comparison.html").c_str());
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "posc: error: %s\n", e.what());
    return 1;
  }
  return 0;
}

std::string joinCommand(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) s += (s.empty() ? "" : " ") + study::shellQuote(a);
  return s;
}

int runStudy(const std::vector<std::string>& args) {
  std::string out, only, seeds_text;
  int slots = 0, threads = 0, max_running = 0;
  bool force = false, list = false, slurm = false, no_submit = false, wait = false;
  std::vector<std::string> placement;  // --device, --jit as given: passed to every posc run
  std::vector<std::string> sbatch_options;
  std::optional<std::vector<uint64_t>> seeds;
  ExperimentOptions o = parseExperimentOptions(args, [&](const std::string& flag, const auto& value) {
    if (flag == "--out") out = value();
    else if (flag == "--jobs") slots = parseCount("--jobs", value());
    else if (flag == "--threads") {
      threads = parseCount("--threads", value());
      if (threads == 0) throw UsageError{"--threads needs at least 1"};
    }
    else if (flag == "--seeds") seeds = parseSeeds(seeds_text = value());
    else if (flag == "--force") force = true;
    else if (flag == "--list") list = true;
    else if (flag == "--slurm") slurm = true;
    else if (flag == "--no-submit") no_submit = true;
    else if (flag == "--wait") wait = true;
    else if (flag == "--sbatch") sbatch_options.push_back(value());
    else if (flag == "--max-running") {
      max_running = parseCount("--max-running", value());
      if (max_running == 0) throw UsageError{"--max-running needs at least 1"};
    }
    else if (flag == "--only") only = value();
    else if (flag == "--device" || flag == "--jit") {
      const std::string v = value();
      if (flag == "--device" ? v != "cpu" && v != "cuda" : v != "on" && v != "off")
        throw UsageError{fmt::format("{} does not take '{}'", flag, v)};
      placement.insert(placement.end(), {flag, v});
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
  if (o.request.experiment) throw UsageError{"posc study runs every experiment each FILE declares; --experiment does not apply"};
  for (const auto& ov : o.request.overrides)
    if (ov.key == "train.seeds")
      throw UsageError{"posc study: give seeds with --seeds LIST (each run is one seed)"};
  if ((no_submit || wait || !sbatch_options.empty() || max_running) && !slurm)
    throw UsageError{"--no-submit, --wait, --sbatch and --max-running go with --slurm"};
  if (slurm && (list || !only.empty())) throw UsageError{"--slurm submits the study; --list and --only do not go with it"};

  study::StudyRequest request;
  request.files = o.files;
  request.preset = o.request.preset;
  // A setting with several values is a grid axis; one value, an override.
  for (const auto& ov : o.request.overrides) {
    std::vector<std::string> values = study::splitGridValues(ov.value);
    if (values.size() == 1) request.overrides.push_back(ov);
    else request.grid.push_back({ov.key, std::move(values)});
  }
  request.seeds = seeds;
  request.out = out.empty() ? fs::path("runs") / (o.request.preset ? "study-" + *o.request.preset : "study") : fs::path(out);
  request.posc_binary = selfPath();
  // The cores shared out among the runs at once: with one run per core (the
  // default), each trains on one thread.
  const int cores = model::availableCores();
  if (threads == 0) threads = std::max(1, cores / (slots > 0 ? slots : cores));
  // The thread count is not part of a run's identity (posc run continues a
  // run on any number of threads): a study continued with another --threads
  // continues its runs rather than start them over.
  request.placement = placement;
  request.run_options = {"--threads", std::to_string(threads), "--no-progress"};

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

  auto log = [](const std::string& line) {
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  };

  if (list) {
    const std::map<std::string, std::string> queued = study::slurmStates(request.out);
    for (size_t i = 0; i < jobs.size(); ++i) {
      const study::Job& j = jobs[i];
      const study::JobState job_state = study::jobState(j);
      std::string state = study::describe(job_state);
      if (auto it = queued.find(j.id()); it != queued.end()) state += " (slurm: " + it->second + ")";
      std::printf("%-40s %-22s %s%s\n", j.label().c_str(), state.c_str(), j.out_dir.c_str(),
                  j.after ? fmt::format("  (after {})", jobs[*j.after].label()).c_str() : "");
      // The study records a job when it ends: a run going on now, or one
      // left by a killed study, is seen in its own status.json.
      if (job_state != study::JobState::Done)
        if (const auto status = results::readStatus(j.out_dir); status && !status->finished())
          std::printf("%-40s its run: %s\n", "", results::describeStatus(*status).c_str());
    }
    return 0;
  }

  // One job, as a Slurm array task runs it: its source must have finished.
  if (!only.empty()) {
    auto it = std::find_if(jobs.begin(), jobs.end(), [&](const study::Job& j) { return j.id() == only; });
    if (it == jobs.end()) {
      std::fprintf(stderr, "posc: error: --only %s: the study has no job with that id (posc study ... --list shows "
                   "them; the id is the results folder under %s)\n", only.c_str(), request.out.c_str());
      return 2;
    }
    study::Job job = *it;
    if (job.after) {
      const study::Job& source = jobs[*job.after];
      if (study::jobState(source) != study::JobState::Done) {
        std::fprintf(stderr, "posc: error: %s not run: its warm start %s did not finish (%s)\n", job.label().c_str(),
                     source.label().c_str(), study::describe(study::jobState(source)));
        return 1;
      }
      job.after.reset();
    }
    study::ExecuteOptions eo;
    eo.slots = 1;
    eo.force = force;
    eo.log = log;
    // Slurm signals every process of a cancelled or timed-out task itself:
    // passed on as well, the run would see two signals and stop at once.
    eo.forward_signals = std::getenv("SLURM_JOB_ID") == nullptr;
    const study::Execution execution = study::executeLocally({job}, eo);
    const study::JobOutcome& outcome = execution.jobs.front();
    if (execution.stopped_by) return 128 + execution.stopped_by;
    if (outcome.kind == study::JobOutcome::Kind::Failed || outcome.kind == study::JobOutcome::Kind::Interrupted)
      return outcome.exit_code == 0 ? 1 : outcome.exit_code;
    if (outcome.kind == study::JobOutcome::Kind::NotRun) return 1;  // kept (its log line says why): not a success
    return 0;
  }

  if (slurm) {
    std::vector<study::SlurmWave> waves = study::planWaves(jobs, force);
    if (waves.empty()) {
      std::fprintf(stderr, "study: all %zu runs of %s have finished; nothing to submit\n", jobs.size(),
                   request.out.c_str());
      return writeComparisonPage(jobs, std::vector<bool>(jobs.size(), true), request.out);
    }
    study::SlurmOptions so;
    so.study_command = {request.posc_binary, "study"};
    for (const std::string& f : o.files) so.study_command.push_back(std::filesystem::absolute(f).string());
    if (o.request.preset) so.study_command.insert(so.study_command.end(), {"--preset", *o.request.preset});
    for (const auto& ov : o.request.overrides) so.study_command.insert(so.study_command.end(), {"--set", ov.key + "=" + ov.value});
    if (seeds) so.study_command.insert(so.study_command.end(), {"--seeds", seeds_text});
    so.study_command.insert(so.study_command.end(), placement.begin(), placement.end());
    so.study_command.insert(so.study_command.end(), {"--out", std::filesystem::absolute(request.out).string()});
    so.cpus_per_task = threads;
    so.gpu = std::find(placement.begin(), placement.end(), "cuda") != placement.end();
    so.sbatch_options = sbatch_options;
    so.max_running = max_running;
    so.name = "posc-" + request.out.filename().string();
    so.force = force;
    size_t submitted = 0;
    for (const auto& w : waves) submitted += w.jobs.size();
    try {
      study::writeWaveScripts(jobs, waves, request.out, so);
      std::fprintf(stderr, "study: %zu of %zu runs in %zu wave(s): %s/slurm/wave*.sbatch\n", submitted, jobs.size(),
                   waves.size(), request.out.c_str());
      if (no_submit || !study::onPath("sbatch")) {
        if (!no_submit) std::fprintf(stderr, "sbatch is not on the PATH; submit the waves in order:\n");
        for (size_t w = 0; w < waves.size(); ++w) {
          std::vector<std::string> argv = sbatch_options;
          argv.push_back(waves[w].script.string());
          const std::string dependency = w > 0 ? fmt::format(" --dependency=afterany:$W{}", w - 1) : "";
          std::printf("W%zu=$(sbatch --parsable%s %s)\n", w, dependency.c_str(), joinCommand(argv).c_str());
        }
        return 0;
      }
      study::submitWaves(jobs, waves, request.out, so);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "posc: error: %s\n", e.what());
      return 1;
    }
    for (size_t w = 0; w < waves.size(); ++w)
      std::fprintf(stderr, "submitted wave %zu: array job %s (%zu runs)%s\n", w, waves[w].array_id.c_str(),
                   waves[w].jobs.size(), w ? fmt::format(", after {}", waves[w - 1].array_id).c_str() : "");
    if (!wait) {
      std::fprintf(stderr, "follow it with: posc study ... --list (or squeue); the same posc study command without "
                   "--slurm%s writes the comparison once the runs are done\n",
                   force ? " and --force (which would run everything again)" : "");
      return 0;
    }
    try {
      study::waitForWaves(waves, 2.0, log);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "posc: error: %s\n", e.what());
      return 1;
    }
    std::vector<bool> done(jobs.size());
    int unfinished = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
      done[i] = study::jobState(jobs[i]) == study::JobState::Done;
      if (!done[i]) {
        ++unfinished;
        std::fprintf(stderr, "  not finished: %s (%s; see %s)\n", jobs[i].label().c_str(),
                     study::describe(study::jobState(jobs[i])), (jobs[i].out_dir / "run.log").c_str());
      }
    }
    const int page = writeComparisonPage(jobs, done, request.out);
    if (unfinished) {
      std::fprintf(stderr, "posc: %d of %zu runs did not finish\n", unfinished, jobs.size());
      return 1;
    }
    return page;
  }

  std::fprintf(stderr, "study: %zu runs into %s\n", jobs.size(), request.out.c_str());
  study::ExecuteOptions eo;
  eo.slots = slots;
  eo.force = force;
  eo.log = log;
  const study::Execution execution = study::executeLocally(jobs, eo);
  const std::vector<study::JobOutcome>& outcomes = execution.jobs;

  int failed = 0, not_run = 0, interrupted = 0, done = 0;
  std::vector<bool> has_results(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    const auto kind = outcomes[i].kind;
    if (kind == study::JobOutcome::Kind::Failed) ++failed;
    if (kind == study::JobOutcome::Kind::NotRun) ++not_run;
    if (kind == study::JobOutcome::Kind::Interrupted) ++interrupted;
    has_results[i] = kind == study::JobOutcome::Kind::Ran || kind == study::JobOutcome::Kind::Skipped;
    done += has_results[i];
  }
  // Stopped: every run it started has ended and is recorded; the same
  // command, less --force (which would start every run over again), skips
  // the finished ones and continues the others.
  std::vector<std::string> continuing;
  for (const std::string& a : args)
    if (a != "--force") continuing.push_back(a);
  if (execution.stopped_by) {
    std::fprintf(stderr,
                 "posc: study stopped by %s: %d of %zu runs finished, %d interrupted at a resume point, %d failed, "
                 "%d not started\ncontinue with: posc study %s\n",
                 study::stopSignalName(execution.stopped_by), done, jobs.size(), interrupted, failed, not_run,
                 joinCommand(continuing).c_str());
    return 128 + execution.stopped_by;
  }
  if (writeComparisonPage(jobs, has_results, request.out) != 0) return 1;
  if (failed || not_run || interrupted) {
    std::fprintf(stderr, "posc: %d of %zu runs failed, %d interrupted (%s continues them), %d not run "
                 "(each says why above)\n", failed, jobs.size(), interrupted,
                 force ? "the same command without --force" : "the same command", not_run);
    return 1;
  }
  return 0;
}

const CommandRegistration reg{{"study", "posc study FILE... [--preset P] [--seeds 0,1,2] [--jobs N] [--slurm]",
                               "every experiment x seed (x sweep), local processes or Slurm arrays; comparison page", 35,
                               false, runStudy}};

}  // namespace
}  // namespace posc::cli
