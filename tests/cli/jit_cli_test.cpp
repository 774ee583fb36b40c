// posc emit llvm and posc run --jit, as a user meets them.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/common/run_posc.h"

namespace fs = std::filesystem;

namespace {

using Result = posc::testing::PoscResult;
using posc::testing::runPosc;  // `posc ARGS` from the source folder, stdout and stderr captured

}  // namespace

TEST(JitCli, EmitLlvmPrintsTheVectorisedKernel) {
  Result r = runPosc("emit llvm examples/quickstart.pos");
  if (r.status == 2 && r.err.find("built without LLVM") != std::string::npos) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.status, 0) << r.err;
  // The header names the score term; the module defines forward and backward.
  EXPECT_NE(r.out.find(";   score decay: s <- s * exp(-decay.rate[h] * abs(q.column - k.column))"),
            std::string::npos) << r.out.substr(0, 400);
  EXPECT_NE(r.out.find("define i64 @posc_attention_fwd_"), std::string::npos);
  EXPECT_NE(r.out.find("define void @posc_attention_bwd_"), std::string::npos);
  // exp vectorised through libmvec.
  EXPECT_NE(r.out.find("@_ZGV"), std::string::npos);
}

TEST(JitCli, JitFlagIsCheckedAndErrorsLeaveNothing) {
  Result r = runPosc("run examples/quickstart.pos --jit maybe --out /nonexistent/never");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--jit takes on or off, not 'maybe'"), std::string::npos) << r.err;
  fs::path out = fs::path(testing::TempDir()) / "posc_jit_cuda";
  fs::remove_all(out);
  // The fused kernels are CPU-only: asking for them on CUDA is a user error
  // (exit 2) unless CUDA itself is missing, which is reported first.
  Result c = runPosc("run examples/quickstart.pos --device cuda --jit on --out '" + out.string() + "'");
  EXPECT_EQ(c.status, 2) << c.err;
  EXPECT_FALSE(fs::exists(out / "plan.txt"));
}
