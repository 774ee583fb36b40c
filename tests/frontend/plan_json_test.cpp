// plan.json (compiler/plan/plan_json.h): every experiment of every example
// written as JSON reads back as the same plan, to the last field (its dump
// and its JSON are equal), and damaged or foreign files are named errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>

#include "compiler/driver/compile.h"
#include "compiler/plan/plan_json.h"

namespace fs = std::filesystem;

TEST(PlanJson, EveryExampleReadsBackAsTheSamePlan) {
  int plans = 0, handset = 0, documents = 0, probes = 0, terms = 0;
  for (const auto& entry : fs::recursive_directory_iterator("examples")) {
    if (entry.path().extension() != ".pos") continue;
    posc::driver::Compilation c;
    posc::driver::CompileRequest r;
    r.path = entry.path().string();
    c.checkAll(r);  // some examples hold deliberate errors; their good experiments still count
    for (const posc::plan::ExperimentPlan& p : c.plans) {
      const std::string json = posc::plan::planJson(p);
      const posc::plan::ExperimentPlan back = posc::plan::planFromJson(json);
      EXPECT_EQ(posc::plan::dumpPlan(back), posc::plan::dumpPlan(p)) << entry.path() << " " << p.name;
      EXPECT_EQ(posc::plan::planJson(back), json) << entry.path() << " " << p.name;
      ++plans;
      handset += p.handset.has_value();
      documents += p.task.kind == posc::plan::TaskKind::Documents;
      probes += !p.probes.empty();
      terms += !p.attention.score_terms.empty();
    }
  }
  // Every part of a plan is exercised: hand-set weights, document tasks,
  // probes, score formulas.
  EXPECT_GE(plans, 40);
  EXPECT_GT(handset, 0);
  EXPECT_GT(documents, 0);
  EXPECT_GT(probes, 0);
  EXPECT_GT(terms, 0);
}

TEST(PlanJson, ItsDefaultsAndNamesAreThePlans) {
  const posc::plan::ExperimentPlan p;
  const std::string json = posc::plan::planJson(p);
  // Enums by name, defaults written out (compiler/plan/plan.h).
  EXPECT_NE(json.find("\"format\": \"posc-plan\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"schedule\": \"cosine\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"steps\": 16000"), std::string::npos) << json;
  EXPECT_NE(json.find("\"init_std\": 0.02"), std::string::npos) << json;
}

TEST(PlanJson, DamagedOrForeignFilesAreNamedErrors) {
  auto message = [](const std::string& text) {
    try {
      posc::plan::planFromJson(text);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(message("{").find("not JSON"), std::string::npos);
  EXPECT_EQ(message(R"({"format": "pt"})"), "not a posc plan");
  EXPECT_NE(message(R"({"format": "posc-plan", "version": 99, "experiment": "e"})").find("newer"), std::string::npos);
  EXPECT_NE(message(R"({"format": "posc-plan", "version": 1, "experiment": "e", "train": {"steps": "many"}})")
                .find("damaged"),
            std::string::npos);
  EXPECT_NE(message(R"({"format": "posc-plan", "version": 1, "experiment": "e", "model": {"mlp": "tanh"}})"),
            "(accepted)");
}
