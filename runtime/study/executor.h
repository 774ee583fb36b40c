// Running a study's job list on this machine: one process per job, as many at
// once as there are slots (default: the number of cores; one thread per run
// is fastest for the small models of these studies).
//
// A job starts when the job it warm-starts from has finished; jobs already
// done with the same plan hash are skipped (unless forced), and so are their
// finished dependants. A job whose source was run again runs again. A failed
// job is recorded (job.json, its run.log kept) and only the jobs that depend
// on it are left out: every other result is kept. Each job's standard output
// and error are appended to <out_dir>/run.log, each attempt after a line
// that starts and ends with kAttemptMark and says when and how it began
// (started, continued, started over): a retry keeps why the last one failed.
//
// Stopping: SIGINT or SIGTERM to the study (SIGHUP counts as SIGTERM) starts
// no more jobs and passes the signal on to every running job's process group
// (each job runs in its own, so a terminal's Ctrl-C reaches a run once, through
// the study). `posc run` stops at its next step boundary and writes a resume
// point; the study waits for every run and records it: finished (the run was
// done by then), interrupted (job.json "interrupted": the next call continues
// it) or failed. A second signal is passed on too, and runs stop at once at
// their last resume point. Should the study itself be killed (SIGKILL), each
// run gets SIGTERM from the kernel (PR_SET_PDEATHSIG) and still stops at a
// resume point, unrecorded: the next call continues it as well.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runtime/study/jobs.h"

namespace posc::study {

inline constexpr const char* kAttemptMark = "===";

struct JobOutcome {
  // Interrupted: stopped by SIGINT/SIGTERM at a resume point (recorded so);
  // NotRun: its warm start did not finish, or the study was stopped first.
  enum class Kind { Ran, Skipped, Failed, Interrupted, NotRun };
  Kind kind = Kind::NotRun;
  int exit_code = 0;     // Failed / Interrupted: the process's exit code (128 + signal when killed)
  double wall_s = 0;     // Ran / Failed / Interrupted
  std::string reason;    // Skipped / NotRun: why
};

struct ExecuteOptions {
  int slots = 0;       // processes at once; 0: the number of cores
  bool force = false;  // run finished jobs again
  // Pass SIGINT/SIGTERM on to the runs, each in its own process group. Off
  // where something else signals every process itself (a Slurm task): the
  // runs then stay in the study's process group, and the study only waits
  // for them and records them.
  bool forward_signals = true;
  // Progress, one line per event (job started, finished, failed, skipped).
  std::function<void(const std::string&)> log;
};

struct Execution {
  std::vector<JobOutcome> jobs;  // one per job, in the list's order
  int stopped_by = 0;            // the signal that stopped the study (SIGINT, SIGTERM, SIGHUP); 0: none
};

// Runs the jobs (in an order that respects `after`) and returns one outcome
// per job, in the list's order.
Execution executeLocally(const std::vector<Job>& jobs, const ExecuteOptions& options);

}  // namespace posc::study
