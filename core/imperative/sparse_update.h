// Lazy optimizer updates with a row_sparse gradient: only the rows the gradient stores are
// read and written, in the weight and in every state (MXNet's lazy_update=True).
#pragma once

#include <vector>

#include "core/ndarray/ndarray.h"
#include "core/op/registry.h"

namespace weft {
namespace imperative {

// When `attrs` is one of the updates below (sgd_update, sgd_mom_update, mp_sgd_update,
// mp_sgd_mom_update, adam_update, ftrl_update, adagrad_update, _sparse_adagrad_update,
// _contrib_group_adagrad_update) with a row_sparse gradient (input 1), weight and states
// on the CPU that are dense or row_sparse with every row stored, and lazy_update not
// switched off: gathers the gradient's rows of the
// weight and states, runs the operator on those rows, writes them back (weight into
// outputs[0], or a new copy of the weight when no output is given) and returns true.
// Otherwise returns false and touches nothing.
bool LazyRowSparseUpdate(const NodeAttrs& attrs, const std::vector<NDArray>& inputs, std::vector<NDArray>* outputs,
                         bool is_train);

}  // namespace imperative
}  // namespace weft
