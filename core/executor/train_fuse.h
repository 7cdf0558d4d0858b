// The training pass (train_fuse.cc): regions of oneDNN operators in a graph that is about
// to be differentiated become "_dnnl_train_region" nodes (core/op/dnnl/dnnl_train_region.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/graph/symbol.h"
#include "core/ndarray/ndarray.h"

namespace weft {
namespace executor {

// Rewrites `sym` (the executor's own copy, before the gradient pass) so that each convex
// region of float32 NCHW Convolution (2-D, 8 or more input channels), BatchNorm (channel
// axis 1, batch statistics, mean and var outputs unused), relu and elemwise_add nodes
// connected through their data inputs, started by a convolution and of two or more nodes,
// is one "_dnnl_train_region" node; the gradient pass then makes its
// "_backward_dnnl_train_region". Nodes whose
// outputs are the symbol's outputs stay as they are (a region's outputs are copies in
// NCHW, but its internal values have no readers outside it). `args` and `aux` are the
// bound arrays in list_arguments / list_auxiliary_states order. Nothing changes (0 is
// returned) unless some argument wants a gradient, everything is on the host (no
// group2ctx), mirroring (WEFT_BACKWARD_DO_MIRROR) is off, Weft has oneDNN and
// WEFT_EXEC_DNNL_TRAIN_FUSE is not "0"; nor when the rewrite would change the order of
// the symbol's arguments. Returns the number of regions made.
size_t FuseTrainRegions(graph::Symbol* sym, Context ctx, const std::map<std::string, Context>& group2ctx,
                        const std::vector<NDArray>& args, const std::vector<OpReq>& grad_req,
                        const std::vector<NDArray>& aux);

}  // namespace executor
}  // namespace weft
