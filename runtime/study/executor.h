// Running a study's job list on this machine: one process per job, as many at
// once as there are slots (default: the number of cores; one thread per run
// is fastest for the small models of these studies).
//
// A job starts when the job it warm-starts from has finished; jobs already
// done with the same plan hash are skipped (unless forced), and so are their
// finished dependants. A job whose source was run again runs again. A failed
// job is recorded (job.json, its run.log kept) and only the jobs that depend
// on it are left out: every other result is kept. Each job's standard output
// and error go to <out_dir>/run.log.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runtime/study/jobs.h"

namespace posc::study {

struct JobOutcome {
  enum class Kind { Ran, Skipped, Failed, NotRun };
  Kind kind = Kind::NotRun;
  int exit_code = 0;     // Failed: the process's exit code (128 + signal when killed)
  double wall_s = 0;     // Ran / Failed
  std::string reason;    // Skipped / NotRun: why
};

struct ExecuteOptions {
  int slots = 0;       // processes at once; 0: the number of cores
  bool force = false;  // run finished jobs again
  // Progress, one line per event (job started, finished, failed, skipped).
  std::function<void(const std::string&)> log;
};

// Runs the jobs (in an order that respects `after`) and returns one outcome
// per job, in the list's order.
std::vector<JobOutcome> executeLocally(const std::vector<Job>& jobs, const ExecuteOptions& options);

}  // namespace posc::study
