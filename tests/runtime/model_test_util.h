// Small builders shared by the model tests: tiny plans, score formulas written
// node by node, and index channels laid out like reversed addition problems.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "compiler/plan/plan.h"

namespace posc::model::testing {

using Op = plan::FormulaNode::Op;

inline plan::ExperimentPlan tinyPlan(int layers = 2, int width = 32, int heads = 2) {
  plan::ExperimentPlan p;
  p.name = "tiny";
  p.model.layers = layers;
  p.model.width = width;
  p.model.heads = heads;
  p.model.head_dim = width / heads;
  p.model.mlp_hidden = 4 * width;
  return p;
}

// A rotation of one pair by the column channel at angular frequency `omega`
// (a single-pair ladder has inverse frequency 1; the fixed stretch scales it).
inline plan::Rotation columnPair(int pair, double omega, plan::Channel channel = plan::Channel::Column) {
  plan::Rotation r;
  r.channel = channel;
  r.pair_begin = pair;
  r.pair_end = pair + 1;
  plan::Distribution d;
  d.kind = plan::Distribution::Kind::Fixed;
  d.a = d.b = d.eval_value = omega;
  r.stretch = d;
  return r;
}

// Builds a Formula node by node; each call returns the new node's index.
struct FormulaBuilder {
  plan::Formula f;
  int push(plan::FormulaNode n) {
    f.nodes.push_back(n);
    return static_cast<int>(f.nodes.size()) - 1;
  }
  int leaf(Op op) { plan::FormulaNode n; n.op = op; return push(n); }
  int constant(double v) { plan::FormulaNode n; n.op = Op::Const; n.value = v; return push(n); }
  int q(plan::Channel c) { plan::FormulaNode n; n.op = Op::QChannel; n.channel = c; return push(n); }
  int k(plan::Channel c) { plan::FormulaNode n; n.op = Op::KChannel; n.channel = c; return push(n); }
  int param(int i) { plan::FormulaNode n; n.op = Op::Param; n.param = i; return push(n); }
  int unary(Op op, int a) { plan::FormulaNode n; n.op = op; n.a = a; return push(n); }
  int binary(Op op, int a, int b) { plan::FormulaNode n; n.op = op; n.a = a; n.b = b; return push(n); }
};

// score * exp(-rate[h] * |q.column - k.column|), separator keys exempt.
inline plan::ScoreTerm decayTerm(int rate_param) {
  FormulaBuilder b;
  int s = b.leaf(Op::Score);
  int d = b.unary(Op::Abs, b.binary(Op::Sub, b.q(plan::Channel::Column), b.k(plan::Channel::Column)));
  int e = b.unary(Op::Exp, b.unary(Op::Neg, b.binary(Op::Mul, b.param(rate_param), d)));
  b.binary(Op::Mul, s, e);
  plan::ScoreTerm t;
  t.name = "decay";
  t.formula = b.f;
  t.exempt_keys.insert(plan::TokenKind::Separator);
  return t;
}

// score - slope[h] * |q.column - k.column|, separator keys exempt.
inline plan::ScoreTerm alibiTerm(int slope_param) {
  FormulaBuilder b;
  int s = b.leaf(Op::Score);
  int d = b.unary(Op::Abs, b.binary(Op::Sub, b.q(plan::Channel::Column), b.k(plan::Channel::Column)));
  b.binary(Op::Sub, s, b.binary(Op::Mul, b.param(slope_param), d));
  plan::ScoreTerm t;
  t.name = "alibi";
  t.formula = b.f;
  t.exempt_keys.insert(plan::TokenKind::Separator);
  return t;
}

inline plan::Param param(const std::string& name, bool per_head, bool learned, std::vector<double> init) {
  plan::Param p;
  p.name = name;
  p.per_head = per_head;
  p.learned = learned;
  p.init = std::move(init);
  return p;
}

// Channels (kChannelCount, L) of a reversed addition problem with the given
// operand lengths and answer length: digits, '+', digits, '=', answer, <eos>.
inline torch::Tensor additionChannels(const std::vector<int>& operands, int answer) {
  std::vector<int64_t> col, row, kind;
  const int n = static_cast<int>(operands.size());
  for (int r = 0; r < n; ++r) {
    for (int i = 1; i <= operands[r]; ++i) { col.push_back(i); row.push_back(r); kind.push_back(0); }
    col.push_back(0); row.push_back(r + 1); kind.push_back(1);  // '+' or '='
  }
  for (int i = 1; i <= answer; ++i) { col.push_back(i); row.push_back(n); kind.push_back(0); }
  col.push_back(0); row.push_back(n); kind.push_back(2);  // <eos>
  const int64_t L = static_cast<int64_t>(col.size());
  auto pos = torch::arange(L, torch::kLong);
  return torch::stack({pos, torch::tensor(col), torch::tensor(row), torch::tensor(kind)});
}

// Several problems of equal total length as one (kChannelCount, B, L) tensor.
inline torch::Tensor batchChannels(const std::vector<torch::Tensor>& each) {
  return torch::stack(each, 1);
}

// Every feature at once: learned position table (shorter than the sequence,
// so clamping happens), sinusoidal column embedding, position RoPE on head 0,
// stretched column RoPE, row RoPE, separator key zeroing, decay with learned
// per-head rates, ALiBi with a learned scalar slope on head 1 with <eos>
// queries exempt, null slot, softmax1, RMSNorm, ReGLU, untied head.
inline plan::ExperimentPlan fullPlan(plan::Precision precision) {
  auto p = tinyPlan(2, 32, 2);  // head_dim 16, 8 pairs
  p.model.precision = precision;
  p.model.norm = plan::NormKind::RmsNorm;
  p.model.mlp = plan::MlpKind::Reglu;
  p.model.tied_embeddings = false;
  p.model.softmax = plan::SoftmaxKind::Softmax1;
  auto& a = p.attention;
  plan::AbsoluteEmbedding learned;
  learned.kind = plan::AbsoluteEmbedding::Kind::Learned;
  learned.channel = plan::Channel::Position;
  learned.max_index = 8;
  plan::AbsoluteEmbedding sinus;
  sinus.kind = plan::AbsoluteEmbedding::Kind::Sinusoidal;
  sinus.channel = plan::Channel::Column;
  a.embeddings = {learned, sinus};
  plan::Rotation pos;
  pos.channel = plan::Channel::Position;
  pos.pair_begin = 0;
  pos.pair_end = 2;
  pos.heads = {0};
  plan::Rotation col;
  col.channel = plan::Channel::Column;
  col.pair_begin = 2;
  col.pair_end = 6;
  plan::Distribution d;
  d.kind = plan::Distribution::Kind::LogUniform;
  d.a = 1;
  d.b = 4;
  d.eval_value = 2;
  col.stretch = d;
  plan::Rotation row;
  row.channel = plan::Channel::Row;
  row.pair_begin = 6;
  row.pair_end = 8;
  a.rotations = {pos, col, row};
  plan::KeyZeroing z;
  z.kinds.insert(plan::TokenKind::Separator);
  z.pair_begin = 2;
  z.pair_end = 6;
  a.key_zeroing = {z};
  a.params.push_back(param("decay.rate", true, true, {0.2, 0.4}));
  a.params.push_back(param("alibi.slope", false, true, {0.3}));
  a.score_terms.push_back(decayTerm(0));
  auto alibi = alibiTerm(1);
  alibi.heads = {1};
  alibi.exempt_queries.insert(plan::TokenKind::Special);
  a.score_terms.push_back(alibi);
  a.null_slot = true;
  return p;
}

}  // namespace posc::model::testing
