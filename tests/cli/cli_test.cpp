// The posc command line as a user meets it: exit codes, messages, and that a
// failed command leaves nothing on disk.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/common/run_posc.h"

namespace fs = std::filesystem;

namespace {

using Result = posc::testing::PoscResult;
using posc::testing::runPosc;  // `posc ARGS` from the source folder, stdout and stderr captured

}  // namespace

TEST(Cli, HelpAndVersion) {
  EXPECT_EQ(runPosc("--help").status, 0);
  Result v = runPosc("--version");
  EXPECT_EQ(v.status, 0);
  EXPECT_EQ(v.out.rfind("posc ", 0), 0u) << v.out;
  for (const char* cmd : {"check --help", "emit --help", "run --help"}) EXPECT_EQ(runPosc(cmd).status, 0) << cmd;
  Result s = runPosc("help settings");
  EXPECT_EQ(s.status, 0);
  EXPECT_NE(s.out.find("train.init_from"), std::string::npos);
  // Each setting shows its default, read from the plan's own defaults
  // (compiler/plan/plan.h: lr 1e-3, 64 problems a step, GPT-2's N(0, 0.02)).
  auto settingLine = [&](const std::string& name) {
    const size_t at = s.out.find("  " + name + " ");
    return at == std::string::npos ? std::string() : s.out.substr(at, s.out.find('\n', at) - at);
  };
  EXPECT_NE(settingLine("train.lr").find(" 0.001 "), std::string::npos) << settingLine("train.lr");
  EXPECT_NE(settingLine("train.batch").find(" 64 "), std::string::npos) << settingLine("train.batch");
  EXPECT_NE(settingLine("model.init").find(" gpt2 "), std::string::npos) << settingLine("model.init");
  EXPECT_NE(settingLine("model.init_std").find(" 0.02 "), std::string::npos) << settingLine("model.init_std");
  EXPECT_NE(settingLine("model.kv_heads").find(" = heads "), std::string::npos) << settingLine("model.kv_heads");
  // `posc help CMD` is the command's own help; a command given nothing to
  // work on is a usage error (2), its usage on stderr.
  for (const char* cmd : {"run", "emit", "study", "probe"}) {
    Result help = runPosc(std::string("help ") + cmd), own = runPosc(std::string(cmd) + " --help");
    EXPECT_EQ(help.status, 0) << cmd;
    EXPECT_EQ(help.out, own.out) << cmd;
    EXPECT_NE(help.out.find(std::string("posc ") + cmd), std::string::npos) << help.out;
  }
  EXPECT_EQ(runPosc("help nonsense").status, 2);
  for (const char* cmd : {"run", "emit", "study", "probe", "report", "check"}) {
    Result bare = runPosc(cmd);
    EXPECT_EQ(bare.status, 2) << cmd << "\n" << bare.out << bare.err;
    EXPECT_EQ(bare.out, "") << cmd;
  }
}

// A relative warm-start path given with --set is read from the working
// folder, as a shell user means it (written in a file, a path is read from
// that file's folder).
TEST(Cli, RelativeWarmStartPathsFollowWhereTheyWereWritten) {
  const fs::path dir = fs::path(::testing::TempDir()) / "posc_init_file";
  fs::create_directories(dir);
  std::ofstream(dir / "model.safetensors") << "x";
  const std::string from_here = fs::relative(dir / "model.safetensors", POSC_SOURCE_DIR).string();
  Result given = runPosc("check examples/quickstart.pos --set 'train.init_from=\"" + from_here + "\"'");
  EXPECT_EQ(given.status, 0) << given.err;
  // (Read from examples/, the folder of quickstart.pos, the same text names
  // no file: before, this check failed.)
  Result missing = runPosc("check examples/quickstart.pos --set 'train.init_from=\"x" + from_here + "\"'");
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("a relative path given with --set is read from the working folder"), std::string::npos)
      << missing.err;
}

// posc loads OpenBLAS's OpenMP build when it is installed beside the pthread
// one (tools/posc/blas_kernels.h), and says which build it runs on.
TEST(Cli, OpenBlasThreadingBuildIsChosen) {
  Result v = runPosc("--version");
  ASSERT_EQ(v.status, 0);
  if (v.out.find("not OpenBLAS") != std::string::npos) GTEST_SKIP() << "the BLAS is not OpenBLAS: " << v.out;
  Result lib = runPosc("--blas-library");
  ASSERT_EQ(lib.status, 0);
  const fs::path loaded = lib.out.substr(0, lib.out.find('\n'));
  ASSERT_TRUE(fs::exists(loaded)) << lib.out;
  const fs::path openmp = loaded.parent_path().parent_path() / "openblas-openmp" / "libopenblas.so.0";
  if (fs::exists(openmp)) {
    EXPECT_EQ(loaded.parent_path().filename(), "openblas-openmp") << loaded;
    EXPECT_NE(v.out.find("OpenMP build"), std::string::npos) << v.out;
  }
  // POSC_KEEP_BLAS keeps the library the system links.
  const fs::path system_link = "/lib/x86_64-linux-gnu/libopenblas.so.0";
  if (!fs::exists(system_link)) return;
  const fs::path kept = fs::path(::testing::TempDir()) / "kept_blas.txt";
  ASSERT_EQ(posc::testing::sh("POSC_KEEP_BLAS=1 '" POSC_BINARY "' --blas-library > '" + kept.string() + "'"), 0);
  EXPECT_EQ(posc::testing::readFile(kept.string()), fs::canonical(system_link).string() + "\n");
}

TEST(Cli, UsageErrorsExitWithTwo) {
  Result r = runPosc("frobnicate");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("unknown command 'frobnicate'"), std::string::npos) << r.err;
  EXPECT_EQ(runPosc("run").status, 2);
  EXPECT_EQ(runPosc("run examples/quickstart.pos --device tpu").status, 2);
  EXPECT_EQ(runPosc("emit plan examples/quickstart.pos --steps many").status, 2);
  Result missing = runPosc("check does/not/exist.pos");
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("cannot read 'does/not/exist.pos'"), std::string::npos) << missing.err;
}

TEST(Cli, CheckPassesOnExamplesAndFailsWithLocatedErrors) {
  Result ok = runPosc("check examples/addition/rope2d_decay_sink.pos stdlib/decay.pos");
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(ok.err, "");  // decay: no far alias predicted
  // The quickstart's slowest decay head (rate 0.05) keeps 0.62 of its target 9
  // columns away: a warning, not an error.
  Result quickstart = runPosc("check examples/quickstart.pos");
  EXPECT_EQ(quickstart.status, 0) << quickstart.err;
  EXPECT_EQ(quickstart.err.find("error"), std::string::npos) << quickstart.err;
  EXPECT_NE(quickstart.err.find("head 3: 0.62 of the target at offset -9"), std::string::npos) << quickstart.err;
  Result bad = runPosc("check tests/golden/diagnostics/fail_channel_typo.pos");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("tests/golden/diagnostics/fail_channel_typo.pos:7:24: error: unknown position channel 'colum'"),
            std::string::npos)
      << bad.err;
  EXPECT_NE(bad.err.find("^~~~~"), std::string::npos);
  EXPECT_NE(bad.err.find("did you mean 'column'?"), std::string::npos);
  EXPECT_EQ(bad.err.find("\033["), std::string::npos) << "no colour when stderr is not a terminal";
}

// The alias check: plain 2D RoPE is warned about (its far comb), decay is not
// (the test above: no warning for rope2d_decay_sink); --aliases --csv prints a
// row per head.
TEST(Cli, CheckPredictsFarAliases) {
  Result plain = runPosc("check examples/addition/rope2d.pos");
  EXPECT_EQ(plain.status, 0) << plain.err;
  EXPECT_NE(plain.err.find("examples/addition/rope2d.pos: warning: experiment 'rope2d': far aliases predicted"),
            std::string::npos)
      << plain.err;
  EXPECT_NE(plain.err.find("hint: `posc check --aliases examples/addition/rope2d.pos`"), std::string::npos);
  Result table = runPosc("check --aliases --csv --preset mini examples/addition/rope2d_decay.pos");
  EXPECT_EQ(table.status, 0) << table.err;
  EXPECT_EQ(table.err, "");
  std::istringstream lines(table.out);
  std::string line;
  std::vector<std::string> rows;
  while (std::getline(lines, line)) rows.push_back(line);
  ASSERT_EQ(rows.size(), 5u) << table.out;  // the header and 4 heads
  EXPECT_EQ(rows[0],
            "head,spike height,target score,best near window (fraction),best far window (fraction),at offset,gap to "
            "target,translation-invariant,bounded,prediction");
  for (int h = 0; h < 3; ++h) EXPECT_NE(rows[1 + h].find("far scores suppressed"), std::string::npos) << rows[1 + h];
  EXPECT_EQ(runPosc("check --csv examples/addition/rope2d.pos").status, 2);
  EXPECT_EQ(runPosc("check --aliases --model exact examples/addition/rope2d.pos").status, 2);
  EXPECT_EQ(runPosc("check --aliases --target-score -1 examples/addition/rope2d.pos").status, 2);
}

TEST(Cli, EmitPlanMatchesGolden) {
  Result r = runPosc("emit plan examples/addition/rope2d_decay_sink.pos");
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream in(POSC_SOURCE_DIR "/tests/golden/plan/examples/addition/rope2d_decay_sink.plan");
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(r.out, ss.str());
  Result ast = runPosc("emit ast examples/quickstart.pos");
  EXPECT_EQ(ast.status, 0);
  EXPECT_NE(ast.out.find("Experiment quickstart"), std::string::npos);
}

TEST(Cli, FailedRunWritesNothing) {
  fs::path out = fs::path(testing::TempDir()) / "posc_cli_failed_run";
  fs::remove_all(out);
  Result r = runPosc("run tests/golden/diagnostics/fail_settings.pos --out '" + out.string() + "'");
  EXPECT_EQ(r.status, 2);
  EXPECT_FALSE(fs::exists(out));
  Result bad_set = runPosc("run examples/quickstart.pos --set train.stpes=3 --out '" + out.string() + "'");
  EXPECT_EQ(bad_set.status, 2);
  EXPECT_NE(bad_set.err.find("did you mean 'steps'?"), std::string::npos) << bad_set.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST(Cli, CudaWithoutADeviceIsAClearError) {
  fs::path out = fs::path(testing::TempDir()) / "posc_cli_cuda";
  fs::remove_all(out);
  Result r = runPosc("run examples/quickstart.pos --device cuda --steps 1 --out '" + out.string() + "'");
  if (r.status == 0) GTEST_SKIP() << "this machine has a CUDA device";
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("cuda"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}
