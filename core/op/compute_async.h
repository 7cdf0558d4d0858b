// FComputeAsync: the compute function of an operator whose work completes later, on a
// thread of its own choosing (a custom operator, whose callbacks into a front end must not
// hold an engine worker). It gets the call's arrays and calls `done` exactly once, with the
// error if it failed. Registered as "FComputeAsync<cpu>" / "FComputeAsync<gpu>"; the
// imperative path prefers it to FCompute and never runs it inline on the pushing thread.
// (Apart from registry.h, which every operator includes, since few operators need arrays.)
#pragma once

#include <functional>
#include <vector>

#include "core/ndarray/ndarray.h"
#include "core/op/registry.h"

namespace weft {

using FComputeAsync =
    std::function<void(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<NDArray>& inputs,
                       const std::vector<OpReq>& req, const std::vector<NDArray>& outputs,
                       engine::CallbackOnComplete done)>;

}  // namespace weft
