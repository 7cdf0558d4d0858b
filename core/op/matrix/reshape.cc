// reshape (Reshape): the same elements seen with another shape, with MXNet's special codes
//   0  copy the input dim at this position     -1  infer this dim (at most one)
//  -2  copy all remaining input dims           -3  merge the next two input dims
//  -4  split the next input dim into the two values that follow (one may be -1)
// applied left to right, or right to left with reverse=True. The legacy target_shape
// (0 = infer) and keep_highest parameters are still read.
#include <algorithm>

#include "core/op/op_util.h"

namespace weft {
namespace op {

struct ReshapeParam {
  Shape shape = Shape::Scalar();
  bool reverse = false;
  Shape target_shape = Shape::Scalar();
  bool keep_highest = false;
};

WEFT_PARAM_SCHEMA(ReshapeParam, s) {
  s.Field("shape", &ReshapeParam::shape)
      .Default(Shape::Scalar())
      .Describe("The target shape, with the special codes 0, -1, -2, -3 and -4.");
  s.Field("reverse", &ReshapeParam::reverse).Default(false).Describe("Apply the special codes from right to left.");
  s.Field("target_shape", &ReshapeParam::target_shape)
      .Default(Shape::Scalar())
      .Describe("(Deprecated) the target shape, 0 meaning inferred; used when shape is empty.");
  s.Field("keep_highest", &ReshapeParam::keep_highest)
      .Default(false)
      .Describe("(Deprecated) with target_shape: keep the first input dim and reshape the rest.");
}

namespace {

[[noreturn]] void Bad(const NodeAttrs& attrs, const Shape& in, const Shape& spec, const std::string& why) {
  Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': cannot reshape an input of shape ", in.ToString(),
        " with shape=", spec.ToString(), ": ", why);
}

// Fills the single -1 of `dims` so that the sizes match.
void InferMinusOne(const NodeAttrs& attrs, const Shape& in, const Shape& spec, std::vector<int64_t>* dims, int where) {
  if (where < 0) return;
  int64_t known = 1;
  for (int i = 0; i < static_cast<int>(dims->size()); ++i)
    if (i != where) known *= (*dims)[i];
  if (known == 0) Bad(attrs, in, spec, "-1 cannot be inferred when the other dims multiply to 0");
  if (in.Size() % known != 0)
    Bad(attrs, in, spec, std::to_string(in.Size()) + " elements do not divide into dims of product " +
                             std::to_string(known));
  (*dims)[where] = in.Size() / known;
}

std::vector<int64_t> ApplyCodes(const NodeAttrs& attrs, const std::vector<int64_t>& in, const std::vector<int64_t>& spec,
                                const Shape& in_shape, const Shape& spec_shape) {
  std::vector<int64_t> out;
  int infer = -1;
  size_t src = 0;
  auto next_in = [&](const char* code) {
    if (src >= in.size())
      Bad(attrs, in_shape, spec_shape, std::string("code ") + code + " refers past the last input dim");
    return in[src++];
  };
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t v = spec[i];
    if (v > 0) {
      out.push_back(v);
      ++src;
    } else if (v == 0) {
      out.push_back(next_in("0"));
    } else if (v == -1) {
      if (infer >= 0) Bad(attrs, in_shape, spec_shape, "more than one -1");
      infer = static_cast<int>(out.size());
      out.push_back(1);
      ++src;
    } else if (v == -2) {
      while (src < in.size()) out.push_back(in[src++]);
    } else if (v == -3) {
      int64_t d1 = next_in("-3");
      int64_t d2 = next_in("-3");
      out.push_back(d1 < 0 || d2 < 0 ? -1 : d1 * d2);
    } else if (v == -4) {
      int64_t d0 = next_in("-4");
      if (i + 2 >= spec.size()) Bad(attrs, in_shape, spec_shape, "-4 must be followed by two dims");
      int64_t d1 = spec[++i], d2 = spec[++i];
      if (d1 == -1 && d2 == -1) Bad(attrs, in_shape, spec_shape, "both dims after -4 are -1");
      if (d1 < -1 || d2 < -1 || d1 == 0 || d2 == 0)
        Bad(attrs, in_shape, spec_shape, "the dims after -4 must be positive or -1");
      if (d0 < 0) {  // an unknown input dim: a -1 after it stays unknown
        out.push_back(d1);
        out.push_back(d2);
        continue;
      }
      if (d1 == -1) d1 = d2 ? d0 / d2 : 0;
      if (d2 == -1) d2 = d1 ? d0 / d1 : 0;
      if (d1 * d2 != d0)
        Bad(attrs, in_shape, spec_shape,
            "-4 splits dim " + std::to_string(d0) + " into " + std::to_string(d1) + " x " + std::to_string(d2));
      out.push_back(d1);
      out.push_back(d2);
    } else {
      Bad(attrs, in_shape, spec_shape, "unknown code " + std::to_string(v));
    }
  }
  if (in_shape.is_known()) InferMinusOne(attrs, in_shape, spec_shape, &out, infer);
  else if (infer >= 0) out[static_cast<size_t>(infer)] = -1;
  return out;
}

Shape ReshapeTarget(const NodeAttrs& attrs, const Shape& in) {
  const auto& p = attrs.Params<ReshapeParam>();
  std::vector<int64_t> dims;
  Shape spec = p.shape;
  if (p.shape.ndim() > 0) {
    std::vector<int64_t> ind = in.ToVector(), sp = spec.ToVector();
    if (p.reverse) {
      std::reverse(ind.begin(), ind.end());
      std::reverse(sp.begin(), sp.end());
    }
    dims = ApplyCodes(attrs, ind, sp, in, spec);
    if (p.reverse) std::reverse(dims.begin(), dims.end());
  } else if (p.target_shape.ndim() > 0) {
    if (!in.is_known()) return Shape();
    spec = p.target_shape;
    if (p.keep_highest) dims.push_back(in.ndim() > 0 ? in[0] : 1);
    int infer = -1;
    for (int64_t d : p.target_shape) {
      if (d == 0) {
        if (infer >= 0) Bad(attrs, in, spec, "more than one 0 in target_shape");
        infer = static_cast<int>(dims.size());
        dims.push_back(1);
      } else {
        dims.push_back(d);
      }
    }
    InferMinusOne(attrs, in, spec, &dims, infer);
  } else {
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter 'shape' is required");
  }
  Shape out(dims);
  if (!in.is_known()) return out;  // partial: the dims that do not depend on the unknown ones
  // MXNet's wording ("Target shape size is different to source") comes first
  if (out.Size() != in.Size())
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': Target shape size is different to source. Target: ",
          out.ToMXNetString(), " Source: ", in.ToMXNetString(), ": cannot reshape an input of shape ", in.ToString(),
          " with shape=", spec.ToString(), ": the result ", out.ToString(), " has ", out.Size(), " elements, the input ",
          in.Size());
  return out;
}

// With input dims unknown (MXNet 1.x's 0 in a given shape), the output gets the dims that
// do not depend on them; and once the output is known, one unknown input dim follows from
// the element count, as MXNet infers it backwards.
bool ReshapeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  Shape& d = (*in)[0];
  if (!d.known_ndim()) return false;
  if (!d.is_known()) {
    AssignShape(attrs, out, 0, ReshapeTarget(attrs, d), "output");
    const Shape& o = (*out)[0];
    if (!o.is_known()) return false;
    int unknown = -1;
    int64_t known = 1;
    for (int i = 0; i < d.ndim(); ++i) {
      if (d[i] >= 0) {
        known *= d[i];
      } else if (unknown >= 0) {
        return false;  // two unknown input dims: the count cannot tell them apart
      } else {
        unknown = i;
      }
    }
    if (known == 0 || o.Size() % known != 0)
      Bad(attrs, d, attrs.Params<ReshapeParam>().shape,
          "the output " + o.ToString() + " has " + std::to_string(o.Size()) +
              " elements, not a multiple of the known input dims' product " + std::to_string(known));
    Shape filled = d;
    filled[unknown] = o.Size() / known;
    AssignShape(attrs, in, 0, filled, "input");
  }
  AssignShape(attrs, out, 0, ReshapeTarget(attrs, (*in)[0]), "output");
  return true;
}

}  // namespace

WEFT_REGISTER_OP(reshape)
    .Describe("The input with a new shape and the same elements in the same order; see the special codes 0, -1, "
              "-2, -3, -4 and reverse.")
    .AddAlias("Reshape")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<ReshapeParam>()
    .SetAttr<FInferShape>("FInferShape", ReshapeShape)
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs&) { return std::vector<std::pair<int, int>>{{0, 0}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", IdentityCompute)
    .SetAttr<FGradient>("FGradient", ReshapeLikeInputGrad);

}  // namespace op
}  // namespace weft
