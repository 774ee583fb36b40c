// Local execution of a study: see executor.h.
#include "runtime/study/executor.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <map>
#include <thread>

#include "runtime/model/device.h"
#include "runtime/results/run_folder.h"
#include "runtime/study/stop_signals.h"
#include "runtime/run/run_experiment.h"

namespace posc::study {

namespace {

using Clock = std::chrono::steady_clock;

// Starts `command` with stdout and stderr appended to `log` after the line
// `header` (each attempt's output is kept: a retry does not hide why the
// last one failed); returns the pid, or -1 with `error` set. With
// `own_group` the process leads a process group of its own. Either way the
// kernel sends it SIGTERM should the study die first, so a killed study
// leaves no run going on its own.
pid_t spawn(const std::vector<std::string>& command, const std::filesystem::path& log, const std::string& header,
            bool own_group, std::string& error) {
  std::error_code ec;
  std::filesystem::create_directories(log.parent_path(), ec);
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0 || ::write(fd, header.data(), header.size()) != static_cast<ssize_t>(header.size())) {
    error = fmt::format("cannot write '{}': {}", log.string(), std::strerror(errno));
    if (fd >= 0) ::close(fd);
    return -1;
  }
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // A stop request between fork and exec must reach the run, not the
  // study's handlers copied into the child: they are blocked across the
  // fork, and the child sets them back to the defaults before unblocking.
  sigset_t stop, before;
  sigemptyset(&stop);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&stop, s);
  ::pthread_sigmask(SIG_BLOCK, &stop, &before);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) ::signal(s, SIG_DFL);
    if (own_group) ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(128 + SIGTERM);  // the study died before prctl
    ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    ::execvp(argv[0], argv.data());
    const std::string msg = fmt::format("cannot start '{}': {}\n", command[0], std::strerror(errno));
    (void)!::write(STDERR_FILENO, msg.data(), msg.size());
    ::_exit(127);
  }
  if (pid > 0 && own_group) ::setpgid(pid, pid);  // as the child does: no window for kill(-pid)
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  ::close(fd);
  if (pid < 0) error = fmt::format("fork: {}", std::strerror(errno));
  return pid;
}

// The line that opens an attempt's output in run.log.
std::string attemptHeader(const char* verb) {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &utc);
  return fmt::format("{} {} by posc study, {} {}\n", kAttemptMark, verb, when, kAttemptMark);
}

std::string duration(double s) {
  if (s < 60) return fmt::format("{:.1f} s", s);
  return fmt::format("{}m{:02d}s", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
}

}  // namespace

Execution executeLocally(const std::vector<Job>& jobs, const ExecuteOptions& options) {
  const size_t n = jobs.size();
  const int slots = options.slots > 0 ? options.slots : model::availableCores();
  auto log = [&](const std::string& line) {
    if (options.log) options.log(line);
  };
  enum class S { Waiting, Running, Finished };
  std::vector<S> state(n, S::Waiting);
  std::vector<JobOutcome> outcome(n);
  std::vector<bool> ran(n, false);  // this invocation produced new weights
  // Started to evaluate a finished run again: its weights stay as they were.
  std::vector<bool> reevaluates(n, false);
  std::map<pid_t, size_t> running;
  std::vector<Clock::time_point> started(n);
  size_t finished = 0;
  const StopSignals signals;
  int passed_on = 0;  // stop requests looked at so far
  int stopped_by = 0;

  auto finish = [&](size_t i, JobOutcome o) {
    outcome[i] = std::move(o);
    state[i] = S::Finished;
    ++finished;
  };
  auto ok = [&](size_t i) {
    return state[i] == S::Finished &&
           (outcome[i].kind == JobOutcome::Kind::Ran || outcome[i].kind == JobOutcome::Kind::Skipped);
  };

  // Every stop request since the last look, passed on to the runs: the first
  // stops them at their next step boundary, a second at once. SIGHUP (the
  // terminal went away) is passed on as SIGTERM, which posc run handles. A
  // request within a second of the one before is that one delivered twice
  // (`timeout` signals the study, then its process group), not a second.
  Clock::time_point last_passed_on;
  auto passOnStopRequests = [&] {
    while (passed_on < signals.requests()) {
      const bool repeated = passed_on > 0 && Clock::now() - last_passed_on < std::chrono::seconds(1);
      ++passed_on;
      stopped_by = signals.lastRequest();
      if (repeated) continue;
      last_passed_on = Clock::now();
      const int signal = stopped_by == SIGHUP ? SIGTERM : stopped_by;
      if (options.forward_signals)
        for (const auto& [pid, i] : running) ::kill(-pid, signal);
      if (passed_on == 1)
        log(fmt::format("study: stopped by {}; starting nothing more and waiting for {} running run(s) to stop at "
                        "a resume point",
                        stopSignalName(stopped_by), running.size()));
      else
        log(fmt::format("study: {} again; the runs stop now, at their last resume point", stopSignalName(stopped_by)));
    }
  };

  // A run's process has ended with `status`: record it.
  auto settle = [&](size_t i, int status) {
    const double wall = std::chrono::duration<double>(Clock::now() - started[i]).count();
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    // A document run that missed a release criterion still finished: its
    // results are written, and the study compares them.
    const bool finished_run = code == 0 || code == runtime::kUnmetRequirement;
    // posc run exits 130 or 143 when SIGINT or SIGTERM stopped it at a
    // resume point (and dies of the signal when a second one came).
    const bool interrupted = !finished_run && (code == 128 + SIGINT || code == 128 + SIGTERM);
    const JobRecord rec{finished_run, code, wall, jobs[i].plan_hash, interrupted, jobs[i].warm_start_digest,
                        jobs[i].training_hash};
    std::string record_error;
    try {
      writeJobRecord(jobs[i], rec);
    } catch (const std::exception& e) {
      record_error = e.what();
    }
    if (finished_run && record_error.empty()) {
      ran[i] = !reevaluates[i];
      finish(i, {JobOutcome::Kind::Ran, code, wall, ""});
      log(fmt::format("[{}/{}] done     {} in {}{}", finished, n, jobs[i].label(), duration(wall),
                      code == 0 ? "" : " (a release criterion was not met)"));
    } else if (interrupted && record_error.empty()) {
      finish(i, {JobOutcome::Kind::Interrupted, code, wall, ""});
      log(fmt::format("[{}/{}] stopped  {} after {} by {}; the next call continues it", finished, n,
                      jobs[i].label(), duration(wall), stopSignalName(code - 128)));
    } else {
      const std::string why = !record_error.empty() ? record_error
                              : WIFSIGNALED(status) ? fmt::format("killed by signal {}", WTERMSIG(status))
                                                    : fmt::format("exit {}", code);
      finish(i, {JobOutcome::Kind::Failed, code, wall, why});
      log(fmt::format("[{}/{}] FAILED   {} after {}: {} (see {})", finished, n, jobs[i].label(), duration(wall), why,
                      (jobs[i].out_dir / "run.log").string()));
    }
  };

  while (finished < n) {
    passOnStopRequests();
    // Settle every waiting job whose source has settled; start what fits.
    bool progressed = true;
    while (progressed) {
      progressed = false;
      for (size_t i = 0; i < n; ++i) {
        if (state[i] != S::Waiting) continue;
        const Job& job = jobs[i];
        if (stopped_by) {
          finish(i, {JobOutcome::Kind::NotRun, 0, 0, fmt::format("the study was stopped by {} first",
                                                                   stopSignalName(stopped_by))});
          continue;
        }
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
        const JobState before = jobState(job);
        if (!options.force && !source_rerun && before == JobState::Done) {
          const auto rec = readJobRecord(job.out_dir);
          finish(i, {JobOutcome::Kind::Skipped, 0, rec ? rec->wall_s : 0, "finished earlier with the same plan"});
          log(fmt::format("[{}/{}] skipped  {}: finished earlier with the same plan", finished, n, job.label()));
          progressed = true;
          continue;
        }
        // A run of another plan (or from a warm start that has run again)
        // stopped part-way is kept: starting it over would throw its trained
        // weights away, continuing it would train the old plan. Asked with
        // --force (and --only), it starts over.
        if (!options.force && (source_rerun || before == JobState::Stale)) {
          if (const std::optional<std::string> progress = progressAtRisk(job)) {
            const std::string why = fmt::format(
                "its folder holds an unfinished run of {} ({}); it is kept as it is. Continue it with the plan it "
                "was started with, or start it over with --force --only {}",
                source_rerun ? "an earlier warm start" : "another plan", *progress, job.id());
            finish(i, {JobOutcome::Kind::NotRun, 0, 0, why});
            log(fmt::format("[{}/{}] not run  {}: {}", finished, n, job.label(), why));
            progressed = true;
            continue;
          }
        }
        if (static_cast<int>(running.size()) >= slots) continue;
        std::error_code ec;
        std::filesystem::remove(job.out_dir / "job.json", ec);  // running: no longer finished
        // An unfinished run of the same plan (interrupted, failed, killed) is
        // continued by posc run itself; a changed plan (with nothing trained
        // to lose), a forced run or a re-trained warm-start source starts over.
        std::vector<std::string> command = job.command;
        const bool fresh = options.force || source_rerun || before == JobState::Stale;
        if (fresh) command.push_back("--fresh");
        // A study killed outright (no job.json) leaves its run's resume point:
        // posc run continues that run as it continues an interrupted one.
        const bool continues = !fresh && (before == JobState::Interrupted || progressAtRisk(job).has_value());
        // A finished run evaluated again keeps its weights: the jobs that
        // warm-start from it are not trained again.
        if (const auto status = results::readStatus(job.out_dir); !fresh && before == JobState::Reevaluate && status)
          reevaluates[i] = status->finished();
        const char* verb = reevaluates[i]                         ? "evaluating again (trained weights kept)"
                           : continues                            ? "continued"
                           : fresh && before != JobState::Pending ? "started over (--fresh)"
                                                                  : "started";
        std::string error;
        const pid_t pid = spawn(command, job.out_dir / "run.log", attemptHeader(verb), options.forward_signals, error);
        if (pid < 0) {
          finish(i, {JobOutcome::Kind::Failed, 127, 0, error});
          log(fmt::format("[{}/{}] FAILED   {}: {}", finished, n, job.label(), error));
          progressed = true;
          continue;
        }
        state[i] = S::Running;
        started[i] = Clock::now();
        running[pid] = i;
        log(fmt::format("[{}/{}] {}{} (log: {})", finished, n,
                        reevaluates[i] ? "evaluating again " : continues ? "continued " : "started  ", job.label(),
                        (job.out_dir / "run.log").string()));
        progressed = true;
      }
    }
    if (running.empty()) break;  // nothing left can start

    // Reap the runs that have ended; with none, sleep until a run ends or a
    // stop is asked (the pipe of StopSignals: no signal is missed between
    // this look and the wait). The timeout only bounds a surprise.
    bool reaped = false;
    for (auto it = running.begin(); it != running.end();) {
      int status = 0;
      const pid_t r = ::waitpid(it->first, &status, WNOHANG);
      if (r == 0 || (r < 0 && errno == EINTR)) {
        ++it;
        continue;
      }
      if (r < 0) throw std::runtime_error(fmt::format("waitpid: {}", std::strerror(errno)));
      const size_t i = it->second;
      it = running.erase(it);
      settle(i, status);
      reaped = true;
    }
    if (!reaped) signals.waitForSignal(1000);
  }
  // A request that came as the last run ended has nothing left to stop, but
  // the caller still stops rather than go on (it writes no comparison page).
  if (signals.requests() > passed_on) stopped_by = signals.lastRequest();
  return {std::move(outcome), stopped_by};
}

}  // namespace posc::study
