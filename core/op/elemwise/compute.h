// FCompute functions of the elementwise operator families, generic in the functor: one
// line per operator registration (`UnaryCompute<exp_op>`), every dtype dispatched here.
#pragma once

#include <vector>

#include "core/op/elemwise/broadcast_kernel.h"
#include "core/op/elemwise/kernels.h"
#include "core/op/elemwise/math.h"
#include "core/op/elemwise/scalar_param.h"
#include "core/op/registry.h"

namespace weft {
namespace op {

template <typename OP>
void UnaryCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                  const std::vector<TBlob>& out) {
  WEFT_TYPE_SWITCH(out[0].dtype, T, { UnaryMap<OP, T>(in[0].ptr<T>(), out[0].ptr<T>(), out[0].Size(), req[0]); });
}

// Two inputs of one shape.
template <typename OP>
void BinaryCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                   const std::vector<TBlob>& out) {
  WEFT_TYPE_SWITCH(out[0].dtype, T, {
    BinaryMap<OP, T>(in[0].ptr<T>(), in[1].ptr<T>(), out[0].ptr<T>(), out[0].Size(), req[0]);
  });
}

// out = OP(x, scalar); the scalar is converted to the compute type first.
template <typename OP>
void ScalarCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  double scalar = attrs.Params<ScalarParam>().scalar;
  WEFT_TYPE_SWITCH(out[0].dtype, T, {
    ScalarRightMap<OP, T>(in[0].ptr<T>(), SaturateCast<ComputeT<T>>(scalar), out[0].ptr<T>(), out[0].Size(), req[0]);
  });
}

template <typename OP>
void BroadcastCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WEFT_TYPE_SWITCH(out[0].dtype, T, { BroadcastMap<OP, T>(in[0], in[1], out[0], req[0]); });
}

}  // namespace op
}  // namespace weft
