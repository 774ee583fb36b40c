// A kernel of distance as a graph of the formula IR: score(d) with d the
// graph's variable Var 0 (`k(d) = 20*cos(2*pi*d/6) + 5*cos(2*pi*d/40)`).
//
// The kernel binder (compiler/sema/kernel) builds these from `posc repl`
// lines and `analysis` blocks; the evaluators that sweep them over many
// distances are runtime/analysis's. Free of LLVM and LibTorch.
#pragma once

#include "compiler/expr/ops.h"
#include "compiler/formula/formula.h"

namespace posc::formula {

// A kernel: the graph and its result node. Every builder returns the node it
// made (or found: the graph folds constants and shares equal subexpressions)
// and makes it the result, so the last node built is the kernel.
struct KernelProgram {
  using Op = expr::Op;
  Graph graph;
  NodeId root = -1;  // the result; -1 while nothing is built

  NodeId constant(double v);
  NodeId distance();  // d, the variable
  NodeId unary(Op op, NodeId a);
  NodeId binary(Op op, NodeId a, NodeId b);
  NodeId ternary(Op op, NodeId a, NodeId b, NodeId c);
  NodeId select(NodeId cond, NodeId then, NodeId otherwise) { return ternary(Op::Select, cond, then, otherwise); }
  bool isConstant(NodeId node) const { return graph.isConst(node); }  // does not depend on d
  double value(NodeId node) const { return graph.node(node).value; }  // of a constant node
  // The kernel does not depend on d; constantValue() is then its value.
  bool isConstantKernel() const { return root >= 0 && isConstant(root); }
  double constantValue() const { return value(root); }
  // Builds `other` into this graph with its d replaced by node `argument`,
  // and returns other's result (kernel inlining).
  NodeId inlineProgram(const KernelProgram& other, NodeId argument);
};

}  // namespace posc::formula
