#include "compiler/plan/plan.h"
namespace posc::plan {
std::string dumpPlan(const ExperimentPlan&) { return {}; }
std::string renderFormula(const Formula& f, const AttentionPlan&) { return f.text; }
}
