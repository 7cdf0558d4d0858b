// A region of a graph run by oneDNN at inference as one node ("_dnnl_region"), made by the
// executor's inference pass (core/executor/infer_fuse.cc) from connected Convolution,
// BatchNorm, Activation, elementwise-add, Pooling and channel Concat nodes.
//
// Inside the region every value stays in the layout its producing primitive picked (a
// blocked one such as nChw16c on AVX-512), so the NCHW <-> blocked reorders that separate
// operators pay at each call happen only at the region's edges. A BatchNorm after a
// convolution is folded into it (its per-channel scale into the weights, its shift into
// the bias), and an activation and a residual add after a convolution become the
// convolution's post-ops. Primitives are created once, when the region is made; each call
// only recomputes the folded scale and shift from the current parameters and re-reorders a
// convolution's weights when the weights or that scale changed since the last call.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/ndarray/ndarray.h"
#include "core/op/nn/conv_common.h"
#include "core/op/registry.h"

namespace weft {
namespace op {

// What the region computes, in the terms of the graph it came from. Every value is a 4-D
// float32 array (N, C, H, W).
struct DnnlRegionSpec {
  struct Value {
    Shape shape;
    int input = -1;   // the node input it is, or -1 for a value a unit computes
    int output = -1;  // the node output it is copied to, or -1
  };
  // kCopy: src into plain NCHW; kConcat: srcs joined along the channels.
  enum class Kind { kConv, kPool, kEltwise, kAdd, kCopy, kConcat };
  enum class Act { kNone, kRelu, kSigmoid, kTanh, kSoftRelu };
  struct Unit {
    Kind kind = Kind::kConv;
    std::string name;  // the graph node (the convolution for a fused chain)
    int src = -1, dst = -1;
    // kAdd: the second operand; kConv with `sum`: the value added to the result.
    int src2 = -1;
    // kConcat: the values joined, in order (src is the first of them).
    std::vector<int> srcs;
    bool sum = false;
    Act act = Act::kNone;  // kEltwise: the function; kConv: the post-op activation
    // kConv
    ConvolutionParam conv;
    int weight = -1, bias = -1;  // node inputs
    bool bn = false;             // a folded BatchNorm (moving statistics)
    int gamma = -1, beta = -1, mean = -1, var = -1;
    double eps = 1e-3;
    bool fix_gamma = true;
    // kPool
    PoolingParam pool;
  };
  std::vector<Value> values;
  std::vector<Unit> units;  // in run order
  int num_inputs = 0;
  std::vector<int> outputs;  // the value of each node output
};

class DnnlRegion {
 public:
  // Creates every primitive and plans the region's internal memory; throws kUnsupported
  // when oneDNN refuses a geometry (the pass then leaves those nodes as they were).
  explicit DnnlRegion(DnnlRegionSpec spec);
  ~DnnlRegion();
  const DnnlRegionSpec& spec() const;
  // The arrays the node will read, in input order: a convolution's weights are reordered
  // again only after the engine has written their array since the last call. Without
  // them, weights are reordered at every call.
  void Watch(std::vector<NDArray> inputs);
  void Run(const std::vector<TBlob>& in, const std::vector<OpReq>& req, const std::vector<TBlob>& out);
  // Bytes the region holds for its internal values and scratch space (allocated on the
  // first call).
  size_t internal_bytes() const;
  // Convolution weights brought into their primitive's layout so far (for tests: a call
  // with unchanged weights and folded scale adds none).
  size_t weight_reorders() const;
  // What the region runs, one line per primitive in run order: the unit's node, the
  // primitive, oneDNN's implementation and the layouts in and out, e.g.
  // "c2: convolution jit_wino_4x3:avx512_core nChw16c -> nChw16c" (for debug_str, tests).
  std::vector<std::string> primitives() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether regions can be built (Weft built with oneDNN).
bool DnnlRegionsAvailable();

// The attributes of a "_dnnl_region" node running `region`.
NodeAttrs MakeDnnlRegionAttrs(std::shared_ptr<DnnlRegion> region, const std::string& name);

}  // namespace op
}  // namespace weft
