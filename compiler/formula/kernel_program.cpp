// Kernel programs: the graph builders (see kernel_program.h).
#include "compiler/formula/kernel_program.h"

#include <unordered_map>

namespace posc::formula {

NodeId KernelProgram::constant(double v) { return root = graph.constant(v); }

NodeId KernelProgram::distance() { return root = graph.leaf(Op::Var, 0); }

NodeId KernelProgram::unary(Op op, NodeId a) { return root = graph.unary(op, a); }

NodeId KernelProgram::binary(Op op, NodeId a, NodeId b) { return root = graph.binary(op, a, b); }

NodeId KernelProgram::ternary(Op op, NodeId a, NodeId b, NodeId c) {
  formula::Node n;
  n.op = op;
  n.a = a;
  n.b = b;
  n.c = c;
  return root = graph.make(n);
}

NodeId KernelProgram::inlineProgram(const KernelProgram& other, NodeId argument) {
  std::unordered_map<NodeId, NodeId> map;
  for (NodeId id : other.graph.reachable({other.root})) {
    formula::Node n = other.graph.node(id);
    if (n.op == Op::Var) {
      map[id] = argument;
      continue;
    }
    for (NodeId* x : {&n.a, &n.b, &n.c})
      if (*x >= 0) *x = map.at(*x);
    map[id] = graph.make(n);
  }
  return root = map.at(other.root);
}

}  // namespace posc::formula
