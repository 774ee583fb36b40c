// Local execution of a job list with stand-in commands (sh scripts): order of
// warm starts, skipping finished jobs, a failed job reported without losing
// the others' results, and its dependants left out.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "runtime/study/executor.h"
#include "tests/common/files.h"
#include "tests/study/shell_jobs.h"

namespace posc::study {
namespace {

namespace fs = std::filesystem;
using Kind = JobOutcome::Kind;
using test_jobs::shellJob;
using test_jobs::attempts;

struct Fixture {
  fs::path root;
  std::vector<Job> jobs;
};

// a: slow, writes a marker; b: fails; c starts from b; d starts from a and
// checks that a's marker is there when it starts.
Fixture fourJobs(const std::string& name) {
  Fixture f;
  f.root = fs::path(::testing::TempDir()) / name;
  fs::remove_all(f.root);
  const std::string a_marker = (f.root / "aa" / "marker").string();
  f.jobs.push_back(shellJob(f.root, "aa", "sleep 0.3; echo trained > '" + a_marker + "'; echo a ran"));
  f.jobs.push_back(shellJob(f.root, "bb", "echo b is failing >&2; exit 5"));
  f.jobs.push_back(shellJob(f.root, "cc", "echo c ran"));
  f.jobs.back().after = 1;
  f.jobs.push_back(shellJob(f.root, "dd", "test -f '" + a_marker + "' && echo d ran after a"));
  f.jobs.back().after = 0;
  return f;
}

TEST(StudyExecutor, RunsInWarmStartOrderAndKeepsResultsWhenOneJobFails) {
  Fixture f = fourJobs("exec_fail");
  std::vector<std::string> lines;
  ExecuteOptions o;
  o.slots = 2;
  o.log = [&](const std::string& l) { lines.push_back(l); };
  const auto out = executeLocally(f.jobs, o).jobs;
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].kind, Kind::Ran);
  EXPECT_EQ(out[1].kind, Kind::Failed);
  EXPECT_EQ(out[1].exit_code, 5);
  EXPECT_EQ(out[2].kind, Kind::NotRun);
  EXPECT_NE(out[2].reason.find("bb seed 0"), std::string::npos) << out[2].reason;
  EXPECT_EQ(out[3].kind, Kind::Ran) << testing::readFile(f.root / "dd" / "run.log");
  const auto dd = attempts(testing::readFile(f.root / "dd" / "run.log"));
  ASSERT_EQ(dd.size(), 1u);
  EXPECT_EQ(dd[0].header.rfind("started by posc study, 20", 0), 0u) << dd[0].header;
  EXPECT_EQ(dd[0].output, "d ran after a\n");
  const auto bb = attempts(testing::readFile(f.root / "bb" / "run.log"));
  ASSERT_EQ(bb.size(), 1u);
  EXPECT_EQ(bb[0].output, "b is failing\n");
  EXPECT_FALSE(fs::exists(f.root / "cc" / "run.log"));

  EXPECT_EQ(jobState(f.jobs[0]), JobState::Done);
  EXPECT_EQ(jobState(f.jobs[1]), JobState::Failed);
  EXPECT_EQ(jobState(f.jobs[2]), JobState::Pending);
  EXPECT_EQ(jobState(f.jobs[3]), JobState::Done);
  const auto rec = readJobRecord(f.jobs[1].out_dir);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->exit_code, 5);
  EXPECT_FALSE(rec->done);
  bool reported = false;
  for (const auto& l : lines) reported |= l.find("FAILED") != std::string::npos && l.find("bb seed 0") != std::string::npos;
  EXPECT_TRUE(reported);
}

// Exit status 3 is a document run that finished and missed a release
// criterion: its results are written, so the job is done and its dependants run.
TEST(StudyExecutor, AnUnmetReleaseCriterionStillFinishesTheJob) {
  Fixture f = fourJobs("exec_unmet");
  f.jobs[1].command = {"/bin/sh", "-c", "echo criterion not met >&2; exit 3"};
  std::vector<std::string> lines;
  ExecuteOptions o;
  o.slots = 2;
  o.log = [&](const std::string& l) { lines.push_back(l); };
  const auto out = executeLocally(f.jobs, o).jobs;
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[1].kind, Kind::Ran);
  EXPECT_EQ(out[1].exit_code, 3);
  EXPECT_EQ(out[2].kind, Kind::Ran);  // c starts from b
  EXPECT_EQ(jobState(f.jobs[1]), JobState::Done);
  const auto rec = readJobRecord(f.jobs[1].out_dir);
  ASSERT_TRUE(rec);
  EXPECT_TRUE(rec->done);
  EXPECT_EQ(rec->exit_code, 3);
  bool reported = false;
  for (const auto& l : lines) reported |= l.find("a release criterion was not met") != std::string::npos;
  EXPECT_TRUE(reported);
}

TEST(StudyExecutor, FinishedJobsAreSkippedUnlessForcedOrTheirPlanChanged) {
  Fixture f = fourJobs("exec_skip");
  f.jobs[1].command = {"/bin/sh", "-c", "echo b ran"};  // nothing fails this time
  ExecuteOptions o;
  o.slots = 2;
  auto first = executeLocally(f.jobs, o).jobs;
  for (const auto& r : first) EXPECT_EQ(r.kind, Kind::Ran);

  // Every job is done with the same plan: nothing runs.
  fs::remove(f.root / "aa" / "marker");
  auto second = executeLocally(f.jobs, o).jobs;
  for (const auto& r : second) EXPECT_EQ(r.kind, Kind::Skipped);
  EXPECT_FALSE(fs::exists(f.root / "aa" / "marker"));

  // A changed plan re-runs that job and the job that starts from it, not the others.
  f.jobs[0].plan_hash = "ffffffffffffffff";
  auto third = executeLocally(f.jobs, o).jobs;
  EXPECT_EQ(third[0].kind, Kind::Ran);
  EXPECT_EQ(third[1].kind, Kind::Skipped);
  EXPECT_EQ(third[2].kind, Kind::Skipped);
  EXPECT_EQ(third[3].kind, Kind::Ran);

  o.force = true;
  auto forced = executeLocally(f.jobs, o).jobs;
  for (const auto& r : forced) EXPECT_EQ(r.kind, Kind::Ran);
}

TEST(StudyExecutor, AProgramThatCannotStartIsAFailedJob) {
  const fs::path root = fs::path(::testing::TempDir()) / "exec_missing";
  fs::remove_all(root);
  Job j = shellJob(root, "xx", "");
  j.command = {"/nonexistent/posc"};
  const auto out = executeLocally({j}, {}).jobs;
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, Kind::Failed);
  EXPECT_EQ(out[0].exit_code, 127);
  EXPECT_NE(testing::readFile(root / "xx" / "run.log").find("cannot start '/nonexistent/posc'"), std::string::npos);
}

}  // namespace
}  // namespace posc::study
