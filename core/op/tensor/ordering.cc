// topk, sort and argsort: each lane along an axis (or the flattened input when axis is
// None) is sorted stably, so equal values keep their input order; NaN counts as the
// largest value. topk's and sort's
// gradients scatter the output gradient back to the positions the values came from
// (_backward_topk); argsort's and the index outputs' gradient is zero.
#include <algorithm>
#include <optional>

#include "core/op/elemwise/gradients.h"
#include "core/op/elemwise/math.h"
#include "core/op/op_util.h"
#include "core/op/tensor/ordering_gpu.h"

namespace weft {
namespace op {

struct TopKParam {
  std::optional<int> axis = -1;
  int k = 1;
  std::string ret_typ = "indices";
  bool is_ascend = false;
  DType dtype = DType::kFloat32;
};

WEFT_PARAM_SCHEMA(TopKParam, s) {
  s.Field("axis", &TopKParam::axis)
      .Default(-1)
      .Describe("Axis along which to choose the top k indices; None uses the flattened input.");
  s.Field("k", &TopKParam::k).Default(1).Describe("Number of top elements to select; k <= 0 selects all of them.");
  s.Field("ret_typ", &TopKParam::ret_typ)
      .Default("indices")
      .Choices({"value", "indices", "mask", "both"})
      .Describe("What to return: the values, their indices, a mask of their positions, or values and indices.");
  s.Field("is_ascend", &TopKParam::is_ascend)
      .Default(false)
      .Describe("Choose the k smallest elements (true) or the k largest (false).");
  s.Field("dtype", &TopKParam::dtype)
      .Default(DType::kFloat32)
      .Describe("DType of the returned indices (ret_typ 'indices' or 'both'): uint8, int32, int64, float16, float32 or "
                "float64; it must represent every index exactly.");
}

struct SortParam {
  std::optional<int> axis = -1;
  bool is_ascend = true;
};

WEFT_PARAM_SCHEMA(SortParam, s) {
  s.Field("axis", &SortParam::axis).Default(-1).Describe("Axis to sort along; None sorts the flattened input.");
  s.Field("is_ascend", &SortParam::is_ascend).Default(true).Describe("Sort in ascending or descending order.");
}

struct ArgSortParam {
  std::optional<int> axis = -1;
  bool is_ascend = true;
  DType dtype = DType::kFloat32;
};

WEFT_PARAM_SCHEMA(ArgSortParam, s) {
  s.Field("axis", &ArgSortParam::axis).Default(-1).Describe("Axis to sort along; None sorts the flattened input.");
  s.Field("is_ascend", &ArgSortParam::is_ascend).Default(true).Describe("Sort in ascending or descending order.");
  s.Field("dtype", &ArgSortParam::dtype)
      .Default(DType::kFloat32)
      .Describe("DType of the returned indices: uint8, int32, int64, float16, float32 or float64; it must represent "
                "every index exactly.");
}

namespace {

// The input seen as outer x n x inner lanes; a lane is the n elements of one (outer, inner)
// pair, `k` of which are kept.
struct SortView {
  bool flat = false;
  int axis = 0;
  int64_t outer = 1, n = 1, inner = 1, k = 1;
};

SortView ViewOf(const NodeAttrs& attrs, const Shape& s, const std::optional<int>& axis, int k) {
  SortView v;
  if (!axis) {
    v.flat = true;
    v.n = s.Size();
  } else {
    if (s.ndim() < 1)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name,
            "': expected an input with at least 1 dimension for axis=", *axis, ", got shape ", s.ToString());
    v.axis = CheckAxis(attrs, *axis, s.ndim());
    v.outer = s.ProdRange(0, v.axis);
    v.n = s[v.axis];
    v.inner = s.ProdRange(v.axis + 1, s.ndim());
  }
  v.k = k <= 0 ? v.n : k;
  if (v.k > v.n)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': k = ", k, " is larger than the ", v.n,
          " elements to choose from");
  return v;
}

LaneView Lanes(const SortView& v) { return LaneView{v.outer, v.n, v.inner, v.k}; }

// The shape of the values or indices: the input with k in place of the axis, or (k,).
Shape SelectedShape(const Shape& s, const SortView& v) {
  if (v.flat) return Shape({v.k});
  Shape out = s;
  out[v.axis] = v.k;
  return out;
}

// The largest index an index dtype holds exactly.
void CheckIndexDType(const NodeAttrs& attrs, DType t, int64_t n) {
  int64_t limit;
  switch (t) {
    case DType::kUint8: limit = 255; break;
    case DType::kFloat16: limit = 2048; break;
    case DType::kFloat32: limit = int64_t{1} << 24; break;
    case DType::kInt32: limit = (int64_t{1} << 31) - 1; break;
    case DType::kFloat64: limit = int64_t{1} << 53; break;
    case DType::kInt64: limit = INT64_MAX; break;
    default:
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter 'dtype' = ", DTypeName(t),
            " is not an index dtype (uint8, int32, int64, float16, float32 or float64)");
  }
  if (n > 0 && n - 1 > limit)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': dtype ", DTypeName(t), " cannot hold the index ",
          n - 1, " exactly");
}

// Orders (value, position) keys: NaN above every number (last ascending, first
// descending), equal values by position, so the order is total and the same as a stable
// sort's.
template <typename K>
struct KeyOrder {
  bool ascend;
  bool operator()(const std::pair<K, int64_t>& a, const std::pair<K, int64_t>& b) const {
    // x != x holds for NaN only (never for integer keys).
    bool an = a.first != a.first, bn = b.first != b.first;
    if (an || bn) return an != bn ? (ascend ? bn : an) : a.second < b.second;
    if (a.first != b.first) return ascend ? a.first < b.first : a.first > b.first;
    return a.second < b.second;
  }
};

// For each lane, the positions (0..n-1) of its first k elements in sorted order; calls
// f(lane_base, lane, order) with the lane's offset in the input.
template <typename T, typename F>
void SortLanes(const T* x, const SortView& v, bool ascend, F&& f) {
  using K = typename AccType<T>::type;
  ParallelFor(v.outer * v.inner, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(v.n, 1)),
              [&](int64_t b, int64_t e) {
                std::vector<std::pair<K, int64_t>> keys(v.n);
                std::vector<int64_t> order(v.k);
                KeyOrder<K> cmp{ascend};
                for (int64_t lane = b; lane < e; ++lane) {
                  int64_t base = (lane / v.inner) * v.n * v.inner + lane % v.inner;
                  for (int64_t j = 0; j < v.n; ++j) keys[j] = {static_cast<K>(x[base + j * v.inner]), j};
                  if (v.k < v.n) std::partial_sort(keys.begin(), keys.begin() + v.k, keys.end(), cmp);
                  else std::sort(keys.begin(), keys.end(), cmp);
                  for (int64_t j = 0; j < v.k; ++j) order[j] = keys[j].second;
                  f(base, lane, order);
                }
              });
}

// Writes the selected values and/or indices of every lane: `vals` (may be null) in the
// input dtype, `idx` (may be null) in its own dtype, both shaped like SelectedShape.
void WriteSelection(const TBlob& in, const SortView& v, bool ascend, const TBlob* vals, OpReq vreq, const TBlob* idx,
                    OpReq ireq) {
  WEFT_TYPE_SWITCH(in.dtype, T, {
    const T* x = in.ptr<T>();
    T* vp = vals ? vals->ptr<T>() : nullptr;
    SortLanes(x, v, ascend, [&](int64_t base, int64_t lane, const std::vector<int64_t>& order) {
      int64_t o = lane / v.inner, i = lane % v.inner;
      for (int64_t j = 0; j < v.k; ++j) {
        int64_t dst = (o * v.k + j) * v.inner + i;
        if (vp) Store(vp + dst, vreq, x[base + order[j] * v.inner]);
        if (idx) WEFT_TYPE_SWITCH(idx->dtype, I, { Store(idx->ptr<I>() + dst, ireq, static_cast<double>(order[j])); });
      }
    });
  });
}

bool TopKShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<TopKParam>();
  if (!(*in)[0].is_known()) return false;
  SortView v = ViewOf(attrs, (*in)[0], p.axis, p.k);
  if (p.ret_typ == "indices" || p.ret_typ == "both") CheckIndexDType(attrs, p.dtype, v.n);
  if (p.ret_typ == "mask") {
    AssignShape(attrs, out, 0, (*in)[0], "output");
    return true;
  }
  Shape sel = SelectedShape((*in)[0], v);
  for (size_t i = 0; i < out->size(); ++i) AssignShape(attrs, out, i, sel, "output");
  return true;
}

bool TopKType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const auto& p = attrs.Params<TopKParam>();
  if (p.ret_typ == "indices") {
    AssignType(attrs, out, 0, p.dtype, "output");
    return (*in)[0] != DType::kUnknown;
  }
  if (out->size() > 1) AssignType(attrs, out, 1, p.ret_typ == "both" ? p.dtype : DType::kInt64, "output");
  if ((*in)[0] == DType::kUnknown) (*in)[0] = (*out)[0];
  if ((*in)[0] == DType::kUnknown) return false;
  AssignType(attrs, out, 0, (*in)[0], "output");
  return true;
}

void TopKCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<TopKParam>();
  SortView v = ViewOf(attrs, in[0].shape, p.axis, p.k);
  bool ascend = p.is_ascend;
  if (ctx.run_ctx.ctx.is_gpu()) {
    const TBlob* vals = nullptr;
    const TBlob* idx = nullptr;
    const TBlob* mask = nullptr;
    OpReq vreq = OpReq::kNullOp, ireq = OpReq::kNullOp, mreq = OpReq::kNullOp;
    if (p.ret_typ == "indices") {
      idx = &out[0];
      ireq = req[0];
    } else if (p.ret_typ == "mask") {
      mask = &out[0];
      mreq = req[0];
    } else {
      vals = &out[0];
      vreq = req[0];
      idx = &out[1];
      ireq = req[1];
    }
    return RankLanesGPU(ctx, in[0], Lanes(v), ascend, vals, vreq, idx, ireq, mask, mreq);
  }
  if (p.ret_typ == "indices") {
    if (req[0] != OpReq::kNullOp) WriteSelection(in[0], v, ascend, nullptr, OpReq::kNullOp, &out[0], req[0]);
  } else if (p.ret_typ == "mask") {
    if (req[0] == OpReq::kNullOp) return;
    WEFT_TYPE_SWITCH(in[0].dtype, T, {
      const T* x = in[0].ptr<T>();
      T* y = out[0].ptr<T>();
      // A lane's mask is written whole by the task that sorts it.
      SortLanes(x, v, ascend, [&](int64_t base, int64_t, const std::vector<int64_t>& order) {
        std::vector<char> chosen(v.n, 0);
        for (int64_t j = 0; j < v.k; ++j) chosen[order[j]] = 1;
        for (int64_t j = 0; j < v.n; ++j) Store(y + base + j * v.inner, req[0], chosen[j] ? 1.0 : 0.0);
      });
    });
  } else {
    WriteSelection(in[0], v, ascend, req[0] == OpReq::kNullOp ? nullptr : &out[0], req[0],
                   req[1] == OpReq::kNullOp ? nullptr : &out[1], req[1]);
  }
}

int TopKNumOutputs(const NodeAttrs& attrs) {
  const auto& r = attrs.Params<TopKParam>().ret_typ;
  return r == "indices" || r == "mask" ? 1 : 2;
}

// Inputs (ograd, indices, data); output: the gradient of data, the output gradient added at
// the positions the selected values came from.
bool TopKBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<TopKParam>();
  if (!(*in)[2].is_known()) return false;
  SortView v = ViewOf(attrs, (*in)[2], p.axis, p.k);
  Shape sel = SelectedShape((*in)[2], v);
  AssignShape(attrs, in, 0, sel, "input");
  AssignShape(attrs, in, 1, sel, "input");
  AssignShape(attrs, out, 0, (*in)[2], "output");
  return true;
}

bool TopKBackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  if ((*in)[2] == DType::kUnknown) return false;
  AssignType(attrs, in, 0, (*in)[2], "input");
  AssignType(attrs, out, 0, (*in)[2], "output");
  return (*in)[1] != DType::kUnknown;
}

void TopKBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<TopKParam>();
  SortView v = ViewOf(attrs, in[2].shape, p.axis, p.k);
  Shape sel = SelectedShape(in[2].shape, v);
  for (int i = 0; i < 2; ++i)
    if (in[i].shape != sel)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': ", InputName(attrs, i), " has shape ",
            in[i].shape.ToString(), " but the operator expects ", sel.ToString());
  if (out[0].shape != in[2].shape)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': output has shape ", out[0].shape.ToString(),
          " but input 'data' has shape ", in[2].shape.ToString());
  if (ctx.run_ctx.ctx.is_gpu()) return TopKBackwardGPU(ctx, in[0], in[1], Lanes(v), out[0], req[0]);
  std::vector<int64_t> idx(in[1].Size());
  WEFT_TYPE_SWITCH(in[1].dtype, I, {
    const I* ip = in[1].ptr<I>();
    for (size_t j = 0; j < idx.size(); ++j) {
      idx[j] = ConvertValue<int64_t>(ip[j]);
      if (idx[j] < 0 || idx[j] >= v.n)
        Throw(ErrorKind::kIndex, "Operator '", attrs.op->name, "': index ", idx[j], " is out of range for ", v.n,
              " elements");
    }
  });
  WEFT_TYPE_SWITCH(out[0].dtype, T, {
    using A = typename AccType<T>::type;
    const T* g = in[0].ptr<T>();
    T* dx = out[0].ptr<T>();
    if (req[0] != OpReq::kAddTo) std::fill(dx, dx + out[0].Size(), T(0));
    for (int64_t lane = 0; lane < v.outer * v.inner; ++lane) {
      int64_t o = lane / v.inner, i = lane % v.inner;
      for (int64_t j = 0; j < v.k; ++j) {
        int64_t src = (o * v.k + j) * v.inner + i;
        T* d = dx + (o * v.n + idx[src]) * v.inner + i;
        *d = static_cast<T>(WrapAdd<A>(static_cast<A>(*d), static_cast<A>(g[src])));  // integers wrap
      }
    }
  });
}

bool SortShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known()) return false;
  SortView v = ViewOf(attrs, (*in)[0], attrs.Params<SortParam>().axis, 0);
  Shape sel = SelectedShape((*in)[0], v);
  for (size_t i = 0; i < out->size(); ++i) AssignShape(attrs, out, i, sel, "output");
  return true;
}

bool SortType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, out, 1, DType::kInt64, "output");
  if ((*in)[0] == DType::kUnknown) (*in)[0] = (*out)[0];
  if ((*in)[0] == DType::kUnknown) return false;
  AssignType(attrs, out, 0, (*in)[0], "output");
  return true;
}

void SortCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<SortParam>();
  SortView v = ViewOf(attrs, in[0].shape, p.axis, 0);
  if (ctx.run_ctx.ctx.is_gpu())
    return RankLanesGPU(ctx, in[0], Lanes(v), p.is_ascend, &out[0], req[0], &out[1], req[1], nullptr, OpReq::kNullOp);
  WriteSelection(in[0], v, p.is_ascend, req[0] == OpReq::kNullOp ? nullptr : &out[0], req[0],
                 req[1] == OpReq::kNullOp ? nullptr : &out[1], req[1]);
}

bool ArgSortShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known()) return false;
  SortView v = ViewOf(attrs, (*in)[0], attrs.Params<ArgSortParam>().axis, 0);
  CheckIndexDType(attrs, attrs.Params<ArgSortParam>().dtype, v.n);
  AssignShape(attrs, out, 0, SelectedShape((*in)[0], v), "output");
  return true;
}

bool ArgSortType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, out, 0, attrs.Params<ArgSortParam>().dtype, "output");
  return (*in)[0] != DType::kUnknown;
}

void ArgSortCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<ArgSortParam>();
  SortView v = ViewOf(attrs, in[0].shape, p.axis, 0);
  if (ctx.run_ctx.ctx.is_gpu())
    return RankLanesGPU(ctx, in[0], Lanes(v), p.is_ascend, nullptr, OpReq::kNullOp, &out[0], req[0], nullptr,
                        OpReq::kNullOp);
  if (req[0] != OpReq::kNullOp) WriteSelection(in[0], v, p.is_ascend, nullptr, OpReq::kNullOp, &out[0], req[0]);
}

}  // namespace

WEFT_REGISTER_OP(topk)
    .Describe(
        "The top k elements along an axis (of the flattened input when axis is None), largest first unless "
        "is_ascend: their indices, their values, a mask of their positions, or values and indices (ret_typ).")
    .SetNumInputs(1)
    .SetNumOutputs(TopKNumOutputs)
    .AddArgument("data", "NDArray-or-Symbol", "The input array")
    .SetParams<TopKParam>()
    .SetAttr<FNumVisibleOutputs>("FNumVisibleOutputs",
                                 [](const NodeAttrs& attrs) { return attrs.Params<TopKParam>().ret_typ == "both" ? 2 : 1; })
    .SetAttr<FInferShape>("FInferShape", TopKShape)
    .SetAttr<FInferType>("FInferType", TopKType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", TopKCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      const auto& r = attrs.Params<TopKParam>().ret_typ;
      if (r != "value" && r != "both") return ZeroGradient(b, attrs, a);
      return std::vector<GradValue>{b.Op("_backward_topk", {a.out_grads[0], a.outputs[1], a.inputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_topk)
    .Describe("Gradient of topk and sort: the output gradient added at the positions the selected values came from.")
    .SetNumInputs(3)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the selected values")
    .AddArgument("indices", "NDArray-or-Symbol", "Positions of the selected values along the axis")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input (for its shape)")
    .SetParams<TopKParam>()
    .SetAttr<FInferShape>("FInferShape", TopKBackwardShape)
    .SetAttr<FInferType>("FInferType", TopKBackwardType)
    .SetAttr<FCompute>("FCompute<cpu>", TopKBackward);

WEFT_REGISTER_OP(sort)
    .Describe("A sorted copy of the input along an axis (of the flattened input when axis is None).")
    .SetNumInputs(1)
    .SetNumOutputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "The input array")
    .SetParams<SortParam>()
    .SetAttr<FNumVisibleOutputs>("FNumVisibleOutputs", [](const NodeAttrs&) { return 1; })
    .SetAttr<FInferShape>("FInferShape", SortShape)
    .SetAttr<FInferType>("FInferType", SortType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", SortCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      const auto& p = attrs.Params<SortParam>();
      KwArgs kw{{"k", "0"}, {"ret_typ", "value"}, {"is_ascend", p.is_ascend ? "1" : "0"}};
      kw.push_back({"axis", p.axis ? std::to_string(*p.axis) : std::string("None")});
      return std::vector<GradValue>{b.Op("_backward_topk", {a.out_grads[0], a.outputs[1], a.inputs[0]}, kw)};
    });

WEFT_REGISTER_OP(argsort)
    .Describe("The indices that sort the input along an axis (the flattened input when axis is None).")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input array")
    .SetParams<ArgSortParam>()
    .SetAttr<FInferShape>("FInferShape", ArgSortShape)
    .SetAttr<FInferType>("FInferType", ArgSortType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", ArgSortCompute)
    .SetAttr<FGradient>("FGradient", ZeroGradient);

// The compute functions above serve both devices (ordering_gpu.h for a GPU context).
#ifdef WEFT_USE_CUDA
WEFT_REGISTER_OP(topk).SetAttr<FCompute>("FCompute<gpu>", TopKCompute);
WEFT_REGISTER_OP(_backward_topk).SetAttr<FCompute>("FCompute<gpu>", TopKBackward);
WEFT_REGISTER_OP(sort).SetAttr<FCompute>("FCompute<gpu>", SortCompute);
WEFT_REGISTER_OP(argsort).SetAttr<FCompute>("FCompute<gpu>", ArgSortCompute);
#endif

}  // namespace op
}  // namespace weft
