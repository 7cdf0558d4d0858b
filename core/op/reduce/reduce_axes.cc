#include "core/op/reduce/reduce_axes.h"

#include "core/op/op_util.h"

namespace weft {
namespace op {

std::vector<bool> ReduceFlags(const NodeAttrs& attrs, const Shape& in, const std::optional<Shape>& axis, bool exclude) {
  int nd = in.ndim();
  if (!axis || axis->ndim() <= 0) return std::vector<bool>(nd, true);
  std::vector<bool> listed(nd, false);
  for (int64_t a : *axis) {
    int64_t d = a < 0 ? a + nd : a;
    if (d < 0 || d >= nd)
      Throw(ErrorKind::kIndex, "Operator '", attrs.op->name, "': axis ", a, " is out of range for an input of shape ",
            in.ToString());
    if (listed[d])
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': axis ", a, " appears twice in axis=",
            axis->ToString());
    listed[d] = true;
  }
  if (exclude) listed.flip();
  return listed;
}

Shape ReducedShape(const Shape& in, const std::vector<bool>& flags, bool keepdims) {
  std::vector<int64_t> dims;
  for (int d = 0; d < in.ndim(); ++d) {
    if (!flags[d]) dims.push_back(in[d]);
    else if (keepdims) dims.push_back(1);
  }
  if (dims.empty()) dims.push_back(1);
  return Shape(dims);
}

bool ReduceAxesShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& x = (*in)[0];
  if (!x.known_ndim()) return false;
  const auto& p = attrs.Params<ReduceAxesParam>();
  AssignShape(attrs, out, 0, ReducedShape(x, ReduceFlags(attrs, x, p.axis, p.exclude), p.keepdims), "output");
  return x.is_known();
}

}  // namespace op
}  // namespace weft
