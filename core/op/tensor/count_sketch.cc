// _contrib_count_sketch: projects each row of data (..., d) to out_dim buckets,
// out[r, h[j]] += s[j] * data[r, j], with one hash h (values in [0, out_dim), truncated to
// integers) and one sign vector s shared by every row. Its gradient
// (_backward_contrib_count_sketch) reads the output gradient back through the same hash:
// d data[r, j] = s[j] * g[r, h[j]] and d s[j] = sum_r data[r, j] * g[r, h[j]]; the hash
// has none.
#include "core/op/op_util.h"

namespace weft {
namespace op {

struct CountSketchParam {
  int out_dim = 0;
  int processing_batch_size = 32;
};

WEFT_PARAM_SCHEMA(CountSketchParam, s) {
  s.Field("out_dim", &CountSketchParam::out_dim).Min(1).Describe("The output dimension.");
  s.Field("processing_batch_size", &CountSketchParam::processing_batch_size)
      .Default(32)
      .Min(1)
      .Describe("How many sketch vectors to process at one time (MXNet's GPU batching; the result does not "
                "depend on it).");
}

namespace {

// Checks data, h and s against each other and returns data's last axis d.
int64_t CheckSketchShapes(const NodeAttrs& attrs, const Shape& data, const Shape& h, const Shape& s) {
  if (data.ndim() < 2)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': data must have at least 2 axes (rows, d), got ",
          data.ToString());
  int64_t d = data[data.ndim() - 1];
  for (const auto& [name, v] : {std::pair<const char*, const Shape*>{"h", &h}, {"s", &s}})
    if (v->ndim() < 1 || v->Size() != d || (*v)[v->ndim() - 1] != d)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input '", name, "' must hold one entry per column "
            "of data, shape (1, ", d, ") or (", d, ",), got ", v->ToString());
  return d;
}

Shape SketchShape(const NodeAttrs& attrs, const Shape& data) {
  Shape y = data;
  y[y.ndim() - 1] = attrs.Params<CountSketchParam>().out_dim;
  return y;
}

bool CountSketchShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  for (const auto& s : *in) if (!s.is_known()) return false;
  CheckSketchShapes(attrs, (*in)[0], (*in)[1], (*in)[2]);
  AssignShape(attrs, out, 0, SketchShape(attrs, (*in)[0]), "output");
  return true;
}

// The buckets of h, truncated to integers as MXNet's kernel reads them, each checked
// against out_dim.
std::vector<int64_t> Buckets(const NodeAttrs& attrs, const TBlob& h) {
  int64_t out_dim = attrs.Params<CountSketchParam>().out_dim;
  std::vector<int64_t> b(h.Size());
  WEFT_FLOAT_TYPE_SWITCH(h.dtype, T, attrs.op->name.c_str(), {
    const T* p = h.ptr<T>();
    for (size_t j = 0; j < b.size(); ++j) {
      double v = static_cast<double>(p[j]);
      if (!(v >= 0 && v < out_dim))
        Throw(ErrorKind::kIndex, "Operator '", attrs.op->name, "': h[", j, "] = ", v, " is outside [0, out_dim = ",
              out_dim, ")");
      b[j] = static_cast<int64_t>(v);
    }
  });
  return b;
}

void CountSketchCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  int64_t d = CheckSketchShapes(attrs, in[0].shape, in[1].shape, in[2].shape);
  if (out[0].shape != SketchShape(attrs, in[0].shape))
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': the output must have shape ",
          SketchShape(attrs, in[0].shape).ToString(), ", got ", out[0].shape.ToString());
  std::vector<int64_t> bucket = Buckets(attrs, in[1]);
  int64_t k = attrs.Params<CountSketchParam>().out_dim;
  int64_t rows = in[0].shape.ProdRange(0, in[0].ndim() - 1);
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, attrs.op->name.c_str(), {
    using A = typename AccType<T>::type;
    const T* x = in[0].ptr<T>();
    const T* s = in[2].ptr<T>();
    T* y = out[0].ptr<T>();
    ParallelFor(rows, 64, [&](int64_t rb, int64_t re) {
      std::vector<A> acc(k);
      for (int64_t r = rb; r < re; ++r) {
        std::fill(acc.begin(), acc.end(), A(0));
        for (int64_t j = 0; j < d; ++j) acc[bucket[j]] += static_cast<A>(s[j]) * static_cast<A>(x[r * d + j]);
        for (int64_t c = 0; c < k; ++c) Store(y + r * k + c, req[0], acc[c]);
      }
    });
  });
}

// Inputs (ograd, data, h, s); outputs the gradients of data, h (zero) and s.
bool CountSketchBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  for (size_t i = 1; i < in->size(); ++i) if (!(*in)[i].is_known()) return false;
  CheckSketchShapes(attrs, (*in)[1], (*in)[2], (*in)[3]);
  AssignShape(attrs, in, 0, SketchShape(attrs, (*in)[1]), "input");
  for (int i = 0; i < 3; ++i) AssignShape(attrs, out, i, (*in)[i + 1], "output");
  return true;
}

void CountSketchBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  int64_t d = CheckSketchShapes(attrs, in[1].shape, in[2].shape, in[3].shape);
  if (in[0].shape != SketchShape(attrs, in[1].shape))
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'ograd' must have shape ",
          SketchShape(attrs, in[1].shape).ToString(), ", got ", in[0].shape.ToString());
  for (int i = 0; i < 3; ++i)
    if (req[i] != OpReq::kNullOp && out[i].shape != in[i + 1].shape)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': gradient ", i, " must have shape ",
            in[i + 1].shape.ToString(), ", got ", out[i].shape.ToString());
  std::vector<int64_t> bucket = Buckets(attrs, in[2]);
  int64_t k = attrs.Params<CountSketchParam>().out_dim;
  int64_t rows = in[1].shape.ProdRange(0, in[1].ndim() - 1);
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, attrs.op->name.c_str(), {
    using A = typename AccType<T>::type;
    const T* g = in[0].ptr<T>();
    const T* x = in[1].ptr<T>();
    const T* s = in[3].ptr<T>();
    if (req[0] != OpReq::kNullOp) {
      T* gx = out[0].ptr<T>();
      ParallelFor(rows, 64, [&](int64_t rb, int64_t re) {
        for (int64_t r = rb; r < re; ++r)
          for (int64_t j = 0; j < d; ++j)
            Store(gx + r * d + j, req[0], static_cast<A>(s[j]) * static_cast<A>(g[r * k + bucket[j]]));
      });
    }
    if (req[1] != OpReq::kNullOp) {
      T* gh = out[1].ptr<T>();
      for (int64_t j = 0; j < d; ++j) Store(gh + j, req[1], A(0));
    }
    if (req[2] != OpReq::kNullOp) {
      T* gs = out[2].ptr<T>();
      for (int64_t j = 0; j < d; ++j) {
        double acc = 0;
        for (int64_t r = 0; r < rows; ++r)
          acc += static_cast<double>(x[r * d + j]) * static_cast<double>(g[r * k + bucket[j]]);
        Store(gs + j, req[2], acc);
      }
    }
  });
}

}  // namespace

WEFT_REGISTER_OP(_contrib_count_sketch)
    .Describe(
        "Count sketch of each row: for data (..., d), hash h and signs s of d entries each (h in [0, out_dim), s "
        "of +1 and -1), the output (..., out_dim) has out[..., h[j]] += s[j] * data[..., j]. MXNet runs it on "
        "GPUs only; Weft computes it on the CPU.")
    .SetNumInputs(3)
    .AddArgument("data", "NDArray-or-Symbol", "Input data to the CountSketchOp.")
    .AddArgument("h", "NDArray-or-Symbol", "The index vector")
    .AddArgument("s", "NDArray-or-Symbol", "The sign vector")
    .SetParams<CountSketchParam>()
    .SetAttr<FInferShape>("FInferShape", CountSketchShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", CountSketchCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return b.Call("_backward_contrib_count_sketch", {a.out_grads[0], a.inputs[0], a.inputs[1], a.inputs[2]},
                    attrs.dict);
    });

WEFT_REGISTER_OP(_backward_contrib_count_sketch)
    .Describe("Gradients of _contrib_count_sketch with respect to data, h (zero) and s.")
    .SetNumInputs(4)
    .SetNumOutputs(3)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data")
    .AddArgument("h", "NDArray-or-Symbol", "The forward index vector")
    .AddArgument("s", "NDArray-or-Symbol", "The forward sign vector")
    .SetParams<CountSketchParam>()
    .SetAttr<FInferShape>("FInferShape", CountSketchBackwardShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<FCompute>("FCompute<cpu>", CountSketchBackward);

}  // namespace op
}  // namespace weft
