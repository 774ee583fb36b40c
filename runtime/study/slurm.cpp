// Slurm job arrays for a study: see slurm.h.
#include "runtime/study/slurm.h"

#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "runtime/results/atomic_file.h"

namespace posc::study {

namespace fs = std::filesystem;

std::string shellQuote(const std::string& text) {
  if (!text.empty() &&
      text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") ==
          std::string::npos)
    return text;
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

namespace {

// Runs a command (through the shell), returning its exit status and its
// standard output and error together.
int capture(const std::vector<std::string>& argv, std::string& output) {
  std::string command;
  for (const std::string& a : argv) command += (command.empty() ? "" : " ") + shellQuote(a);
  command += " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return 127;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) output.append(buf, n);
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

fs::path submittedFile(const fs::path& out) { return out / "slurm" / "submitted.tsv"; }

}  // namespace

bool onPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::stringstream ss(path);
  for (std::string dir; std::getline(ss, dir, ':');) {
    const fs::path p = fs::path(dir.empty() ? "." : dir) / program;
    if (::access(p.c_str(), X_OK) == 0) return true;
  }
  return false;
}

std::vector<SlurmWave> planWaves(const std::vector<Job>& jobs, bool force) {
  const size_t n = jobs.size();
  std::vector<bool> submit(n, false);
  std::vector<int> wave(n, 0);
  // The list is ordered so that a source comes before the jobs that start from it.
  for (size_t i = 0; i < n; ++i) {
    const bool source_submitted = jobs[i].after && submit[*jobs[i].after];
    submit[i] = force || source_submitted || jobState(jobs[i]) != JobState::Done;
    if (submit[i] && source_submitted) wave[i] = wave[*jobs[i].after] + 1;
  }
  std::vector<SlurmWave> waves;
  for (size_t i = 0; i < n; ++i) {
    if (!submit[i]) continue;
    if (static_cast<size_t>(wave[i]) >= waves.size()) waves.resize(static_cast<size_t>(wave[i]) + 1);
    waves[static_cast<size_t>(wave[i])].jobs.push_back(i);
  }
  return waves;
}

std::string sbatchScript(const std::vector<Job>& jobs, const SlurmWave& wave, size_t wave_index,
                         const fs::path& study_out, const SlurmOptions& options) {
  int64_t memory_mb = 0, minutes = 0;
  for (size_t i : wave.jobs) {
    memory_mb = std::max(memory_mb, jobs[i].memory_mb);
    minutes = std::max(minutes, timeLimitMinutes(jobs[i].compute, options.cpus_per_task, options.gpu));
  }
  const fs::path chdir = options.working_dir.empty() ? fs::current_path() : options.working_dir;
  const fs::path logs = fs::absolute(study_out) / "slurm" / "logs";
  std::string s = "#!/bin/bash\n";
  s += fmt::format("#SBATCH --job-name={}-w{}\n", options.name, wave_index);
  s += fmt::format("#SBATCH --array=0-{}{}\n", wave.jobs.size() - 1,
                   options.max_running > 0 ? fmt::format("%{}", options.max_running) : "");
  s += "#SBATCH --ntasks=1\n";
  s += fmt::format("#SBATCH --cpus-per-task={}\n", options.cpus_per_task);
  s += fmt::format("#SBATCH --mem={}M\n", memory_mb);
  s += fmt::format("#SBATCH --time={}:{:02}:00\n", minutes / 60, minutes % 60);
  if (options.gpu) s += "#SBATCH --gres=gpu:1\n";
  s += fmt::format("#SBATCH --chdir={}\n", chdir.string());
  s += fmt::format("#SBATCH --output={}/w{}-%A_%a.out\n", logs.string(), wave_index);
  s += fmt::format(
      "#\n# Written by posc study: wave {} of this study, one array task per run.\n"
      "# Each task runs one job of the study by its id (its results folder under\n"
      "# {}), as `posc study` runs it locally: run.log and job.json\n"
      "# in the results folder. Submit the waves in order with --dependency=afterany\n"
      "# on the previous one (posc study --slurm does).\n"
      "# --time is posc's estimate for the wave's longest run (its arithmetic at an\n"
      "# assumed {}, doubled, plus 15 minutes); an sbatch option --time=...\n"
      "# given to posc study overrides it. A task killed at the limit resumes from its\n"
      "# last resume point when the study is submitted again.\n\n",
      wave_index, study_out.string(),
      options.gpu ? "5 TFLOP/s and 5 ms a step on the GPU" : "20 GFLOP/s per CPU thread");
  s += "set -euo pipefail\njobs=(\n";
  for (size_t i : wave.jobs) s += fmt::format("  {}  # {}\n", shellQuote(jobs[i].id()), jobs[i].label());
  s += ")\n";
  // A job runs from scratch when forced or when its source runs again; a
  // changed plan is the task's own study's to judge (it starts over only a
  // run with nothing trained to lose).
  s += "fresh=(";
  for (size_t k = 0; k < wave.jobs.size(); ++k) {
    const Job& j = jobs[wave.jobs[k]];
    const bool fresh = options.force || (j.after && jobState(j) == JobState::Done);
    s += fmt::format("{}{}", k ? " " : "", fresh ? 1 : 0);
  }
  s += ")\n";
  s += "task=${SLURM_ARRAY_TASK_ID:?this script runs as a Slurm array task}\n";
  s += "extra=()\n";
  s += "if [ \"${fresh[$task]}\" = 1 ]; then extra=(--force); fi\n";
  s += "exec";
  for (const std::string& a : options.study_command) s += " " + shellQuote(a);
  // ${extra[@]+...}: an empty array is "unbound" under set -u before bash 4.4.
  s += " --threads \"${SLURM_CPUS_PER_TASK:-1}\" --only \"${jobs[$task]}\" ${extra[@]+\"${extra[@]}\"}\n";
  return s;
}

void writeWaveScripts(const std::vector<Job>& jobs, std::vector<SlurmWave>& waves, const fs::path& study_out,
                      const SlurmOptions& options) {
  fs::create_directories(study_out / "slurm" / "logs");
  for (size_t w = 0; w < waves.size(); ++w) {
    waves[w].script = study_out / "slurm" / fmt::format("wave{}.sbatch", w);
    results::writeFileAtomic(waves[w].script, sbatchScript(jobs, waves[w], w, study_out, options));
    fs::permissions(waves[w].script, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add);
  }
}

void submitWaves(const std::vector<Job>& jobs, std::vector<SlurmWave>& waves, const fs::path& study_out,
                 const SlurmOptions& options) {
  std::string previous;
  for (size_t w = 0; w < waves.size(); ++w) {
    std::vector<std::string> argv = {"sbatch", "--parsable"};
    if (!previous.empty()) argv.push_back("--dependency=afterany:" + previous);
    argv.insert(argv.end(), options.sbatch_options.begin(), options.sbatch_options.end());
    argv.push_back(waves[w].script.string());
    std::string output;
    const int code = capture(argv, output);
    // --parsable prints "<id>" or "<id>;<cluster>".
    std::string id = trim(output.substr(0, output.find(';')));
    if (code != 0 || id.empty() || id.find_first_not_of("0123456789") != std::string::npos)
      throw StudyError(fmt::format("sbatch {} failed (exit {}): {}", waves[w].script.string(), code, trim(output)));
    waves[w].array_id = id;
    previous = id;
    std::string lines;
    for (size_t k = 0; k < waves[w].jobs.size(); ++k)
      lines += fmt::format("{}\t{}\t{}\n", id, k, jobs[waves[w].jobs[k]].id());
    std::ofstream out(submittedFile(study_out), std::ios::app);
    out << lines;
    if (!out) throw StudyError(fmt::format("cannot write '{}'", submittedFile(study_out).string()));
  }
}

namespace {

// squeue's view of the given arrays: "<array>_<task>" -> state, with
// pending tasks listed one by one (-r).
std::optional<std::map<std::string, std::string>> queueStates(const std::vector<std::string>& array_ids) {
  if (array_ids.empty()) return std::map<std::string, std::string>{};
  std::string list;
  for (const std::string& id : array_ids) list += (list.empty() ? "" : ",") + id;
  std::string output;
  const int code = capture({"squeue", "-h", "-r", "-j", list, "-o", "%i %T"}, output);
  std::map<std::string, std::string> states;
  if (code != 0) {
    // Jobs that left the queue make squeue -j fail with "Invalid job id".
    if (output.find("Invalid job id") != std::string::npos) return states;
    return std::nullopt;
  }
  std::istringstream in(output);
  for (std::string id, state; in >> id >> state;) states[id] = state;
  return states;
}

}  // namespace

std::map<std::string, std::string> slurmStates(const fs::path& study_out) {
  std::map<std::string, std::string> by_job;
  std::ifstream in(submittedFile(study_out));
  if (!in || !onPath("squeue")) return by_job;
  std::vector<std::pair<std::string, std::string>> tasks;  // "<array>_<task>", job id
  std::set<std::string> arrays;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string array, task, job;
    if (!std::getline(fields, array, '\t') || !std::getline(fields, task, '\t') || !std::getline(fields, job)) continue;
    tasks.emplace_back(array + "_" + task, job);
    arrays.insert(array);
  }
  const auto states = queueStates(std::vector<std::string>(arrays.begin(), arrays.end()));
  if (!states) return by_job;
  for (const auto& [task, job] : tasks)
    if (auto it = states->find(task); it != states->end()) by_job[job] = it->second;
  return by_job;
}

void waitForWaves(const std::vector<SlurmWave>& waves, double poll_s,
                  const std::function<void(const std::string&)>& log) {
  std::vector<std::string> ids;
  for (const SlurmWave& w : waves)
    if (!w.array_id.empty()) ids.push_back(w.array_id);
  std::string last;
  while (true) {
    const auto states = queueStates(ids);
    if (!states) throw StudyError("squeue failed; follow the jobs with squeue and run the same posc study command "
                                  "without --slurm once they have left the queue");
    if (states->empty()) return;
    std::map<std::string, int> counts;
    for (const auto& [task, state] : *states) ++counts[state];
    std::string line = "slurm:";
    for (const auto& [state, count] : counts) line += fmt::format(" {} {}", count, state);
    if (line != last && log) log(line);
    last = line;
    std::this_thread::sleep_for(std::chrono::duration<double>(poll_s));
  }
}

}  // namespace posc::study
