// The gradient pass: builds, as more graph, the gradients of some outputs with respect to
// some entries, from each operator's registered FGradient.
#pragma once

#include <unordered_map>
#include <vector>

#include "core/graph/node.h"

namespace weft {
namespace graph {

// Backward mirroring (recomputation, MXNet's MXNET_BACKWARD_DO_MIRROR): the backward reads
// a recomputed copy of a cheap forward value instead of keeping the forward's alive from
// the forward to its gradient, so that only the values of expensive operators (convolution,
// fully connected, ...) stay live between the passes.
struct MirrorOptions {
  bool enabled = false;
  // The longest chain of cheap operators recomputed from kept values: a value deeper than
  // this is kept instead. Each mirror is made once and lives from its first reader to its
  // last, so very long chains (a ResNet trunk recomputed back to its stage's start) keep
  // many recomputed values alive at once. 8 planned the least memory for ResNet-50 at
  // batch 64 of the depths tried (2: 4160 MB, 3: 3351, 8: 2984, 20: 3008).
  int max_depth = 8;
  // Also recompute the inner links of chains of convolutions (a convolution whose output
  // reaches, through cheap operators, only one other convolution), at most two in a row:
  // less memory again, for about one more forward of those convolutions.
  bool mirror_convolutions = false;
  // Segment checkpointing (Chen et al., "Training Deep Nets with Sublinear Memory Cost"),
  // when > 0: of the forward's cuts (operators whose outputs are all that later operators
  // read of earlier ones: a residual block's output), every segment-th is kept and every
  // other replayable operator (deterministic, no side effect; convolutions included) is
  // recomputed from the kept cut before it, a segment at a time, as the backward reaches
  // it. About one more forward for the least memory; max_depth and mirror_convolutions
  // then play no part.
  int segment = 0;
  // WEFT_BACKWARD_DO_MIRROR (or MXNet's MXNET_BACKWARD_DO_MIRROR) = 1 enables it;
  // WEFT_BACKWARD_MIRROR_DEPTH sets max_depth, WEFT_BACKWARD_MIRROR_CONV=1
  // mirror_convolutions, WEFT_BACKWARD_MIRROR_SEGMENT segment. A malformed value is a
  // kValue error naming the variable.
  static MirrorOptions FromEnv();
};

// Gradients of `ys` (seeded with `head_grads`, one per y) with respect to each of `xs`.
// Contributions reaching an entry along several paths are summed; an x that no y depends
// on gets zeros_like(x). Only the nodes on a path from an x to a y are differentiated; one
// without a registered gradient there is a kUnsupported error naming the node. Gradient
// nodes are named "<forward node>_backward" ("_sum<k>" for the sums). `made_for`, when
// given, maps every node made here to the forward node (or x) it was made for (a mirror to
// the node it recomputes), so that a placement pass can put it on that node's device.
//
// With mirroring, a forward node is recomputed for the backward ("<node>_mirror") when it
// is cheap, deterministic and free of side effects: elementwise, broadcast and injective
// operators, Pooling, and BatchNorm (recomputed from the batch statistics the forward
// saved, with use_global_stats, so the moving statistics are updated once, by the
// forward; bit-identical for float32 and float64, while float16 saves them rounded); or
// when it carries the attribute __force_mirroring__ = True (as in MXNet); or, with
// mirror_convolutions, when it is an inner link of a chain of convolutions.
// Random operators (Dropout) and other state-changing ones are never recomputed, nor the
// outputs in `ys`. A mirror node is made only for a value some gradient node reads, and
// has control dependencies on the gradients flowing into the first gradient node that
// reads it, so that it runs, in the executor's order, just before it is needed.
std::vector<NodeEntry> Gradient(const std::vector<NodeEntry>& ys, const std::vector<NodeEntry>& xs,
                                const std::vector<NodeEntry>& head_grads,
                                std::unordered_map<const Node*, const Node*>* made_for = nullptr,
                                const MirrorOptions& mirror = {});

}  // namespace graph
}  // namespace weft
