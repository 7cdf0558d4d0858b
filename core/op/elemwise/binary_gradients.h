// Gradients of the two-input arithmetic operators, shared by the same-shape forms
// (elemwise_mul, _power, ...) and the broadcast forms (broadcast_mul, broadcast_power, ...).
// Broadcast forms compute each input's gradient in the output's shape and sum it back to
// the input's shape with `_reduce_sum_to`.
#pragma once

#include "core/op/registry.h"

namespace weft {
namespace op {

enum class BinaryFn { kAdd, kSub, kMul, kDiv, kMod, kPower, kMaximum, kMinimum, kHypot };

FGradient BinaryGradient(BinaryFn fn, bool broadcast);

}  // namespace op
}  // namespace weft
