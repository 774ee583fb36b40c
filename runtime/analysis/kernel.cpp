// The two interpreters of kernel programs (see kernel.h).
#include "runtime/analysis/kernel.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_map>

#include "compiler/formula/affine.h"

namespace posc::analysis {

using Op = KernelNode::Op;

double TreeInterpreter::node(NodeId i, double d) const {
  const formula::Node& n = program_.graph.node(i);
  if (expr::isRead(n.op))
    throw std::invalid_argument("a kernel of distance cannot read a table: " + program_.graph.render(i));
  switch (expr::arity(n.op)) {
    case 0: return n.op == Op::Var ? d : n.value;
    case 1: return expr::fold(n.op, node(n.a, d));
    case 2: return expr::fold(n.op, node(n.a, d), node(n.b, d));
    default:
      if (n.op == Op::Select) return node(n.a, d) != 0 ? node(n.b, d) : node(n.c, d);
      return expr::fold(n.op, node(n.a, d), node(n.b, d), node(n.c, d));
  }
}

double TreeInterpreter::at(double d) const { return node(program_.root, d); }

void KernelEvaluator::evaluateGrid(double d0, double step, double* out, size_t n) const {
  std::vector<double> d(n);
  for (size_t i = 0; i < n; ++i) d[i] = d0 + static_cast<double>(i) * step;
  evaluate(d.data(), out, n);
}

void TreeInterpreter::evaluate(const double* d, double* out, size_t n) const {
  for (size_t i = 0; i < n; ++i) out[i] = at(d[i]);
}

BlockInterpreter::BlockInterpreter(const KernelProgram& program) {
  if (program.root < 0) throw std::invalid_argument("empty kernel program");
  // The reachable nodes, flat, in topological order (the root is the last).
  const std::vector<NodeId> nodes = program.graph.reachable({program.root});
  std::unordered_map<NodeId, int> step_of;
  for (NodeId id : nodes) {
    const formula::Node& g = program.graph.node(id);
    if (expr::isRead(g.op))  // kernels of distance read no storage (tables arrive as tableSelect)
      throw std::invalid_argument("a kernel of distance cannot read a table: " + program.graph.render(id));
    KernelNode k;
    k.op = g.op;
    k.value = g.value;
    k.a = g.a >= 0 ? step_of.at(g.a) : -1;
    k.b = g.b >= 0 ? step_of.at(g.b) : -1;
    k.c = g.c >= 0 ? step_of.at(g.c) : -1;
    step_of[id] = static_cast<int>(steps_.size());
    steps_.push_back(k);
  }
  // Cos and Sin steps whose argument is affine in d (slope * d + offset),
  // which evenly spaced blocks compute by rotation.
  const size_t n = steps_.size();
  formula::AffineInVariable affine(program.graph);
  trig_args_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const formula::Node& g = program.graph.node(nodes[i]);
    if (g.op != Op::Cos && g.op != Op::Sin) continue;
    if (const auto a = affine(g.a); a && a->slope != 0) trig_args_[i] = {true, a->slope, a->offset};
  }
  // Nodes needed on evenly spaced blocks: the result and the operands of
  // needed nodes, except the arguments of rotated Cos/Sin nodes.
  std::vector<char> needed(n, 0);
  needed[n - 1] = 1;
  for (size_t i = n; i-- > 0;) {
    if (!needed[i] || trig_args_[i].affine) continue;
    const KernelNode& k = steps_[i];
    for (int x : {k.a, k.b, k.c})
      if (x >= 0) needed[static_cast<size_t>(x)] = 1;
  }
  unused_when_rotating_.resize(n);
  for (size_t i = 0; i < n; ++i) unused_when_rotating_[i] = !needed[i];
}

}  // namespace posc::analysis
