// The term chain of an attention as one formula expression: see compiled.h.
// LLVM-free, so it is also what the tests interpret as a reference.
#include "compiler/jit/compiled.h"

namespace posc::jit {

using formula::NodeId;
using formula::Op;

AttentionSpec attentionSpecFor(const plan::ModelPlan& model, const plan::AttentionPlan& attention,
                               DType dtype) {
  AttentionSpec spec;
  spec.dtype = dtype;
  spec.softmax = model.softmax;
  spec.null_slot = attention.null_slot;
  spec.terms = attention.score_terms;
  for (const auto& p : attention.params) {
    spec.learned.push_back(p.learned);
    spec.widths.push_back(p.width());
  }
  return spec;
}

formula::NodeId buildTermChain(formula::Graph& g, const std::vector<plan::ScoreTerm>& terms) {
  const int kind = static_cast<int>(plan::Channel::Kind);
  NodeId s = g.leaf(Op::Score);
  for (const auto& term : terms) {
    NodeId updated = g.import(term.formula, s);
    // keep = (key kind exempt) + (query kind exempt) + (head not selected):
    // non-zero exactly where the previous score passes through.
    NodeId keep = g.constant(0.0);
    for (int k = 0; k < 3; ++k) {
      auto tk = static_cast<plan::TokenKind>(k);
      if (term.exempt_keys.contains(tk))
        keep = g.binary(Op::Add, keep,
                        g.binary(Op::Eq, g.leaf(Op::KChannel, kind), g.constant(k)));
      if (term.exempt_queries.contains(tk))
        keep = g.binary(Op::Add, keep,
                        g.binary(Op::Eq, g.leaf(Op::QChannel, kind), g.constant(k)));
    }
    if (!term.heads.empty()) {
      NodeId selected = g.constant(0.0);
      for (int h : term.heads)
        selected = g.binary(Op::Add, selected,
                            g.binary(Op::Eq, g.leaf(Op::Head), g.constant(h)));
      keep = g.binary(Op::Add, keep, g.binary(Op::Eq, selected, g.constant(0.0)));
    }
    s = g.select(keep, s, updated);
  }
  return s;
}

}  // namespace posc::jit
