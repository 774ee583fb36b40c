// The attention both benchmarks time: the study's decay term
// s * exp(-rate[h] * scale * |q.column - k.column|), separator keys exempt,
// written as a plan directly so the benchmarks measure kernels, not the
// front end.
#pragma once

#include <algorithm>

#include "compiler/plan/plan.h"

namespace posc::bench {

// Rates fall linearly from 0.5 (head 0) to 0.05 (the last head).
inline plan::AttentionPlan decayAttention(int heads, bool learned, double scale = 1.0) {
  using Op = plan::FormulaNode::Op;
  plan::AttentionPlan a;
  plan::Param rate;
  rate.name = "decay.rate";
  rate.per_head = true;
  rate.learned = learned;
  for (int h = 0; h < heads; ++h) rate.init.push_back(0.5 - 0.45 * h / std::max(1, heads - 1));
  a.params.push_back(rate);
  plan::Formula f;
  auto node = [&](Op op, int x = -1, int y = -1) {
    plan::FormulaNode n;
    n.op = op;
    n.a = x;
    n.b = y;
    f.nodes.push_back(n);
    return static_cast<int>(f.nodes.size() - 1);
  };
  int s = node(Op::Score);
  int r = node(Op::Param);
  f.nodes[static_cast<size_t>(r)].param = 0;
  int q = node(Op::QChannel);
  f.nodes[static_cast<size_t>(q)].channel = plan::Channel::Column;
  int k = node(Op::KChannel);
  f.nodes[static_cast<size_t>(k)].channel = plan::Channel::Column;
  int d = node(Op::Abs, node(Op::Sub, q, k));
  if (scale != 1.0) {
    int c = node(Op::Const);
    f.nodes[static_cast<size_t>(c)].value = scale;
    d = node(Op::Mul, c, d);
  }
  int e = node(Op::Exp, node(Op::Mul, node(Op::Neg, r), d));
  node(Op::Mul, s, e);
  plan::ScoreTerm t;
  t.name = "decay";
  t.formula = f;
  t.exempt_keys.insert(plan::TokenKind::Separator);
  a.score_terms.push_back(t);
  return a;
}

}  // namespace posc::bench
