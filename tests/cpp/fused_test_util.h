// Fused programs built by hand, as the fusion pass (core/executor/fuse.cc) builds them, for
// fused_codegen_test.cc and fused_cuda_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/imperative/imperative.h"
#include "core/op/fused/fused_pointwise.h"

namespace weft {
namespace test {

inline op::FusedProgram::Ref In(int k) { return {true, k}; }
inline op::FusedProgram::Ref Val(int k) { return {false, k}; }

// A step of operator `name` reading `a` and, for a binary step, `*b`.
inline op::FusedProgram::Step FusedStep(const std::string& name, op::FusedProgram::Ref a,
                                        const op::FusedProgram::Ref* b = nullptr, double scalar = 0) {
  const Op* o = Op::Get(name);
  op::FusedProgram::Step s;
  s.fn = Op::GetAttr<PointwiseFn>("FPointwise")[o];
  s.cuda = Op::GetAttr<std::string>("FPointwiseCuda").Get(o, std::string());
  s.op = o->name;
  s.a = a;
  s.binary = b != nullptr;
  if (b) s.b = *b;
  s.scalar = scalar;
  return s;
}

// tanh(exp(sin(x) * 2 - y) + z): unary, scalar and binary steps over three inputs.
inline op::FusedProgram FusedChain() {
  op::FusedProgram p;
  p.num_inputs = 3;
  op::FusedProgram::Ref y = In(1), z = In(2);
  p.steps = {FusedStep("sin", In(0)),         FusedStep("_mul_scalar", Val(0), nullptr, 2.0),
             FusedStep("elemwise_sub", Val(1), &y), FusedStep("exp", Val(2)),
             FusedStep("elemwise_add", Val(3), &z), FusedStep("tanh", Val(4))};
  return p;
}

// Runs `program` as a "_fused_pointwise" node named `name` on copies of `inputs` on `ctx`.
inline NDArray RunFused(const op::FusedProgram& program, const std::string& name, const std::vector<NDArray>& inputs,
                        Context ctx) {
  NodeAttrs attrs = op::MakeFusedAttrs(std::make_shared<op::FusedProgram>(program), name);
  std::vector<NDArray> on_ctx, outs;
  for (const NDArray& a : inputs) on_ctx.push_back(a.Copy(ctx));
  imperative::Invoke(attrs, on_ctx, &outs, &ctx);
  return outs.at(0);
}

inline bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The weft::Error `f` throws (a test failure when it throws none).
template <typename F>
Error CaughtError(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no weft::Error was thrown";
  return Error(ErrorKind::kInternal, "");
}

}  // namespace test
}  // namespace weft
