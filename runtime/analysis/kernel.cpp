// The two interpreters of kernel programs (see kernel.h).
#include "runtime/analysis/kernel.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_map>

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
  std::unordered_map<NodeId, int> step_of;
  for (NodeId id : program.graph.reachable({program.root})) {
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
  // Which steps are affine in d (slope * d + offset), bottom up.
  const size_t n = steps_.size();
  std::vector<Affine> affine(n);
  for (size_t i = 0; i < n; ++i) {
    const KernelNode& k = steps_[i];
    auto in = [&](int x) { return affine[static_cast<size_t>(x)]; };
    Affine& r = affine[i];
    switch (k.op) {
      case Op::Const: r = {true, 0, k.value}; break;
      case Op::Var: r = {true, 1, 0}; break;
      case Op::Neg:
        if (in(k.a).affine) r = {true, -in(k.a).slope, -in(k.a).offset};
        break;
      case Op::Add: case Op::Sub: {
        const Affine a = in(k.a), b = in(k.b);
        const double sign = k.op == Op::Add ? 1 : -1;
        if (a.affine && b.affine) r = {true, a.slope + sign * b.slope, a.offset + sign * b.offset};
        break;
      }
      case Op::Mul: {
        const Affine a = in(k.a), b = in(k.b);
        if (a.affine && b.affine && a.slope == 0) r = {true, a.offset * b.slope, a.offset * b.offset};
        else if (a.affine && b.affine && b.slope == 0) r = {true, b.offset * a.slope, b.offset * a.offset};
        break;
      }
      case Op::Div: {
        const Affine a = in(k.a), b = in(k.b);
        if (a.affine && b.affine && b.slope == 0 && b.offset != 0) r = {true, a.slope / b.offset, a.offset / b.offset};
        break;
      }
      default: break;
    }
  }
  trig_args_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const KernelNode& k = steps_[i];
    if ((k.op == Op::Cos || k.op == Op::Sin) && affine[static_cast<size_t>(k.a)].affine &&
        affine[static_cast<size_t>(k.a)].slope != 0)
      trig_args_[i] = affine[static_cast<size_t>(k.a)];
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
