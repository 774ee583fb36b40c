// Sweeps: grid expansion (--set KEY=A,B), the waves a Slurm submission is cut
// into, and the array scripts (the cluster itself: tests/slurm).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "runtime/study/jobs.h"
#include "tests/common/files.h"
#include "runtime/study/slurm.h"

namespace posc::study {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) { return posc::testing::scratchDir(name); }

StudyRequest sweep(const fs::path& out) {
  StudyRequest r;
  r.files = {POSC_SOURCE_DIR "/examples/addition/rope2d_decay.pos",
             POSC_SOURCE_DIR "/examples/addition/rope2d_decay_sink.pos"};
  r.preset = "small";
  r.seeds = std::vector<uint64_t>{0};
  r.grid = {{"train.lr", {"1e-3", "3e-3"}}, {"model.heads", {"2", "4"}}};
  r.out = out;
  r.posc_binary = "/usr/bin/posc-under-test";
  return r;
}

// The arithmetic of a tiny plan, by hand: 1 layer of width 4 with an MLP of
// 6 counts 1 x (4 x 16 + 2 x 4 x 6) + 2 x 512 x 4 = 4,208 weights; two
// 3-digit operands make sequences of 2 x 4 + 4 + 4 = 16 tokens. Training,
// 100 steps of 2: 3,200 tokens x (6 x 4,208 + 12 x 1 x 16 x 4) = 83,251,200.
// Evaluation, 5 problems of 3 digits: 80 tokens x (2 x 4,208 + 4 x 16 x 4) =
// 693,760.
TEST(StudySlurm, ComputeEstimateOfATinyPlan) {
  plan::ExperimentPlan p;
  p.model.layers = 1;
  p.model.width = 4;
  p.model.mlp_hidden = 6;
  p.train.steps = 100;
  p.train.batch = 2;
  p.task.operands = 2;
  p.task.train_max_digits = 3;
  p.task.test_digits = {3};
  p.task.problems_per_length = 5;
  const ComputeEstimate e = estimateCompute(p);
  EXPECT_DOUBLE_EQ(e.train_flops, 83251200.0);
  EXPECT_DOUBLE_EQ(e.eval_flops, 693760.0);
  EXPECT_EQ(e.steps, 100);
  p.train.steps = 200;
  EXPECT_DOUBLE_EQ(estimateCompute(p).train_flops, 2 * 83251200.0);
}

// 1.2e13 operations on one CPU thread at 20 GFLOP/s are 10 minutes: doubled
// plus 15 is 35, rounded up to 45; on two threads 5 -> 25 -> 30. On a GPU
// 1e15 at 5 TFLOP/s is 200 s, plus 10,000 steps x 5 ms = 250 s: 2 x 4.17 +
// 15 = 23.3 -> 30 minutes. A day of arithmetic gives a limit past 24 hours.
TEST(StudySlurm, TimeLimitFromTheEstimate) {
  EXPECT_EQ(timeLimitMinutes({1.2e13, 0, 1000}, 1, false), 45);
  EXPECT_EQ(timeLimitMinutes({1.0e13, 0.2e13, 1000}, 2, false), 30);
  EXPECT_EQ(timeLimitMinutes({1e15, 0, 10000}, 1, true), 30);
  EXPECT_EQ(timeLimitMinutes({0, 0, 0}, 1, false), 15);
  EXPECT_EQ(timeLimitMinutes({20e9 * 86400, 0, 0}, 1, false), 2 * 24 * 60 + 15);
}

TEST(StudyGrid, SplitsValuesAtTopLevelCommasOnly) {
  EXPECT_EQ(splitGridValues("1e-3,3e-3"), (std::vector<std::string>{"1e-3", "3e-3"}));
  EXPECT_EQ(splitGridValues("[1, 2]"), (std::vector<std::string>{"[1, 2]"}));
  EXPECT_EQ(splitGridValues("[1, 2],[3]"), (std::vector<std::string>{"[1, 2]", "[3]"}));
  EXPECT_EQ(splitGridValues("\"a,b\",c"), (std::vector<std::string>{"\"a,b\"", "c"}));
  EXPECT_EQ(splitGridValues("500"), (std::vector<std::string>{"500"}));
}

TEST(StudyGrid, EveryCombinationIsAGridPointWithItsOwnFolderAndWarmStarts) {
  const fs::path out = scratch("grid");
  std::string diags;
  auto jobs = expandStudy(sweep(out), diags);
  ASSERT_TRUE(jobs) << diags;
  ASSERT_EQ(jobs->size(), 8u);  // 2 files x 1 seed x 2 x 2 points
  // Points in the order given, the last axis fastest; each sink after its own point's decay.
  EXPECT_EQ((*jobs)[0].label(), "rope2d_decay-small [train.lr=1e-3 model.heads=2] seed 0");
  EXPECT_EQ((*jobs)[1].label(), "rope2d_decay_sink-small [train.lr=1e-3 model.heads=2] seed 0");
  EXPECT_EQ((*jobs)[2].point, "train.lr=1e-3 model.heads=4");
  EXPECT_EQ((*jobs)[7].point, "train.lr=3e-3 model.heads=4");
  for (size_t i = 0; i < jobs->size(); ++i) {
    const Job& j = (*jobs)[i];
    EXPECT_EQ(j.out_dir, out / j.point_folder / "seed0" / j.variant());
    EXPECT_EQ(j.id(), j.point_folder + "/seed0/" + j.variant());
    EXPECT_GT(j.memory_mb, 1024);
    if (j.experiment == "rope2d_decay_sink") {
      ASSERT_TRUE(j.after);
      EXPECT_EQ((*jobs)[*j.after].point, j.point);
      EXPECT_EQ((*jobs)[*j.after].experiment, "rope2d_decay");
    }
  }
  EXPECT_EQ((*jobs)[0].point_folder, "train.lr=1e-3+model.heads=2");
  // The point's settings reach the run: in its command and in its plan hash.
  const auto& cmd = (*jobs)[2].command;
  EXPECT_NE(std::find(cmd.begin(), cmd.end(), "model.heads=4"), cmd.end());
  EXPECT_NE((*jobs)[0].plan_hash, (*jobs)[2].plan_hash);
}

TEST(StudyGrid, TwoValuesThatShareAFolderAreAnError) {
  StudyRequest r = sweep(scratch("grid_clash"));
  r.grid = {{"train.lr", {"[1]", "(1)"}}};  // both become "_1_"
  std::string diags;
  EXPECT_THROW(expandStudy(r, diags), StudyError);
}

TEST(StudySlurm, WarmStartsGoOneWaveAfterTheirSourcesAndFinishedJobsStayOut) {
  const fs::path out = scratch("waves");
  StudyRequest r = sweep(out);
  r.grid = {{"train.lr", {"1e-3", "3e-3"}}};
  std::string diags;
  auto jobs = expandStudy(r, diags);
  ASSERT_TRUE(jobs) << diags;
  ASSERT_EQ(jobs->size(), 4u);
  std::vector<SlurmWave> waves = planWaves(*jobs, false);
  ASSERT_EQ(waves.size(), 2u);
  EXPECT_EQ(waves[0].jobs, (std::vector<size_t>{0, 2}));  // the decay runs
  EXPECT_EQ(waves[1].jobs, (std::vector<size_t>{1, 3}));  // their warm starts
  // A finished source stays out, and its warm start moves to the first wave.
  writeJobRecord((*jobs)[0], {true, 0, 1.0, (*jobs)[0].plan_hash, false, "", (*jobs)[0].training_hash});
  waves = planWaves(*jobs, false);
  ASSERT_EQ(waves.size(), 2u);
  EXPECT_EQ(waves[0].jobs, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(waves[1].jobs, (std::vector<size_t>{3}));
  // Everything finished: nothing to submit, unless forced.
  for (const Job& j : *jobs) writeJobRecord(j, {true, 0, 1.0, j.plan_hash, false, "", j.training_hash});
  EXPECT_TRUE(planWaves(*jobs, false).empty());
  waves = planWaves(*jobs, true);
  ASSERT_EQ(waves.size(), 2u);
  EXPECT_EQ(waves[0].jobs.size() + waves[1].jobs.size(), 4u);
}

TEST(StudySlurm, TheArrayScriptRunsEachJobByIdWithTheWavesResources) {
  const fs::path out = scratch("script");
  StudyRequest r = sweep(out);
  r.grid = {{"train.lr", {"1e-3", "3e-3"}}};
  std::string diags;
  auto jobs = expandStudy(r, diags);
  ASSERT_TRUE(jobs) << diags;
  std::vector<SlurmWave> waves = planWaves(*jobs, false);
  SlurmOptions o;
  o.study_command = {"/opt/posc", "study", "a.pos", "--out", "/data/study"};
  o.cpus_per_task = 3;
  o.gpu = true;
  o.name = "posc-sweep";
  o.working_dir = "/home/me";
  writeWaveScripts(*jobs, waves, out, o);
  ASSERT_TRUE(fs::exists(out / "slurm" / "wave1.sbatch"));
  const std::string script = sbatchScript(*jobs, waves[1], 1, out, o);
  EXPECT_NE(script.find("#SBATCH --job-name=posc-sweep-w1\n"), std::string::npos);
  EXPECT_NE(script.find("#SBATCH --array=0-1\n"), std::string::npos);
  EXPECT_NE(script.find("#SBATCH --cpus-per-task=3\n"), std::string::npos);
  EXPECT_NE(script.find(fmt::format("#SBATCH --mem={}M\n", (*jobs)[1].memory_mb)), std::string::npos);
  EXPECT_NE(script.find("#SBATCH --gres=gpu:1\n"), std::string::npos);
  int64_t minutes = 0;
  for (size_t i : waves[1].jobs) minutes = std::max(minutes, timeLimitMinutes((*jobs)[i].compute, 3, true));
  EXPECT_NE(script.find(fmt::format("#SBATCH --time={}:{:02}:00\n", minutes / 60, minutes % 60)), std::string::npos);
  EXPECT_NE(script.find("#SBATCH --chdir=/home/me\n"), std::string::npos);
  EXPECT_NE(script.find("  train.lr=1e-3/seed0/rope2d_decay_sink-small  #"), std::string::npos);
  EXPECT_NE(script.find("  train.lr=3e-3/seed0/rope2d_decay_sink-small  #"), std::string::npos);
  EXPECT_NE(script.find("exec /opt/posc study a.pos --out /data/study --threads \"${SLURM_CPUS_PER_TASK:-1}\" "
                        "--only \"${jobs[$task]}\""),
            std::string::npos);
  // The script is valid bash.
  EXPECT_EQ(std::system(("bash -n " + (out / "slurm" / "wave1.sbatch").string()).c_str()), 0);
}

// Clusters still run bash 4.2, where "${extra[@]}" of an empty array is an
// unbound variable under set -u: the script expands it only when set. Run
// with echo in posc's place, each task passes its job and --force only when
// fresh; a throttle limits the array.
TEST(StudySlurm, TheArrayScriptRunsWithoutExtraArgumentsAndTakesAThrottle) {
  const fs::path out = scratch("script_bash42");
  StudyRequest r = sweep(out);
  std::string diags;
  auto jobs = expandStudy(r, diags);
  ASSERT_TRUE(jobs) << diags;
  std::vector<SlurmWave> waves = planWaves(*jobs, false);
  SlurmOptions o;
  o.study_command = {"/bin/echo", "study"};
  o.max_running = 2;
  const std::string script = sbatchScript(*jobs, waves[0], 0, out, o);
  EXPECT_NE(script.find(fmt::format("#SBATCH --array=0-{}%2\n", waves[0].jobs.size() - 1)), std::string::npos) << script;
  EXPECT_NE(script.find("${extra[@]+\"${extra[@]}\"}"), std::string::npos) << script;
  posc::testing::writeFile(out / "task.sh", script);
  const fs::path printed = out / "task.out";
  ASSERT_EQ(std::system(("SLURM_ARRAY_TASK_ID=0 bash '" + (out / "task.sh").string() + "' >'" + printed.string() + "'").c_str()), 0);
  EXPECT_EQ(posc::testing::readFile(printed), "study --threads 1 --only " + (*jobs)[waves[0].jobs[0]].id() + "\n");
}

}  // namespace
}  // namespace posc::study
