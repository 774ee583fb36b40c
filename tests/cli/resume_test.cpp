// Runs that survive faults: a run killed with SIGKILL at any step (also in
// the middle of a checkpoint write) or stopped by SIGINT continues from its
// last resume point and ends with the same final.pt, byte for byte, and the
// same metrics.jsonl lines as a run that was never interrupted; one process
// owns a results folder; a run of another plan, unfinished or finished, is
// refused (not deleted) without --fresh, unless it differs in its evaluation
// alone, which keeps the trained weights and evaluates again; a run
// whose checkpoints cannot fit, or whose loss turns NaN on the tensor-op
// path, stops with a clear error before it wastes the disk or the weights;
// the same command twice on two threads trains the same bytes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/common/files.h"
#include "tests/common/run_posc.h"

namespace fs = std::filesystem;
using posc::testing::readFile;
using posc::testing::runPoscLogged;
using posc::testing::sh;
using posc::testing::spawnPosc;
using posc::testing::waitFor;

namespace {

// 240 steps of the quick-start model with a resume point every 40 steps and
// a metrics line every 10: about 2 s per run on one core.
std::string runArgs(const fs::path& out) {
  return "run examples/quickstart.pos --steps 240 --threads 1 --no-progress --set train.log_every=10 "
         "--set train.checkpoint_every=40 --set 'task.test_digits=[3]' --set task.problems_per_length=10 "
         "--out '" + out.string() + "'";
}

fs::path scratch(const std::string& name) {
  fs::path p = fs::path(testing::TempDir()) / name;
  fs::remove_all(p);
  return p;
}

// metrics.jsonl without the timing field, which differs between any two runs.
std::string metricsWithoutTiming(const fs::path& out) {
  static const std::regex timing(R"(,"tokens_per_s":[^,}]*)");
  return std::regex_replace(readFile(out / "metrics.jsonl"), timing, "");
}

// Runs the test's posc run into `out` with one fault injected (an
// environment variable of the atomic writer, results/atomic_file.cpp);
// output in `log`. Returns the exit status (128 + signal when killed).
int runWithFault(const std::string& fault, const fs::path& out, const fs::path& log) {
  return sh("cd '" POSC_SOURCE_DIR "' && " + fault + " '" POSC_BINARY "' " + runArgs(out) + " >'" + log.string() +
            "' 2>&1");
}


class Resume : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    reference_ = new fs::path(scratch("posc_resume_reference"));
    const fs::path log = fs::path(testing::TempDir()) / "posc_resume_reference.log";
    ASSERT_EQ(runPoscLogged(runArgs(*reference_), log), 0) << readFile(log);
  }
  static void TearDownTestSuite() { delete reference_; }

  // The interrupted run continued from `step` (not from the start, which
  // would give the same weights too) to the end: same weights and metrics.
  static void expectSameAsReference(const fs::path& out, const std::string& step) {
    const fs::path log = out.string() + ".resumed.log";
    ASSERT_EQ(runPoscLogged(runArgs(out), log), 0) << readFile(log);
    EXPECT_NE(readFile(log).find("continuing the run in"), std::string::npos) << readFile(log);
    EXPECT_NE(readFile(log).find("seed 0: continued from step " + step + "\n"), std::string::npos) << readFile(log);
    EXPECT_EQ(readFile(out / "seed0" / "final.pt"), readFile(*reference_ / "seed0" / "final.pt"))
        << "final weights differ from the uninterrupted run";
    EXPECT_EQ(metricsWithoutTiming(out), metricsWithoutTiming(*reference_));
    EXPECT_EQ(readFile(out / "accuracy.csv"), readFile(*reference_ / "accuracy.csv"));
    EXPECT_NE(readFile(out / "status.json").find(R"("state":"finished")"), std::string::npos);
    EXPECT_FALSE(fs::exists(out / "seed0" / "resume.pt"));  // removed once final.pt is written
    for (const auto& f : fs::recursive_directory_iterator(out))
      EXPECT_NE(f.path().extension(), ".tmp") << "left behind: " << f.path();
  }

  static fs::path* reference_;
};

fs::path* Resume::reference_ = nullptr;

}  // namespace

TEST_F(Resume, SigkillBetweenResumePointsContinuesBitIdentically) {
  const fs::path out = scratch("posc_resume_kill_between");
  const fs::path log = out.string() + ".log";
  // Killed while logging step 130: 10 steps after the resume point at 120.
  ASSERT_EQ(runWithFault("POSC_FAULT_KILL_BEFORE_RENAME=metrics.jsonl:13", out, log), 128 + SIGKILL) << readFile(log);
  ASSERT_TRUE(fs::exists(out / "seed0" / "resume.pt"));
  // status.json names the seed and the step it continues from, though the
  // run could not say that it stopped.
  const std::string status = readFile(out / "status.json");
  EXPECT_NE(status.find(R"("state":"running")"), std::string::npos) << status;
  EXPECT_NE(status.find(R"("seed":0,"step":120,)"), std::string::npos) << status;
  expectSameAsReference(out, "120");
}

TEST_F(Resume, SigkillDuringACheckpointWriteContinuesBitIdentically) {
  const fs::path out = scratch("posc_resume_kill_in_write");
  const fs::path log = out.string() + ".log";
  // Killed after writing the third resume point (step 120) to its temporary
  // file and before renaming it: the point at step 80 must be used.
  ASSERT_EQ(runWithFault("POSC_FAULT_KILL_BEFORE_RENAME=resume.pt:3", out, log), 128 + SIGKILL) << readFile(log);
  bool temporary = false;
  for (const auto& f : fs::directory_iterator(out / "seed0")) temporary |= f.path().extension() == ".tmp";
  EXPECT_TRUE(temporary) << "the kill should leave the half-finished write behind";
  expectSameAsReference(out, "80");
}

// A run whose plan changed only in its evaluation (another test length)
// keeps what it trained: a finished one is evaluated again with the same
// weights and training log, a killed one goes on training from its resume
// point to the uninterrupted run's weights; a change to the training is
// still refused.
TEST_F(Resume, AnotherEvaluationKeepsTheTrainedWeightsAndEvaluatesAgain) {
  const std::string more_lengths = " --set 'task.test_digits=[3,4]'";
  auto expectEvaluatedAtBothLengths = [&](const fs::path& out) {
    EXPECT_EQ(readFile(out / "seed0" / "final.pt"), readFile(*reference_ / "seed0" / "final.pt"));
    EXPECT_EQ(metricsWithoutTiming(out), metricsWithoutTiming(*reference_));
    const std::string accuracy = readFile(out / "accuracy.csv"), reference = readFile(*reference_ / "accuracy.csv");
    const std::string three = reference.substr(reference.find("\n0,3,"));  // the reference's only row
    EXPECT_NE(accuracy.find(three), std::string::npos) << "the 3-digit row differs:\n" << accuracy << reference;
    EXPECT_NE(accuracy.find("\n0,4,"), std::string::npos) << accuracy;
    EXPECT_NE(readFile(out / "status.json").find(R"("state":"finished")"), std::string::npos);
  };

  // Finished: evaluated again, nothing trained.
  const fs::path finished = scratch("posc_reevaluate_finished");
  fs::copy(*reference_, finished, fs::copy_options::recursive);
  const fs::path log = finished.string() + ".log";
  ASSERT_EQ(runPoscLogged(runArgs(finished) + more_lengths, log), 0) << readFile(log);
  EXPECT_NE(readFile(log).find("only its evaluation or probes changed"), std::string::npos) << readFile(log);
  EXPECT_NE(readFile(log).find("seed 0: trained earlier; evaluating"), std::string::npos) << readFile(log);
  EXPECT_EQ(readFile(log).find("continued from step"), std::string::npos) << readFile(log);
  expectEvaluatedAtBothLengths(finished);

  // A finished run of a version before training hashes (none in its
  // status.json) is known by its plan.json, when that gives the plan hash its
  // status names; a plan.json of another plan is not trusted.
  auto olderCopy = [&](const std::string& name) {
    const fs::path dir = scratch(name);
    fs::copy(*reference_, dir, fs::copy_options::recursive);
    const std::string status = readFile(dir / "status.json");
    const std::string older = std::regex_replace(status, std::regex(R"("training_hash":"[0-9a-f]+",)"), "");
    EXPECT_NE(older, status);
    std::ofstream(dir / "status.json", std::ios::trunc) << older;
    return dir;
  };
  const fs::path older = olderCopy("posc_reevaluate_older");
  ASSERT_EQ(runPoscLogged(runArgs(older) + more_lengths, older.string() + ".log"), 0)
      << readFile(older.string() + ".log");
  EXPECT_NE(readFile(older.string() + ".log").find("only its evaluation or probes changed"), std::string::npos);
  expectEvaluatedAtBothLengths(older);
  const fs::path tampered = olderCopy("posc_reevaluate_tampered");
  const std::string plan_json = readFile(tampered / "plan.json");
  ASSERT_NE(plan_json.find("\"steps\": 240,"), std::string::npos) << plan_json;
  std::ofstream(tampered / "plan.json", std::ios::trunc)
      << std::regex_replace(plan_json, std::regex("\"steps\": 240,"), "\"steps\": 241,");
  const posc::testing::PoscResult untrusted = posc::testing::runPosc(runArgs(tampered) + more_lengths);
  EXPECT_EQ(untrusted.status, 2) << untrusted.err;
  EXPECT_NE(untrusted.err.find("holds a finished run of another plan"), std::string::npos) << untrusted.err;

  // A change to the training is refused as before, the run kept.
  const posc::testing::PoscResult other =
      posc::testing::runPosc(runArgs(finished) + more_lengths + " --set train.lr=1e-4");
  EXPECT_EQ(other.status, 2) << other.err;
  EXPECT_NE(other.err.find("holds a finished run of another plan"), std::string::npos) << other.err;
  expectEvaluatedAtBothLengths(finished);

  // Killed at step 130 (resume point at 120), continued with the new test lengths.
  const fs::path killed = scratch("posc_reevaluate_killed");
  ASSERT_EQ(runWithFault("POSC_FAULT_KILL_BEFORE_RENAME=metrics.jsonl:13", killed, killed.string() + ".log"),
            128 + SIGKILL);
  const fs::path continued_log = killed.string() + ".continued.log";
  ASSERT_EQ(runPoscLogged(runArgs(killed) + more_lengths, continued_log), 0) << readFile(continued_log);
  EXPECT_NE(readFile(continued_log).find("seed 0: continued from step 120\n"), std::string::npos)
      << readFile(continued_log);
  expectEvaluatedAtBothLengths(killed);
}

TEST_F(Resume, SigintStopsAtAStepBoundaryAndSaysHowToContinue) {
  const fs::path out = scratch("posc_resume_sigint");
  const fs::path log = out.string() + ".log";
  const pid_t pid = spawnPosc(runArgs(out), log);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(waitFor([&] { return readFile(out / "metrics.jsonl").find(R"("step":50,)") != std::string::npos; }, 60));
  ::kill(pid, SIGINT);
  int exit_status = 0;
  ASSERT_EQ(::waitpid(pid, &exit_status, 0), pid);
  ASSERT_TRUE(WIFEXITED(exit_status)) << readFile(log);
  EXPECT_EQ(WEXITSTATUS(exit_status), 130) << readFile(log);
  const std::string text = readFile(log);
  EXPECT_NE(text.find("stopped by SIGINT after step"), std::string::npos) << text;
  EXPECT_NE(text.find("continue with: posc run examples/quickstart.pos --steps 240"), std::string::npos) << text;
  const std::string status = readFile(out / "status.json");
  EXPECT_NE(status.find(R"("state":"interrupted")"), std::string::npos) << status;
  EXPECT_TRUE(fs::exists(out / "seed0" / "resume.pt"));
  std::smatch step;
  ASSERT_TRUE(std::regex_search(status, step, std::regex(R"("step":([0-9]+))"))) << status;
  EXPECT_GE(std::stoi(step[1]), 50);
  // posc report says the run is unfinished.
  ASSERT_EQ(runPoscLogged("report '" + out.string() + "'", out.string() + ".report.log"), 0);
  EXPECT_NE(readFile(out / "report.md").find("This run has not finished** (interrupted at seed 0, step"),
            std::string::npos);
  expectSameAsReference(out, step[1].str());
}

TEST(RunFolder, SecondRunIntoTheSameFolderFailsAtOnce) {
  const fs::path out = scratch("posc_two_writers");
  const fs::path log = out.string() + ".first.log";
  const pid_t pid = spawnPosc("run examples/quickstart.pos --steps 100000 --threads 1 --no-progress --out '" +
                                  out.string() + "'",
                              log);
  ASSERT_TRUE(waitFor([&] { return fs::exists(out / "status.json"); }, 60)) << readFile(log);
  const auto t0 = std::chrono::steady_clock::now();
  const posc::testing::PoscResult second =
      posc::testing::runPosc("run examples/quickstart.pos --steps 10 --out '" + out.string() + "'");
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  EXPECT_EQ(second.status, 2) << second.err;
  EXPECT_NE(second.err.find("is in use by another posc run (pid " + std::to_string(pid) + ")"), std::string::npos)
      << second.err;
  EXPECT_LT(waited, 20.0);  // at once, not after the first run
  // The first run's files are untouched by the second.
  EXPECT_NE(readFile(out / "plan.txt").find("override train.steps=100000"), std::string::npos);

  // The killed run is unfinished: another plan is refused, naming the difference ...
  const posc::testing::PoscResult other =
      posc::testing::runPosc("run examples/quickstart.pos --steps 10 --no-progress --out '" + out.string() + "'");
  EXPECT_EQ(other.status, 2);
  EXPECT_NE(other.err.find("holds an unfinished run of another plan"), std::string::npos) << other.err;
  EXPECT_NE(other.err.find("train.steps=100000"), std::string::npos) << other.err;
  // ... unless asked to start over, which leaves no file of the old run.
  const posc::testing::PoscResult fresh = posc::testing::runPosc(
      "run examples/quickstart.pos --steps 10 --no-progress --set 'task.test_digits=[3]' --fresh --out '" +
      out.string() + "'");
  EXPECT_EQ(fresh.status, 0) << fresh.err;
  EXPECT_NE(readFile(out / "status.json").find(R"("state":"finished")"), std::string::npos);
  EXPECT_FALSE(fs::exists(out / "seed0" / "resume.pt"));

  // A finished run: another plan (a quick --steps 5) is refused too, its
  // weights untouched, naming the difference; the same plan again replaces it.
  const std::string weights = readFile(out / "seed0" / "final.pt");
  ASSERT_FALSE(weights.empty());
  const posc::testing::PoscResult quick = posc::testing::runPosc(
      "run examples/quickstart.pos --steps 5 --no-progress --set 'task.test_digits=[3]' --out '" + out.string() + "'");
  EXPECT_EQ(quick.status, 2) << quick.err;
  EXPECT_NE(quick.err.find("holds a finished run of another plan"), std::string::npos) << quick.err;
  EXPECT_NE(quick.err.find("train.steps=10"), std::string::npos) << quick.err;
  EXPECT_EQ(quick.err.find("step 1/"), std::string::npos) << "it trained:\n" << quick.err;
  EXPECT_EQ(readFile(out / "seed0" / "final.pt"), weights);
  EXPECT_NE(readFile(out / "status.json").find(R"("state":"finished")"), std::string::npos);
  const posc::testing::PoscResult same = posc::testing::runPosc(
      "run examples/quickstart.pos --steps 10 --no-progress --set 'task.test_digits=[3]' --out '" + out.string() + "'");
  EXPECT_EQ(same.status, 0) << same.err;
}

// The same command twice on two threads trains the same bits: a model wide
// enough (6 heads x 64) that LibTorch and the BLAS split its products
// between the threads, whose partial sums must still be added in one order.
TEST(Reproducibility, TwoThreadsTrainTheSameBytesTwice) {
  std::string weights[2], metrics[2];
  for (int i = 0; i < 2; ++i) {
    const fs::path out = scratch("posc_two_threads_" + std::to_string(i));
    const posc::testing::PoscResult r = posc::testing::runPosc(
        "run examples/quickstart.pos --steps 12 --threads 2 --no-progress --set model.width=384 --set model.heads=6 "
        "--set train.log_every=1 --set 'task.test_digits=[3]' --set task.problems_per_length=10 --out '" +
        out.string() + "'");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(readFile(out / "plan.txt").find("; 2 CPU threads;"), std::string::npos) << readFile(out / "plan.txt");
    weights[i] = readFile(out / "seed0" / "final.pt");
    metrics[i] = metricsWithoutTiming(out);
  }
  ASSERT_FALSE(weights[0].empty());
  EXPECT_TRUE(weights[0] == weights[1]) << "final.pt differs between two runs of the same command";
  EXPECT_EQ(metrics[0], metrics[1]);
}

TEST(RunFolder, CheckpointsThatCannotFitAreRefusedBeforeTraining) {
  const fs::path dir = scratch("posc_small_disk");
  fs::create_directories(dir);
  if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=256k") != 0)
    GTEST_SKIP() << "cannot mount a small tmpfs here (" << std::strerror(errno) << "); needs root in a mount namespace";
  const posc::testing::PoscResult r = posc::testing::runPosc(
      "run examples/quickstart.pos --steps 50 --no-progress --out '" + (dir / "run").string() + "'");
  ::umount(dir.c_str());
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("not enough disk space"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("step 1/"), std::string::npos) << "it trained first:\n" << r.err;
}

// A score that is NaN on the diagonal (log(0 - 1)): the tensor-op path (the
// CUDA path) stops at the first step with the loss named, exit 2, and writes
// no final.pt from NaN weights.
TEST(RunFolder, NonFiniteLossOnTheTensorPathStopsTheRun) {
  const fs::path dir = scratch("posc_nan_loss");
  fs::create_directories(dir);
  std::ofstream(dir / "nan.pos") << "import quickstart\n"
                                    "experiment nan extends quickstart {\n"
                                    "  attention += { score = s + log(q.position - k.position - 1) }\n"
                                    "}\n";
  fs::copy_file(POSC_SOURCE_DIR "/examples/quickstart.pos", dir / "quickstart.pos");
  const posc::testing::PoscResult r = posc::testing::runPosc("run '" + (dir / "nan.pos").string() +
                                                             "' --jit off --steps 20 --no-progress --out '" +
                                                             (dir / "run").string() + "'");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("training diverged: step 1, the loss is NaN"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "run" / "seed0" / "final.pt"));
  EXPECT_NE(readFile(dir / "run" / "status.json").find(R"("state":"failed")"), std::string::npos);
}

// Plans that would die in the allocator after training are refused by
// `posc check` and `posc run` before anything is written, at the setting
// (sizes far beyond any machine this suite runs on).
TEST(RunFolder, LateFailuresAreRefusedBeforeTraining) {
  struct Case {
    std::string set, message, setting;
  } cases[] = {
      {"--set 'task.test_digits=[3, 100000]'", "evaluation needs about", "task.test_digits"},
      {"--set 'task.test_digits=[100]' --set task.problems_per_length=10000000", "evaluation needs about",
       "task.problems_per_length"},
      {"--set train.batch=1000000", "training needs about", "train.batch"},
  };
  for (const Case& c : cases) {
    const fs::path out = scratch("posc_late_failure");
    const posc::testing::PoscResult check = posc::testing::runPosc("check examples/quickstart.pos " + c.set);
    EXPECT_EQ(check.status, 2) << c.set << "\n" << check.err;
    EXPECT_NE(check.err.find(c.message), std::string::npos) << check.err;
    EXPECT_NE(check.err.find("--set " + c.setting + ":1:1: error"), std::string::npos) << "located at the override:\n" << check.err;
    const posc::testing::PoscResult run =
        posc::testing::runPosc("run examples/quickstart.pos --no-progress " + c.set + " --out '" + out.string() + "'");
    EXPECT_EQ(run.status, 2) << run.err;
    EXPECT_FALSE(fs::exists(out)) << "a refused run wrote " << out;
  }
}

// A full disk when final.pt is written (POSC_FAULT_NO_SPACE: the write
// fails with ENOSPC): the error names the file, evaluation still runs from
// memory and is written, the resume point stays, and the same command later
// finishes the run with the weights of an uninterrupted one.
TEST_F(Resume, AFinalCheckpointThatCannotBeWrittenKeepsTheResumePoint) {
  const fs::path out = scratch("posc_resume_no_space");
  const fs::path log = out.string() + ".log";
  ASSERT_EQ(runWithFault("POSC_FAULT_NO_SPACE=final.pt:1", out, log), 2) << readFile(log);
  const std::string text = readFile(log);
  EXPECT_NE(text.find("final.pt"), std::string::npos) << text;
  EXPECT_NE(text.find("No space left on device"), std::string::npos) << text;
  EXPECT_EQ(text.find("internal error"), std::string::npos) << text;
  EXPECT_NE(text.find("seed 0 evaluated in"), std::string::npos) << "evaluation should still run:\n" << text;
  EXPECT_EQ(readFile(out / "accuracy.csv"), readFile(*reference_ / "accuracy.csv"));
  EXPECT_FALSE(fs::exists(out / "seed0" / "final.pt"));
  EXPECT_TRUE(fs::exists(out / "seed0" / "resume.pt"));
  EXPECT_NE(readFile(out / "status.json").find(R"("state":"failed")"), std::string::npos);
  expectSameAsReference(out, "200");
}
