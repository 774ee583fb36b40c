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

namespace fs = std::filesystem;

namespace {

struct Result {
  int status = -1;
  std::string out, err;
};

// Runs `posc ARGS` from the source folder, capturing stdout and stderr.
Result posc(const std::string& args) {
  fs::path dir = fs::path(testing::TempDir()) / "posc_cli";
  fs::create_directories(dir);
  std::string out = (dir / "stdout").string(), err = (dir / "stderr").string();
  std::string cmd = "cd '" POSC_SOURCE_DIR "' && '" POSC_BINARY "' " + args + " >'" + out + "' 2>'" + err + "'";
  int raw = std::system(cmd.c_str());
  Result r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

}  // namespace

TEST(Cli, HelpAndVersion) {
  EXPECT_EQ(posc("--help").status, 0);
  Result v = posc("--version");
  EXPECT_EQ(v.status, 0);
  EXPECT_EQ(v.out.rfind("posc ", 0), 0u) << v.out;
  for (const char* cmd : {"check --help", "emit --help", "run --help"}) EXPECT_EQ(posc(cmd).status, 0) << cmd;
  Result s = posc("help settings");
  EXPECT_EQ(s.status, 0);
  EXPECT_NE(s.out.find("train.init_from"), std::string::npos);
}

TEST(Cli, UsageErrorsExitWithTwo) {
  Result r = posc("frobnicate");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("unknown command 'frobnicate'"), std::string::npos) << r.err;
  EXPECT_EQ(posc("run").status, 2);
  EXPECT_EQ(posc("run examples/quickstart.pos --device tpu").status, 2);
  EXPECT_EQ(posc("emit plan examples/quickstart.pos --steps many").status, 2);
  Result missing = posc("check does/not/exist.pos");
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("cannot read 'does/not/exist.pos'"), std::string::npos) << missing.err;
}

TEST(Cli, CheckPassesOnExamplesAndFailsWithLocatedErrors) {
  Result ok = posc("check examples/quickstart.pos examples/addition/rope2d_decay_sink.pos stdlib/decay.pos");
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(ok.err, "");
  Result bad = posc("check tests/golden/diagnostics/fail_channel_typo.pos");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("tests/golden/diagnostics/fail_channel_typo.pos:7:24: error: unknown position channel 'colum'"),
            std::string::npos)
      << bad.err;
  EXPECT_NE(bad.err.find("^~~~~"), std::string::npos);
  EXPECT_NE(bad.err.find("did you mean 'column'?"), std::string::npos);
  EXPECT_EQ(bad.err.find("\033["), std::string::npos) << "no colour when stderr is not a terminal";
}

TEST(Cli, EmitPlanMatchesGolden) {
  Result r = posc("emit plan examples/addition/rope2d_decay_sink.pos");
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream in(POSC_SOURCE_DIR "/tests/golden/plan/examples/addition/rope2d_decay_sink.plan");
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(r.out, ss.str());
  Result ast = posc("emit ast examples/quickstart.pos");
  EXPECT_EQ(ast.status, 0);
  EXPECT_NE(ast.out.find("Experiment quickstart"), std::string::npos);
}

TEST(Cli, FailedRunWritesNothing) {
  fs::path out = fs::path(testing::TempDir()) / "posc_cli_failed_run";
  fs::remove_all(out);
  Result r = posc("run tests/golden/diagnostics/fail_settings.pos --out '" + out.string() + "'");
  EXPECT_EQ(r.status, 2);
  EXPECT_FALSE(fs::exists(out));
  Result bad_set = posc("run examples/quickstart.pos --set train.stpes=3 --out '" + out.string() + "'");
  EXPECT_EQ(bad_set.status, 2);
  EXPECT_NE(bad_set.err.find("did you mean 'steps'?"), std::string::npos) << bad_set.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST(Cli, CudaWithoutADeviceIsAClearError) {
  fs::path out = fs::path(testing::TempDir()) / "posc_cli_cuda";
  fs::remove_all(out);
  Result r = posc("run examples/quickstart.pos --device cuda --steps 1 --out '" + out.string() + "'");
  if (r.status == 0) GTEST_SKIP() << "this machine has a CUDA device";
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("cuda"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}
