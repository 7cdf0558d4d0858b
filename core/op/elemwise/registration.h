// Registration shorthands for the elementwise families: each starts an operator's attribute
// chain with its inputs, shared attribute group and CPU compute function, so that an
// operator is its name, functor, description and gradient:
//
//   WEFT_ELEMWISE_UNARY_OP(exp, exp_op)
//       .Describe("...")
//       .SetAttr<FGradient>("FGradient", ...);
#pragma once

#include "core/op/elemwise/compute.h"
#include "core/op/elemwise/scalar_param.h"
#include "core/op/registry.h"

#define WEFT_ELEMWISE_UNARY_OP(name, OP)                                       \
  WEFT_REGISTER_OP(name)                                                       \
      .SetNumInputs(1)                                                         \
      .AddArgument("data", "NDArray-or-Symbol", "The input array")             \
      .Include("ElemwiseUnary")                                                \
      .SetAttr<::weft::FCompute>("FCompute<cpu>", ::weft::op::UnaryCompute<OP>) \
      .SetAttr<::weft::PointwiseFn>(                                           \
          "FPointwise", ::weft::op::PointwiseTile<OP, ::weft::op::PointwiseKind::kUnary>::Fn()) \
      .SetAttr<std::string>("FPointwiseCuda", ::weft::op::CudaBodyOf<OP>::Get())

#define WEFT_ELEMWISE_BINARY_OP(name, OP)                                      \
  WEFT_REGISTER_OP(name)                                                       \
      .SetNumInputs(2)                                                         \
      .AddArgument("lhs", "NDArray-or-Symbol", "The first input")              \
      .AddArgument("rhs", "NDArray-or-Symbol", "The second input, of the first's shape") \
      .Include("ElemwiseBinary")                                               \
      .SetAttr<::weft::FCompute>("FCompute<cpu>", ::weft::op::BinaryCompute<OP>) \
      .SetAttr<::weft::PointwiseFn>(                                           \
          "FPointwise", ::weft::op::PointwiseTile<OP, ::weft::op::PointwiseKind::kBinary>::Fn()) \
      .SetAttr<std::string>("FPointwiseCuda", ::weft::op::CudaBodyOf<OP>::Get())

#define WEFT_BINARY_SCALAR_OP(name, OP)                                        \
  WEFT_REGISTER_OP(name)                                                       \
      .SetNumInputs(1)                                                         \
      .AddArgument("data", "NDArray-or-Symbol", "The input array")             \
      .SetParams<::weft::op::ScalarParam>()                                    \
      .Include("BinaryScalar")                                                 \
      .SetAttr<::weft::FCompute>("FCompute<cpu>", ::weft::op::ScalarCompute<OP>) \
      .SetAttr<::weft::PointwiseFn>(                                           \
          "FPointwise", ::weft::op::PointwiseTile<OP, ::weft::op::PointwiseKind::kScalar>::Fn()) \
      .SetAttr<std::string>("FPointwiseCuda", ::weft::op::CudaBodyOf<OP>::Get())

#define WEFT_BROADCAST_BINARY_OP(name, OP)                                     \
  WEFT_REGISTER_OP(name)                                                       \
      .SetNumInputs(2)                                                         \
      .AddArgument("lhs", "NDArray-or-Symbol", "The first input")              \
      .AddArgument("rhs", "NDArray-or-Symbol", "The second input, broadcast against the first") \
      .Include("BroadcastBinary")                                              \
      .SetAttr<::weft::FCompute>("FCompute<cpu>", ::weft::op::BroadcastCompute<OP>)
