// The plan a results folder was run with (runtime/results/run_plan.h):
// plan.json when the run wrote one, and the readers' fields from plan.txt for
// folders written before it.
#include <gtest/gtest.h>

#include <fstream>

#include "compiler/plan/plan_json.h"
#include "runtime/results/run_plan.h"
#include "tests/runtime/train_test_plans.h"

namespace {

using posc::testing::ScratchDir;

TEST(RunPlan, ReadsPlanJsonWhereTheRunWroteOne) {
  ScratchDir dir("run_plan_json");
  posc::plan::ExperimentPlan p;
  p.name = "decay";
  p.preset = "mini";
  p.task.train_max_digits = 12;
  p.eval.published = {{60, {83, 98}}};
  std::ofstream(dir.path() / "plan.json") << posc::plan::planJson(p);
  std::ofstream(dir.path() / "plan.txt") << "experiment other\n";  // plan.json wins
  const posc::plan::ExperimentPlan read = posc::results::readRunPlan(dir.path());
  EXPECT_EQ(posc::results::runVariant(read), "decay-mini");
  EXPECT_EQ(read.task.train_max_digits, 12);
  ASSERT_EQ(read.eval.published.size(), 1u);
  EXPECT_EQ(read.eval.published[0].percent, (std::vector<double>{83, 98}));
}

TEST(RunPlan, ReadsTheFieldsItNeedsFromAnOlderPlanTxt) {
  ScratchDir dir("run_plan_txt");
  std::ofstream(dir.path() / "plan.txt")
      << "# posc 0.9, source examples/addition/decay.pos\n"
         "experiment rope2d_decay\n"
         "  preset mini\n"
         "task\n"
         "  addition of 2 operands, training operands of 1..10 digits\n"
         "eval\n"
         "  published exact match (%) by digits: 60: 83 / 98 / 100, 100: 62.5 / 91  [the source, table 2]\n";
  const posc::plan::ExperimentPlan read = posc::results::readRunPlan(dir.path());
  EXPECT_EQ(posc::results::runVariant(read), "rope2d_decay-mini");
  EXPECT_EQ(read.task.train_max_digits, 10);
  EXPECT_EQ(read.eval.published_source, "the source, table 2");
  ASSERT_EQ(read.eval.published.size(), 2u);
  EXPECT_EQ(read.eval.published[0].digits, 60);
  EXPECT_EQ(read.eval.published[0].percent, (std::vector<double>{83, 98, 100}));
  EXPECT_EQ(read.eval.published[1].percent, (std::vector<double>{62.5, 91}));
}

TEST(RunPlan, AFolderWithoutAPlanOrWithADamagedOneIsNamed) {
  ScratchDir dir("run_plan_none");
  EXPECT_THROW(posc::results::readRunPlan(dir.path()), std::runtime_error);
  std::ofstream(dir.path() / "plan.json") << "{\"format\": \"posc-plan\", \"version\": 1";
  try {
    posc::results::readRunPlan(dir.path());
    FAIL() << "a damaged plan.json was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("plan.json"), std::string::npos) << e.what();
  }
}

}  // namespace
