// The imperative path: run one registered operator on arrays now (asynchronously, through
// the engine). Later layers (autograd recording, tracing for hybridize) wrap Invoke.
#pragma once

#include <string>
#include <vector>

#include "core/ndarray/ndarray.h"
#include "core/op/registry.h"

namespace weft {
namespace imperative {

// The calling thread's training mode (off at start), which front ends pass to Invoke's
// is_train. SetIsTraining returns the previous mode.
bool IsTraining();
bool SetIsTraining(bool on);

// Infers shapes and types, allocates the outputs that are none, requests resources and
// pushes the compute function to the engine. `outputs` may hold preallocated arrays (an
// `out=` argument) or be empty, in which case it is filled. `ctx_hint` is used when the
// operator has no inputs (creation and sampling ops). `req` defaults to kWriteTo.
void Invoke(const NodeAttrs& attrs, const std::vector<NDArray>& inputs, std::vector<NDArray>* outputs,
            const Context* ctx_hint = nullptr, const std::vector<OpReq>* req = nullptr, bool is_train = false);

// Shape and type inference of one call, as the imperative path runs it; exposed for the
// graph passes' tests and for front ends that want output metadata without running.
void InferShapeType(const NodeAttrs& attrs, std::vector<Shape>* in_shapes, std::vector<DType>* in_types,
                    std::vector<Shape>* out_shapes, std::vector<DType>* out_types);

// Runs `attrs.op`'s registered gradient eagerly: returns one gradient array per input
// (none where the operator defines no gradient for that input). `is_train` is the mode the
// forward ran in (BatchNorm's gradient differs when it used its running statistics).
// `wanted`, when given, says which inputs need a gradient: only the work leading to those
// runs, and the others come back none. `into`, when given, holds per input an array (or
// none) that the call producing that input's gradient writes into, where that gradient is
// a call's output of the array's shape and dtype (a gradient the operator passes through
// unchanged, or shares between inputs, comes back as its own array): autograd writes a
// variable's .grad this way instead of copying it there.
std::vector<NDArray> Gradient(const NodeAttrs& attrs, const std::vector<NDArray>& inputs,
                              const std::vector<NDArray>& outputs, const std::vector<NDArray>& out_grads,
                              bool is_train = true, const std::vector<bool>* wanted = nullptr,
                              const std::vector<NDArray>* into = nullptr);

}  // namespace imperative
}  // namespace weft
