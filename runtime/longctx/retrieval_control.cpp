// The retrieval control (retrieval_control.h).
#include "runtime/longctx/retrieval_control.h"

#include <map>

namespace posc::longctx {

std::vector<PooledValue> retrievalControl(Factors factors, double margin, const analysis::KernelEvaluator* bias) {
  factors.tasks = {TaskType::Retrieval};
  factors.absent_share = 0.0;
  std::vector<PooledValue> out;
  for (const Cell& cell : planCells(factors).cells) {
    PooledValue v{cell, 0.0, 0};
    for (const DocumentSpec& spec : cellDocuments(factors, cell)) {
      v.sum += retrievalHeadAttention(generate(spec), margin, bias).evidence_mass;
      ++v.documents;
    }
    out.push_back(v);
  }
  return out;
}

std::vector<EffectiveMargin> effectiveMargins(const std::vector<PooledValue>& cells) {
  std::map<std::pair<int, double>, std::vector<std::pair<int, double>>> samples;
  for (const PooledValue& v : cells)
    if (v.documents > 0) samples[{v.cell.length, v.cell.depth}].emplace_back(v.cell.distractors, v.sum / v.documents);
  std::vector<EffectiveMargin> out;
  for (const auto& [at, s] : samples) out.push_back({at.first, at.second, fitMargin(s)});
  return out;
}

}  // namespace posc::longctx
