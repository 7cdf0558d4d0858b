// Helpers shared by CPU operators: honouring a write request, splitting loops across
// OpenMP threads, and filling shapes and dtypes during inference with errors that name
// the operator, the argument and both values.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "core/base/convert.h"
#include "core/base/dtype.h"
#include "core/base/error.h"
#include "core/base/shape.h"
#include "core/op/elemwise/math.h"
#include "core/op/registry.h"
#include "core/base/tblob.h"

namespace weft {
namespace op {

// Writes `v` (in a compute type such as double) into `out` as `req` says. kNullOp
// outputs are skipped by the callers before any loop runs. A floating value outside an
// integer output's range (or NaN) saturates (ConvertValue) where a plain conversion would be
// undefined: fuzz_c_api found operators on integer arrays computing such values. A kAddTo
// in a signed integer compute type (int32, int64) wraps around as numpy's sums do, where
// the plain sum would be undefined on overflow.
template <typename T, typename V>
inline void Store(T* out, OpReq req, V v) {
  if (req != OpReq::kAddTo) {
    *out = ConvertValue<T>(v);
  } else if constexpr (std::is_integral_v<V> && std::is_signed_v<V>) {
    *out = ConvertValue<T>(WrapAdd(static_cast<V>(*out), v));
  } else {
    *out = ConvertValue<T>(static_cast<V>(*out) + v);
  }
}

// Runs f(begin, end) over [0, n) split into contiguous ranges, one per OpenMP thread,
// when there is more than `grain` work items; serially otherwise.
template <typename F>
void ParallelFor(int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
  int64_t threads = omp_get_max_threads();
  int64_t chunks = std::min<int64_t>(threads, (n + std::max<int64_t>(grain, 1) - 1) / std::max<int64_t>(grain, 1));
  if (chunks <= 1 || omp_in_parallel()) {
    f(int64_t{0}, n);
    return;
  }
#pragma omp parallel for num_threads(static_cast<int>(chunks)) schedule(static, 1)
  for (int64_t c = 0; c < chunks; ++c) f(c * n / chunks, (c + 1) * n / chunks);
}

// Element counts under which a loop is not worth waking other threads for.
constexpr int64_t kElemGrain = 1 << 15;

// out = in (or out += in), same dtype and size; a no-op when they share memory and the
// request is a write.
inline void CopyWithReq(const TBlob& in, const TBlob& out, OpReq req) {
  if (req == OpReq::kNullOp) return;
  if (req != OpReq::kAddTo && in.dptr == out.dptr) return;
  WEFT_TYPE_SWITCH(out.dtype, T, {
    const T* x = in.ptr<T>();
    T* y = out.ptr<T>();
    ParallelFor(out.Size(), kElemGrain, [&](int64_t b, int64_t e) {
      if (req == OpReq::kAddTo) {
        for (int64_t i = b; i < e; ++i) y[i] = WrapAdd(y[i], x[i]);  // integers wrap, as in Store
      } else {
        std::copy(x + b, x + e, y + b);
      }
    });
  });
}

// FCompute of the operators whose output is the input's memory seen with another shape
// (reshape, flatten, expand_dims, squeeze).
inline void IdentityCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in,
                            const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  CopyWithReq(in[0], out[0], req[0]);
}

// The name of input i for messages: the name the operator lists for it (FListInputNames,
// whose inputs depend on parameters), else the registered argument name when there is one.
inline std::string InputName(const NodeAttrs& attrs, size_t i) {
  static const auto& listed = Op::GetAttr<FListNames>("FListInputNames");
  if (listed.Contains(attrs.op) && attrs.parsed) {
    std::vector<std::string> names;
    try {
      names = listed[attrs.op](attrs);
    } catch (const std::exception&) {
      // A list that cannot be made (a Custom operator without its state) names no input.
    }
    if (i < names.size()) return "input '" + names[i] + "'";
  }
  const auto& args = attrs.op->arguments;
  if (i < args.size() && args[i].type.find("[]") == std::string::npos) return "input '" + args[i].name + "'";
  return "input " + std::to_string(i);
}

// How a disagreement is worded. MXNet has two phrasings that users and scripts search for:
// one argument against what the operator computed from the others (SHAPE_ASSIGN_CHECK's
// "Shape inconsistent, Provided = [..], inferred shape=[..]", "Type inconsistent, ..."),
// and arguments that must all be alike (elementwise operators: "Incompatible attr in node
// <name> at <i>-th input: expected <x>, got <y>"). Weft's messages start with MXNet's phrase
// and go on to name the argument in Weft's words.
enum class Mismatch { kInferred, kSameAsOthers };

inline std::string MismatchPhrase(const NodeAttrs& attrs, Mismatch style, const char* what, size_t i,
                                  const std::string& given, const std::string& expected, const char* kind) {
  if (style == Mismatch::kSameAsOthers)
    return "Incompatible attr in node " + attrs.name + " at " + std::to_string(i) + "-th " + what + ": expected " +
           expected + ", got " + given;
  if (std::string(kind) == "shape") return "Shape inconsistent, Provided = " + given + ", inferred shape=" + expected;
  return "Type inconsistent, Provided = " + given + ", inferred type = " + expected;
}

// Merges `s` into (*shapes)[i]: unknown ranks and dims are filled, known ones must agree.
// `what` is "input" or "output". Throws kShape naming the operator and both shapes.
inline void AssignShape(const NodeAttrs& attrs, std::vector<Shape>* shapes, size_t i, const Shape& s,
                        const char* what, Mismatch style = Mismatch::kInferred) {
  Shape& cur = (*shapes)[i];
  if (!s.known_ndim() || cur == s) return;
  if (!cur.known_ndim()) {
    cur = s;
    return;
  }
  bool ok = cur.ndim() == s.ndim();
  Shape merged = cur;
  for (int d = 0; ok && d < s.ndim(); ++d) {
    if (merged[d] < 0) merged[d] = s[d];
    else if (s[d] >= 0 && s[d] != merged[d]) ok = false;
  }
  if (!ok) {
    std::string name = std::string(what) == "input" ? InputName(attrs, i) : std::string(what) + " " + std::to_string(i);
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': ",
          MismatchPhrase(attrs, style, what, i, cur.ToMXNetString(), s.ToMXNetString(), "shape"), ": ", name,
          " has shape ", cur.ToString(), " but the operator expects ", s.ToString());
  }
  cur = merged;
}

inline void AssignType(const NodeAttrs& attrs, std::vector<DType>* types, size_t i, DType t, const char* what,
                       Mismatch style = Mismatch::kInferred) {
  DType& cur = (*types)[i];
  if (t == DType::kUnknown) return;
  if (cur == DType::kUnknown) {
    cur = t;
    return;
  }
  if (cur != t) {
    std::string name = std::string(what) == "input" ? InputName(attrs, i) : std::string(what) + " " + std::to_string(i);
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': ",
          MismatchPhrase(attrs, style, what, i, DTypeName(cur), DTypeName(t), "dtype"), ": ", name, " has dtype ",
          DTypeName(cur), " but the operator expects ", DTypeName(t));
  }
}

// Every input and output has one floating-point dtype (the first known one).
inline bool SameFloatType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType t = DType::kUnknown;
  for (DType x : *in) if (x != DType::kUnknown) { t = x; break; }
  if (t == DType::kUnknown)
    for (DType x : *out) if (x != DType::kUnknown) { t = x; break; }
  if (t == DType::kUnknown) return false;
  if (!IsFloatDType(t))
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': expected a floating-point input, got ", DTypeName(t));
  for (size_t i = 0; i < in->size(); ++i) AssignType(attrs, in, i, t, "input", Mismatch::kSameAsOthers);
  for (size_t i = 0; i < out->size(); ++i) AssignType(attrs, out, i, t, "output", Mismatch::kSameAsOthers);
  return true;
}

// Shape rule of operators whose one output has the shape of input 0 (and inputs agree).
inline bool SameShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  // Every input and the output contribute what they know (a graph may know the batch size
  // from one input and the features from another); a disagreement is reported below.
  Shape s = (*out)[0];
  for (const auto& x : *in) {
    if (!x.known_ndim()) continue;
    if (!s.known_ndim()) {
      s = x;
    } else if (s.ndim() == x.ndim()) {
      for (int d = 0; d < s.ndim(); ++d)
        if (s[d] < 0) s[d] = x[d];
    }
  }
  for (size_t i = 0; i < in->size(); ++i) AssignShape(attrs, in, i, s, "input", Mismatch::kSameAsOthers);
  AssignShape(attrs, out, 0, s, "output", Mismatch::kSameAsOthers);
  for (const auto& x : *in) if (!x.is_known()) return false;
  return (*out)[0].is_known();
}

// The dtype rule of operators that make their output from parameters only: `dtype`
// unless an output array already fixes it.
inline bool OutputTypeFromParam(const NodeAttrs& attrs, std::vector<DType>* out, DType dtype) {
  for (size_t i = 0; i < out->size(); ++i) AssignType(attrs, out, i, dtype, "output");
  return true;
}

// FGradient of the operators that only change the shape: the output gradient with the
// input's shape.
inline std::vector<GradValue> ReshapeLikeInputGrad(GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
  return {b.Op("reshape_like", {a.out_grads[0], a.inputs[0]})};
}

// Axis normalisation with the operator's name in the message.
inline int CheckAxis(const NodeAttrs& attrs, int64_t axis, int ndim, const char* param = "axis") {
  int64_t a = axis < 0 ? axis + ndim : axis;
  if (a < 0 || a >= ndim)
    Throw(ErrorKind::kIndex, "Operator '", attrs.op->name, "': parameter '", param, "' = ", axis,
          " is out of range for an input with ", ndim, " dimension", ndim == 1 ? "" : "s");
  return static_cast<int>(a);
}

}  // namespace op
}  // namespace weft
