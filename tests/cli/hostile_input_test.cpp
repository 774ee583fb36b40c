// What a careless or hostile user can do to posc from the command line, each
// refused or handled quickly and in bounded memory (docs/reliability.md,
// "Nothing lost, nothing exhausted"): a results folder that is not posc's is
// never emptied, a source is read no further than posc's limit, and a list
// function's count is checked before anything is allocated.
//
// Each refusal is measured as a process: its exit code, its wall time and its
// peak resident memory (wait4's ru_maxrss).
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "tests/common/run_posc.h"

namespace fs = std::filesystem;
using posc::testing::readFile;

namespace {

struct Measured {
  int status = -1;
  double seconds = 0;
  double peak_mb = 0;
  std::string err;
};

// Runs `posc ARGS` (through the shell, which execs posc so that the measured
// process is posc itself) with `input` as its standard input, and measures it.
Measured measurePosc(const std::string& args, const std::string& input = "/dev/null") {
  const fs::path err = fs::path(testing::TempDir()) / "posc_hostile_stderr";
  const std::string cmd = "cd '" POSC_SOURCE_DIR "' && exec '" POSC_BINARY "' " + args + " >/dev/null 2>'" +
                          err.string() + "' <'" + input + "'";
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  Measured m;
  int raw = 0;
  struct rusage usage {};
  if (pid > 0 && ::wait4(pid, &raw, 0, &usage) == pid) {
    m.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    m.peak_mb = static_cast<double>(usage.ru_maxrss) / 1024.0;  // kilobytes on Linux
  }
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m.err = readFile(err);
  return m;
}

fs::path scratch(const std::string& name) {
  fs::path p = fs::path(testing::TempDir()) / name;
  fs::remove_all(p);
  return p;
}

void writeText(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// posc's own footprint before it reads any input: `posc --version` maps
// LibTorch, LLVM and the BLAS (about 215 MB resident on Debian 12), measured
// once in the same test run.
const Measured& baseline() {
  static const Measured m = measurePosc("--version");
  return m;
}

// A refusal within 100 MB of posc's start-up memory and within seconds of its
// start-up time: the input was not read or allocated (before the fixes these
// commands grew by 4-8 GB, or walked the whole file system for minutes). The
// time bound is loose (5 s) because a loaded machine stretches any process:
// a refusal that slips by seconds is still one that did not read its input.
void expectCheapRefusal(const Measured& m) {
  EXPECT_EQ(m.status, 2) << m.err;
  EXPECT_LT(m.seconds, baseline().seconds + 5.0) << m.err;
  EXPECT_LT(m.peak_mb, baseline().peak_mb + 100.0) << "start-up: " << baseline().peak_mb << " MB\n" << m.err;
}

}  // namespace

// Finding 1: `--out DIR` on a folder posc did not write is refused, and
// nothing in it is deleted; --fresh writes into it, still deleting nothing.
TEST(HostileInput, ForeignResultsFolderIsRefusedAndKept) {
  const fs::path u = scratch("posc_foreign_folder");
  writeText(u / "probes" / "my_analysis.csv", "x\n");
  writeText(u / "seed0" / "checkpoint_5.pt", "x\n");
  writeText(u / "metrics.jsonl", "mine\n");

  const Measured refused = measurePosc("run examples/quickstart.pos --steps 5 --no-progress --out '" + u.string() + "'");
  expectCheapRefusal(refused);
  EXPECT_NE(refused.err.find("is not a posc results folder"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("metrics.jsonl, probes, seed0"), std::string::npos) << refused.err;
  EXPECT_EQ(readFile(u / "probes" / "my_analysis.csv"), "x\n");
  EXPECT_EQ(readFile(u / "seed0" / "checkpoint_5.pt"), "x\n");
  EXPECT_EQ(readFile(u / "metrics.jsonl"), "mine\n");
  EXPECT_FALSE(fs::exists(u / ".lock"));  // nothing was written either

  // --fresh takes the folder: posc's files beside the user's, which survive
  // (metrics.jsonl, a name posc writes, is posc's from now on).
  const Measured taken =
      measurePosc("run examples/quickstart.pos --steps 5 --threads 1 --no-progress --fresh --out '" + u.string() + "'");
  EXPECT_EQ(taken.status, 0) << taken.err;
  EXPECT_EQ(readFile(u / "probes" / "my_analysis.csv"), "x\n");
  EXPECT_EQ(readFile(u / "seed0" / "checkpoint_5.pt"), "x\n");
  EXPECT_TRUE(fs::exists(u / "seed0" / "final.pt"));
  EXPECT_TRUE(fs::exists(u / ".posc-results"));
}

// A results folder of posc's own is still replaced by a new run: its stale
// checkpoints (both formats) go, a file of the user's in the seed folder stays.
TEST(HostileInput, PoscFolderIsReplacedOnlyInWhatPoscWrote) {
  const fs::path out = scratch("posc_own_folder");
  const std::string args = "run examples/quickstart.pos --steps 5 --threads 1 --no-progress --out '" + out.string() + "'";
  ASSERT_EQ(measurePosc(args).status, 0);
  writeText(out / "seed0" / "checkpoint_3.pt", "stale\n");
  writeText(out / "seed0" / "checkpoint_3.safetensors", "stale\n");
  writeText(out / "seed0" / "notes.txt", "mine\n");
  const Measured again = measurePosc(args);
  EXPECT_EQ(again.status, 0) << again.err;
  EXPECT_FALSE(fs::exists(out / "seed0" / "checkpoint_3.pt"));
  EXPECT_FALSE(fs::exists(out / "seed0" / "checkpoint_3.safetensors"));
  EXPECT_EQ(readFile(out / "seed0" / "notes.txt"), "mine\n");
}

TEST(HostileInput, RootOfTheFileSystemIsNeverAResultsFolder) {
  for (const char* flags : {"", " --fresh"}) {
    const Measured m = measurePosc(std::string("run examples/quickstart.pos --steps 5 --out /") + flags);
    expectCheapRefusal(m);
    EXPECT_NE(m.err.find("root of the file system"), std::string::npos) << m.err;
  }
  EXPECT_FALSE(fs::exists("/.posc-results"));
}

// Finding 2: a source is read no further than 1 MB and a byte, whatever it is.
TEST(HostileInput, EndlessOrHugeSourcesAreRefusedAfterOneMegabyte) {
  const fs::path sparse = scratch("posc_sparse_dir") / "huge.pos";
  fs::create_directories(sparse.parent_path());
  { std::ofstream(sparse) << "experiment x {}\n"; }
  fs::resize_file(sparse, uintmax_t{3} << 30);  // 3 GiB, sparse
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"check /dev/zero", "longer than 1 MB"},
      {"check /dev/urandom", "longer than 1 MB"},
      {"emit plan /dev/zero", "longer than 1 MB"},
      {"run /dev/zero --steps 1", "longer than 1 MB"},
      {"check '" + sparse.string() + "'", "the file is 3072.0 MB"},
  };
  for (const auto& [args, message] : cases) {
    const Measured m = measurePosc(args);
    SCOPED_TRACE(args);
    expectCheapRefusal(m);
    EXPECT_NE(m.err.find(message), std::string::npos) << m.err;
    EXPECT_NE(m.err.find("posc reads sources of up to 1 MB"), std::string::npos) << m.err;
  }
}

TEST(HostileInput, AFolderIsNotAnEmptySource) {
  const fs::path dir = scratch("posc_folder_source") / "d.pos";
  fs::create_directories(dir);
  const Measured m = measurePosc("check '" + dir.string() + "'");
  EXPECT_EQ(m.status, 2) << m.err;
  EXPECT_NE(m.err.find("Is a directory"), std::string::npos) << m.err;
}

// Finding 3: list functions and ranges are bounded before they allocate.
TEST(HostileInput, HugeListCountsAreLocatedErrors) {
  const fs::path dir = scratch("posc_huge_lists");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"use decay(rates = linspace(0.5, 0.05, 1e9))", "'linspace' makes lists of 1 to 65536 values"},
      {"use decay(rates = geomspace(0.5, 0.05, 4294967296))", "'geomspace' makes lists of 1 to 65536 values"},
      {"use alibi(slopes = alibi_slopes(1e12))", "'alibi_slopes' makes lists of 1 to 65536 values"},
      {"use decay(rates = linspace(0.5, 0.05, 2.5))", "the count here is 2.5"},
  };
  int i = 0;
  for (const auto& [use, message] : cases) {
    const fs::path file = dir / ("list" + std::to_string(i++) + ".pos");
    writeText(file, "import rope\nimport decay\nimport alibi\n\nexperiment lists {\n  attention {\n    " + use +
                        "\n  }\n}\n");
    const Measured m = measurePosc("check '" + file.string() + "'");
    SCOPED_TRACE(use);
    expectCheapRefusal(m);
    EXPECT_NE(m.err.find(message), std::string::npos) << m.err;
    EXPECT_NE(m.err.find(file.filename().string() + ":7:"), std::string::npos) << m.err;  // located
  }
  const Measured range = measurePosc("check examples/quickstart.pos --set 'task.test_digits=1..1000000000'");
  expectCheapRefusal(range);
  EXPECT_NE(range.err.find("leaves them"), std::string::npos) << range.err;
}

// Moderate finding 5: a repeated seed or length would train or evaluate the
// same thing twice into one folder.
TEST(HostileInput, RepeatedSeedsAndLengthsAreRefused) {
  const Measured seeds = measurePosc("check examples/quickstart.pos --set 'train.seeds=[0, 1, 0]'");
  EXPECT_EQ(seeds.status, 2) << seeds.err;
  EXPECT_NE(seeds.err.find("'seeds' lists 0 twice"), std::string::npos) << seeds.err;
  EXPECT_NE(seeds.err.find("train.seeds:1:8"), std::string::npos) << seeds.err;  // at the repeat
  const Measured lengths = measurePosc("check examples/quickstart.pos --set 'task.test_digits=[3, 3]'");
  EXPECT_EQ(lengths.status, 2) << lengths.err;
  EXPECT_NE(lengths.err.find("'test_digits' lists 3 twice"), std::string::npos) << lengths.err;
  const fs::path out = scratch("posc_study_repeat");
  const Measured study = measurePosc("study examples/quickstart.pos --seeds 0,0 --out '" + out.string() + "'");
  EXPECT_EQ(study.status, 2) << study.err;
  EXPECT_NE(study.err.find("--seeds lists 0 twice"), std::string::npos) << study.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST(HostileInput, AbsurdThreadCountsAreUsageErrors) {
  const Measured m = measurePosc("run examples/quickstart.pos --threads 100000 --steps 1");
  expectCheapRefusal(m);
  EXPECT_NE(m.err.find("--threads 100000 is more than posc starts"), std::string::npos) << m.err;
}

// Finding 6: a probe holds the run's folder lock while it reads the
// checkpoints and writes probes/, so a run started into the folder meanwhile
// is refused (before, it replaced the model under the probe, which then wrote
// the old model's results into the new run); and a probe waits for no run
// either. The holder is played by this process, which takes the lock as posc
// does and names itself in it.
TEST(HostileInput, ProbeAndRunNeverShareAResultsFolder) {
  const fs::path out = scratch("posc_probe_lock");
  ASSERT_EQ(measurePosc("run examples/quickstart.pos --steps 5 --threads 1 --no-progress --out '" + out.string() + "'")
                .status,
            0);
  const std::string pid = std::to_string(::getpid());
  auto hold = [&](const std::string& command) {
    const int fd = ::open((out / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
    const std::string holder = pid + " " + command + "\n";
    EXPECT_EQ(::ftruncate(fd, 0), 0);
    EXPECT_EQ(::pwrite(fd, holder.data(), holder.size(), 0), static_cast<ssize_t>(holder.size()));
    return fd;
  };
  const std::string probe = "probe examples/quickstart.pos --from '" + out.string() + "' --probe 'reach(lengths = [3])'";

  int fd = hold("run");
  const Measured probed = measurePosc(probe);
  EXPECT_EQ(probed.status, 2) << probed.err;
  EXPECT_NE(probed.err.find("is in use by another posc run (pid " + pid + ")"), std::string::npos) << probed.err;
  EXPECT_FALSE(fs::exists(out / "probes"));
  ::close(fd);

  fd = hold("probe");
  const fs::path model = out / "seed0" / "final.pt";
  const std::string before = readFile(model);
  const Measured ran = measurePosc("run examples/quickstart.pos --steps 7 --threads 1 --no-progress --out '" + out.string() + "'");
  EXPECT_EQ(ran.status, 2) << ran.err;
  EXPECT_NE(ran.err.find("is in use by another posc probe (pid " + pid + ")"), std::string::npos) << ran.err;
  EXPECT_EQ(readFile(model), before);
  ::close(fd);

  // Released, the probe runs, and a run can replace the folder afterwards.
  const Measured free = measurePosc(probe);
  EXPECT_EQ(free.status, 0) << free.err;
  EXPECT_TRUE(fs::exists(out / "probes"));
}

// Minor findings: a damaged status.json or metrics.jsonl is reported, never
// silently restarted from step 0 or carried into the finished run.
TEST(HostileInput, DamagedRunFilesAreReportedNotRestartedOrCarried) {
  const fs::path out = scratch("posc_damaged_run");
  const std::string args = "run examples/quickstart.pos --steps 5 --threads 1 --no-progress --out '" + out.string() + "'";
  ASSERT_EQ(measurePosc(args).status, 0);
  const std::string model = readFile(out / "seed0" / "final.pt");
  const std::string status = readFile(out / "status.json");

  writeText(out / "status.json", "{\"state\":\"fini");
  const Measured damaged = measurePosc(args);
  EXPECT_EQ(damaged.status, 2) << damaged.err;
  EXPECT_NE(damaged.err.find("its status.json is damaged"), std::string::npos) << damaged.err;
  EXPECT_EQ(readFile(out / "seed0" / "final.pt"), model);  // nothing replaced

  // An unfinished run whose log has a damaged line is not continued.
  std::string interrupted = status;
  const size_t at = interrupted.find("\"finished\"");
  ASSERT_NE(at, std::string::npos) << status;
  interrupted.replace(at, 10, "\"interrupted\"");
  writeText(out / "status.json", interrupted);
  writeText(out / "metrics.jsonl", readFile(out / "metrics.jsonl") + "{\"seed\":0,\"st\n");
  const Measured carried = measurePosc(args);
  EXPECT_EQ(carried.status, 2) << carried.err;
  EXPECT_NE(carried.err.find("is damaged (not a JSON record)"), std::string::npos) << carried.err;

  // posc report names the line instead of leaving it off the chart.
  writeText(out / "status.json", status);
  const Measured report = measurePosc("report '" + out.string() + "'");
  EXPECT_EQ(report.status, 2) << report.err;
  EXPECT_NE(report.err.find("is not a JSON record"), std::string::npos) << report.err;
}

// `posc report /` neither fails with a raw file-system error nor writes a
// comparison page into the root; a search below a folder stops at a study's
// depth and skips what it may not read.
TEST(HostileInput, ReportOfTheRootIsAUsageErrorAndSearchesAreShallow) {
  const Measured root = measurePosc("report /");
  expectCheapRefusal(root);
  EXPECT_NE(root.err.find("the root of the file system"), std::string::npos) << root.err;
  const fs::path page = scratch("posc_report_proc");
  const Measured proc = measurePosc("report /proc --out '" + page.string() + "'");
  expectCheapRefusal(proc);
  EXPECT_NE(proc.err.find("holds no finished runs"), std::string::npos) << proc.err;
}

// The parser's errors past the limit are counted, not dropped from the count;
// a 200 KB name is shown cut, not echoed whole.
TEST(HostileInput, SyntaxErrorCountsAndHugeTokensInDiagnostics) {
  const fs::path many = scratch("posc_many_errors") / "many.pos";
  std::string text = "experiment e {\n";
  for (int i = 0; i < 30; ++i) text += "  model { width = = }\n";
  writeText(many, text + "}\n");
  const Measured counted = measurePosc("check '" + many.string() + "'");
  EXPECT_EQ(counted.status, 2);
  EXPECT_NE(counted.err.find("30 errors generated; 10 not shown (the limit is 20"), std::string::npos) << counted.err;

  const fs::path huge = scratch("posc_huge_token") / "huge.pos";
  writeText(huge, "experiment e {\n  model { width = " + std::string(200000, 'w') + " }\n}\n");
  const Measured shown = measurePosc("check '" + huge.string() + "'");
  EXPECT_EQ(shown.status, 2);
  EXPECT_LT(shown.err.size(), 4000u) << shown.err.substr(0, 4000);
  EXPECT_NE(shown.err.find("bytes not shown"), std::string::npos) << shown.err.substr(0, 4000);
}

// Finding 8 and a minor one: `posc repl` reads a 40,000-line script in time
// linear in its length (before: 66 s, each input padded with a newline per
// earlier line), and a pipe of errors gets the diagnostics of the first 20
// failed inputs and a count of the rest, not one error per line.
TEST(HostileInput, ReplScriptsAreLinearAndTheirErrorsBounded) {
  const fs::path dir = scratch("posc_repl_script");
  std::string script;
  for (int i = 0; i < 40000; ++i) script += "k" + std::to_string(i) + "(d) = " + std::to_string(i) + " * d\n";
  writeText(dir / "long.repl", script + "k5(d) + )\n");
  const Measured run = measurePosc("repl", (dir / "long.repl").string());
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("<stdin>:40001:9: error: unmatched ')'"), std::string::npos) << run.err;
  EXPECT_LT(run.seconds, baseline().seconds + 10.0);

  std::string garbage;
  for (int i = 0; i < 5000; ++i) garbage += ")\n";
  writeText(dir / "garbage.repl", garbage);
  const Measured bounded = measurePosc("repl", (dir / "garbage.repl").string());
  EXPECT_EQ(bounded.status, 2);
  EXPECT_LT(bounded.err.size(), 5000u);
  EXPECT_NE(bounded.err.find("5000 inputs had errors; the first 20 are shown"), std::string::npos) << bounded.err;
}
