// Kernel programs and the two interpreters (see kernel.h).
#include "runtime/analysis/kernel.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace posc::analysis {

using Op = KernelNode::Op;

int KernelProgram::push(KernelNode n) {
  nodes.push_back(n);
  return static_cast<int>(nodes.size() - 1);
}

int KernelProgram::constant(double v) {
  KernelNode n;
  n.op = Op::Const;
  n.value = v;
  return push(n);
}

int KernelProgram::distance() {
  KernelNode n;
  n.op = Op::Var;
  return push(n);
}

int KernelProgram::unary(Op op, int a) {
  if (isConstant(a)) return constant(expr::fold(op, nodes[static_cast<size_t>(a)].value, 0, 0));
  KernelNode n;
  n.op = op;
  n.a = a;
  return push(n);
}

int KernelProgram::binary(Op op, int a, int b) {
  if (isConstant(a) && isConstant(b))
    return constant(expr::fold(op, nodes[static_cast<size_t>(a)].value, nodes[static_cast<size_t>(b)].value, 0));
  KernelNode n;
  n.op = op;
  n.a = a;
  n.b = b;
  return push(n);
}

int KernelProgram::select(int cond, int then, int otherwise) {
  if (isConstant(cond)) return nodes[static_cast<size_t>(cond)].value != 0 ? then : otherwise;
  return ternary(Op::Select, cond, then, otherwise);
}

int KernelProgram::ternary(Op op, int a, int b, int c) {
  if (op == Op::Select && isConstant(a)) return select(a, b, c);
  if (isConstant(a) && isConstant(b) && isConstant(c))
    return constant(expr::fold(op, nodes[static_cast<size_t>(a)].value, nodes[static_cast<size_t>(b)].value,
                               nodes[static_cast<size_t>(c)].value));
  KernelNode n;
  n.op = op;
  n.a = a;
  n.b = b;
  n.c = c;
  return push(n);
}

bool KernelProgram::isConstant(int node) const { return nodes.at(static_cast<size_t>(node)).op == Op::Const; }

int KernelProgram::inlineProgram(const KernelProgram& other, int argument) {
  std::vector<int> map(other.nodes.size(), -1);
  for (size_t i = 0; i < other.nodes.size(); ++i) {
    const KernelNode& n = other.nodes[i];
    auto m = [&](int x) { return x < 0 ? -1 : map[static_cast<size_t>(x)]; };
    switch (expr::arity(n.op)) {
      case 0: map[i] = n.op == Op::Var ? argument : constant(n.value); break;
      case 1: map[i] = unary(n.op, m(n.a)); break;
      case 2: map[i] = binary(n.op, m(n.a), m(n.b)); break;
      default: map[i] = ternary(n.op, m(n.a), m(n.b), m(n.c)); break;
    }
  }
  return map.back();
}

KernelProgram KernelProgram::prune(int result) const {
  std::vector<char> used(nodes.size(), 0);
  used[static_cast<size_t>(result)] = 1;
  for (int i = result; i >= 0; --i) {
    if (!used[static_cast<size_t>(i)]) continue;
    const KernelNode& n = nodes[static_cast<size_t>(i)];
    for (int x : {n.a, n.b, n.c})
      if (x >= 0) used[static_cast<size_t>(x)] = 1;
  }
  KernelProgram out;
  std::vector<int> map(nodes.size(), -1);
  for (int i = 0; i <= result; ++i) {
    if (!used[static_cast<size_t>(i)]) continue;
    KernelNode n = nodes[static_cast<size_t>(i)];
    for (int* x : {&n.a, &n.b, &n.c})
      if (*x >= 0) *x = map[static_cast<size_t>(*x)];
    map[static_cast<size_t>(i)] = out.push(n);
  }
  return out;
}

double TreeInterpreter::node(int i, double d) const {
  const KernelNode& n = program_.nodes[static_cast<size_t>(i)];
  switch (expr::arity(n.op)) {
    case 0: return n.op == Op::Var ? d : n.value;
    case 1: return expr::fold(n.op, node(n.a, d));
    case 2: return expr::fold(n.op, node(n.a, d), node(n.b, d));
    default:
      if (n.op == Op::Select) return node(n.a, d) != 0 ? node(n.b, d) : node(n.c, d);
      return expr::fold(n.op, node(n.a, d), node(n.b, d), node(n.c, d));
  }
}

double TreeInterpreter::at(double d) const { return node(static_cast<int>(program_.nodes.size()) - 1, d); }

void KernelEvaluator::evaluateGrid(double d0, double step, double* out, size_t n) const {
  std::vector<double> d(n);
  for (size_t i = 0; i < n; ++i) d[i] = d0 + static_cast<double>(i) * step;
  evaluate(d.data(), out, n);
}

void TreeInterpreter::evaluate(const double* d, double* out, size_t n) const {
  for (size_t i = 0; i < n; ++i) out[i] = at(d[i]);
}

BlockInterpreter::BlockInterpreter(KernelProgram program) : program_(std::move(program)) {
  if (program_.nodes.empty()) throw std::invalid_argument("empty kernel program");
  // Which nodes are affine in d (slope * d + offset), bottom up.
  const size_t n = program_.nodes.size();
  std::vector<Affine> affine(n);
  for (size_t i = 0; i < n; ++i) {
    const KernelNode& k = program_.nodes[i];
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
    const KernelNode& k = program_.nodes[i];
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
    const KernelNode& k = program_.nodes[i];
    for (int x : {k.a, k.b, k.c})
      if (x >= 0) needed[static_cast<size_t>(x)] = 1;
  }
  unused_when_rotating_.resize(n);
  for (size_t i = 0; i < n; ++i) unused_when_rotating_[i] = !needed[i];
}

}  // namespace posc::analysis
