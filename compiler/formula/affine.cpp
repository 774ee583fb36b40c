// The affine-in-d recogniser (see affine.h).
#include "compiler/formula/affine.h"

namespace posc::formula {

std::optional<Affine> AffineInVariable::operator()(NodeId id) {
  if (auto it = memo_.find(id); it != memo_.end()) return it->second;
  const Node& n = graph_.node(id);
  std::optional<Affine> r;
  auto A = [&] { return (*this)(n.a); };
  auto B = [&] { return (*this)(n.b); };
  switch (n.op) {
    case Op::Const: r = Affine{0, n.value}; break;
    case Op::Var:
      if (n.index == 0) r = Affine{1, 0};
      break;
    case Op::Neg:
      if (auto x = A()) r = Affine{-x->slope, -x->offset};
      break;
    case Op::Add:
      if (auto x = A(), y = B(); x && y) r = Affine{x->slope + y->slope, x->offset + y->offset};
      break;
    case Op::Sub:
      if (auto x = A(), y = B(); x && y) r = Affine{x->slope - y->slope, x->offset - y->offset};
      break;
    case Op::Mul:
      if (auto x = A(), y = B(); x && y) {
        if (x->slope == 0) r = Affine{x->offset * y->slope, x->offset * y->offset};
        else if (y->slope == 0) r = Affine{y->offset * x->slope, y->offset * x->offset};
      }
      break;
    case Op::Div:
      if (auto x = A(), y = B(); x && y && y->slope == 0 && y->offset != 0)
        r = Affine{x->slope / y->offset, x->offset / y->offset};
      break;
    default: break;
  }
  memo_[id] = r;
  return r;
}

}  // namespace posc::formula
