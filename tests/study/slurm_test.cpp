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
  writeJobRecord((*jobs)[0], {true, 0, 1.0, (*jobs)[0].plan_hash});
  waves = planWaves(*jobs, false);
  ASSERT_EQ(waves.size(), 2u);
  EXPECT_EQ(waves[0].jobs, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(waves[1].jobs, (std::vector<size_t>{3}));
  // Everything finished: nothing to submit, unless forced.
  for (const Job& j : *jobs) writeJobRecord(j, {true, 0, 1.0, j.plan_hash});
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
