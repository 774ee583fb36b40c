// Running a study's job list on Slurm: job arrays written by posc, submitted
// with sbatch, followed with squeue.
//
// The jobs that are not finished (study/jobs.h: a job.json saying "done" with
// the job's plan hash) are grouped into waves: a job whose warm-start source
// is also submitted goes one wave after it. Each wave is one job array
// (OUT/slurm/wave<K>.sbatch, one array task per job) and waits for the wave
// before it with --dependency=afterany; a task whose source did not finish
// records that and runs nothing. Every array task runs
//
//   posc study FILES... <the study's options> --out OUT --only <job id> [--force]
//
// which lays the study out again, finds its job by id ("seed0/rope2d-mini",
// see Job::id) and runs it exactly as the local executor does (run.log,
// job.json). So re-submitting a study submits only what is not finished, and
// a finished array can be followed by `posc study FILES...` on the login
// node, which finds every job done and writes the comparison page.
//
// Resources per array: --cpus-per-task from the threads each run uses,
// --mem from the largest estimateMemoryMb of the wave's jobs, --time from the
// largest timeLimitMinutes (jobs.h), --gres=gpu:1 for runs on CUDA. Anything
// else (partition, account, another time limit, a larger --mem) is given as
// extra sbatch options, which come after the script's own lines on sbatch's
// command line and so take precedence.
//
// OUT/slurm/submitted.tsv records each submission: array id, task index and
// job id per line, so `posc study ... --list` can show each job's Slurm state
// (squeue) beside its folder's.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/study/jobs.h"

namespace posc::study {

struct SlurmOptions {
  // The array task's command up to (not including) --only: posc's absolute
  // path, "study", the files and the study's options, --out OUT.
  std::vector<std::string> study_command;
  int cpus_per_task = 1;
  bool gpu = false;
  std::vector<std::string> sbatch_options;  // extra, e.g. "--partition=short"
  std::string name = "posc";                // job names: <name>-w<K>
  bool force = false;                       // submit finished jobs too (and run them again)
  std::filesystem::path working_dir;        // --chdir of every task (default: the current folder)
  int max_running = 0;                      // tasks of an array running at once (--array=0-N%K); 0: no limit
};

// One job array: the jobs it runs (indices into the study's job list, in
// array task order) and the script that runs them.
struct SlurmWave {
  std::vector<size_t> jobs;
  std::filesystem::path script;
  std::string array_id;  // after submission
};

// The waves of the jobs to submit (nothing finished unless options.force; a
// job whose source is submitted is submitted too); no files written.
std::vector<SlurmWave> planWaves(const std::vector<Job>& jobs, bool force);

// The text of a wave's sbatch script.
std::string sbatchScript(const std::vector<Job>& jobs, const SlurmWave& wave, size_t wave_index,
                         const std::filesystem::path& study_out, const SlurmOptions& options);

// Writes OUT/slurm/wave<K>.sbatch for each wave (setting wave.script).
void writeWaveScripts(const std::vector<Job>& jobs, std::vector<SlurmWave>& waves,
                      const std::filesystem::path& study_out, const SlurmOptions& options);

// Submits each wave with `sbatch --parsable [--dependency=afterany:<previous>]
// <extra options> <script>`, sets its array_id and appends the jobs to
// OUT/slurm/submitted.tsv. Throws StudyError (with sbatch's message) when a
// submission fails; the waves submitted before it stay submitted.
void submitWaves(const std::vector<Job>& jobs, std::vector<SlurmWave>& waves, const std::filesystem::path& study_out,
                 const SlurmOptions& options);

// `text` quoted for a POSIX shell (as it is when it needs no quotes).
std::string shellQuote(const std::string& text);

// Whether a program is on the PATH.
bool onPath(const std::string& program);

// Each submitted job's Slurm state by job id ("PENDING", "RUNNING", ...),
// for the jobs of OUT/slurm/submitted.tsv that squeue still lists. Empty
// when nothing was submitted or squeue is missing.
std::map<std::string, std::string> slurmStates(const std::filesystem::path& study_out);

// Waits until no job of `waves` is in Slurm's queue (squeue), polling every
// `poll_s` seconds; `log` gets a line whenever the counts change. Throws
// StudyError when squeue fails.
void waitForWaves(const std::vector<SlurmWave>& waves, double poll_s,
                  const std::function<void(const std::string&)>& log);

}  // namespace posc::study
