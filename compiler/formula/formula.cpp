// Formula IR: folding, hash-consing, differentiation, interpretation. See formula.h.
#include "compiler/formula/formula.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace posc::formula {

bool Node::operator==(const Node& o) const {
  return op == o.op && (op != Op::Const || value == o.value) && index == o.index && a == o.a &&
         b == o.b && c == o.c;
}

namespace {

bool commutative(Op op) { return expr::info(op).commutative; }

std::string keyOf(const Node& n) {
  if (n.op == Op::Const) return fmt::format("c{:a}", n.value);
  return fmt::format("{}:{}:{}:{}:{}", static_cast<int>(n.op), n.index, n.a, n.b, n.c);
}

double apply(Op op, double a, double b, double c) {
  if (arity(op) == 0) throw std::logic_error("formula: apply on a leaf");
  return expr::fold(op, a, b, c);
}

double leafValue(const Node& n, const Env& env) {
  switch (n.op) {
    case Op::Const: return n.value;
    case Op::Score: return env.score;
    case Op::QChannel: return env.q_channel[n.index];
    case Op::KChannel: return env.k_channel[n.index];
    case Op::Head: return env.head;
    case Op::Param: return env.params.at(static_cast<size_t>(n.index));
    case Op::Var: return env.vars.at(static_cast<size_t>(n.index));
    default: throw std::logic_error("formula: leafValue on an operation");
  }
}

double lookupValue(const Node& n, double index, const Env& env) {
  const std::vector<double>& table = env.tables.at(static_cast<size_t>(n.index));
  const int e = expr::lookupEntry(index, static_cast<int>(table.size()));
  return e < 0 ? std::nan("") : table.at(static_cast<size_t>(e));
}

}  // namespace

bool Graph::isConst(NodeId id, double v) const {
  const Node& n = node(id);
  return n.op == Op::Const && n.value == v;
}

NodeId Graph::intern(const Node& n) {
  auto key = keyOf(n);
  auto it = index_.find(key);
  if (it != index_.end()) return it->second;
  nodes_.push_back(n);
  auto id = static_cast<NodeId>(nodes_.size() - 1);
  index_.emplace(std::move(key), id);
  return id;
}

NodeId Graph::constant(double v) {
  Node n;
  n.op = Op::Const;
  n.value = v;
  return intern(n);
}

NodeId Graph::leaf(Op op, int index) {
  Node n;
  n.op = op;
  n.index = index;
  return make(n);
}

NodeId Graph::unary(Op op, NodeId a) {
  Node n;
  n.op = op;
  n.a = a;
  return make(n);
}

NodeId Graph::binary(Op op, NodeId a, NodeId b) {
  Node n;
  n.op = op;
  n.a = a;
  n.b = b;
  return make(n);
}

NodeId Graph::select(NodeId cond, NodeId then_value, NodeId else_value) {
  Node n;
  n.op = Op::Select;
  n.a = cond;
  n.b = then_value;
  n.c = else_value;
  return make(n);
}

NodeId Graph::lookup(int param, NodeId index) {
  Node n;
  n.op = Op::Lookup;
  n.index = param;
  n.a = index;
  return make(n);
}

NodeId Graph::make(const Node& in) {
  Node n = in;
  const int k = arity(n.op);
  if (expr::isRead(n.op)) {
    n.b = n.c = -1;
    n.value = 0.0;
    return intern(n);
  }
  if (k == 0) {
    if (n.op == Op::Const) return constant(n.value);
    n.a = n.b = n.c = -1;
    n.value = 0.0;
    return intern(n);
  }
  // Constant folding: every operand constant.
  bool all_const = isConst(n.a) && (k < 2 || isConst(n.b)) && (k < 3 || isConst(n.c));
  if (all_const)
    return constant(apply(n.op, node(n.a).value, k >= 2 ? node(n.b).value : 0.0,
                          k >= 3 ? node(n.c).value : 0.0));
  // Algebraic identities. Those that hold only for finite x (x * 0 -> 0,
  // 0 / x -> 0, x - x -> 0) are applied while building derivatives, which
  // assume it everywhere (a zero gradient times log(a) must stay zero); a
  // formula or kernel itself keeps IEEE semantics (inf * 0 is NaN).
  const bool finite = assuming_finite_ > 0;
  switch (n.op) {
    case Op::Neg:
      if (node(n.a).op == Op::Neg) return node(n.a).a;
      break;
    case Op::Add:
      if (isConst(n.a, 0)) return n.b;
      if (isConst(n.b, 0)) return n.a;
      if (node(n.b).op == Op::Neg) return binary(Op::Sub, n.a, node(n.b).a);
      break;
    case Op::Sub:
      if (isConst(n.b, 0)) return n.a;
      if (isConst(n.a, 0)) return unary(Op::Neg, n.b);
      if (finite && n.a == n.b) return constant(0.0);
      break;
    case Op::Mul:
      if (finite && (isConst(n.a, 0) || isConst(n.b, 0))) return constant(0.0);
      if (isConst(n.a, 1)) return n.b;
      if (isConst(n.b, 1)) return n.a;
      if (isConst(n.a, -1)) return unary(Op::Neg, n.b);
      if (isConst(n.b, -1)) return unary(Op::Neg, n.a);
      break;
    case Op::Div:
      if (finite && isConst(n.a, 0)) return constant(0.0);
      if (isConst(n.b, 1)) return n.a;
      break;
    case Op::Pow:
      if (isConst(n.b, 1)) return n.a;
      if (isConst(n.b, 0)) return constant(1.0);
      break;
    case Op::Select:
      if (isConst(n.a)) return node(n.a).value != 0 ? n.b : n.c;
      if (n.b == n.c) return n.b;
      break;
    default:
      break;
  }
  if (commutative(n.op) && n.b < n.a) std::swap(n.a, n.b);
  return intern(n);
}

NodeId Graph::import(const plan::Formula& f, NodeId score) {
  if (f.nodes.empty()) return score;
  return import(f, [&](const plan::FormulaNode& pn) {
    switch (pn.op) {
      case Op::Score: return score;
      case Op::QChannel: case Op::KChannel: return leaf(pn.op, static_cast<int>(pn.channel));
      case Op::Param: return leaf(Op::Param, pn.param);
      default: return leaf(pn.op);
    }
  });
}

NodeId Graph::import(const plan::Formula& f, const LeafFn& leaf_of, const LookupFn& lookup_of) {
  std::vector<NodeId> ids;
  ids.reserve(f.nodes.size());
  for (const auto& pn : f.nodes) {
    auto at = [&](int i) { return ids.at(static_cast<size_t>(i)); };
    if (pn.op == Op::Const) {
      ids.push_back(constant(pn.value));
    } else if (pn.op == Op::Lookup) {
      ids.push_back(lookup_of ? lookup_of(pn, at(pn.a)) : lookup(pn.param, at(pn.a)));
    } else if (arity(pn.op) == 0) {
      ids.push_back(leaf_of(pn));
    } else {
      Node n;
      n.op = pn.op;
      n.a = at(pn.a);
      if (arity(n.op) >= 2) n.b = at(pn.b);
      if (arity(n.op) >= 3) n.c = at(pn.c);
      ids.push_back(make(n));
    }
  }
  if (ids.empty()) throw std::invalid_argument("formula: importing an empty formula");
  return ids.back();
}

NodeId Graph::derivative(NodeId root, Wrt wrt) {
  const std::string memo_key =
      fmt::format("{}:{}:{}", root, static_cast<int>(wrt.kind), wrt.index);
  if (auto it = derivative_memo_.find(memo_key); it != derivative_memo_.end()) return it->second;
  struct AssumeFinite {
    int& depth;
    explicit AssumeFinite(int& d) : depth(d) { ++depth; }
    ~AssumeFinite() { --depth; }
  } assume_finite(assuming_finite_);
  const Node n = node(root);  // copy: make() may grow nodes_
  NodeId zero = constant(0.0), one = constant(1.0);
  // The builders the `grad` column of ops.def is written in.
  auto k = [&](double v) { return constant(v); };
  auto un = [&](Op op, NodeId x) { return unary(op, x); };
  auto bin = [&](Op op, NodeId x, NodeId y) { return binary(op, x, y); };
  auto sel = [&](NodeId c, NodeId x, NodeId y) { return select(c, x, y); };
  auto neg = [&](NodeId x) { return unary(Op::Neg, x); };
  auto mul = [&](NodeId x, NodeId y) { return binary(Op::Mul, x, y); };
  auto add = [&](NodeId x, NodeId y) { return binary(Op::Add, x, y); };
  auto sub = [&](NodeId x, NodeId y) { return binary(Op::Sub, x, y); };
  auto div = [&](NodeId x, NodeId y) { return binary(Op::Div, x, y); };
  (void)k, (void)un, (void)bin, (void)sel, (void)neg, (void)mul, (void)add, (void)sub, (void)div;
  NodeId r = zero;
  if (wrt.kind == Wrt::Kind::Node && wrt.index == root) {
    derivative_memo_.emplace(memo_key, one);
    return one;
  }
  switch (n.op) {
    case Op::Const: case Op::QChannel: case Op::KChannel: case Op::Head:
      r = zero;
      break;
    case Op::Lookup:  // constant in its index; its entry is Wrt::node of it
      r = zero;
      break;
    case Op::Score: r = wrt.kind == Wrt::Kind::Score ? one : zero; break;
    case Op::Param: r = wrt.kind == Wrt::Kind::Param && wrt.index == n.index ? one : zero; break;
    case Op::Var: r = wrt.kind == Wrt::Kind::Var && wrt.index == n.index ? one : zero; break;
    default: {
      // Operands' derivatives first (memoised), then the row's rule.
      const NodeId x = root, a = n.a, b = n.b, c = n.c;
      const NodeId da = a >= 0 ? derivative(a, wrt) : zero;
      const NodeId db = b >= 0 ? derivative(b, wrt) : zero;
      const NodeId dc = c >= 0 ? derivative(c, wrt) : zero;
      (void)x, (void)a, (void)b, (void)c, (void)da, (void)db, (void)dc;
      switch (n.op) {
#define POSC_OP_UNARY(Name, name, symbol, function, precedence, type, fold, grad, ...) \
  case Op::Name:                                                                       \
    r = grad;                                                                          \
    break;
#define POSC_OP_BINARY(Name, name, symbol, function, precedence, commutative, type, fold, grad, ...) \
  case Op::Name:                                                                                     \
    r = grad;                                                                                        \
    break;
#define POSC_OP_TERNARY(Name, name, symbol, function, precedence, type, fold, grad, ...) \
  case Op::Name:                                                                         \
    r = grad;                                                                            \
    break;
#include "compiler/expr/ops.def"
        default: break;
      }
    }
  }
  derivative_memo_.emplace(memo_key, r);
  return r;
}

std::vector<NodeId> Graph::reachable(const std::vector<NodeId>& roots) const {
  std::vector<char> seen(nodes_.size(), 0);
  std::vector<NodeId> stack(roots.begin(), roots.end());
  while (!stack.empty()) {
    NodeId id = stack.back();
    stack.pop_back();
    if (id < 0 || seen[static_cast<size_t>(id)]) continue;
    seen[static_cast<size_t>(id)] = 1;
    const Node& n = node(id);
    for (NodeId x : {n.a, n.b, n.c})
      if (x >= 0) stack.push_back(x);
  }
  std::vector<NodeId> out;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (seen[i]) out.push_back(static_cast<NodeId>(i));
  return out;
}

std::string Graph::canonical(const std::vector<NodeId>& roots) const {
  auto order = reachable(roots);
  std::unordered_map<NodeId, int> local;
  std::string out;
  for (NodeId id : order) {
    const Node& n = node(id);
    int k = static_cast<int>(local.size());
    local[id] = k;
    auto ref = [&](NodeId x) { return x < 0 ? -1 : local.at(x); };
    if (n.op == Op::Const)
      out += fmt::format("%{} = const {:a}\n", k, n.value);
    else
      out += fmt::format("%{} = {} {} {} {} {}\n", k, opName(n.op), n.index, ref(n.a), ref(n.b),
                         ref(n.c));
  }
  out += "roots";
  for (NodeId r : roots) out += fmt::format(" {}", local.at(r));
  return out;
}

std::string Graph::render(NodeId id) const {
  const Node& n = node(id);
  auto r = [&](NodeId x) { return render(x); };
  const expr::OpInfo& op = expr::info(n.op);
  switch (n.op) {
    case Op::Const: return fmt::format("{}", n.value);
    case Op::Score: return "s";
    case Op::QChannel: return fmt::format("q.{}", plan::channelName(static_cast<plan::Channel>(n.index)));
    case Op::KChannel: return fmt::format("k.{}", plan::channelName(static_cast<plan::Channel>(n.index)));
    case Op::Head: return "h";
    case Op::Param: return fmt::format("p{}", n.index);
    case Op::Var: return fmt::format("x{}", n.index);
    case Op::Lookup: return fmt::format("p{}[{}]", n.index, r(n.a));
    default: break;
  }
  if (op.symbol && op.arity == 1) return fmt::format("{}({})", op.symbol, r(n.a));
  if (op.symbol && op.arity == 2) return fmt::format("({} {} {})", r(n.a), op.symbol, r(n.b));
  if (op.symbol && op.arity == 3) return fmt::format("({} ? {} : {})", r(n.a), r(n.b), r(n.c));
  if (op.arity == 1) return fmt::format("{}({})", op.function, r(n.a));
  if (op.arity == 2) return fmt::format("{}({}, {})", op.function, r(n.a), r(n.b));
  return fmt::format("{}({}, {}, {})", op.function, r(n.a), r(n.b), r(n.c));
}

double interpret(const Graph& g, NodeId root, const Env& env) {
  const Node& n = g.node(root);
  if (n.op == Op::Lookup) return lookupValue(n, interpret(g, n.a, env), env);
  switch (arity(n.op)) {
    case 0: return leafValue(n, env);
    case 1: return apply(n.op, interpret(g, n.a, env), 0.0, 0.0);
    case 2: return apply(n.op, interpret(g, n.a, env), interpret(g, n.b, env), 0.0);
    default:
      if (n.op == Op::Select)  // only the chosen branch, as a tree walker would
        return interpret(g, n.a, env) != 0 ? interpret(g, n.b, env) : interpret(g, n.c, env);
      return apply(n.op, interpret(g, n.a, env), interpret(g, n.b, env), interpret(g, n.c, env));
  }
}

double evaluate(const Graph& g, NodeId root, const Env& env) {
  auto order = g.reachable({root});
  std::unordered_map<NodeId, double> v;
  for (NodeId id : order) {
    const Node& n = g.node(id);
    int k = arity(n.op);
    v[id] = n.op == Op::Lookup ? lookupValue(n, v.at(n.a), env)
            : k == 0           ? leafValue(n, env)
                               : apply(n.op, v.at(n.a), k >= 2 ? v.at(n.b) : 0.0, k >= 3 ? v.at(n.c) : 0.0);
  }
  return v.at(root);
}

NodeId tableSelect(Graph& g, const std::vector<double>& entries, NodeId index) {
  if (entries.empty()) throw std::invalid_argument("formula: a table without entries");
  // Entry e is read from floor(x) >= e on (clamped at both ends); a NaN
  // index fails every comparison, so it is tested first.
  NodeId v = g.constant(entries.front());
  for (size_t e = 1; e < entries.size(); ++e)
    v = g.select(g.binary(Op::Ge, index, g.constant(static_cast<double>(e))), g.constant(entries[e]), v);
  return g.select(g.binary(Op::Ne, index, index), g.constant(std::nan("")), v);
}

uint64_t hashText(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace posc::formula
