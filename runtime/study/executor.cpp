// Local execution of a study: see executor.h.
#include "runtime/study/executor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "runtime/train/run_experiment.h"

namespace posc::study {

namespace {

using Clock = std::chrono::steady_clock;

// Starts `command` with stdout and stderr appended to `log`; returns the pid,
// or -1 with `error` set.
pid_t spawn(const std::vector<std::string>& command, const std::filesystem::path& log, std::string& error) {
  std::error_code ec;
  std::filesystem::create_directories(log.parent_path(), ec);
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = fmt::format("cannot write '{}': {}", log.string(), std::strerror(errno));
    return -1;
  }
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    ::execvp(argv[0], argv.data());
    const std::string msg = fmt::format("cannot start '{}': {}\n", command[0], std::strerror(errno));
    (void)!::write(STDERR_FILENO, msg.data(), msg.size());
    ::_exit(127);
  }
  ::close(fd);
  if (pid < 0) error = fmt::format("fork: {}", std::strerror(errno));
  return pid;
}

std::string duration(double s) {
  if (s < 60) return fmt::format("{:.1f} s", s);
  return fmt::format("{}m{:02d}s", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
}

}  // namespace

std::vector<JobOutcome> executeLocally(const std::vector<Job>& jobs, const ExecuteOptions& options) {
  const size_t n = jobs.size();
  const int slots = options.slots > 0 ? options.slots : runtime::availableCores();
  auto log = [&](const std::string& line) {
    if (options.log) options.log(line);
  };
  enum class S { Waiting, Running, Finished };
  std::vector<S> state(n, S::Waiting);
  std::vector<JobOutcome> outcome(n);
  std::vector<bool> ran(n, false);  // this invocation produced new weights
  std::map<pid_t, size_t> running;
  std::vector<Clock::time_point> started(n);
  size_t finished = 0;

  auto finish = [&](size_t i, JobOutcome o) {
    outcome[i] = std::move(o);
    state[i] = S::Finished;
    ++finished;
  };
  auto ok = [&](size_t i) {
    return state[i] == S::Finished &&
           (outcome[i].kind == JobOutcome::Kind::Ran || outcome[i].kind == JobOutcome::Kind::Skipped);
  };

  while (finished < n) {
    // Settle every waiting job whose source has settled; start what fits.
    bool progressed = true;
    while (progressed) {
      progressed = false;
      for (size_t i = 0; i < n; ++i) {
        if (state[i] != S::Waiting) continue;
        const Job& job = jobs[i];
        if (job.after) {
          const size_t src = *job.after;
          if (state[src] != S::Finished) continue;
          if (!ok(src)) {
            finish(i, {JobOutcome::Kind::NotRun, 0, 0, fmt::format("its warm start {} did not finish", jobs[src].label())});
            log(fmt::format("[{}/{}] not run  {}: its warm start {} did not finish", finished, n, job.label(),
                            jobs[src].label()));
            progressed = true;
            continue;
          }
        }
        const bool source_rerun = job.after && ran[*job.after];
        if (!options.force && !source_rerun && jobState(job) == JobState::Done) {
          const auto rec = readJobRecord(job.out_dir);
          finish(i, {JobOutcome::Kind::Skipped, 0, rec ? rec->wall_s : 0, "finished earlier with the same plan"});
          log(fmt::format("[{}/{}] skipped  {}: finished earlier with the same plan", finished, n, job.label()));
          progressed = true;
          continue;
        }
        if (static_cast<int>(running.size()) >= slots) continue;
        std::error_code ec;
        std::filesystem::remove(job.out_dir / "job.json", ec);  // running: no longer finished
        // An unfinished run of the same plan is continued by posc run itself;
        // a changed plan, a forced run or a re-trained warm-start source starts over.
        std::vector<std::string> command = job.command;
        if (options.force || source_rerun || jobState(job) == JobState::Stale) command.push_back("--fresh");
        std::string error;
        const pid_t pid = spawn(command, job.out_dir / "run.log", error);
        if (pid < 0) {
          finish(i, {JobOutcome::Kind::Failed, 127, 0, error});
          log(fmt::format("[{}/{}] FAILED   {}: {}", finished, n, job.label(), error));
          progressed = true;
          continue;
        }
        state[i] = S::Running;
        started[i] = Clock::now();
        running[pid] = i;
        log(fmt::format("[{}/{}] started  {} (log: {})", finished, n, job.label(), (job.out_dir / "run.log").string()));
        progressed = true;
      }
    }
    if (running.empty()) break;  // nothing left can start

    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(fmt::format("waitpid: {}", std::strerror(errno)));
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;  // not one of ours
    const size_t i = it->second;
    running.erase(it);
    const double wall = std::chrono::duration<double>(Clock::now() - started[i]).count();
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    // A document run that missed a release criterion still finished: its
    // results are written, and the study compares them.
    const bool finished_run = code == 0 || code == runtime::kUnmetRequirement;
    JobRecord rec{finished_run, code, wall, jobs[i].plan_hash};
    std::string record_error;
    try {
      writeJobRecord(jobs[i], rec);
    } catch (const std::exception& e) {
      record_error = e.what();
    }
    if (finished_run && record_error.empty()) {
      ran[i] = true;
      finish(i, {JobOutcome::Kind::Ran, code, wall, ""});
      log(fmt::format("[{}/{}] done     {} in {}{}", finished, n, jobs[i].label(), duration(wall),
                      code == 0 ? "" : " (a release criterion was not met)"));
    } else {
      const std::string why = !record_error.empty() ? record_error
                              : WIFSIGNALED(status) ? fmt::format("killed by signal {}", WTERMSIG(status))
                                                    : fmt::format("exit {}", code);
      finish(i, {JobOutcome::Kind::Failed, code, wall, why});
      log(fmt::format("[{}/{}] FAILED   {} after {}: {} (see {})", finished, n, jobs[i].label(), duration(wall), why,
                      (jobs[i].out_dir / "run.log").string()));
    }
  }
  return outcome;
}

}  // namespace posc::study
