#include "core/op/elemwise/binary_gradients.h"

#include <string>
#include <vector>

#include "core/op/elemwise/gradients.h"

namespace weft {
namespace op {
namespace {

// Builds one gradient: operators on two inputs that may have different shapes go through
// the broadcast forms when the forward operator broadcasts.
class BinaryGradBuilder {
 public:
  BinaryGradBuilder(GradBuilder& b, const GradArgs& a, bool broadcast) : b_(b), a_(a), broadcast_(broadcast) {}

  GradValue g() const { return a_.out_grads[0]; }
  GradValue lhs() const { return a_.inputs[0]; }
  GradValue rhs() const { return a_.inputs[1]; }
  GradValue out() const { return a_.outputs[0]; }

  // fn(x, y) for fn in add, sub, mul, div, power, greater, ...
  GradValue Bin(const std::string& fn, GradValue x, GradValue y) {
    std::string name;
    if (broadcast_) name = "broadcast_" + fn;
    else if (fn == "add" || fn == "sub" || fn == "mul" || fn == "div") name = "elemwise_" + fn;
    else name = "_" + fn;
    return b_.Op(name, {x, y});
  }
  // x * y for two values of the output's shape.
  GradValue Mul(GradValue x, GradValue y) { return b_.Op("elemwise_mul", {x, y}); }
  GradValue Op(const std::string& op, GradValue x, const KwArgs& params = {}) { return b_.Op(op, {x}, params); }
  // A gradient of the output's shape, summed to the shape of `input`.
  GradValue To(GradValue grad, GradValue input) {
    return broadcast_ ? b_.Op("_reduce_sum_to", {grad, input}) : grad;
  }

 private:
  GradBuilder& b_;
  const GradArgs& a_;
  bool broadcast_;
};

std::vector<GradValue> Gradient(BinaryFn fn, BinaryGradBuilder& b) {
  GradValue g = b.g(), lhs = b.lhs(), rhs = b.rhs();
  switch (fn) {
    case BinaryFn::kAdd:
      return {b.To(g, lhs), b.To(g, rhs)};
    case BinaryFn::kSub:
      return {b.To(g, lhs), b.To(b.Op("negative", g), rhs)};
    case BinaryFn::kMul:
      return {b.To(b.Bin("mul", g, rhs), lhs), b.To(b.Bin("mul", g, lhs), rhs)};
    case BinaryFn::kDiv: {
      // d/drhs (l / r) = -(g / r) * (l / r)
      GradValue dl = b.Bin("div", g, rhs);
      return {b.To(dl, lhs), b.To(b.Op("negative", b.Mul(dl, b.out())), rhs)};
    }
    case BinaryFn::kMod: {
      // l mod r = l - r * floor(l / r): (g, -g * floor(l / r)) in a floating-point dtype. An
      // integer mod has no derivative, and MXNet's gradients there are zeros (its mod_grad
      // and mod_rgrad are 0 for integer types), whatever the head gradient. `real` is 1 in a
      // floating-point dtype and 0 in an integer one: a scalar takes the array's dtype
      // before it applies, so 0.5 is 0 for integers (MXNet's scalar rule).
      GradValue half = b.Op("_mul_scalar", b.Op("ones_like", g), ScalarArg(0.5));
      GradValue real_g = b.Mul(g, b.Op("_mul_scalar", half, ScalarArg(2.0)));
      GradValue quotient = b.Op("floor", b.Bin("div", lhs, rhs));
      return {b.To(real_g, lhs), b.To(b.Op("negative", b.Mul(real_g, quotient)), rhs)};
    }
    case BinaryFn::kPower: {
      // d/dl l^r = r * l^(r-1); d/dr l^r = l^r * log(l)
      GradValue rm1 = b.Op("_minus_scalar", rhs, ScalarArg(1.0));
      GradValue dl = b.Bin("mul", rhs, b.Bin("power", lhs, rm1));
      GradValue dr = b.Bin("mul", b.out(), b.Op("log", lhs));
      return {b.To(b.Mul(g, dl), lhs), b.To(b.Mul(g, dr), rhs)};
    }
    case BinaryFn::kMaximum:
      return {b.To(b.Mul(g, b.Bin("greater_equal", lhs, rhs)), lhs),
              b.To(b.Mul(g, b.Bin("lesser", lhs, rhs)), rhs)};
    case BinaryFn::kMinimum:
      return {b.To(b.Mul(g, b.Bin("lesser_equal", lhs, rhs)), lhs),
              b.To(b.Mul(g, b.Bin("greater", lhs, rhs)), rhs)};
    case BinaryFn::kHypot:
      // (g * x) / hypot rather than g * (x / hypot): with a sparse g the product keeps g's
      // storage and the division then meets every element, so 0 / 0 where both inputs are
      // zero gives NaN whatever g stores, as MXNet's dense _backward_hypot.
      return {b.To(b.Bin("div", b.Bin("mul", g, lhs), b.out()), lhs),
              b.To(b.Bin("div", b.Bin("mul", g, rhs), b.out()), rhs)};
  }
  Throw(ErrorKind::kInternal, "unknown binary function ", static_cast<int>(fn));
}

}  // namespace

FGradient BinaryGradient(BinaryFn fn, bool broadcast) {
  return [fn, broadcast](GradBuilder& gb, const NodeAttrs&, const GradArgs& a) {
    BinaryGradBuilder b(gb, a, broadcast);
    return Gradient(fn, b);
  };
}

}  // namespace op
}  // namespace weft
