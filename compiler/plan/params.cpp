// Parameter counting by rule; see params.h for the rules.
#include "compiler/plan/params.h"

#include <fmt/format.h>

#include <set>

namespace posc::plan {

bool routesOnly(const WeightTensor& t) {
  std::vector<int> per_row(static_cast<size_t>(t.rows), 0), per_col(static_cast<size_t>(t.cols), 0);
  bool any = false;
  for (int r = 0; r < t.rows; ++r)
    for (int c = 0; c < t.cols; ++c) {
      double v = t.at(r, c);
      if (v == 0) continue;
      if (v != 1) return false;
      if (++per_row[static_cast<size_t>(r)] > 1 || ++per_col[static_cast<size_t>(c)] > 1) return false;
      any = true;
    }
  return any;
}

namespace {

std::vector<const WeightTensor*> writtenTensors(const HandsetModel& m) {
  std::vector<const WeightTensor*> out{&m.embed};
  for (const HandsetLayer& l : m.layers)
    for (const WeightTensor* t : {&l.query, &l.query_bias, &l.key, &l.key_bias, &l.value, &l.value_bias,
                                  &l.out, &l.out_bias, &l.gate, &l.gate_bias, &l.up, &l.up_bias, &l.down,
                                  &l.down_bias})
      out.push_back(t);
  if (!m.identity_head) out.push_back(&m.unembed);
  return out;
}

}  // namespace

ParameterCounts countParameters(const HandsetModel& model) {
  ParameterCounts counts;
  std::set<int> shared_used;
  for (const WeightTensor* t : writtenTensors(model)) {
    if (!t->present) continue;
    TensorCount tc;
    tc.name = t->name;
    tc.dense = static_cast<long long>(t->values.size());
    for (size_t i = 0; i < t->values.size(); ++i) {
      if (t->values[i] == 0) continue;
      ++tc.nonzero;
      if (t->tie[i] >= 0) {
        ++tc.tied;
        shared_used.insert(t->tie[i]);
      }
    }
    tc.identity = routesOnly(*t);
    counts.dense += tc.dense;
    counts.nonzero += tc.nonzero;
    if (!tc.identity) counts.no_identity += tc.nonzero;
    counts.unique += tc.nonzero - tc.tied;
    counts.tensors.push_back(tc);
  }
  counts.unique += static_cast<long long>(shared_used.size());
  for (const HandsetLayer& l : model.layers)
    for (double s : l.alibi) counts.alibi_slopes += s != 0;
  return counts;
}

std::string renderParameterCounts(const ParameterCounts& c) {
  std::string out;
  out += fmt::format("parameters by rule\n");
  out += fmt::format("  dense                  {:>6}  every entry of every written tensor\n", c.dense);
  out += fmt::format("  nonzero                {:>6}  zeros are not parameters\n", c.nonzero);
  out += fmt::format("  excluding identities   {:>6}  tensors that only route dimensions left out\n", c.no_identity);
  out += fmt::format("  unique after tying     {:>6}  nonzero, a shared name counted once (the leaderboard's tying)\n", c.unique);
  out += fmt::format("  ALiBi slopes           {:>6}  fixed positional encoding, not counted\n", c.alibi_slopes);
  out += "tensors (dense / nonzero)\n";
  for (const TensorCount& t : c.tensors) {
    std::string line = fmt::format("  {:<28} {:>5} / {:<5}{}{}", t.name, t.dense, t.nonzero,
                                   t.identity ? "  routes dimensions only" : "",
                                   t.tied > 0 ? fmt::format("  {} shared", t.tied) : "");
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  }
  return out;
}

}  // namespace posc::plan
