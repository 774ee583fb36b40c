// plan::dumpTrainingIdentity, what a run trains: the settings that only the
// evaluation after training reads (test lengths, problems per length, the
// test seed, eval settings, probes) leave it as it was, so that a finished
// run is evaluated again instead of trained again; every setting that
// changes the weights changes it, and so does any evaluation setting once
// the evaluation runs during training (eval.every), whose records are part
// of the training log.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/plan/plan.h"

namespace {

using Settings = std::vector<std::pair<std::string, std::string>>;

posc::plan::ExperimentPlan compileWith(const Settings& settings, std::vector<std::string> probe_calls = {}) {
  posc::driver::Compilation c;
  posc::driver::CompileRequest r;
  r.path = "examples/addition/rope_plain.pos";
  r.experiment.preset = "mini";
  for (const auto& [key, value] : settings) r.experiment.overrides.push_back({key, value});
  r.experiment.probe_calls = std::move(probe_calls);
  EXPECT_TRUE(c.compile(r)) << c.diags.render(false);
  return c.plan.value_or(posc::plan::ExperimentPlan{});
}

TEST(TrainingIdentity, EvaluationSettingsLeaveItAndTrainingSettingsChangeIt) {
  const posc::plan::ExperimentPlan base = compileWith({});
  ASSERT_FALSE(base.probes.empty());
  ASSERT_EQ(base.eval.every, 0);
  const std::string plan = posc::plan::dumpIdentity(base), trained = posc::plan::dumpTrainingIdentity(base);

  auto evaluationOnly = [&](const posc::plan::ExperimentPlan& p, const std::string& what) {
    EXPECT_NE(posc::plan::dumpIdentity(p), plan) << what << " is part of the plan";
    EXPECT_EQ(posc::plan::dumpTrainingIdentity(p), trained) << what << " changed what is trained";
  };
  for (const auto& [key, value] : Settings{{"task.test_digits", "[5, 7]"},
                                           {"task.problems_per_length", "12"},
                                           {"task.test_seed", "9"},
                                           {"eval.batch", "30"}})
    evaluationOnly(compileWith({{key, value}}), key);
  evaluationOnly(compileWith({}, {"reach(lengths = [5, 10])"}), "another reach probe");
  posc::plan::ExperimentPlan no_probes = base;
  no_probes.probes.clear();
  evaluationOnly(no_probes, "no probes");

  for (const auto& [key, value] : Settings{{"train.lr", "1e-3"},
                                           {"train.steps", "100"},
                                           {"train.seeds", "[5]"},
                                           {"model.width", "64"},
                                           {"model.embedding_std", "0.02"},
                                           {"task.train_max_digits", "8"}})
    EXPECT_NE(posc::plan::dumpTrainingIdentity(compileWith({{key, value}})), trained) << key;

  // Evaluated during training: the evaluation is part of the training log.
  const posc::plan::ExperimentPlan during = compileWith({{"eval.every", "100"}});
  EXPECT_NE(posc::plan::dumpTrainingIdentity(during), trained);
  EXPECT_NE(posc::plan::dumpTrainingIdentity(compileWith({{"eval.every", "100"}, {"task.test_digits", "[5, 7]"}})),
            posc::plan::dumpTrainingIdentity(during));
  EXPECT_EQ(posc::plan::dumpTrainingIdentity(compileWith({{"eval.every", "100"}}, {"reach(lengths = [5, 10])"})),
            posc::plan::dumpTrainingIdentity(during))
      << "the probes run after training";
}

}  // namespace
