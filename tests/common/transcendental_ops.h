// The operations whose value PyTorch, LibTorch and the JIT compute with their
// own vector code (exp, log, the trigonometric functions, pow): tests of
// those compare to the definition within a relative tolerance, every other
// operation exactly. Shared by tests/expr and tests/flex.
#pragma once

#include "compiler/expr/ops.h"

namespace posc::testing {

inline bool transcendental(expr::Op op) {
  using expr::Op;
  switch (op) {
    case Op::Exp: case Op::Log: case Op::Log1p: case Op::Sqrt: case Op::Cos: case Op::Sin:
    case Op::Tanh: case Op::Sigmoid: case Op::Pow:
      return true;
    default:
      return false;
  }
}

}  // namespace posc::testing
