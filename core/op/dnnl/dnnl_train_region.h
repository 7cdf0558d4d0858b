// A region of a training graph run by oneDNN as two nodes: "_dnnl_train_region" for the
// forward and "_backward_dnnl_train_region" for its gradient. The executor's training pass
// (core/executor/train_fuse.cc) makes them from connected Convolution, BatchNorm (batch
// statistics), Activation(relu) and elementwise-add nodes before the gradient pass runs, so
// that the gradient pass sees one differentiable node.
//
// Inside the region every value stays in the layout its primitive picked (the CPU's blocked
// layout, nChw16c on AVX-512 and nChw8c on AVX2): the forward converts only the region's inputs and the values read outside
// it, and the backward only the gradients flowing in and out. The forward writes the
// blocked values that the backward reads (a convolution's source, a BatchNorm's source and
// statistics, a relu's result) into one extra hidden output, "saved": an ordinary graph
// value that the memory planner sizes and keeps from the forward to the backward; values
// the backward does not read live in the region's own arena only while the forward needs
// them. Saved holds no value the graph keeps anyway: the backward reads the region's
// inputs and its visible outputs (reordering them again where a primitive wants another
// layout), and a copy in another layout is a forward temporary. A relu after a BatchNorm or an add is folded into it, both ways. BatchNorm on
// the blocked layout runs on the region's own loops (oneDNN 2.6's was several times slower here),
// elsewhere on oneDNN's primitive.
// Primitives are created once, when the region is made; a call only binds memory.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/ndarray/ndarray.h"
#include "core/op/nn/conv_common.h"
#include "core/op/registry.h"

namespace weft {
namespace op {

// WEFT_EXEC_DNNL_TRAIN_RECOMPUTE (docs/env_vars.md): 2 when unset; an error for anything but
// 0, 1 or 2.
int DnnlTrainRecomputeLevel();

// What the region computes, in the terms of the graph it came from. Every value is a 4-D
// float32 array (N, C, H, W).
struct TrainRegionSpec {
  struct Value {
    Shape shape;
    int input = -1;   // the node input it is, or -1 for a value a unit computes
    int output = -1;  // the node output it is copied to (read outside the region), or -1
  };
  enum class Kind { kConv, kBatchNorm, kRelu, kAdd };
  struct Unit {
    Kind kind = Kind::kConv;
    std::string name;  // the graph node
    int src = -1, src2 = -1, dst = -1;  // values; src2 only for kAdd
    // kConv
    ConvolutionParam conv;
    int weight = -1, bias = -1;  // node inputs
    // kBatchNorm (training with batch statistics; the moving ones are updated)
    int gamma = -1, beta = -1, moving_mean = -1, moving_var = -1;  // node inputs
    double eps = 1e-3, momentum = 0.9;
    bool fix_gamma = true;
    // kBatchNorm and kAdd: a relu on the result folded in (dst is the relu's value)
    bool relu = false;
  };
  std::vector<Value> values;
  std::vector<Unit> units;   // in run order
  int num_inputs = 0;
  std::vector<int> outputs;  // the value of each visible node output
};

class DnnlTrainRegion {
 public:
  // Creates every primitive of both passes and lays out the saved buffer; throws
  // kUnsupported when oneDNN refuses a geometry (the pass then leaves the nodes alone).
  explicit DnnlTrainRegion(TrainRegionSpec spec);
  ~DnnlTrainRegion();
  const TrainRegionSpec& spec() const;
  // Floats of the hidden "saved" output (the forward's first hidden output).
  int64_t saved_floats() const;
  // Floats of the forward's and the backward's hidden "work" output (their last): the
  // temporaries and scratchpads of one pass that find no room in saved. As outputs that
  // nothing reads they live in the executor's plan only while their node runs.
  int64_t work_floats(bool backward) const;
  // in: the region's inputs; out: its visible outputs, then saved, then work. With
  // ctx.is_train false the BatchNorms use (and leave alone) the moving statistics; the
  // primitives' scratchpad is ctx.requested[0], the context's temporary space.
  void Forward(const OpContext& ctx, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
               const std::vector<TBlob>& out);
  // in: a gradient per visible output, saved, the region's inputs, then its visible outputs
  // (the backward reads a kept value that is also a visible output from there); out: the gradient
  // of each input (moving statistics get none), written or added per req, then work, then the spare outputs.
  void Backward(const OpContext& ctx, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                const std::vector<TBlob>& out);
  // The shapes of the backward's spare outputs, after its work output: hidden outputs that
  // may take the memory of backward inputs it has read for the last time (incoming
  // gradients, exported values read back), where it places temporaries.
  std::vector<Shape> spare_shapes() const;
  // (input, output) pairs of the backward node that may share memory (its FInplaceOption):
  // an incoming gradient and the gradient of a region input of its shape written after
  // the last read of it, a donor input and its spare output.
  std::vector<std::pair<int, int>> backward_inplace() const;
  // Bytes the region holds itself: its weights kept for inference once it has run one
  // (everything else is in its outputs or the context's temporary space).
  size_t internal_bytes() const;
  // The arrays the node will read, in input order: at inference (is_train false) a
  // convolution's weights are then reordered again only after the engine has written
  // their array since the last inference call. Without them, at every call.
  void Watch(std::vector<NDArray> inputs);
  // Convolution weights reordered at inference so far (for tests).
  size_t weight_reorders() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether training regions can be built (Weft built with oneDNN).
bool DnnlTrainRegionsAvailable();

// Gives a "_dnnl_train_region" node's region the arrays its inputs are read from (see
// DnnlTrainRegion::Watch); does nothing for other nodes.
void WatchDnnlTrainRegion(const NodeAttrs& attrs, std::vector<NDArray> inputs);

// The attributes of a "_dnnl_train_region" node running `region`.
NodeAttrs MakeDnnlTrainRegionAttrs(std::shared_ptr<DnnlTrainRegion> region, const std::string& name);

}  // namespace op
}  // namespace weft
