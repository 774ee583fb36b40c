// The formula IR: a typed, hash-consed expression DAG over score formulas.
//
// plan::Formula is a flat node list as sema produced it. Code generation and
// differentiation want more: every structurally equal subexpression stored
// once (common-subexpression elimination by hash-consing), constants folded as
// nodes are made, and derivatives with respect to the score and to each
// parameter built as further nodes of the same graph, so that a forward value
// and its gradients share their subexpressions. The graph is also the input of
// the LLVM code generator (compiler/jit) and of a tree-walking interpreter used
// as the reference in tests and benchmarks.
//
// Free of LLVM and LibTorch: the front end and the REPL can use it alone.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/expr/ops.h"
#include "compiler/plan/plan.h"

namespace posc::formula {

// The operations: those of the expression language (compiler/expr/ops.def),
// whose leaves include free variables (Var) for elementwise maps such as a
// kernel k(d) swept over an array of distances.
using expr::Op;
using expr::arity;
using expr::opName;

using NodeId = int32_t;

struct Node {
  Op op = Op::Const;
  double value = 0.0;  // Const
  int index = 0;       // QChannel/KChannel: channel; Param, Lookup: param; Var: variable
  NodeId a = -1, b = -1, c = -1;
  bool operator==(const Node& o) const;
};

// What a derivative is taken with respect to. Node: one node of the graph
// taken as an independent variable (a Lookup, whose value is the table entry
// it read: d root / d that entry).
struct Wrt {
  enum class Kind : uint8_t { Score, Param, Var, Node } kind = Kind::Score;
  int index = 0;
  static Wrt score() { return {Kind::Score, 0}; }
  static Wrt param(int i) { return {Kind::Param, i}; }
  static Wrt var(int i) { return {Kind::Var, i}; }
  static Wrt node(NodeId id) { return {Kind::Node, id}; }
};

// A graph of nodes. Operands always have smaller ids than the node that uses
// them, so the node vector is a topological order.
class Graph {
 public:
  // Makes (or finds) a node; folds constants and algebraic identities
  // (x + 0, x * 1, --x, ...; in derivatives also x * 0) first, so the id may
  // name a simpler node.
  NodeId make(const Node& n);
  NodeId constant(double v);
  NodeId leaf(Op op, int index = 0);
  NodeId unary(Op op, NodeId a);
  NodeId binary(Op op, NodeId a, NodeId b);
  NodeId select(NodeId cond, NodeId then_value, NodeId else_value);
  // The entry of table parameter `param` at `index` (never folded: a table's
  // entries are not constants of the graph).
  NodeId lookup(int param, NodeId index);

  // Imports a plan formula. `score` is the node standing for `s` (normally
  // leaf(Op::Score)); returns the node of the formula's result.
  NodeId import(const plan::Formula& f, NodeId score);
  // The same with every leaf but constants (Score, channels, Head, Param)
  // made by `leaf`, and every table lookup by `lookup` (given the index's
  // node; unset: a Lookup node): a kernel of distance reads a channel as d,
  // a parameter as its value, a table as tableSelect of its entries.
  using LeafFn = std::function<NodeId(const plan::FormulaNode&)>;
  using LookupFn = std::function<NodeId(const plan::FormulaNode&, NodeId index)>;
  NodeId import(const plan::Formula& f, const LeafFn& leaf, const LookupFn& lookup = nullptr);
  NodeId import(const plan::Formula& f) { return import(f, leaf(Op::Score)); }

  // d root / d wrt, as a node of this graph. Memoised per (wrt) across calls.
  NodeId derivative(NodeId root, Wrt wrt);

  const Node& node(NodeId id) const { return nodes_.at(static_cast<size_t>(id)); }
  size_t size() const { return nodes_.size(); }
  bool isConst(NodeId id, double v) const;
  bool isConst(NodeId id) const { return node(id).op == Op::Const; }

  // Nodes reachable from `roots`, in topological order.
  std::vector<NodeId> reachable(const std::vector<NodeId>& roots) const;
  // Canonical text of the subgraph (one line per reachable node): two roots
  // with equal canonical text compute the same function.
  std::string canonical(const std::vector<NodeId>& roots) const;
  // Human rendering of one root ("s * exp(-p0 * abs(q.column - k.column))").
  std::string render(NodeId root) const;

 private:
  NodeId intern(const Node& n);
  std::vector<Node> nodes_;
  std::unordered_map<std::string, NodeId> index_;
  std::unordered_map<std::string, NodeId> derivative_memo_;
  int assuming_finite_ = 0;  // > 0 while derivative() builds (see make())
};

// Leaf values for the interpreter.
struct Env {
  double score = 0.0;
  double q_channel[plan::kChannelCount] = {};
  double k_channel[plan::kChannelCount] = {};
  double head = 0.0;
  std::vector<double> params;
  std::vector<std::vector<double>> tables;  // per param: the head's entries (tables only)
  std::vector<double> vars;
};

// Tree-walking interpreter: evaluates `root` by recursion over the DAG with no
// caching (the baseline a compiled kernel is measured against), each
// operation by its definition (expr::fold).
double interpret(const Graph& g, NodeId root, const Env& env);

// Evaluates every reachable node once, in topological order (the semantics
// the code generator implements), and returns the value of `root`.
double evaluate(const Graph& g, NodeId root, const Env& env);

// A table of constant entries read at `index`, as nodes of the graph: a
// chain of selects with Lookup's meaning (expr::lookupEntry: rounded down,
// clamped, NaN reads NaN), for evaluators without table storage (the REPL's
// kernels of distance, where a table's entries are known).
NodeId tableSelect(Graph& g, const std::vector<double>& entries, NodeId index);

// 64-bit FNV-1a hash of a string (structural hashes of canonical texts).
uint64_t hashText(const std::string& text);

}  // namespace posc::formula
