// _ravel_multi_index and _unravel_index: between (ndim, N) coordinate tuples into an array
// of `shape` and the N flat (row-major) positions they name, in the input's dtype.
#include "core/op/op_util.h"

namespace weft {
namespace op {

struct RavelParam {
  Shape shape;
};

WEFT_PARAM_SCHEMA(RavelParam, s) {
  s.Field("shape", &RavelParam::shape)
      .Default(Shape())
      .Describe("Shape of the array into which the multi-indices apply.");
}

namespace {

const Shape& ShapeParam(const NodeAttrs& attrs) {
  const Shape& s = attrs.Params<RavelParam>().shape;
  if (!s.known_ndim() || s.ndim() == 0)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter 'shape' must name at least one dimension");
  // The first dimension never enters either mapping (a row-major position does not need it), so
  // as in MXNet it may be given as -1, "unbounded".
  for (int j = 0; j < s.ndim(); ++j)
    if (s[j] <= 0 && !(j == 0 && s[j] == -1))
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter 'shape' = ", s.ToString(),
            " must have positive dimensions (the first may be -1)");
  return s;
}

bool RavelShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& s = ShapeParam(attrs);
  const Shape& x = (*in)[0];
  if (x.known_ndim()) {
    if (x.ndim() != 2 || (x[0] >= 0 && x[0] != s.ndim()))
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected coordinates of shape (", s.ndim(),
            ", N) for shape=", s.ToString(), ", got ", x.ToString());
    AssignShape(attrs, out, 0, Shape({x[1]}), "output");
  } else if ((*out)[0].known_ndim()) {
    AssignShape(attrs, in, 0, Shape({s.ndim(), (*out)[0][0]}), "input");
  }
  return (*in)[0].is_known() && (*out)[0].is_known();
}

bool UnravelShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& s = ShapeParam(attrs);
  const Shape& x = (*in)[0];
  if (x.known_ndim()) {
    if (x.ndim() != 1)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected a 1-D array of flat indices, got shape ",
            x.ToString());
    AssignShape(attrs, out, 0, Shape({s.ndim(), x[0]}), "output");
  } else if ((*out)[0].known_ndim()) {
    AssignShape(attrs, in, 0, Shape({(*out)[0][1]}), "input");
  }
  return (*in)[0].is_known() && (*out)[0].is_known();
}

void RavelCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                  const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const Shape& s = ShapeParam(attrs);
  int64_t n = out[0].Size();
  if (in[0].Size() != s.ndim() * n)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected ", s.ndim() * n, " coordinates, got ",
          in[0].Size());
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    for (int64_t i = 0; i < n; ++i) {
      int64_t flat = 0;
      for (int j = 0; j < s.ndim(); ++j) flat = flat * s[j] + static_cast<int64_t>(x[j * n + i]);
      Store(y + i, req[0], static_cast<double>(flat));
    }
  });
}

// The first coordinate is not reduced, so a flat index past the end gives a first
// coordinate past shape[0], as MXNet's does.
void UnravelCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const Shape& s = ShapeParam(attrs);
  int64_t n = in[0].Size();
  if (out[0].Size() != s.ndim() * n)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected an output of ", s.ndim() * n,
          " coordinates, got ", out[0].Size());
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    for (int64_t i = 0; i < n; ++i) {
      int64_t flat = ConvertValue<int64_t>(x[i]);
      for (int j = s.ndim() - 1; j > 0; --j) {
        Store(y + j * n + i, req[0], static_cast<double>(flat % s[j]));
        flat /= s[j];
      }
      Store(y + i, req[0], static_cast<double>(flat));
    }
  });
}

}  // namespace

WEFT_REGISTER_OP(_ravel_multi_index)
    .Describe("The flat (row-major) positions in an array of `shape` of the columns of an (ndim, N) array of "
              "coordinates.")
    .AddAlias("ravel_multi_index")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Batch of multi-indices")
    .SetParams<RavelParam>()
    .SetAttr<FInferShape>("FInferShape", RavelShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", RavelCompute);

WEFT_REGISTER_OP(_unravel_index)
    .Describe("The (ndim, N) coordinates in an array of `shape` of N flat (row-major) positions.")
    .AddAlias("unravel_index")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Array of flat indices")
    .SetParams<RavelParam>()
    .SetAttr<FInferShape>("FInferShape", UnravelShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", UnravelCompute);

}  // namespace op
}  // namespace weft
