// The operation table of posc's expression language, as C++: the Op enum,
// each operation's static facts (arity, spelling, precedence), its scalar
// value (fold) and lookups by operator symbol and function name. Everything
// here is generated from ops.def, which defines each operation once; the
// evaluators (constant folding, the interpreters, the JIT, the tensor path)
// expand the same rows, so they cannot disagree on what an operation is.
//
// Header only, with no dependencies: the plan, the front end, the REPL, the
// JIT and the runtime all include it.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace posc::expr {

enum class Op : uint8_t {
#define POSC_OP_LEAF(Name, name) Name,
#define POSC_OP_READ(Name, name) Name,
#define POSC_OP_UNARY(Name, ...) Name,
#define POSC_OP_BINARY(Name, ...) Name,
#define POSC_OP_TERNARY(Name, ...) Name,
#include "compiler/expr/ops.def"
};

// The type rule of an operation (the `type` column of ops.def). Settings
// keep truth values a type of their own and check these rules; score
// formulas and kernels compute with numbers, a truth value being 1 or 0.
enum class TypeRule : uint8_t {
  Number,   // numbers -> a number (leaves and reads too)
  Compare,  // numbers -> a truth value
  Logic,    // truth values -> a truth value
  Choose,   // a truth value, then two values -> one of them
};

struct OpInfo {
  const char* name;      // lower-case name ("add")
  const char* symbol;    // operator spelling ("+"), or nullptr
  const char* function;  // function name ("exp"), or nullptr
  int arity;             // 0 for leaves
  int precedence;        // binding strength when rendered (9: a call or a leaf)
  bool commutative;
  TypeRule type;
};

inline constexpr OpInfo kOps[] = {
#define POSC_OP_LEAF(Name, name) {name, nullptr, nullptr, 0, 9, false, TypeRule::Number},
#define POSC_OP_READ(Name, name) {name, nullptr, nullptr, 1, 9, false, TypeRule::Number},
#define POSC_OP_UNARY(Name, name, symbol, function, precedence, type, ...) \
  {name, symbol, function, 1, precedence, false, TypeRule::type},
#define POSC_OP_BINARY(Name, name, symbol, function, precedence, commutative, type, ...) \
  {name, symbol, function, 2, precedence, commutative, TypeRule::type},
#define POSC_OP_TERNARY(Name, name, symbol, function, precedence, type, ...) \
  {name, symbol, function, 3, precedence, false, TypeRule::type},
#include "compiler/expr/ops.def"
};
inline constexpr int kOpCount = static_cast<int>(sizeof(kOps) / sizeof(kOps[0]));

constexpr const OpInfo& info(Op op) { return kOps[static_cast<int>(op)]; }
constexpr int arity(Op op) { return info(op).arity; }
constexpr const char* opName(Op op) { return info(op).name; }
constexpr bool isLeaf(Op op) { return arity(op) == 0; }
// A read of a context's storage (POSC_OP_READ: Lookup): an operand, but no
// value as a function of it alone, so no fold, no grad column, no lowering
// from the table's columns.
constexpr bool isRead(Op op) { return op == Op::Lookup; }
// An operation whose value is a function of its operands (the fold column).
constexpr bool isElementwise(Op op) { return !isLeaf(op) && !isRead(op); }

// The entry of a table of `size` entries that the index `x` reads: x rounded
// down and clamped to 0 .. size - 1; -1 for a NaN index, which reads NaN.
inline int lookupEntry(double x, int size) {
  if (x != x) return -1;
  if (!(x > 0)) return 0;
  if (x >= size - 1) return size - 1;
  return static_cast<int>(std::floor(x));
}

// Whether the operation gives a truth value (1 or 0; settings, which keep
// booleans a type of their own, give a boolean): comparisons and logic.
constexpr bool givesTruth(Op op) {
  return info(op).type == TypeRule::Compare || info(op).type == TypeRule::Logic;
}
// Whether its operands (Choose: its first) are truth values, which settings
// require to be booleans: logic and the condition of a choice.
constexpr bool takesTruth(Op op) {
  return info(op).type == TypeRule::Logic || info(op).type == TypeRule::Choose;
}

// NaN-propagating minimum and maximum (torch.minimum, torch.maximum): NaN if
// either operand is NaN, else the smaller (larger) one, the first on ties.
inline double minimum(double a, double b) { return a <= b || a != a ? a : b; }
inline double maximum(double a, double b) { return a >= b || a != a ? a : b; }

// The value of a non-leaf operation on constant operands (unused operands
// are ignored): the `fold` column of ops.def.
inline double fold(Op op, double a, double b = 0.0, double c = 0.0) {
  (void)b;
  (void)c;
  switch (op) {
#define POSC_OP_UNARY(Name, name, symbol, function, precedence, type, fold, ...) \
  case Op::Name:                                                                 \
    return fold;
#define POSC_OP_BINARY(Name, name, symbol, function, precedence, commutative, type, fold, ...) \
  case Op::Name:                                                                               \
    return fold;
#define POSC_OP_TERNARY(Name, name, symbol, function, precedence, type, fold, ...) \
  case Op::Name:                                                                   \
    return fold;
#include "compiler/expr/ops.def"
    default:
      return a;  // a leaf's value is its own
  }
}

// The operation written as `name(...)` with `args` arguments, else false.
inline bool findFunction(const char* function, Op& out) {
  for (int i = 0; i < kOpCount; ++i)
    if (kOps[i].function && std::strcmp(kOps[i].function, function) == 0) {
      out = static_cast<Op>(i);
      return true;
    }
  return false;
}

// The operation written as the operator `symbol` with `arity` operands
// ("-" is Neg with one and Sub with two), else false.
inline bool findSymbol(const char* symbol, int arity, Op& out) {
  for (int i = 0; i < kOpCount; ++i)
    if (kOps[i].symbol && kOps[i].arity == arity && std::strcmp(kOps[i].symbol, symbol) == 0) {
      out = static_cast<Op>(i);
      return true;
    }
  return false;
}

// Every function name, in table order (for "did you mean" suggestions).
inline std::vector<std::string> functionNames() {
  std::vector<std::string> out;
  for (const OpInfo& op : kOps)
    if (op.function) out.emplace_back(op.function);
  return out;
}

}  // namespace posc::expr
