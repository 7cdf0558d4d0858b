// The sparse step of imperative::Invoke: an operator call with a sparse array runs the
// operator's FComputeSparse kernel (core/op/sparse/sparse_compute.h) when it has one that
// accepts the call, before the lazy optimizer updates and the dense fallback.
#pragma once

#include <vector>

#include "core/ndarray/ndarray.h"
#include "core/op/registry.h"

namespace weft {
namespace imperative {

// Checks the call as the dense path does (input count, one context, shapes and dtypes from
// the operator's inference on the logical shapes), runs the sparse kernel and delivers its
// results: new outputs as made, a given sparse output replaced by the result in its storage
// type, a given dense output written (densely) per `req`. Records the call for autograd.
// Returns false, touching nothing, when the operator has no sparse kernel or the kernel
// declines (a GPU array, a storage combination it does not serve).
bool InvokeSparse(const NodeAttrs& attrs, const std::vector<NDArray>& inputs, std::vector<NDArray>* outputs,
                  const std::vector<OpReq>* req, bool is_train);

}  // namespace imperative
}  // namespace weft
