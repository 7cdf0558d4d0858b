#include "core/op/elemwise/broadcast_shape.h"

#include <algorithm>

#include "core/op/op_util.h"

namespace weft {
namespace op {

Shape BroadcastShapes(const NodeAttrs& attrs, const Shape& a, const Shape& b) {
  int nd = std::max(a.ndim(), b.ndim());
  Shape out(nd);
  for (int d = 0; d < nd; ++d) {
    int da = d - (nd - a.ndim()), db = d - (nd - b.ndim());
    int64_t x = da >= 0 ? a[da] : 1, y = db >= 0 ? b[db] : 1;
    if (x == y || y == 1) {
      out[d] = x;
    } else if (x == 1) {
      out[d] = y;
    } else if (x < 0 || y < 0) {
      // One side is unknown; the other is not 1, so the result must equal it.
      out[d] = std::max(x, y);
    } else {
      // MXNet's (and NumPy's) wording first
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': operands could not be broadcast together with shapes ",
            a.ToMXNetString(), " ", b.ToMXNetString(), ": shapes ", a.ToString(), " and ", b.ToString(),
            " cannot be broadcast together (aligned from the right, each pair of dims must be equal or contain a 1)");
    }
  }
  return out;
}

bool BroadcastBinaryShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& a = (*in)[0];
  const Shape& b = (*in)[1];
  if (!a.known_ndim() || !b.known_ndim()) return false;
  AssignShape(attrs, out, 0, BroadcastShapes(attrs, a, b), "output");
  return a.is_known() && b.is_known() && (*out)[0].is_known();
}

}  // namespace op
}  // namespace weft
