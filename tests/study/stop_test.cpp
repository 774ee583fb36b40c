// Stopping a study: SIGTERM to the study is passed on to its runs, which it
// waits for and records (finished, interrupted), starting nothing more; the
// same call again skips the finished runs and continues the interrupted ones.
// First with stand-in commands (sh scripts that trap the signal), then end to
// end: `posc study` of two tiny quick-start runs, SIGTERM to its pid while the
// second trains, no `posc run` left behind, and the same command again keeps
// the first run's weights and continues the second from its resume point.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <regex>
#include <thread>
#include <vector>

#include "runtime/results/run_folder.h"
#include "runtime/study/executor.h"
#include "tests/common/files.h"
#include "tests/common/run_posc.h"
#include "tests/study/shell_jobs.h"

namespace posc::study {
namespace {

namespace fs = std::filesystem;
using Kind = JobOutcome::Kind;
using test_jobs::shellJob;
using test_jobs::attempts;
using testing::readFile;
using testing::spawnPosc;
using testing::waitFor;

// bb stands in for a run: it asks its parent, the study (this test process),
// to stop, then waits as a long run would; SIGTERM from the study ends it
// with 143, as posc run ends at a resume point.
const char* kStopsTheStudy =
    "trap 'echo bb got SIGTERM; exit 143' TERM; sleep 30 & kill -TERM $PPID; wait $!; echo bb was not stopped";

TEST(StudyStop, SigtermIsPassedOnToTheRunsWhichAreWaitedForAndRecorded) {
  const fs::path root = fs::path(::testing::TempDir()) / "stop_stand_in";
  fs::remove_all(root);
  std::vector<Job> jobs{shellJob(root, "aa", "echo a ran"), shellJob(root, "bb", kStopsTheStudy),
                        shellJob(root, "cc", "echo c ran")};
  std::vector<std::string> lines;
  ExecuteOptions o;
  o.slots = 1;  // aa, then bb, then cc
  o.log = [&](const std::string& l) { lines.push_back(l); };
  const auto t0 = std::chrono::steady_clock::now();
  const Execution e = executeLocally(jobs, o);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  EXPECT_EQ(e.stopped_by, SIGTERM);
  EXPECT_LT(seconds, 10) << "the study waited for bb's sleep instead of passing SIGTERM on";
  ASSERT_EQ(e.jobs.size(), 3u);
  EXPECT_EQ(e.jobs[0].kind, Kind::Ran);
  EXPECT_EQ(e.jobs[1].kind, Kind::Interrupted);
  EXPECT_EQ(e.jobs[1].exit_code, 143);
  const std::string bb_log = readFile(root / "bb" / "run.log");
  EXPECT_NE(bb_log.find("bb got SIGTERM\n"), std::string::npos) << bb_log;
  EXPECT_EQ(bb_log.find("not stopped"), std::string::npos) << bb_log;
  EXPECT_EQ(e.jobs[2].kind, Kind::NotRun);
  EXPECT_NE(e.jobs[2].reason.find("stopped by SIGTERM"), std::string::npos) << e.jobs[2].reason;
  EXPECT_FALSE(fs::exists(root / "cc" / "run.log"));

  EXPECT_EQ(jobState(jobs[0]), JobState::Done);
  EXPECT_EQ(jobState(jobs[1]), JobState::Interrupted);
  EXPECT_NE(readFile(root / "bb" / "job.json").find(R"("status":"interrupted","exit":143)"), std::string::npos)
      << readFile(root / "bb" / "job.json");
  EXPECT_EQ(jobState(jobs[2]), JobState::Pending);
  bool said = false;
  for (const auto& l : lines) said |= l.find("study: stopped by SIGTERM") != std::string::npos;
  EXPECT_TRUE(said);

  // The same call again: aa is done, bb is continued (not started over), cc runs.
  jobs[1].command = {"/bin/sh", "-c", "echo bb continued; echo \"$0\""};
  lines.clear();
  const Execution again = executeLocally(jobs, o);
  EXPECT_EQ(again.stopped_by, 0);
  EXPECT_EQ(again.jobs[0].kind, Kind::Skipped);
  EXPECT_EQ(again.jobs[1].kind, Kind::Ran);
  EXPECT_EQ(again.jobs[2].kind, Kind::Ran);
  // Both attempts are in the log, the second (no --fresh) after its own header.
  const auto bb = attempts(readFile(root / "bb" / "run.log"));
  ASSERT_EQ(bb.size(), 2u) << readFile(root / "bb" / "run.log");
  EXPECT_EQ(bb[0].header.rfind("started by posc study", 0), 0u) << bb[0].header;
  EXPECT_NE(bb[0].output.find("bb got SIGTERM\n"), std::string::npos) << bb[0].output;
  EXPECT_EQ(bb[1].header.rfind("continued by posc study", 0), 0u) << bb[1].header;
  EXPECT_EQ(bb[1].output, "bb continued\n/bin/sh\n");
  bool continued = false;
  for (const auto& l : lines) continued |= l.find("continued bb seed 0") != std::string::npos;
  EXPECT_TRUE(continued);
}

// An interrupted job whose plan has changed since, with nothing trained to
// lose (no resume point), starts over (--fresh): the run of the old plan in
// its folder would be refused otherwise.
TEST(StudyStop, AnInterruptedJobWhosePlanChangedStartsOverWhenItHasNothingToLose) {
  const fs::path root = fs::path(::testing::TempDir()) / "stop_stale";
  fs::remove_all(root);
  Job j = shellJob(root, "dd", "echo \"$0\"");
  JobRecord old;
  old.interrupted = true;
  old.exit_code = 143;
  old.plan_hash = "ffffffffffffffff";
  writeJobRecord(j, old);
  results::RunStatus status;
  status.state = "interrupted";
  status.seed = 0;
  status.step = 0;
  results::writeStatus(j.out_dir, status);
  ASSERT_EQ(jobState(j), JobState::Stale);
  EXPECT_EQ(progressAtRisk(j), std::nullopt);
  const Execution e = executeLocally({j}, {});
  EXPECT_EQ(e.jobs[0].kind, Kind::Ran);
  const auto dd = attempts(readFile(root / "dd" / "run.log"));
  ASSERT_EQ(dd.size(), 1u);
  EXPECT_EQ(dd[0].header.rfind("started over (--fresh) by posc study", 0), 0u) << dd[0].header;
  EXPECT_EQ(dd[0].output, "--fresh\n");
}

// One stopped at a resume point is kept, not run: starting it over would
// throw its training away, continuing it would train the old plan. --force
// starts it over.
TEST(StudyStop, AnInterruptedJobWhosePlanChangedKeepsItsTrainingUnlessForced) {
  const fs::path root = fs::path(::testing::TempDir()) / "stop_stale_progress";
  fs::remove_all(root);
  Job j = shellJob(root, "ee", "echo \"$0\"");
  JobRecord old;
  old.interrupted = true;
  old.exit_code = 143;
  old.plan_hash = "ffffffffffffffff";
  writeJobRecord(j, old);
  results::RunStatus status;
  status.state = "interrupted";
  status.seed = 0;
  status.step = 8040;
  results::writeStatus(j.out_dir, status);
  fs::create_directories(j.out_dir / "seed0");
  testing::writeFile(j.out_dir / "seed0" / "resume.pt", "weights\n");
  ASSERT_EQ(jobState(j), JobState::Stale);
  ASSERT_EQ(progressAtRisk(j),
            std::optional<std::string>("interrupted at seed 0, step 8040, with seed0/resume.pt"));

  std::vector<std::string> lines;
  ExecuteOptions o;
  o.log = [&](const std::string& l) { lines.push_back(l); };
  const Execution kept = executeLocally({j}, o);
  EXPECT_EQ(kept.jobs[0].kind, Kind::NotRun);
  EXPECT_NE(kept.jobs[0].reason.find("an unfinished run of another plan (interrupted at seed 0, step 8040, with "
                                     "seed0/resume.pt)"),
            std::string::npos)
      << kept.jobs[0].reason;
  EXPECT_NE(kept.jobs[0].reason.find("--force --only seed0/ee"), std::string::npos) << kept.jobs[0].reason;
  EXPECT_FALSE(fs::exists(root / "ee" / "run.log")) << "the run was started";
  EXPECT_EQ(readFile(j.out_dir / "seed0" / "resume.pt"), "weights\n");
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.back().find("not run  ee seed 0:"), std::string::npos) << lines.back();

  o.force = true;
  const Execution forced = executeLocally({j}, o);
  EXPECT_EQ(forced.jobs[0].kind, Kind::Ran);
  const auto ee = attempts(readFile(root / "ee" / "run.log"));
  ASSERT_EQ(ee.size(), 1u);
  EXPECT_EQ(ee[0].output, "--fresh\n");
}

// A study killed outright records nothing (no job.json): its run's resume
// point on disk says the next call continues it, and the study says so.
TEST(StudyStop, ARunOfAKilledStudyIsContinuedAndSaidToBe) {
  const fs::path root = fs::path(::testing::TempDir()) / "stop_killed_study";
  fs::remove_all(root);
  Job j = shellJob(root, "kk", "echo \"$0\"");
  results::RunStatus status;
  status.state = "running";
  status.pid = 999999999;  // gone
  fs::create_directories(j.out_dir / "seed0");
  results::writeStatus(j.out_dir, status);
  testing::writeFile(j.out_dir / "seed0" / "resume.pt", "weights\n");
  testing::writeFile(j.out_dir / "run.log", "seed 0  step 2400/4000\n");  // the killed attempt's output
  ASSERT_EQ(jobState(j), JobState::Pending);
  std::vector<std::string> lines;
  ExecuteOptions o;
  o.log = [&](const std::string& l) { lines.push_back(l); };
  const Execution e = executeLocally({j}, o);
  EXPECT_EQ(e.jobs[0].kind, Kind::Ran);
  bool continued = false;
  for (const auto& l : lines) continued |= l.find("continued kk seed 0") != std::string::npos;
  EXPECT_TRUE(continued);
  const std::string log = readFile(root / "kk" / "run.log");
  EXPECT_EQ(log.rfind("seed 0  step 2400/4000\n", 0), 0u) << "the killed attempt's output was lost:\n" << log;
  const auto kk = attempts(log);
  ASSERT_EQ(kk.size(), 1u) << log;
  EXPECT_EQ(kk[0].header.rfind("continued by posc study", 0), 0u) << kk[0].header;
  EXPECT_EQ(kk[0].output, "/bin/sh\n");  // no --fresh
}

// A run killed or failed after a resume point says step 0 in its status (the
// step is recorded only when a run is stopped by a signal): the weights on
// disk, not the status, say what would be lost; so does an unreadable status.
TEST(StudyStop, AFailedRunsResumePointIsSeenOnDiskWhateverItsStatusSays) {
  const fs::path root = fs::path(::testing::TempDir()) / "stop_stale_failed";
  fs::remove_all(root);
  Job j = shellJob(root, "ff", "echo \"$0\"");
  JobRecord old;
  old.exit_code = 137;
  old.plan_hash = "ffffffffffffffff";
  writeJobRecord(j, old);
  results::RunStatus status;
  status.state = "failed";
  status.seed = 1;
  results::writeStatus(j.out_dir, status);
  fs::create_directories(j.out_dir / "seed0");
  fs::create_directories(j.out_dir / "seed1");
  testing::writeFile(j.out_dir / "seed0" / "final.pt", "weights\n");
  testing::writeFile(j.out_dir / "seed1" / "checkpoint_2000.safetensors", "weights\n");
  testing::writeFile(j.out_dir / "seed1" / "notes.txt", "mine\n");
  EXPECT_EQ(progressAtRisk(j), std::optional<std::string>(
                                   "failed at seed 1, step 0, with seed0/final.pt, seed1/checkpoint_2000.safetensors"));
  testing::writeFile(j.out_dir / "status.json", "{not json");
  EXPECT_EQ(progressAtRisk(j), std::optional<std::string>(
                                   "its status.json unreadable, with seed0/final.pt, seed1/checkpoint_2000.safetensors"));
  const Execution e = executeLocally({j}, {});
  EXPECT_EQ(e.jobs[0].kind, Kind::NotRun);
  EXPECT_FALSE(fs::exists(root / "ff" / "run.log"));
}

// A warm start whose source runs again this call (its plan changed) is kept
// too when it holds trained weights: they grew from the old source.
TEST(StudyStop, AWarmStartWithTrainedWeightsIsKeptWhenItsSourceRunsAgain) {
  const fs::path root = fs::path(::testing::TempDir()) / "stop_source_again";
  fs::remove_all(root);
  Job source = shellJob(root, "gg", "echo source");
  Job warm = shellJob(root, "hh", "echo \"$0\"");
  warm.after = 0;
  JobRecord stale;
  stale.done = true;
  stale.plan_hash = "ffffffffffffffff";
  writeJobRecord(source, stale);  // finished with another plan: runs again
  JobRecord interrupted;
  interrupted.interrupted = true;
  interrupted.exit_code = 143;
  interrupted.plan_hash = warm.plan_hash;  // its own plan is the same
  writeJobRecord(warm, interrupted);
  fs::create_directories(warm.out_dir / "seed0");
  testing::writeFile(warm.out_dir / "seed0" / "resume.pt", "weights\n");
  const Execution e = executeLocally({source, warm}, {});
  EXPECT_EQ(e.jobs[0].kind, Kind::Ran);
  ASSERT_EQ(e.jobs[1].kind, Kind::NotRun);
  EXPECT_NE(e.jobs[1].reason.find("an unfinished run of an earlier warm start"), std::string::npos)
      << e.jobs[1].reason;
  EXPECT_EQ(readFile(warm.out_dir / "seed0" / "resume.pt"), "weights\n");
}

// End to end with posc. ----------------------------------------------------

// Two seeds of a shrunken quick start (one layer of width 16, batches of 16),
// one after the other on one thread, 400 steps each with a resume point every
// 40 and a metrics line every 10: about 2 s per run on a busy 2-core machine.
std::string studyArgs(const fs::path& out, int threads = 1) {
  return "study examples/quickstart.pos --seeds 0,1 --jobs 1 --threads " + std::to_string(threads) +
         " --set train.steps=400 "
         "--set model.layers=1 --set model.width=16 --set train.batch=16 --set train.log_every=10 "
         "--set train.checkpoint_every=40 --set 'task.test_digits=[3]' --set task.problems_per_length=10 "
         "--out '" + out.string() + "'";
}

// The processes whose parent is `parent` (from /proc/<pid>/stat).
std::vector<pid_t> childrenOf(pid_t parent) {
  std::vector<pid_t> children;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = readFile(entry.path() / "stat");
    const size_t close = stat.rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == parent)
      children.push_back(std::stoi(name));
  }
  return children;
}

// Running or stopped, not gone and not a zombie (an orphan's zombie may wait
// for a reaper that never comes).
bool alive(pid_t pid) {
  const std::string stat = readFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z' && stat[close + 2] != 'X';
}

fs::file_time_type mtime(const fs::path& p) {
  std::error_code ec;
  return fs::last_write_time(p, ec);
}

TEST(StudyStop, SigtermToPoscStudyStopsItsRunsAndTheSameCommandContinuesThem) {
  const fs::path out = fs::path(::testing::TempDir()) / "stop_posc_study";
  fs::remove_all(out);
  const fs::path log = out.string() + ".log";
  const fs::path seed0 = out / "seed0" / "quickstart", seed1 = out / "seed1" / "quickstart";

  // --force (nothing to start over yet) must not reach the command that continues the study.
  const pid_t study = spawnPosc(studyArgs(out) + " --force", log);
  ASSERT_GT(study, 0);
  // Seed 0 has finished and seed 1 is training, past its first metrics lines.
  const bool training = waitFor(
      [&] { return readFile(seed1 / "metrics.jsonl").find(R"("step":50,)") != std::string::npos; }, 60);
  const std::vector<pid_t> runs = childrenOf(study);
  if (!training) ::kill(study, SIGKILL);
  ASSERT_TRUE(training) << readFile(log);
  EXPECT_EQ(runs.size(), 1u) << "one posc run at a time (--jobs 1)";

  ASSERT_EQ(::kill(study, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(study, &status, 0), study);
  const std::string first = readFile(log);
  // Whatever happened, no run of this test goes on training after it.
  std::vector<pid_t> orphans;
  for (pid_t r : runs)
    if (alive(r)) orphans.push_back(r);
  for (pid_t r : orphans) ::kill(r, SIGKILL);
  EXPECT_TRUE(orphans.empty()) << orphans.size() << " posc run process(es) outlived the study";
  ASSERT_TRUE(WIFEXITED(status)) << "the study died of signal " << WTERMSIG(status) << "\n" << first;
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << first;
  EXPECT_NE(first.find("study: stopped by SIGTERM"), std::string::npos) << first;
  const size_t continue_line = first.find("continue with: posc study examples/quickstart.pos");
  ASSERT_NE(continue_line, std::string::npos) << first;
  EXPECT_EQ(first.find("--force", continue_line), std::string::npos) << first;

  // Each job's state is recorded: seed 0 finished, seed 1 interrupted at a resume point.
  EXPECT_NE(readFile(seed0 / "job.json").find(R"("status":"done")"), std::string::npos) << readFile(seed0 / "job.json");
  EXPECT_NE(readFile(seed1 / "job.json").find(R"("status":"interrupted")"), std::string::npos)
      << readFile(seed1 / "job.json") << "\n" << readFile(seed1 / "run.log");
  EXPECT_NE(readFile(seed1 / "status.json").find(R"("state":"interrupted")"), std::string::npos);
  EXPECT_TRUE(fs::exists(seed1 / "seed1" / "resume.pt"));
  EXPECT_FALSE(fs::exists(seed1 / "seed1" / "final.pt"));
  ASSERT_TRUE(fs::exists(seed0 / "seed0" / "final.pt"));
  const auto seed0_weights = mtime(seed0 / "seed0" / "final.pt");

  // The same command on two threads (not part of a run's identity): seed 0
  // is not trained again, seed 1 continues.
  const fs::path log2 = out.string() + ".again.log";
  ASSERT_EQ(testing::runPoscLogged(studyArgs(out, 2), log2), 0) << readFile(log2);
  const std::string again = readFile(log2);
  EXPECT_NE(again.find("skipped  quickstart seed 0"), std::string::npos) << again;
  EXPECT_NE(again.find("continued quickstart seed 1"), std::string::npos) << again;
  EXPECT_EQ(mtime(seed0 / "seed0" / "final.pt"), seed0_weights) << "seed 0 was trained again";
  std::smatch step;
  const std::string run_log = readFile(seed1 / "run.log");
  ASSERT_TRUE(std::regex_search(run_log, step, std::regex(R"(seed 1: continued from step ([0-9]+))"))) << run_log;
  EXPECT_GE(std::stoi(step[1]), 50);
  EXPECT_NE(readFile(seed1 / "job.json").find(R"("status":"done")"), std::string::npos);
  EXPECT_TRUE(fs::exists(seed1 / "seed1" / "final.pt"));
}

// A study killed outright (SIGKILL: no chance to pass anything on) still
// leaves no run going: the kernel sends each run SIGTERM (PR_SET_PDEATHSIG),
// which stops it at a resume point; unrecorded, it is continued next time.
TEST(StudyStop, SigkillToPoscStudyStillStopsItsRunsAtAResumePoint) {
  const fs::path out = fs::path(::testing::TempDir()) / "stop_posc_study_kill";
  fs::remove_all(out);
  const fs::path log = out.string() + ".log";
  const fs::path seed1 = out / "seed1" / "quickstart";

  const pid_t study = spawnPosc(studyArgs(out), log);
  ASSERT_GT(study, 0);
  const bool training = waitFor(
      [&] { return readFile(seed1 / "metrics.jsonl").find(R"("step":50,)") != std::string::npos; }, 60);
  const std::vector<pid_t> runs = childrenOf(study);
  ::kill(study, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(study, &status, 0), study);
  ASSERT_TRUE(training) << readFile(log);
  ASSERT_EQ(runs.size(), 1u);
  const bool stopped = waitFor([&] { return !alive(runs[0]); }, 20);
  if (!stopped) ::kill(runs[0], SIGKILL);
  ASSERT_TRUE(stopped) << "the run went on after its study was killed";
  EXPECT_NE(readFile(seed1 / "status.json").find(R"("state":"interrupted")"), std::string::npos)
      << readFile(seed1 / "status.json") << "\n" << readFile(seed1 / "run.log");
  EXPECT_TRUE(fs::exists(seed1 / "seed1" / "resume.pt"));
  EXPECT_FALSE(fs::exists(seed1 / "job.json"));  // the study had no chance to record it

  const fs::path log2 = out.string() + ".again.log";
  ASSERT_EQ(testing::runPoscLogged(studyArgs(out), log2), 0) << readFile(log2);
  EXPECT_NE(readFile(log2).find("skipped  quickstart seed 0"), std::string::npos) << readFile(log2);
  EXPECT_TRUE(std::regex_search(readFile(seed1 / "run.log"), std::regex(R"(seed 1: continued from step [0-9]+)")))
      << readFile(seed1 / "run.log");
}

}  // namespace
}  // namespace posc::study
