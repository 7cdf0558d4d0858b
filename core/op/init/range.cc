// Evenly spaced values: _arange (by step, each value repeated) and _linspace (by count).
#include <cmath>
#include <optional>
#include <type_traits>

#include "core/op/init/range_gpu.h"
#include "core/op/op_util.h"

namespace weft {
namespace op {

struct ArangeParam {
  double start = 0;
  std::optional<double> stop;
  double step = 1;
  int repeat = 1;
  bool infer_range = false;
  std::string ctx;
  DType dtype = DType::kFloat32;
};

WEFT_PARAM_SCHEMA(ArangeParam, s) {
  s.Field("start", &ArangeParam::start).Describe("Start of the interval; the end when stop is None (start is 0 then).");
  s.Field("stop", &ArangeParam::stop).Default(std::nullopt).Describe("End of the interval (excluded).");
  s.Field("step", &ArangeParam::step).Default(1.0).Describe("Spacing between values.");
  s.Field("repeat", &ArangeParam::repeat).Default(1).Min(1).Describe("How many times each value is repeated.");
  s.Field("infer_range", &ArangeParam::infer_range)
      .Default(false)
      .Describe("In a graph, infer the length from the shape the output must have when stop is None.");
  s.Field("ctx", &ArangeParam::ctx).Default("").Describe("The context of the output (set by the front end).");
  s.Field("dtype", &ArangeParam::dtype).Default(DType::kFloat32).Describe("The dtype of the output.");
}

struct LinspaceParam {
  double start = 0;
  double stop = 0;
  int num = 0;
  bool endpoint = true;
  std::string ctx;
  DType dtype = DType::kFloat32;
};

WEFT_PARAM_SCHEMA(LinspaceParam, s) {
  s.Field("start", &LinspaceParam::start).Describe("The first value.");
  s.Field("stop", &LinspaceParam::stop).Describe("The last value (included when endpoint is true).");
  s.Field("num", &LinspaceParam::num).Min(0).Describe("How many values.");
  s.Field("endpoint", &LinspaceParam::endpoint).Default(true).Describe("Whether stop is the last value.");
  s.Field("ctx", &LinspaceParam::ctx).Default("").Describe("The context of the output (set by the front end).");
  s.Field("dtype", &LinspaceParam::dtype).Default(DType::kFloat32).Describe("The dtype of the output.");
}

namespace {

// [start, stop) with stop None meaning [0, start), unless the range is to be inferred.
bool ArangeBounds(const ArangeParam& p, double* start, double* stop) {
  if (p.stop) {
    *start = p.start;
    *stop = *p.stop;
    return true;
  }
  if (p.infer_range) return false;
  *start = 0;
  *stop = p.start;
  return true;
}

bool ArangeShape(const NodeAttrs& attrs, std::vector<Shape>*, std::vector<Shape>* out) {
  const auto& p = attrs.Params<ArangeParam>();
  if (p.step == 0) Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter 'step' must not be 0");
  double start, stop;
  if (!ArangeBounds(p, &start, &stop)) return (*out)[0].is_known();
  double n = std::ceil((stop - start) / p.step);
  // An infinite bound, or a range longer than any array, is an error: converting such a
  // count to an integer is undefined (fuzz_c_api found start=inf). NaN gives no elements.
  if (n > 0 && !(n * p.repeat < 9.0e18))
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': start=", p.start, ", stop=",
          p.stop ? std::to_string(*p.stop) : std::string("None"), ", step=", p.step, " and repeat=", p.repeat,
          " give ", n, " x ", p.repeat, " elements, more than an array can hold");
  int64_t len = n > 0 ? static_cast<int64_t>(n) * p.repeat : 0;
  AssignShape(attrs, out, 0, Shape{len}, "output");
  return true;
}

void ArangeCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>&,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<ArangeParam>();
  double start = p.start, stop;
  // With infer_range the length came from the graph and the values count from start.
  if (!ArangeBounds(p, &start, &stop)) start = p.start;
  double step = p.step;
  const DType t = out[0].dtype;
  const bool integral = IsIntegralDType(t) && t != DType::kBool;
  if (integral) {
    // As MXNet (and numpy): an integer dtype takes start and step converted to integers
    // (arange(1.3, 456.6, 1.3, dtype=int32) counts 1, 2, 3, ...) and counts in the dtype,
    // wrapping around as it does.
    start = static_cast<double>(ConvertValue<int64_t>(start));
    step = static_cast<double>(ConvertValue<int64_t>(step));
  }
  if (ctx.run_ctx.ctx.is_gpu()) return AffineFillGPU(ctx, out[0], req[0], start, step, p.repeat, false, 0.0);
  if (integral) {
    const uint64_t s0 = static_cast<uint64_t>(static_cast<int64_t>(start));
    const uint64_t st = static_cast<uint64_t>(static_cast<int64_t>(step));
    WEFT_TYPE_SWITCH(t, T, {
      T* y = out[0].ptr<T>();
      const OpReq r = req[0];
      ParallelFor(out[0].Size(), kElemGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          T v = static_cast<T>(s0 + static_cast<uint64_t>(i / p.repeat) * st);
          y[i] = r == OpReq::kAddTo ? static_cast<T>(y[i] + v) : v;
        }
      });
    });
    return;
  }
  WEFT_TYPE_SWITCH(t, T, {
    T* y = out[0].ptr<T>();
    ParallelFor(out[0].Size(), kElemGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) Store(y + i, req[0], start + static_cast<double>(i / p.repeat) * step);
    });
  });
}

bool LinspaceShape(const NodeAttrs& attrs, std::vector<Shape>*, std::vector<Shape>* out) {
  AssignShape(attrs, out, 0, Shape{attrs.Params<LinspaceParam>().num}, "output");
  return true;
}

void LinspaceCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>&,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<LinspaceParam>();
  int64_t intervals = p.endpoint ? p.num - 1 : p.num;
  double step = intervals > 0 ? (p.stop - p.start) / static_cast<double>(intervals) : 0.0;
  if (ctx.run_ctx.ctx.is_gpu())
    return AffineFillGPU(ctx, out[0], req[0], p.start, step, 1, p.endpoint && p.num > 1, p.stop);
  WEFT_TYPE_SWITCH(out[0].dtype, T, {
    T* y = out[0].ptr<T>();
    ParallelFor(out[0].Size(), kElemGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        double v = (p.endpoint && i == p.num - 1 && p.num > 1) ? p.stop : p.start + static_cast<double>(i) * step;
        Store(y + i, req[0], v);
      }
    });
  });
}

template <typename P>
bool ParamType(const NodeAttrs& attrs, std::vector<DType>*, std::vector<DType>* out) {
  return OutputTypeFromParam(attrs, out, attrs.Params<P>().dtype);
}

}  // namespace

WEFT_REGISTER_OP(_arange)
    .Describe("Evenly spaced values in [start, stop) (in [0, start) when stop is None), each repeated `repeat` times.")
    .SetNumInputs(0)
    .SetParams<ArangeParam>()
    .SetAttr<FInferShape>("FInferShape", ArangeShape)
    .SetAttr<FInferType>("FInferType", ParamType<ArangeParam>)
    .SetAttr<FCompute>("FCompute<cpu>", ArangeCompute);

WEFT_REGISTER_OP(_linspace)
    .Describe("num evenly spaced values from start to stop (stop excluded when endpoint is false).")
    .SetNumInputs(0)
    .SetParams<LinspaceParam>()
    .SetAttr<FInferShape>("FInferShape", LinspaceShape)
    .SetAttr<FInferType>("FInferType", ParamType<LinspaceParam>)
    .SetAttr<FCompute>("FCompute<cpu>", LinspaceCompute);

// The compute functions above serve both devices (range_gpu.h for a GPU context).
#ifdef WEFT_USE_CUDA
WEFT_REGISTER_OP(_arange).SetAttr<FCompute>("FCompute<gpu>", ArangeCompute);
WEFT_REGISTER_OP(_linspace).SetAttr<FCompute>("FCompute<gpu>", LinspaceCompute);
#endif

}  // namespace op
}  // namespace weft
