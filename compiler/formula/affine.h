// Which nodes of a formula graph are affine in the variable Var 0 (a kernel's
// distance d): slope * d + offset with constant coefficients.
//
// The evaluators that sweep a kernel over evenly spaced distances compute
// cos and sin of an affine argument by rotation instead of by cos and sin
// (compiler/jit's grid kernels, runtime/analysis's block interpreter); both
// ask this one recogniser which arguments qualify, so they rotate the same
// nodes. Affine: constants (slope 0), Var 0, and the negation, sum and
// difference of affine nodes, their product when one factor is constant, and
// their quotient by a constant other than 0. Any other node, another
// variable or a read is not.
#pragma once

#include <optional>
#include <unordered_map>

#include "compiler/formula/formula.h"

namespace posc::formula {

struct Affine {
  double slope = 0, offset = 0;
};

// Memoised over one graph, which must outlive it.
class AffineInVariable {
 public:
  explicit AffineInVariable(const Graph& graph) : graph_(graph) {}
  // Node `id` as slope * d + offset, or nullopt when it is not affine in d.
  std::optional<Affine> operator()(NodeId id);

 private:
  const Graph& graph_;
  std::unordered_map<NodeId, std::optional<Affine>> memo_;
};

}  // namespace posc::formula
