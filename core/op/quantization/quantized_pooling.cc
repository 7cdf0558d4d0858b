// _contrib_quantized_pooling, _contrib_quantized_flatten and _contrib_quantized_act: the
// quantized layers whose output keeps the input's type and range (inputs data, min_data,
// max_data; outputs output, min_output, max_output, the range passed through).
//
// Pooling takes Pooling's parameters; max and avg only, as MXNet. It runs as a oneDNN
// int8 pooling primitive (channels-last, where its JIT kernel is) where oneDNN has one for
// the geometry (average rounded to nearest), otherwise through Pooling's own float kernels
// on a float copy, rounded back.
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "core/op/nn/activation_param.h"
#include "core/op/nn/conv_common.h"
#include "core/op/nn/pooling_geom.h"
#include "core/op/quantization/quantized_util.h"

#if defined(WEFT_USE_ONEDNN)
#include <oneapi/dnnl/dnnl.hpp>

#include "core/op/dnnl/dnnl_layout.h"
#endif

namespace weft {
namespace op {

namespace {

// The shared rules: input 0 quantized, its range scalars; output 0's type is input 0's.
bool PassThroughType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  quant::CheckQuantized(attrs, *in, 0);
  quant::RangeTypes(attrs, in, 1, 2);
  AssignType(attrs, out, 0, (*in)[0], "output");
  quant::OutputRangeTypes(attrs, out);
  return (*in)[0] != DType::kUnknown;
}

void PassRange(const std::vector<TBlob>& in, const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[1] != OpReq::kNullOp) *out[1].ptr<float>() = quant::ReadScalar(in[1]);
  if (req[2] != OpReq::kNullOp) *out[2].ptr<float>() = quant::ReadScalar(in[2]);
}

std::vector<std::string> DataNames(const NodeAttrs&) { return {"data", "min_data", "max_data"}; }
std::vector<std::string> OutputNames(const NodeAttrs&) { return {"output", "min_output", "max_output"}; }

void RefuseAdd(const NodeAttrs& attrs, OpReq req) {
  if (req == OpReq::kAddTo)
    Throw(ErrorKind::kUnsupported, "Operator '", attrs.op->name,
          "': accumulating into the output (req 'add') is not supported");
}

// ---------------------------------------------------------------- pooling
void CheckPoolType(const NodeAttrs& attrs) {
  const auto& p = attrs.Params<PoolingParam>();
  if (p.pool_type != "max" && p.pool_type != "avg")
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': only pool_type 'max' and 'avg' are supported, got '",
          p.pool_type, "'");
}

bool QuantizedPoolingShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  CheckPoolType(attrs);
  quant::RangeShapes(attrs, in, 1, 2);
  quant::OutputRangeShapes(attrs, out);
  const Shape& data = (*in)[0];
  if (!data.known_ndim()) return false;
  PoolGeom g = MakePoolGeom(attrs, data);
  std::vector<int64_t> d{g.n, g.c};
  for (int i = 3 - g.nd; i < 3; ++i) d.push_back(g.out[i]);
  AssignShape(attrs, out, 0, Shape(d), "output");
  return data.is_known();
}

#if defined(WEFT_USE_ONEDNN)
using dnnl::memory;

struct Int8Pool {
  dnnl::pooling_forward prim;
  // The plain NCHW arrays, and the channels-last layout oneDNN's JIT int8 pooling reads,
  // reordered in and out through temp space (its kernel for plain NCHW int8 is the
  // reference one).
  memory::desc user_src, user_dst, src, dst;
  dnnl::reorder to_src, from_dst;
  bool reorder = false;
};

// A oneDNN pooling for the geometry, or null where it has none or where its average would
// differ from Pooling's (include-pad windows that overhang the padded input, which oneDNN
// divides by the whole kernel).
std::shared_ptr<const Int8Pool> PoolPlan(const PoolGeom& g, DType t) {
  if (g.kind == PoolKind::kAvg && g.include_pad)
    for (int i = 0; i < 3; ++i)
      if ((g.out[i] - 1) * g.s[i] - g.pl[i] + g.k[i] > g.limit[i]) return nullptr;
  static std::mutex mu;
  static std::unordered_map<std::string, std::shared_ptr<const Int8Pool>> cache;
  std::string key;
  for (int64_t v : {int64_t(g.nd), g.n, g.c, int64_t(g.kind), int64_t(g.include_pad), int64_t(t)})
    key += std::to_string(v) + ',';
  for (int i = 0; i < 3; ++i)
    for (int64_t v : {g.in[i], g.out[i], g.k[i], g.s[i], g.pl[i]}) key += std::to_string(v) + ',';
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  std::shared_ptr<Int8Pool> plan;
  try {
    static const memory::format_tag plain[] = {memory::format_tag::ncw, memory::format_tag::nchw,
                                               memory::format_tag::ncdhw};
    static const memory::format_tag last[] = {memory::format_tag::nwc, memory::format_tag::nhwc,
                                              memory::format_tag::ndhwc};
    const memory::data_type dt = t == DType::kUint8 ? memory::data_type::u8 : memory::data_type::s8;
    memory::dims sd{g.n, g.c}, dd{g.n, g.c}, strides, kernel, pl, pr;
    for (int i = 3 - g.nd; i < 3; ++i) {
      sd.push_back(g.in[i]);
      dd.push_back(g.out[i]);
      strides.push_back(g.s[i]);
      kernel.push_back(g.k[i]);
      pl.push_back(g.pl[i]);
      pr.push_back(std::max<int64_t>(0, (g.out[i] - 1) * g.s[i] + g.k[i] - g.in[i] - g.pl[i]));
    }
    plan = std::make_shared<Int8Pool>();
    plan->user_src = memory::desc(sd, dt, plain[g.nd - 1]);
    plan->user_dst = memory::desc(dd, dt, plain[g.nd - 1]);
    dnnl::algorithm alg = g.kind == PoolKind::kMax ? dnnl::algorithm::pooling_max
                          : g.include_pad          ? dnnl::algorithm::pooling_avg_include_padding
                                                   : dnnl::algorithm::pooling_avg_exclude_padding;
    auto make = [&](memory::format_tag tag) {
      dnnl::pooling_forward::desc desc(dnnl::prop_kind::forward_inference, alg, memory::desc(sd, dt, tag),
                                       memory::desc(dd, dt, tag), strides, kernel, pl, pr);
      return dnnl::pooling_forward::primitive_desc(desc, RegionEngine());
    };
    auto pd = make(last[g.nd - 1]);
    if (std::string(pd.impl_info_str()).rfind("jit", 0) != 0) pd = make(plain[g.nd - 1]);
    plan->prim = dnnl::pooling_forward(pd);
    plan->src = pd.src_desc();
    plan->dst = pd.dst_desc();
    plan->reorder = plan->src != plan->user_src;
    if (plan->reorder) {
      plan->to_src = dnnl::reorder(dnnl::reorder::primitive_desc(RegionEngine(), plan->user_src, RegionEngine(), plan->src));
      plan->from_dst =
          dnnl::reorder(dnnl::reorder::primitive_desc(RegionEngine(), plan->dst, RegionEngine(), plan->user_dst));
    }
  } catch (const dnnl::error&) {
    plan = nullptr;
  }
  cache.emplace(key, plan);
  return plan;
}

void RunPool(const Int8Pool& p, const OpContext& ctx, void* x, void* y) {
  static thread_local dnnl::stream strm(RegionEngine());
  auto& eng = RegionEngine();
  memory user_src(p.user_src, eng, x), user_dst(p.user_dst, eng, y);
  if (!p.reorder) {
    p.prim.execute(strm, {{DNNL_ARG_SRC, user_src}, {DNNL_ARG_DST, user_dst}});
  } else {
    const size_t src_bytes = (p.src.get_size() + 63) / 64 * 64;
    char* temp = static_cast<char*>(ctx.requested.at(0).temp->Get(src_bytes + p.dst.get_size()));
    memory src(p.src, eng, temp), dst(p.dst, eng, temp + src_bytes);
    p.to_src.execute(strm, user_src, src);
    p.prim.execute(strm, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
    p.from_dst.execute(strm, dst, user_dst);
  }
  strm.wait();
}
#endif

// Pooling's float kernels on a float copy of the data, rounded back (ties to even).
template <typename T>
void PoolThroughFloat(const NodeAttrs& attrs, const OpContext& ctx, const TBlob& x, const TBlob& y) {
  static const auto& fns = Op::GetAttr<FCompute>("FCompute<cpu>");
  const Op* pooling = Op::Get("Pooling");
  std::vector<float> xf(static_cast<size_t>(x.Size())), yf(static_cast<size_t>(y.Size()));
  const T* xs = x.ptr<T>();
  for (size_t i = 0; i < xf.size(); ++i) xf[i] = xs[i];
  TBlob xb = x, yb = y;
  xb.dptr = xf.data();
  xb.dtype = DType::kFloat32;
  yb.dptr = yf.data();
  yb.dtype = DType::kFloat32;
  fns[pooling](MakeAttrs(pooling, attrs.dict), ctx, {xb}, {OpReq::kWriteTo}, {yb});
  T* ys = y.ptr<T>();
  for (size_t i = 0; i < yf.size(); ++i) ys[i] = quant::Saturate<T>(yf[i]);
}

void QuantizedPoolingCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                             const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] != OpReq::kNullOp && out[0].Size() > 0) {
    RefuseAdd(attrs, req[0]);
    PoolGeom g = MakePoolGeom(attrs, in[0].shape);
    bool done = false;
#if defined(WEFT_USE_ONEDNN)
    if (auto plan = PoolPlan(g, in[0].dtype)) {
      RunPool(*plan, ctx, in[0].dptr, out[0].dptr);
      done = true;
    }
#endif
    if (!done) {
      if (in[0].dtype == DType::kUint8) PoolThroughFloat<uint8_t>(attrs, ctx, in[0], out[0]);
      else PoolThroughFloat<int8_t>(attrs, ctx, in[0], out[0]);
    }
  }
  PassRange(in, req, out);
}

// ---------------------------------------------------------------- flatten
bool QuantizedFlattenShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  quant::RangeShapes(attrs, in, 1, 2);
  quant::OutputRangeShapes(attrs, out);
  const Shape& d = (*in)[0];
  if (!d.known_ndim()) return false;
  if (d.ndim() < 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'data' must have at least one axis, got ",
          d.ToString());
  int64_t rest = 1;
  for (int i = 1; i < d.ndim(); ++i) rest = d[i] < 0 || rest < 0 ? -1 : rest * d[i];
  AssignShape(attrs, out, 0, Shape({d[0], rest}), "output");
  return d.is_known();
}

void QuantizedFlattenCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                             const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  RefuseAdd(attrs, req[0]);
  CopyWithReq(in[0], out[0], req[0]);
  PassRange(in, req, out);
}

// ---------------------------------------------------------------- act
bool QuantizedActShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<ActivationParam>();
  if (p.act_type != "relu")
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': only act_type 'relu' is supported, got '", p.act_type,
          "'");
  quant::RangeShapes(attrs, in, 1, 2);
  quant::OutputRangeShapes(attrs, out);
  AssignShape(attrs, out, 0, (*in)[0], "output");
  return (*in)[0].is_known();
}

// relu on int8 zeroes the negatives; uint8 has none. Zero stands for 0.0 in both, so the
// range stays the input's.
void QuantizedActCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] != OpReq::kNullOp) {
    RefuseAdd(attrs, req[0]);
    if (in[0].dtype == DType::kUint8) {
      CopyWithReq(in[0], out[0], req[0]);
    } else {
      const int8_t* x = in[0].ptr<int8_t>();
      int8_t* y = out[0].ptr<int8_t>();
      ParallelFor(in[0].Size(), kElemGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) y[i] = x[i] > 0 ? x[i] : int8_t(0);
      });
    }
  }
  PassRange(in, req, out);
}

}  // namespace

WEFT_REGISTER_OP(_contrib_quantized_pooling)
    .Describe("Pooling (max or avg) of int8 or uint8 data; the output keeps the data's type and range. Takes "
              "Pooling's parameters. Forward only.")
    .SetNumInputs(3)
    .SetNumOutputs(3)
    .AddArgument("data", "NDArray-or-Symbol", "Input data, int8 or uint8.")
    .AddArgument("min_data", "NDArray-or-Symbol", "Minimum of data's range.")
    .AddArgument("max_data", "NDArray-or-Symbol", "Maximum of data's range.")
    .SetParams<PoolingParam>()
    .SetAttr<FListNames>("FListInputNames", DataNames)
    .SetAttr<FListNames>("FListOutputNames", OutputNames)
    .SetAttr<FInferShape>("FInferShape", QuantizedPoolingShape)
    .SetAttr<FInferType>("FInferType", PassThroughType)
    // The reorders around oneDNN's pooling, and Pooling's kernels on the float route.
    .SetAttr<FResourceRequest>("FResourceRequest",
                               [](const NodeAttrs&) { return std::vector<ResourceRequest>{{ResourceType::kTempSpace}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", QuantizedPoolingCompute);

WEFT_REGISTER_OP(_contrib_quantized_flatten)
    .Describe("Flattens int8 or uint8 data to (batch, rest) as Flatten does; the range passes through.")
    .SetNumInputs(3)
    .SetNumOutputs(3)
    .AddArgument("data", "NDArray-or-Symbol", "Input data, int8 or uint8.")
    .AddArgument("min_data", "NDArray-or-Symbol", "Minimum of data's range.")
    .AddArgument("max_data", "NDArray-or-Symbol", "Maximum of data's range.")
    .SetAttr<FListNames>("FListInputNames", DataNames)
    .SetAttr<FListNames>("FListOutputNames", OutputNames)
    .SetAttr<FInferShape>("FInferShape", QuantizedFlattenShape)
    .SetAttr<FInferType>("FInferType", PassThroughType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", QuantizedFlattenCompute);

WEFT_REGISTER_OP(_contrib_quantized_act)
    .Describe("relu of int8 or uint8 data; the output keeps the data's type and range. Takes Activation's "
              "parameters (act_type 'relu' only).")
    .SetNumInputs(3)
    .SetNumOutputs(3)
    .AddArgument("data", "NDArray-or-Symbol", "Input data, int8 or uint8.")
    .AddArgument("min_data", "NDArray-or-Symbol", "Minimum of data's range.")
    .AddArgument("max_data", "NDArray-or-Symbol", "Maximum of data's range.")
    .SetParams<ActivationParam>()
    .SetAttr<FListNames>("FListInputNames", DataNames)
    .SetAttr<FListNames>("FListOutputNames", OutputNames)
    .SetAttr<FInferShape>("FInferShape", QuantizedActShape)
    .SetAttr<FInferType>("FInferType", PassThroughType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", QuantizedActCompute);

}  // namespace op
}  // namespace weft
