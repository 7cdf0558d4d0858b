#include "core/op/dnnl/dnnl_train_region.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

#include "core/base/place_by_size.h"
#include "core/engine/engine_impl.h"
#include "core/op/op_util.h"

#if defined(WEFT_USE_ONEDNN)
#include <oneapi/dnnl/dnnl.hpp>

#include "core/op/dnnl/dnnl_layout.h"
#include "core/op/dnnl/region_arena.h"
#endif

namespace weft {
namespace op {

int DnnlTrainRecomputeLevel() {
  const char* rc = std::getenv("WEFT_EXEC_DNNL_TRAIN_RECOMPUTE");
  if (rc == nullptr || *rc == '\0') return 2;
  if ((rc[0] == '0' || rc[0] == '1' || rc[0] == '2') && rc[1] == '\0') return rc[0] - '0';
  Throw(ErrorKind::kValue, "WEFT_EXEC_DNNL_TRAIN_RECOMPUTE: expected 0, 1 or 2, got '", rc, "'");
}

#if defined(WEFT_USE_ONEDNN)
namespace {

using dnnl::memory;
using Kind = TrainRegionSpec::Kind;

memory::desc Vec(int64_t n) { return memory::desc({n}, memory::data_type::f32, memory::format_tag::x); }

// The layout convolutions are created with: oneDNN's blocked one (nChw16c with AVX-512,
// nChw8c on AVX2: dnnl_layout.h) from batch 4 on where the channels allow it (the layout
// the inference regions found fastest, and the one BatchNorm, relu and add then run on),
// else oneDNN's choice (always with `free`: DnnlIsReference).
memory::desc ConvLayout(const Shape& s, bool free = false) {
  memory::format_tag tag =
      !free && s[0] >= 4 && s[1] % DnnlChannelBlock() == 0 ? DnnlBlockedTag() : memory::format_tag::any;
  return memory::desc({s[0], s[1], s[2], s[3]}, memory::data_type::f32, tag);
}

// Winograd for 3x3 unit-stride convolutions from batch 4 on, under the same switch as the
// Convolution operator (WEFT_CONV_WINOGRAD=0 turns it off), so that a region computes
// what the unfused graph computes.
bool WinogradWanted() {
  static const bool enabled = [] {
    const char* v = std::getenv("WEFT_CONV_WINOGRAD");
    return v == nullptr || std::string(v) != "0";
  }();
  return enabled;
}

// BatchNorm on the blocked layout (nChw16c or nChw8c), by channel block of kLanes: oneDNN
// 2.6's own batch normalisation on nChw16c took about
// 60 % of a ResNet-50 training step here (57 ms forward, 100 ms backward per layer at
// batch 16), these loops a small part of that. The arithmetic is the BatchNorm operator's
// (batch_norm.cc): one shifted pass for both moments, biased variance; a folded relu
// masks the gradient where its result is 0.
struct BnGeom {
  int64_t n = 0, c = 0, hw = 0;
  float eps = 1e-3f;
  bool relu = false;
  int lanes = 16;  // the channel block
  size_t At(int64_t b, int64_t cb) const { return static_cast<size_t>((b * (c / lanes) + cb) * hw * lanes); }
};

// y from x; mean and var written (batch statistics) or read (moving ones). With `s`, y is
// the result of the add after the BatchNorm instead, y = max(add_clip, bn(x) + s), in the
// same pass (the arithmetic of the add's primitive, and of BnAddBlocked below).
template <int kLanes>
void BnForwardBlocked(const BnGeom& g, bool batch_stats, const float* x, float* y, float* mean, float* var,
               const float* gamma, const float* beta, const float* s = nullptr, bool add_relu = false) {
  const float count = static_cast<float>(g.n * g.hw);
  ParallelFor(g.c / kLanes, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t cb = lo; cb < hi; ++cb) {
      float m[kLanes], v[kLanes], scale[kLanes], shift[kLanes];
      const int64_t c0 = cb * kLanes;
      if (batch_stats) {
        float sh[kLanes], sum[kLanes] = {}, sq[kLanes] = {};
        for (int l = 0; l < kLanes; ++l) sh[l] = count > 0 ? x[g.At(0, cb) + l] : 0.f;
        for (int64_t b = 0; b < g.n; ++b) {
          const float* xr = x + g.At(b, cb);
          for (int64_t i = 0; i < g.hw; ++i) {
#pragma omp simd
            for (int l = 0; l < kLanes; ++l) {
              float d = xr[i * kLanes + l] - sh[l];
              sum[l] += d;
              sq[l] += d * d;
            }
          }
        }
        for (int l = 0; l < kLanes; ++l) {
          float md = count > 0 ? sum[l] / count : 0.f;
          m[l] = sh[l] + md;
          v[l] = count > 0 ? std::max(0.f, sq[l] / count - md * md) : 0.f;
          mean[c0 + l] = m[l];
          var[c0 + l] = v[l];
        }
      } else {
        for (int l = 0; l < kLanes; ++l) {
          m[l] = mean[c0 + l];
          v[l] = var[c0 + l];
        }
      }
      for (int l = 0; l < kLanes; ++l) {
        scale[l] = (gamma ? gamma[c0 + l] : 1.f) / std::sqrt(v[l] + g.eps);
        shift[l] = beta[c0 + l] - m[l] * scale[l];
      }
      const float lo_clip = g.relu ? 0.f : -INFINITY;
      const float add_clip = add_relu ? 0.f : -INFINITY;
      for (int64_t b = 0; b < g.n; ++b) {
        const float* xr = x + g.At(b, cb);
        float* yr = y + g.At(b, cb);
        if (s) {
          const float* sr = s + g.At(b, cb);
          for (int64_t i = 0; i < g.hw; ++i) {
#pragma omp simd
            for (int l = 0; l < kLanes; ++l) {
              float t = std::max(lo_clip, xr[i * kLanes + l] * scale[l] + shift[l]);
              yr[i * kLanes + l] = std::max(add_clip, t + sr[i * kLanes + l]);
            }
          }
          continue;
        }
        for (int64_t i = 0; i < g.hw; ++i) {
#pragma omp simd
          for (int l = 0; l < kLanes; ++l) yr[i * kLanes + l] = std::max(lo_clip, xr[i * kLanes + l] * scale[l] + shift[l]);
        }
      }
    }
  });
}

// dx (written) and the gamma and beta gradients from dy, x, y (for the relu's mask) and
// the batch statistics.
template <int kLanes>
void BnBackwardBlocked(const BnGeom& g, const float* x, const float* y, const float* dy, float* dx, const float* mean,
                const float* var, const float* gamma, float* dgamma, float* dbeta) {
  const float count = static_cast<float>(g.n * g.hw);
  ParallelFor(g.c / kLanes, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t cb = lo; cb < hi; ++cb) {
      const int64_t c0 = cb * kLanes;
      float m[kLanes], rstd[kLanes], sdy[kLanes] = {}, sdx[kLanes] = {};
      for (int l = 0; l < kLanes; ++l) {
        m[l] = mean[c0 + l];
        rstd[l] = 1.f / std::sqrt(var[c0 + l] + g.eps);
      }
      for (int64_t b = 0; b < g.n; ++b) {
        const float* xr = x + g.At(b, cb);
        const float* yr = y + g.At(b, cb);
        const float* gr = dy + g.At(b, cb);
        for (int64_t i = 0; i < g.hw; ++i) {
#pragma omp simd
          for (int l = 0; l < kLanes; ++l) {
            float gv = g.relu && yr[i * kLanes + l] <= 0.f ? 0.f : gr[i * kLanes + l];
            sdy[l] += gv;
            sdx[l] += gv * (xr[i * kLanes + l] - m[l]);
          }
        }
      }
      float k[kLanes], mdy[kLanes], mdx[kLanes];
      for (int l = 0; l < kLanes; ++l) {
        sdx[l] *= rstd[l];
        dgamma[c0 + l] = sdx[l];
        dbeta[c0 + l] = sdy[l];
        k[l] = (gamma ? gamma[c0 + l] : 1.f) * rstd[l];
        mdy[l] = count > 0 ? sdy[l] / count : 0.f;
        mdx[l] = count > 0 ? sdx[l] / count * rstd[l] : 0.f;
      }
      for (int64_t b = 0; b < g.n; ++b) {
        const float* xr = x + g.At(b, cb);
        const float* yr = y + g.At(b, cb);
        const float* gr = dy + g.At(b, cb);
        float* dr = dx + g.At(b, cb);
        for (int64_t i = 0; i < g.hw; ++i) {
#pragma omp simd
          for (int l = 0; l < kLanes; ++l) {
            float gv = g.relu && yr[i * kLanes + l] <= 0.f ? 0.f : gr[i * kLanes + l];
            dr[i * kLanes + l] = k[l] * (gv - mdy[l] - (xr[i * kLanes + l] - m[l]) * mdx[l]);
          }
        }
      }
    }
  });
}

// y = x normalised with the moving (or saved) statistics, plus s, then a relu when g.relu:
// a residual block's output recomputed in one pass, with the arithmetic of the BatchNorm
// loop above (whose result the forward stored) and of the add after it.
template <int kLanes>
void BnAddBlocked(const BnGeom& g, const float* x, const float* s, float* y, const float* mean, const float* var,
                  const float* gamma, const float* beta) {
  ParallelFor(g.c / kLanes, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t cb = lo; cb < hi; ++cb) {
      float scale[kLanes], shift[kLanes];
      const int64_t c0 = cb * kLanes;
      for (int l = 0; l < kLanes; ++l) {
        float m = mean[c0 + l], v = var[c0 + l];
        scale[l] = (gamma ? gamma[c0 + l] : 1.f) / std::sqrt(v + g.eps);
        shift[l] = beta[c0 + l] - m * scale[l];
      }
      const float lo_clip = -INFINITY, out_clip = g.relu ? 0.f : -INFINITY;
      for (int64_t b = 0; b < g.n; ++b) {
        const float* xr = x + g.At(b, cb);
        const float* sr = s + g.At(b, cb);
        float* yr = y + g.At(b, cb);
        for (int64_t i = 0; i < g.hw; ++i) {
#pragma omp simd
          for (int l = 0; l < kLanes; ++l) {
            float t = std::max(lo_clip, xr[i * kLanes + l] * scale[l] + shift[l]);
            yr[i * kLanes + l] = std::max(out_clip, t + sr[i * kLanes + l]);
          }
        }
      }
    }
  });
}

// out (blocked) = dy where y > 0, else 0, from dy and y in plain NCHW: a relu's gradient
// taken into the blocked layout in one pass, for a relu result that the region exports and
// whose gradient comes from outside alone. The reorder of dy, the reorder of y and the
// relu's backward (oneDNN's use_dst_for_bwd: dy where y > 0) give the same floats with two
// blocked copies more. A block of kLanes channels covers the same addresses in both
// layouts and is read whole before it is written, so out may be dy or y itself.
template <int kLanes>
void MaskLoadBlocked(const BnGeom& g, const float* dy, const float* y, float* out) {
  const int64_t blocks = g.n * (g.c / kLanes);
  const size_t block = static_cast<size_t>(kLanes * g.hw);
  ParallelFor(blocks, 1, [&](int64_t lo, int64_t hi) {
    std::vector<float> t(block);
    for (int64_t nb = lo; nb < hi; ++nb) {
      const size_t plane = static_cast<size_t>(nb) * block;  // (b, cb * kLanes) in NCHW
      const float* d = dy + plane;
      const float* r = y + plane;
      for (int64_t i = 0; i < g.hw; ++i) {
#pragma omp simd
        for (int l = 0; l < kLanes; ++l) {
          const size_t at = static_cast<size_t>(l * g.hw + i);
          t[i * kLanes + l] = r[at] > 0.f ? d[at] : 0.f;
        }
      }
      std::memcpy(out + plane, t.data(), block * sizeof(float));
    }
  });
}

void BnForward(const BnGeom& g, bool batch_stats, const float* x, float* y, float* mean, float* var,
               const float* gamma, const float* beta, const float* s, bool add_relu) {
  if (g.lanes == 16) BnForwardBlocked<16>(g, batch_stats, x, y, mean, var, gamma, beta, s, add_relu);
  else BnForwardBlocked<8>(g, batch_stats, x, y, mean, var, gamma, beta, s, add_relu);
}

void BnBackward(const BnGeom& g, const float* x, const float* y, const float* dy, float* dx, const float* mean,
                const float* var, const float* gamma, float* dgamma, float* dbeta) {
  if (g.lanes == 16) BnBackwardBlocked<16>(g, x, y, dy, dx, mean, var, gamma, dgamma, dbeta);
  else BnBackwardBlocked<8>(g, x, y, dy, dx, mean, var, gamma, dgamma, dbeta);
}

bool IsBlocked(const memory::desc& d, const Shape& s) {
  return s[1] % DnnlChannelBlock() == 0 &&
         d == memory::desc({s[0], s[1], s[2], s[3]}, memory::data_type::f32, DnnlBlockedTag());
}

dnnl::reorder MakeReorder(const memory::desc& from, const memory::desc& to, bool sum) {
  dnnl::primitive_attr attr;
  if (sum) {
    dnnl::post_ops po;
    po.append_sum(1.f);
    attr.set_post_ops(po);
  }
  return dnnl::reorder(dnnl::reorder::primitive_desc(RegionEngine(), from, RegionEngine(), to, attr));
}

dnnl::primitive_attr UserScratch() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// The spaces the blocks of a region's plan are placed in.
constexpr int kSaved = 0, kWork = 1, kSpare = 2;

// Where an argument's memory is at run time.
struct Loc {
  // kItem: a block of the region's memory plan, in the saved output, the work space or a
  // spare output of the backward (see Impl::spares).
  // kScratch: the primitives' scratchpad. kWeights: a convolution's weights in its
  // primitive's layout: a block in training, a buffer of their own kept between calls at
  // inference.
  enum K { kIn, kOut, kItem, kScratch, kOnes, kWeights } k = kItem;
  int index = 0;      // kIn/kOut: the node input/output; kItem, kWeights: the block
  size_t offset = 0;  // kItem, kWeights: into its space, set once the blocks are placed
  size_t kept = 0;    // kWeights: into the inference buffer
  int space = kSaved;  // kItem, kWeights: the space it is in (Item::space)
};

// A block of the region's memory plan: its bytes and the steps (forward then backward) it
// is live at, from the first to the last that names it.
struct Item {
  size_t bytes = 0;
  int start = INT_MAX, end = -1;
  size_t offset = 0;
  int space = kSaved;  // kSaved, kWork, or kSpare + k: the backward's k-th spare output
};
struct Arg {
  int arg;
  memory::desc md;
  Loc loc;
};

// One step of a pass: a primitive, or one of the small host loops around them.
struct Exec {
  enum Type { kPrim, kMovingStats, kStore, kZero, kBnForward, kBnBackward, kBnAdd, kCopy, kMaskLoad } type = kPrim;
  dnnl::primitive prim;
  dnnl::primitive prim_add;  // a reorder to a node output that adds (kAddTo, or a later contribution)
  std::vector<Arg> args;
  int gate = -1;       // the node output this step serves: skipped when its request is kNullOp
  bool first = true;   // the first write to that output (later ones add whatever the request)
  int mode = 0;        // forward only: 0 always, 1 in training, 2 at inference
  int64_t count = 0;   // kMovingStats, kStore, kZero: floats
  float momentum = 0;  // kMovingStats
  std::string unit;    // the graph node it serves, for error messages
  BnGeom bn;           // kBnForward, kBnBackward, kBnAdd; kMaskLoad: n, c, hw and lanes
  bool fix_gamma = false, batch_stats = true;
  bool sum = false;    // kCopy: adds instead of writing
  bool add_relu = false;  // kBnForward with an add folded in (a 7th argument): the add's relu
  int weights = -1;    // a weight reorder: the node input it reads (skipped at inference while unchanged)
  int cache = -1;      // ... and its entry in weight_cache
};

// What a convolution's weights were last reordered from at inference.
struct WeightCache {
  const void* ptr = nullptr;
  uint64_t writes = 0;
  bool valid = false;
};

struct ConvPds {
  dnnl::convolution_forward::primitive_desc fwd;
  dnnl::convolution_backward_data::primitive_desc bwd_data;
  dnnl::convolution_backward_weights::primitive_desc bwd_weights;
};

}  // namespace

struct DnnlTrainRegion::Impl {
  TrainRegionSpec spec;
  int num_out = 0;  // visible outputs
  std::vector<memory::desc> md;      // per value: its layout
  std::vector<Loc> loc;              // per value: where the forward keeps it
  std::vector<bool> kept;      // per value: the backward reads it
  // The region's memory: every value and temporary of both passes is a block live from
  // the first step that names it to the last, placed in saved or a work space (Build).
  std::vector<Item> items;
  size_t saved_bytes = 0;
  // Each pass's work space, a hidden output of its node: the blocks that live within the
  // pass and find no room in saved between the values kept for the backward. In saved,
  // every region of a graph would hold them from its forward to its backward; as outputs
  // that nothing reads, the executor's planner gives them memory only while their node runs.
  size_t fwd_work_bytes = 0, bwd_work_bytes = 0;
  size_t scratch_bytes = 0;  // the largest scratchpad
  // The memory of backward inputs that the backward reads for the last time before its end
  // (the incoming gradients, the exported values read back): the executor's planner frees
  // it only after the node, so the node offers it for its own outputs (FInplaceOption, the
  // planner deciding): an incoming gradient to the gradient of a region input of its shape
  // written later, else to a spare output of its shape, a hidden output after work where
  // the backward places temporaries that start after that last read. A spare the planner
  // cannot put in place (the input is read after the node) is memory of its own while the
  // node runs, as work is.
  struct Spare {
    int input;  // the backward input
    Shape shape;
  };
  std::vector<Spare> spares;
  std::vector<std::pair<int, int>> bwd_inplace;  // (backward input, backward output)
  std::vector<Exec> fwd, bwd;
  int64_t ones_count = 0;
  std::vector<float> ones;
  // Recompute (WEFT_EXEC_DNNL_TRAIN_RECOMPUTE): at 1 the result of a BatchNorm on the
  // region's loops that the backward reads (a relu's result a convolution reads) is
  // computed again from its source and statistics, which are kept anyway, where the
  // backward first reads it, instead of being kept from the forward; at 2 (the default) an
  // add's result too (a residual block's output), from its operands, recomputed in turn;
  // at 0 nothing. Each costs one pass over memory per value, no convolution.
  int recompute = 2;
  std::vector<int> producer;   // per value: the unit computing it, or -1
  std::vector<int> fwd_last;   // per value: the last unit reading it in the forward, or -1
  std::vector<int> recomputed; // per value: its recomputed block in the backward, or -1
  std::mutex mu;
  // At inference (Forward with is_train false: a training executor's predictions) the
  // weights are reordered into a buffer of their own, allocated at the first such call,
  // and again only after the engine has written the weights' array (as the inference
  // regions do): a training step changes them, a prediction does not.
  size_t kept_weight_bytes = 0;
  std::unique_ptr<char, decltype(&std::free)> kept_weights{nullptr, &std::free};
  std::vector<WeightCache> weight_cache;
  std::vector<NDArray> watched;  // the node's input arrays, when the executor gave them
  size_t weight_reorders = 0;

  // Forward-pass state.
  std::vector<ConvPds> conv;                       // per unit (convolutions)
  std::vector<dnnl::batch_normalization_forward::primitive_desc> bn;  // per unit (BatchNorms)
  std::vector<dnnl::eltwise_forward::primitive_desc> relu;           // per unit (relus)
  std::vector<dnnl::binary::primitive_desc> add;                     // per unit (adds)
  std::vector<int> bn_mean, bn_var, bn_ws;         // per unit: blocks
  std::vector<bool> bn_own;                        // per unit: a BatchNorm run by the loops above
  // Per add unit: the BatchNorm whose training forward it runs in the same pass (the one
  // making its first operand, when FusedBnAdd holds: its result is then not written in
  // training, saving a write and a read of it), or -1.
  std::vector<int> bn_in_add;

  // Backward-pass state.
  std::vector<int> diff_block;         // per value: its gradient's block, or -1
  std::vector<memory::desc> diff_md;   // per value: its gradient's layout
  std::vector<bool> input_stored;      // per node input: a gradient was written to it already

  // A new block of the region's memory (its lifetime comes from the steps naming it).
  int NewItem(size_t bytes) {
    items.push_back(Item{Align64(bytes)});
    return static_cast<int>(items.size()) - 1;
  }
  // Every primitive's scratchpad is the context's temporary space, one buffer shared with
  // the other operators (the Convolution operator's among them), as large as the largest
  // scratchpad of any: Winograd's reach gigabytes at batch 64 of 112x112, which neither
  // saved nor the work space should hold.
  void Scratch(Exec* e, const memory::desc& d) {
    scratch_bytes = std::max(scratch_bytes, d.get_size());
    e->args.push_back({DNNL_ARG_SCRATCHPAD, d, Loc{Loc::kScratch, 0, 0}});
  }
  char* Scratchpad(const OpContext& ctx) const {
    return scratch_bytes > 0 ? static_cast<char*>(ctx.requested.at(0).temp->Get(scratch_bytes)) : nullptr;
  }
  static Loc In(int i) { return Loc{Loc::kIn, i, 0}; }
  static Loc At(int item) { return Loc{Loc::kItem, item, 0}; }

  // Where the forward puts value v (its layout md[v] known): a block of its own.
  Loc Place(int v) { return At(NewItem(md[v].get_size())); }
  // Value v in layout `want` for the forward: v itself, or a copy reordered into a block
  // of its own. Such a copy is never read by the backward, which reorders v again
  // (BackView): v itself is kept, or is a region input the backward reads, and keeping a
  // second copy would double its memory for one reorder.
  Loc View(int v, const memory::desc& want) {
    if (md[v] == want) return loc[v];
    int b = NewItem(want.get_size());
    Exec r;
    r.prim = MakeReorder(md[v], want, false);
    r.args = {{DNNL_ARG_FROM, md[v], loc[v]}, {DNNL_ARG_TO, want, At(b)}};
    fwd.push_back(std::move(r));
    return At(b);
  }
  // Whether the backward reads kept value v from the node output it is copied to (the
  // backward node takes the visible outputs as inputs too) rather than from saved: that
  // output is kept alive for its readers outside the region anyway, and a second copy in
  // saved would double the value's memory for the sake of one reorder in the backward.
  bool ReadBack(int v) const { return spec.values[v].input < 0 && spec.values[v].output >= 0; }
  // Whether unit u's backward takes the gradient of its result, a relu's that the region
  // exports, from outside through the relu in one pass (MaskLoadBlocked), reading the
  // result from the node output it was exported to: no blocked copy of the result nor a
  // second one of the gradient. For a relu unit, or one folded into an add or into a
  // BatchNorm on the region's loops (oneDNN's BatchNorm masks with its own workspace), when
  // nothing in the region reads the result (its gradient comes from outside alone) and
  // the result is in the blocked layout.
  bool MasksOnLoad(size_t u) const {
    const auto& un = spec.units[u];
    const int v = un.dst;
    const bool relu = un.kind == Kind::kRelu || (un.relu && (un.kind == Kind::kAdd || (un.kind == Kind::kBatchNorm &&
                                                                                        bn_own[u])));
    return relu && ReadBack(v) && diff_block[v] < 0 && IsBlocked(md[v], spec.values[v].shape);
  }
  // Whether the backward computes value v again rather than reading it as the forward
  // left it (see recompute).
  bool Recomputed(int v) const {
    if (producer[v] < 0 || ReadBack(v)) return false;
    const size_t u = producer[v];
    return (recompute >= 1 && spec.units[u].kind == Kind::kBatchNorm && bn_own[u]) ||
           (recompute >= 2 && spec.units[u].kind == Kind::kAdd);
  }
  // Where the backward reads forward value v in layout `want`: v itself, else a reorder into
  // a block of its own from v, from its plain copy (a region input, or a node output per
  // ReadBack) or from its recomputed block (made at its first read).
  Loc BackView(int v, const memory::desc& want) {
    memory::desc from = md[v];
    Loc at{};
    if (Recomputed(v)) {
      if (recomputed[v] < 0) Recompute(v);
      at = At(recomputed[v]);
    } else if (ReadBack(v)) {
      from = PlainNchw(spec.values[v].shape);
      at = Loc{Loc::kIn, num_out + 1 + spec.num_inputs + spec.values[v].output, 0};
    } else {
      at = BackLoc(loc[v]);
    }
    if (from == want) return at;
    int b = NewItem(want.get_size());
    Exec r;
    r.prim = MakeReorder(from, want, false);
    r.args = {{DNNL_ARG_FROM, from, at}, {DNNL_ARG_TO, want, At(b)}};
    bwd.push_back(std::move(r));
    return At(b);
  }
  // Whether add unit u's recomputation folds in the BatchNorm making its first operand: a
  // BatchNorm on the region's loops without a relu, whose result only the add reads, in
  // the add's layout.
  bool FusedBnAdd(size_t u) const {
    const auto& un = spec.units[u];
    const int p = producer[un.src];
    if (p < 0 || !Recomputed(un.src) || spec.units[p].kind != Kind::kBatchNorm || spec.units[p].relu) return false;
    for (const auto& other : spec.units)
      if (&other != &un && (other.src == un.src || other.src2 == un.src)) return false;
    return un.src != un.src2 && spec.values[un.src].output < 0;
  }
  // Computes the result of unit producer[v] again, in the backward: a BatchNorm from its
  // source and the batch statistics its forward saved (the forward's loops with those
  // statistics read back), an add from its operands (the forward's primitive), so the
  // result is the forward's to the bit.
  void Recompute(int v) {
    const size_t u = producer[v];
    const auto& un = spec.units[u];
    const Shape& ss = spec.values[un.src].shape;
    recomputed[v] = NewItem(md[v].get_size());
    if (un.kind == Kind::kAdd && FusedBnAdd(u)) {
      // The first operand, a BatchNorm's result the backward reads nowhere else, is not
      // made: one pass from that BatchNorm's source.
      const auto& bu = spec.units[producer[un.src]];
      const Shape& bs = spec.values[bu.src].shape;
      const memory::desc& a = md[un.src];
      Exec k;
      k.type = Exec::kBnAdd;
      k.fix_gamma = bu.fix_gamma;
      k.bn = BnGeom{bs[0], bs[1], bs[2] * bs[3], static_cast<float>(bu.eps), un.relu, DnnlChannelBlock()};
      Loc gamma = bu.fix_gamma ? Loc{Loc::kOnes, 0, 0} : BackLoc(In(bu.gamma));
      const size_t b = producer[un.src];
      k.args = {{0, md[bu.src], BackView(bu.src, md[bu.src])}, {1, a, BackView(un.src2, a)},
                {2, md[v], At(recomputed[v])},                  {3, Vec(bs[1]), At(bn_mean[b])},
                {4, Vec(bs[1]), At(bn_var[b])},                 {5, Vec(bs[1]), gamma},
                {6, Vec(bs[1]), BackLoc(In(bu.beta))}};
      bwd.push_back(std::move(k));
      return;
    }
    if (un.kind == Kind::kAdd) {
      const memory::desc& a = md[un.src];
      Exec k;
      k.prim = dnnl::binary(add[u]);
      k.args = {{DNNL_ARG_SRC_0, a, BackView(un.src, a)},
                {DNNL_ARG_SRC_1, a, BackView(un.src2, a)},
                {DNNL_ARG_DST, md[v], At(recomputed[v])}};
      Scratch(&k, add[u].scratchpad_desc());
      bwd.push_back(std::move(k));
      return;
    }
    Exec k;
    k.type = Exec::kBnForward;
    k.batch_stats = false;
    k.fix_gamma = un.fix_gamma;
    k.bn = BnGeom{ss[0], ss[1], ss[2] * ss[3], static_cast<float>(un.eps), un.relu, DnnlChannelBlock()};
    Loc gamma = un.fix_gamma ? Loc{Loc::kOnes, 0, 0} : BackLoc(In(un.gamma));
    k.args = {{0, md[un.src], BackView(un.src, md[un.src])}, {1, md[v], At(recomputed[v])},
              {2, Vec(ss[1]), At(bn_mean[u])},               {3, Vec(ss[1]), At(bn_var[u])},
              {4, Vec(ss[1]), gamma},                         {5, Vec(ss[1]), BackLoc(In(un.beta))}};
    bwd.push_back(std::move(k));
  }
  // A forward location as the backward node sees it: node inputs come after the output
  // gradients and saved.
  Loc BackLoc(Loc l) const {
    if (l.k == Loc::kIn) l.index += num_out + 1;
    return l;
  }
  // The gradient of value v in layout `want` for a primitive to read.
  Loc DiffView(int v, const memory::desc& want) {
    if (diff_md[v] == want) return At(diff_block[v]);
    int b = NewItem(want.get_size());
    Exec r;
    r.prim = MakeReorder(diff_md[v], want, false);
    r.args = {{DNNL_ARG_FROM, diff_md[v], At(diff_block[v])}, {DNNL_ARG_TO, want, At(b)}};
    bwd.push_back(std::move(r));
    return At(b);
  }
  // Where a primitive writes its contribution to the gradient of v (in layout `wrote`):
  // the gradient itself for the first contribution, else a block of its own that *after
  // adds in.
  Loc Contribute(int v, const memory::desc& wrote, int gate, std::vector<Exec>* after) {
    if (diff_block[v] < 0) {
      diff_block[v] = NewItem(wrote.get_size());
      diff_md[v] = wrote;
      return At(diff_block[v]);
    }
    int b = NewItem(wrote.get_size());
    after->push_back(Transfer(wrote, At(b), diff_md[v], At(diff_block[v]), true, gate));
    return At(b);
  }
  // The request gate of v's gradient: a node input's gradient may be unwanted.
  int GateOf(int v) const { return spec.values[v].input; }
  // A step that writes (or, with `sum`, adds) `from` into `to`: a parallel host loop when
  // both have one layout (oneDNN's reorder takes a slow generic kernel for that), else a
  // reorder.
  Exec Transfer(const memory::desc& from_md, Loc from, const memory::desc& to_md, Loc to, bool sum, int gate) const {
    Exec r;
    r.gate = gate;
    if (from_md == to_md) {
      r.type = Exec::kCopy;
      r.sum = sum;
      r.count = static_cast<int64_t>(from_md.get_size() / sizeof(float));
      r.args = {{0, from_md, from}, {1, to_md, to}};
      return r;
    }
    r.prim = MakeReorder(from_md, to_md, sum);
    r.args = {{DNNL_ARG_FROM, from_md, from}, {DNNL_ARG_TO, to_md, to}};
    return r;
  }
  // Writes a gradient in layout `from` at `src` to node output `out` (plain layout `to`).
  void StoreOut(int out, const memory::desc& from, Loc src, const memory::desc& to) {
    Exec r;
    r.prim = MakeReorder(from, to, false);
    r.prim_add = MakeReorder(from, to, true);
    r.gate = out;
    r.first = !input_stored[out];
    input_stored[out] = true;
    r.args = {{DNNL_ARG_FROM, from, src}, {DNNL_ARG_TO, to, Loc{Loc::kOut, out, 0}}};
    bwd.push_back(std::move(r));
  }
  // A host copy of `count` floats (or zeros, with no source) to node output `out`.
  void StoreHost(int out, const Loc* src, int64_t count) {
    Exec s;
    s.type = src ? Exec::kStore : Exec::kZero;
    s.gate = out;
    s.first = !input_stored[out];
    input_stored[out] = true;
    s.count = count;
    if (src) s.args.push_back({0, Vec(count), *src});
    s.args.push_back({1, Vec(count), Loc{Loc::kOut, out, 0}});
    bwd.push_back(std::move(s));
  }

  // The moving statistics of BatchNorm unit u (c channels) updated from the batch's, which
  // its forward saved, in training.
  void PushMovingStats(size_t u, int64_t c) {
    const auto& un = spec.units[u];
    Exec stats;
    stats.type = Exec::kMovingStats;
    stats.mode = 1;
    stats.count = c;
    stats.momentum = static_cast<float>(un.momentum);
    stats.args = {{0, Vec(c), At(bn_mean[u])},
                  {1, Vec(c), At(bn_var[u])},
                  {2, Vec(c), In(un.moving_mean)},
                  {3, Vec(c), In(un.moving_var)}};
    fwd.push_back(std::move(stats));
  }

  void Build();
  void PlaceInBackwardInputs(int boundary, std::vector<int>* left);
  void ForwardUnit(size_t u);
  void BackwardUnit(size_t u, const std::vector<int>& first_reader);
  void Export(int v);
  void Run(const std::vector<Exec>& seq, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
           const std::vector<TBlob>& out, const std::vector<char*>& spaces, char* scratch, int mode);
};

void DnnlTrainRegion::Impl::Export(int v) {
  int o = spec.values[v].output;
  if (o < 0) return;
  Exec r;
  memory::desc plain = PlainNchw(spec.values[v].shape);
  r.prim = MakeReorder(md[v], plain, false);
  // Written even when unrequested if the backward reads it from there (ReadBack).
  r.gate = kept[v] ? -1 : o;
  r.args = {{DNNL_ARG_FROM, md[v], loc[v]}, {DNNL_ARG_TO, plain, Loc{Loc::kOut, o, 0}}};
  fwd.push_back(std::move(r));
}

void DnnlTrainRegion::Impl::ForwardUnit(size_t u) {
  const auto& un = spec.units[u];
  const Shape& ss = spec.values[un.src].shape;
  const Shape& ds = spec.values[un.dst].shape;
  Exec prim;
  if (un.kind == Kind::kConv) {
    const ConvolutionParam& p = un.conv;
    int64_t g = p.num_group, f = ds[1], c = ss[1];
    memory::dims kd{p.kernel[0], p.kernel[1]}, strides{1, 1}, dil{0, 0}, pl{0, 0}, pr{0, 0};
    for (int i = 0; i < 2; ++i) {
      int64_t s = p.stride.ndim() ? p.stride[i] : 1, d = p.dilate.ndim() ? p.dilate[i] : 1;
      int64_t pad = p.pad.ndim() ? p.pad[i] : 0;
      strides[i] = s;
      dil[i] = d - 1;
      pl[i] = pad;
      pr[i] = std::max<int64_t>(0, (ds[2 + i] - 1) * s + (kd[i] - 1) * d + 1 - ss[2 + i] - pad);
    }
    memory::desc plain_w =
        g == 1 ? memory::desc({f, c, kd[0], kd[1]}, memory::data_type::f32, memory::format_tag::oihw)
               : memory::desc({g, f / g, c / g, kd[0], kd[1]}, memory::data_type::f32, memory::format_tag::goihw);
    memory::desc any_w(plain_w.dims(), memory::data_type::f32, memory::format_tag::any);
    memory::desc bias_md = un.bias >= 0 ? Vec(f) : memory::desc();
    auto make = [&](dnnl::algorithm alg, bool free) {
      ConvPds pds;
      const memory::desc src_md = ConvLayout(ss, free), dst_md = ConvLayout(ds, free);
      dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training, alg, src_md, any_w, bias_md, dst_md,
                                         strides, dil, pl, pr);
      pds.fwd = dnnl::convolution_forward::primitive_desc(fd, UserScratch(), RegionEngine());
      dnnl::convolution_backward_data::desc dd(alg, src_md, any_w, dst_md, strides, dil, pl, pr);
      pds.bwd_data = dnnl::convolution_backward_data::primitive_desc(dd, UserScratch(), RegionEngine(), pds.fwd);
      dnnl::convolution_backward_weights::desc wd(alg, src_md, any_w, bias_md, dst_md, strides, dil, pl, pr);
      pds.bwd_weights = dnnl::convolution_backward_weights::primitive_desc(wd, UserScratch(), RegionEngine(), pds.fwd);
      return pds;
    };
    bool wino = WinogradWanted() && g == 1 && ss[0] >= 4 && kd[0] == 3 && kd[1] == 3 && strides[0] == 1 &&
                strides[1] == 1 && dil[0] == 0 && dil[1] == 0;
    ConvPds pds;
    if (wino) {
      try {
        pds = make(dnnl::algorithm::convolution_winograd, false);
      } catch (const dnnl::error&) {
        wino = false;  // not for this shape or machine
      }
    }
    if (!wino) {
      pds = make(dnnl::algorithm::convolution_direct, false);
      if (DnnlIsReference(pds.fwd) || DnnlIsReference(pds.bwd_data) || DnnlIsReference(pds.bwd_weights))
        pds = make(dnnl::algorithm::convolution_direct, true);
    }
    conv[u] = pds;
    Loc src = View(un.src, pds.fwd.src_desc());
    // In training the weights are reordered at every call: each step changes them.
    size_t wbytes = pds.fwd.weights_desc().get_size();
    Loc wl{Loc::kWeights, NewItem(wbytes), 0, kept_weight_bytes};
    kept_weight_bytes += Align64(wbytes);
    Exec wr;
    wr.prim = MakeReorder(plain_w, pds.fwd.weights_desc(), false);
    wr.args = {{DNNL_ARG_FROM, plain_w, In(un.weight)}, {DNNL_ARG_TO, pds.fwd.weights_desc(), wl}};
    wr.weights = un.weight;
    wr.cache = static_cast<int>(weight_cache.size());
    weight_cache.emplace_back();
    fwd.push_back(std::move(wr));
    md[un.dst] = pds.fwd.dst_desc();
    loc[un.dst] = Place(un.dst);
    prim.prim = dnnl::convolution_forward(pds.fwd);
    prim.args = {{DNNL_ARG_SRC, pds.fwd.src_desc(), src},
                 {DNNL_ARG_WEIGHTS, pds.fwd.weights_desc(), wl},
                 {DNNL_ARG_DST, md[un.dst], loc[un.dst]}};
    if (un.bias >= 0) prim.args.push_back({DNNL_ARG_BIAS, bias_md, In(un.bias)});
    Scratch(&prim, pds.fwd.scratchpad_desc());
    fwd.push_back(std::move(prim));
  } else if (un.kind == Kind::kBatchNorm && IsBlocked(md[un.src], ss)) {
    int64_t c = ss[1];
    bn_own[u] = true;
    md[un.dst] = md[un.src];
    loc[un.dst] = Place(un.dst);
    bn_mean[u] = NewItem(c * sizeof(float));
    bn_var[u] = NewItem(c * sizeof(float));
    Exec k;
    k.type = Exec::kBnForward;
    k.mode = 1;
    k.bn = BnGeom{ss[0], c, ss[2] * ss[3], static_cast<float>(un.eps), un.relu, DnnlChannelBlock()};
    k.fix_gamma = un.fix_gamma;
    Loc gamma = un.fix_gamma ? Loc{Loc::kOnes, 0, 0} : In(un.gamma);
    k.args = {{0, md[un.src], loc[un.src]}, {1, md[un.dst], loc[un.dst]}, {2, Vec(c), At(bn_mean[u])},
              {3, Vec(c), At(bn_var[u])},  {4, Vec(c), gamma},                {5, Vec(c), In(un.beta)}};
    Exec inf = k;
    int reader = -1;
    for (size_t a = u + 1; a < spec.units.size(); ++a)
      if (spec.units[a].kind == Kind::kAdd && spec.units[a].src == un.dst) reader = static_cast<int>(a);
    if (reader >= 0 && FusedBnAdd(reader)) {
      bn_in_add[reader] = static_cast<int>(u);  // its training forward runs in the add's pass
    } else {
      fwd.push_back(std::move(k));
      PushMovingStats(u, c);
    }
    // At inference (a Forward(is_train=false) of a training executor): the moving statistics.
    inf.mode = 2;
    inf.batch_stats = false;
    inf.args[2].loc = In(un.moving_mean);
    inf.args[3].loc = In(un.moving_var);
    fwd.push_back(std::move(inf));
  } else if (un.kind == Kind::kBatchNorm) {
    const memory::desc& s = md[un.src];
    int64_t c = ss[1];
    ones_count = std::max(ones_count, c);
    auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
    if (un.relu) flags |= dnnl::normalization_flags::fuse_norm_relu;
    float eps = static_cast<float>(un.eps);
    dnnl::batch_normalization_forward::desc td(dnnl::prop_kind::forward_training, s, eps, flags);
    bn[u] = dnnl::batch_normalization_forward::primitive_desc(td, UserScratch(), RegionEngine());
    const auto& pd = bn[u];
    md[un.dst] = pd.dst_desc();
    loc[un.dst] = Place(un.dst);
    bn_mean[u] = NewItem(pd.mean_desc().get_size());
    bn_var[u] = NewItem(pd.variance_desc().get_size());
    Loc scale = un.fix_gamma ? Loc{Loc::kOnes, 0, 0} : In(un.gamma);
    prim.prim = dnnl::batch_normalization_forward(pd);
    prim.mode = 1;
    prim.args = {{DNNL_ARG_SRC, s, loc[un.src]},
                 {DNNL_ARG_DST, md[un.dst], loc[un.dst]},
                 {DNNL_ARG_MEAN, pd.mean_desc(), At(bn_mean[u])},
                 {DNNL_ARG_VARIANCE, pd.variance_desc(), At(bn_var[u])},
                 {DNNL_ARG_SCALE, Vec(c), scale},
                 {DNNL_ARG_SHIFT, Vec(c), In(un.beta)}};
    if (un.relu) {
      bn_ws[u] = NewItem(pd.workspace_desc().get_size());
      prim.args.push_back({DNNL_ARG_WORKSPACE, pd.workspace_desc(), At(bn_ws[u])});
    }
    Scratch(&prim, pd.scratchpad_desc());
    fwd.push_back(std::move(prim));
    PushMovingStats(u, c);
    // At inference (a Forward(is_train=false) of a training executor): the moving statistics.
    dnnl::batch_normalization_forward::desc id(dnnl::prop_kind::forward_inference, s, eps,
                                               flags | dnnl::normalization_flags::use_global_stats);
    dnnl::batch_normalization_forward::primitive_desc ipd(id, UserScratch(), RegionEngine());
    Exec inf;
    inf.prim = dnnl::batch_normalization_forward(ipd);
    inf.mode = 2;
    inf.args = {{DNNL_ARG_SRC, s, loc[un.src]},
                {DNNL_ARG_DST, md[un.dst], loc[un.dst]},
                {DNNL_ARG_MEAN, ipd.mean_desc(), In(un.moving_mean)},
                {DNNL_ARG_VARIANCE, ipd.variance_desc(), In(un.moving_var)},
                {DNNL_ARG_SCALE, Vec(c), scale},
                {DNNL_ARG_SHIFT, Vec(c), In(un.beta)}};
    Scratch(&inf, ipd.scratchpad_desc());
    fwd.push_back(std::move(inf));
  } else if (un.kind == Kind::kRelu) {
    // relu's gradient from its result: the value the next operator reads anyway.
    dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_training, dnnl::algorithm::eltwise_relu_use_dst_for_bwd,
                                  md[un.src], 0.f, 0.f);
    relu[u] = dnnl::eltwise_forward::primitive_desc(d, UserScratch(), RegionEngine());
    md[un.dst] = relu[u].dst_desc();
    // In place of its source when nothing reads that after the relu (a convolution's result).
    bool in_place = spec.values[un.src].input < 0 && !kept[un.src] && md[un.dst] == md[un.src] &&
                    fwd_last[un.src] == static_cast<int>(u);
    loc[un.dst] = in_place ? loc[un.src] : Place(un.dst);
    prim.prim = dnnl::eltwise_forward(relu[u]);
    prim.args = {{DNNL_ARG_SRC, md[un.src], loc[un.src]}, {DNNL_ARG_DST, md[un.dst], loc[un.dst]}};
    Scratch(&prim, relu[u].scratchpad_desc());
    fwd.push_back(std::move(prim));
  } else {  // kAdd
    const memory::desc& a = md[un.src];
    Loc second = View(un.src2, a);
    dnnl::binary::desc d(dnnl::algorithm::binary_add, a, a, a);
    dnnl::primitive_attr attr = UserScratch();
    if (un.relu) {
      dnnl::post_ops po;
      po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
      attr.set_post_ops(po);
    }
    add[u] = dnnl::binary::primitive_desc(d, attr, RegionEngine());
    const auto& pd = add[u];
    md[un.dst] = pd.dst_desc();
    loc[un.dst] = Place(un.dst);
    if (bn_in_add[u] >= 0) {
      WEFT_CHECK(md[un.dst] == a, kInternal, "_dnnl_train_region: the add '", un.name,
                 "' changes its operand's layout, so the BatchNorm before it cannot run in its pass");
      // In training, the BatchNorm before (statistics, normalisation) and this add in one
      // pass over its source; at inference the two steps as they are.
      const size_t b = bn_in_add[u];
      const auto& bu = spec.units[b];
      const Shape& bs = spec.values[bu.src].shape;
      Exec k;
      k.type = Exec::kBnForward;
      k.mode = 1;
      k.bn = BnGeom{bs[0], bs[1], bs[2] * bs[3], static_cast<float>(bu.eps), false, DnnlChannelBlock()};
      k.fix_gamma = bu.fix_gamma;
      k.add_relu = un.relu;
      Loc gamma = bu.fix_gamma ? Loc{Loc::kOnes, 0, 0} : In(bu.gamma);
      k.args = {{0, md[bu.src], loc[bu.src]}, {1, md[un.dst], loc[un.dst]}, {2, Vec(bs[1]), At(bn_mean[b])},
                {3, Vec(bs[1]), At(bn_var[b])}, {4, Vec(bs[1]), gamma},          {5, Vec(bs[1]), In(bu.beta)},
                {6, a, second}};
      fwd.push_back(std::move(k));
      PushMovingStats(b, bs[1]);
      prim.mode = 2;
    }
    prim.prim = dnnl::binary(pd);
    prim.args = {{DNNL_ARG_SRC_0, a, loc[un.src]}, {DNNL_ARG_SRC_1, a, second}, {DNNL_ARG_DST, md[un.dst], loc[un.dst]}};
    Scratch(&prim, pd.scratchpad_desc());
    fwd.push_back(std::move(prim));
  }
  Export(un.dst);
}

void DnnlTrainRegion::Impl::BackwardUnit(size_t u, const std::vector<int>& first_reader) {
  const auto& un = spec.units[u];
  std::vector<Exec> after;
  const int dst = un.dst;
  // After a BatchNorm's backward (its steps in bwd): the steps that place its data gradient,
  // then its gamma and beta gradients (blocks ds and dh, c floats) stored to the node's
  // outputs. fix_gamma: gamma is treated as 1 and gets a zero gradient, as the operator
  // gives it.
  auto finish_batch_norm = [&](int ds, int dh, int64_t c) {
    for (Exec& e : after) bwd.push_back(std::move(e));
    after.clear();
    Loc dgamma = At(ds), dbeta = At(dh);
    StoreHost(un.gamma, un.fix_gamma ? nullptr : &dgamma, c);
    StoreHost(un.beta, &dbeta, c);
  };
  // The gradient flowing in from outside the region joins last.
  int o = spec.values[dst].output;
  // Whether dst's gradient is taken in through its relu already (MaskLoadBlocked).
  bool masked = false;
  if (o >= 0) {
    memory::desc plain = PlainNchw(spec.values[dst].shape);
    Loc from = In(o);
    if (diff_block[dst] < 0 && MasksOnLoad(u)) {
      diff_block[dst] = NewItem(md[dst].get_size());
      diff_md[dst] = md[dst];
      const Shape& s = spec.values[dst].shape;
      Exec k;
      k.type = Exec::kMaskLoad;
      k.bn = BnGeom{s[0], s[1], s[2] * s[3], 0.f, true, DnnlChannelBlock()};
      k.args = {{0, plain, from},
                {1, plain, Loc{Loc::kIn, num_out + 1 + spec.num_inputs + o, 0}},
                {2, md[dst], At(diff_block[dst])}};
      bwd.push_back(std::move(k));
      masked = true;
    } else if (diff_block[dst] < 0) {
      diff_block[dst] = NewItem(md[dst].get_size());
      diff_md[dst] = md[dst];
      Exec r;
      r.prim = MakeReorder(plain, md[dst], false);
      r.args = {{DNNL_ARG_FROM, plain, from}, {DNNL_ARG_TO, md[dst], At(diff_block[dst])}};
      bwd.push_back(std::move(r));
    } else {
      Exec r;
      r.prim = MakeReorder(plain, diff_md[dst], true);
      r.args = {{DNNL_ARG_FROM, plain, from}, {DNNL_ARG_TO, diff_md[dst], At(diff_block[dst])}};
      bwd.push_back(std::move(r));
    }
  }
  if (diff_block[dst] < 0) {  // nothing reads the value: its gradient is zero
    diff_block[dst] = NewItem(md[dst].get_size());
    diff_md[dst] = md[dst];
    Exec z;
    z.type = Exec::kZero;
    z.count = static_cast<int64_t>(md[dst].get_size() / sizeof(float));
    z.args = {{1, md[dst], At(diff_block[dst])}};
    bwd.push_back(std::move(z));
  }
  Exec prim;
  if (un.kind == Kind::kConv) {
    const ConvPds& pds = conv[u];
    const Shape& ds = spec.values[dst].shape;
    int64_t g = un.conv.num_group, f = ds[1];
    memory::dims wdims = pds.fwd.weights_desc().dims();
    memory::desc plain_w(wdims, memory::data_type::f32, g == 1 ? memory::format_tag::oihw : memory::format_tag::goihw);
    // The weight and bias gradients, then the data gradient.
    Loc dy_w = DiffView(dst, pds.bwd_weights.diff_dst_desc());
    Loc x = BackView(un.src, pds.bwd_weights.src_desc());
    int dw = NewItem(pds.bwd_weights.diff_weights_desc().get_size());
    int db = un.bias >= 0 ? NewItem(f * sizeof(float)) : -1;
    Exec w;
    w.prim = dnnl::convolution_backward_weights(pds.bwd_weights);
    w.args = {{DNNL_ARG_SRC, pds.bwd_weights.src_desc(), x},
              {DNNL_ARG_DIFF_DST, pds.bwd_weights.diff_dst_desc(), dy_w},
              {DNNL_ARG_DIFF_WEIGHTS, pds.bwd_weights.diff_weights_desc(), At(dw)}};
    if (db >= 0) w.args.push_back({DNNL_ARG_DIFF_BIAS, Vec(f), At(db)});
    Scratch(&w, pds.bwd_weights.scratchpad_desc());
    bwd.push_back(std::move(w));
    StoreOut(un.weight, pds.bwd_weights.diff_weights_desc(), At(dw), plain_w);
    if (db >= 0) {
      Loc b = At(db);
      StoreHost(un.bias, &b, f);
    }
    // The data gradient (unless the source is a node input whose gradient nobody wants).
    int wb = NewItem(pds.bwd_data.weights_desc().get_size());
    int gate = GateOf(un.src);
    Exec wr;
    wr.prim = MakeReorder(plain_w, pds.bwd_data.weights_desc(), false);
    wr.gate = gate;
    wr.args = {{DNNL_ARG_FROM, plain_w, BackLoc(In(un.weight))},
               {DNNL_ARG_TO, pds.bwd_data.weights_desc(), At(wb)}};
    bwd.push_back(std::move(wr));
    Loc dy_d = DiffView(dst, pds.bwd_data.diff_dst_desc());
    prim.prim = dnnl::convolution_backward_data(pds.bwd_data);
    prim.gate = gate;
    prim.args = {{DNNL_ARG_DIFF_DST, pds.bwd_data.diff_dst_desc(), dy_d},
                 {DNNL_ARG_WEIGHTS, pds.bwd_data.weights_desc(), At(wb)},
                 {DNNL_ARG_DIFF_SRC, pds.bwd_data.diff_src_desc(),
                  Contribute(un.src, pds.bwd_data.diff_src_desc(), gate, &after)}};
    Scratch(&prim, pds.bwd_data.scratchpad_desc());
    bwd.push_back(std::move(prim));
  } else if (un.kind == Kind::kBatchNorm && bn_own[u]) {
    int64_t c = spec.values[un.src].shape[1];
    Loc dy = DiffView(dst, md[dst]);
    int ds = NewItem(c * sizeof(float)), dh = NewItem(c * sizeof(float));
    const Shape& ss = spec.values[un.src].shape;
    Exec k;
    k.type = Exec::kBnBackward;
    const bool relu = un.relu && !masked;
    k.bn = BnGeom{ss[0], c, ss[2] * ss[3], static_cast<float>(un.eps), relu, DnnlChannelBlock()};
    k.fix_gamma = un.fix_gamma;
    Loc gamma = un.fix_gamma ? Loc{Loc::kOnes, 0, 0} : BackLoc(In(un.gamma));
    k.args = {{0, md[un.src], BackView(un.src, md[un.src])},
              // y masks the gradient of a folded relu (without one it is not read).
              {1, md[dst], relu ? BackView(dst, md[dst]) : BackView(un.src, md[un.src])},
              {2, md[dst], dy},
              {3, md[un.src], Contribute(un.src, md[un.src], GateOf(un.src), &after)},
              {4, Vec(c), At(bn_mean[u])},
              {5, Vec(c), At(bn_var[u])},
              {6, Vec(c), gamma},
              {7, Vec(c), At(ds)},
              {8, Vec(c), At(dh)}};
    bwd.push_back(std::move(k));
    finish_batch_norm(ds, dh, c);
  } else if (un.kind == Kind::kBatchNorm) {
    const auto& fpd = bn[u];
    int64_t c = spec.values[un.src].shape[1];
    auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
    if (un.relu) flags |= dnnl::normalization_flags::fuse_norm_relu;
    dnnl::batch_normalization_backward::desc d(dnnl::prop_kind::backward, md[dst], md[un.src],
                                               static_cast<float>(un.eps), flags);
    dnnl::batch_normalization_backward::primitive_desc pd(d, UserScratch(), RegionEngine(), fpd);
    Loc dy = DiffView(dst, pd.diff_dst_desc());
    int ds = NewItem(c * sizeof(float)), dh = NewItem(c * sizeof(float));
    Loc scale = un.fix_gamma ? Loc{Loc::kOnes, 0, 0} : BackLoc(In(un.gamma));
    prim.prim = dnnl::batch_normalization_backward(pd);
    prim.args = {{DNNL_ARG_SRC, md[un.src], BackView(un.src, md[un.src])},
                 {DNNL_ARG_MEAN, fpd.mean_desc(), At(bn_mean[u])},
                 {DNNL_ARG_VARIANCE, fpd.variance_desc(), At(bn_var[u])},
                 {DNNL_ARG_DIFF_DST, pd.diff_dst_desc(), dy},
                 {DNNL_ARG_SCALE, Vec(c), scale},
                 // oneDNN 2.6 refuses to run the backward without the shift (it does not read it).
                 {DNNL_ARG_SHIFT, Vec(c), BackLoc(In(un.beta))},
                 {DNNL_ARG_DIFF_SCALE, Vec(c), At(ds)},
                 {DNNL_ARG_DIFF_SHIFT, Vec(c), At(dh)}};
    if (un.relu) prim.args.push_back({DNNL_ARG_WORKSPACE, fpd.workspace_desc(), At(bn_ws[u])});
    prim.args.push_back(
        {DNNL_ARG_DIFF_SRC, pd.diff_src_desc(), Contribute(un.src, pd.diff_src_desc(), GateOf(un.src), &after)});
    Scratch(&prim, pd.scratchpad_desc());
    bwd.push_back(std::move(prim));
    finish_batch_norm(ds, dh, c);
  } else if (un.kind == Kind::kRelu && masked) {
    // The gradient came in through the relu: it is its source's (a first contribution takes
    // the block over, a later one is added).
    if (diff_block[un.src] < 0) {
      diff_block[un.src] = diff_block[dst];
      diff_md[un.src] = diff_md[dst];
    } else {
      bwd.push_back(Transfer(diff_md[dst], At(diff_block[dst]), diff_md[un.src], At(diff_block[un.src]), true,
                             GateOf(un.src)));
    }
  } else if (un.kind == Kind::kRelu) {
    dnnl::eltwise_backward::desc d(dnnl::algorithm::eltwise_relu_use_dst_for_bwd, md[dst], md[dst], 0.f, 0.f);
    dnnl::eltwise_backward::primitive_desc pd(d, UserScratch(), RegionEngine(), relu[u]);
    Loc dy = DiffView(dst, pd.diff_dst_desc());
    // The source's first gradient in place of the incoming one.
    bool in_place = diff_block[un.src] < 0 && diff_md[dst] == pd.diff_dst_desc() && pd.diff_src_desc() == diff_md[dst];
    if (in_place) {
      diff_block[un.src] = diff_block[dst];
      diff_md[un.src] = diff_md[dst];
    }
    prim.prim = dnnl::eltwise_backward(pd);
    prim.args = {{DNNL_ARG_DST, md[dst], BackView(dst, md[dst])},
                 {DNNL_ARG_DIFF_DST, pd.diff_dst_desc(), dy},
                 {DNNL_ARG_DIFF_SRC, pd.diff_src_desc(),
                  in_place ? dy : Contribute(un.src, pd.diff_src_desc(), GateOf(un.src), &after)}};
    Scratch(&prim, pd.scratchpad_desc());
    bwd.push_back(std::move(prim));
  } else {  // kAdd: both operands receive the incoming gradient
    if (un.relu && !masked) {  // the folded relu's gradient first, from its result
      dnnl::eltwise_forward::desc fd(dnnl::prop_kind::forward_training,
                                     dnnl::algorithm::eltwise_relu_use_dst_for_bwd, md[dst], 0.f, 0.f);
      dnnl::eltwise_forward::primitive_desc fpd(fd, UserScratch(), RegionEngine());
      dnnl::eltwise_backward::desc d(dnnl::algorithm::eltwise_relu_use_dst_for_bwd, md[dst], md[dst], 0.f, 0.f);
      dnnl::eltwise_backward::primitive_desc pd(d, UserScratch(), RegionEngine(), fpd);
      Loc dy = DiffView(dst, pd.diff_dst_desc());
      int g = NewItem(pd.diff_src_desc().get_size());
      Exec r;
      r.prim = dnnl::eltwise_backward(pd);
      r.args = {{DNNL_ARG_DST, md[dst], BackView(dst, md[dst])},
                {DNNL_ARG_DIFF_DST, pd.diff_dst_desc(), dy},
                {DNNL_ARG_DIFF_SRC, pd.diff_src_desc(), At(g)}};
      Scratch(&r, pd.scratchpad_desc());
      bwd.push_back(std::move(r));
      diff_block[dst] = g;
      diff_md[dst] = pd.diff_src_desc();
    }
    // The second operand's share is copied (or added); the first one's then takes the
    // incoming gradient's block over when it has no gradient yet.
    for (int v : {un.src2, un.src}) {
      int gate = GateOf(v);
      if (v == un.src && diff_block[v] < 0) {
        diff_block[v] = diff_block[dst];
        diff_md[v] = diff_md[dst];
        diff_block[dst] = -1;
        continue;
      }
      bool sum = diff_block[v] >= 0;
      if (!sum) {
        diff_block[v] = NewItem(diff_md[dst].get_size());
        diff_md[v] = diff_md[dst];
      }
      bwd.push_back(Transfer(diff_md[dst], At(diff_block[dst]), diff_md[v], At(diff_block[v]), sum, gate));
    }
  }
  for (Exec& e : after) bwd.push_back(std::move(e));
  diff_block[dst] = -1;
  // A node input's gradient is complete once its first reader in the forward is done.
  for (int v : {un.src, un.src2}) {
    if (v < 0 || spec.values[v].input < 0 || first_reader[v] != static_cast<int>(u) || diff_block[v] < 0) continue;
    StoreOut(spec.values[v].input, diff_md[v], At(diff_block[v]), PlainNchw(spec.values[v].shape));
    diff_block[v] = -1;
  }
}

void DnnlTrainRegion::Impl::Build() {
  const size_t nv = spec.values.size(), nu = spec.units.size();
  num_out = static_cast<int>(spec.outputs.size());
  md.resize(nv);
  loc.resize(nv);
  conv.resize(nu);
  bn.resize(nu);
  relu.resize(nu);
  add.resize(nu);
  bn_mean.assign(nu, 0);
  bn_var.assign(nu, 0);
  bn_ws.assign(nu, 0);
  bn_own.assign(nu, false);
  bn_in_add.assign(nu, -1);
  for (size_t v = 0; v < nv; ++v)
    if (spec.values[v].input >= 0) {
      md[v] = PlainNchw(spec.values[v].shape);
      loc[v] = In(spec.values[v].input);
    }
  kept.assign(nv, false);
  producer.assign(nv, -1);
  fwd_last.assign(nv, -1);
  recomputed.assign(nv, -1);
  recompute = DnnlTrainRecomputeLevel();
  for (size_t u = 0; u < nu; ++u) {
    const auto& un = spec.units[u];
    producer[un.dst] = static_cast<int>(u);
    for (int v : {un.src, un.src2})
      if (v >= 0) fwd_last[v] = static_cast<int>(u);
    if (un.kind == Kind::kConv || un.kind == Kind::kBatchNorm) kept[un.src] = true;
    if (un.kind == Kind::kRelu || un.relu) kept[un.dst] = true;
  }
  for (size_t u = 0; u < nu; ++u) {
    size_t at = fwd.size();
    ForwardUnit(u);
    for (size_t k = at; k < fwd.size(); ++k) fwd[k].unit = spec.units[u].name;
  }
  std::vector<int> first_reader(nv, -1);
  for (size_t u = nu; u-- > 0;)
    for (int v : {spec.units[u].src, spec.units[u].src2})
      if (v >= 0) first_reader[v] = static_cast<int>(u);
  diff_block.assign(nv, -1);
  diff_md.resize(nv);
  input_stored.assign(spec.num_inputs, false);
  for (size_t u = nu; u-- > 0;) {
    size_t at = bwd.size();
    BackwardUnit(u, first_reader);
    for (size_t k = at; k < bwd.size(); ++k) bwd[k].unit = spec.units[u].name + " (backward)";
  }
  // Each block lives from the first step naming it to the last (the forward's steps, then
  // the backward's). Saved is sized by the blocks live from the forward into the backward;
  // the others go between them where they fit (in the place of values yet to come in the
  // forward, or read for the last time in the backward), else into their pass's work
  // space: the executor's planner sees all of the region's memory, and the backward's
  // temporaries take the place of the forward values it has done with.
  int t = 0;
  for (std::vector<Exec>* seq : {&fwd, &bwd})
    for (Exec& e : *seq) {
      for (Arg& a : e.args)
        if (a.loc.k == Loc::kItem || a.loc.k == Loc::kWeights) {
          Item& it = items[a.loc.index];
          it.start = std::min(it.start, t);
          it.end = std::max(it.end, t);
        }
      ++t;
    }
  const int boundary = static_cast<int>(fwd.size());
  std::vector<int> kept_ids, pass_ids;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].end < 0) continue;
    bool across = items[i].start < boundary && items[i].end >= boundary;
    (across ? kept_ids : pass_ids).push_back(static_cast<int>(i));
  }
  // The kept blocks are all live at the boundary, so saved is their sum whatever their
  // order; stacked in the order the forward makes them, those still to come in the
  // forward, and those the backward has done with (it reads them in about the reverse
  // order), leave one free range above the others, where the temporaries fit.
  std::stable_sort(kept_ids.begin(), kept_ids.end(), [&](int a, int b) { return items[a].start < items[b].start; });
  saved_bytes = 0;
  for (int i : kept_ids) {
    items[i].offset = saved_bytes;
    saved_bytes += items[i].bytes;
  }
  std::vector<int> left = PlaceBySize(&items, pass_ids, kept_ids, saved_bytes), fwd_work, bwd_work;
  PlaceInBackwardInputs(boundary, &left);
  for (int i : left) {
    items[i].space = kWork;
    (items[i].start < boundary ? fwd_work : bwd_work).push_back(i);
  }
  PlaceBySize(&items, fwd_work);
  PlaceBySize(&items, bwd_work);
  for (int i : fwd_work) fwd_work_bytes = std::max(fwd_work_bytes, items[i].offset + items[i].bytes);
  for (int i : bwd_work) bwd_work_bytes = std::max(bwd_work_bytes, items[i].offset + items[i].bytes);
  for (std::vector<Exec>* seq : {&fwd, &bwd})
    for (Exec& e : *seq)
      for (Arg& a : e.args)
        if (a.loc.k == Loc::kItem || a.loc.k == Loc::kWeights) {
          a.loc.offset = items[a.loc.index].offset;
          a.loc.space = items[a.loc.index].space;
        }
  ones.assign(static_cast<size_t>(std::max<int64_t>(ones_count, 1)), 1.f);
}

void DnnlTrainRegion::Impl::PlaceInBackwardInputs(int boundary, std::vector<int>* left) {
  const int ni = spec.num_inputs, first_out = num_out + 1 + ni;  // first_out: the visible outputs read back
  std::vector<int> last_read(first_out + num_out, boundary - 1), first_write(ni, INT_MAX);
  for (size_t k = 0; k < bwd.size(); ++k)
    for (const Arg& a : bwd[k].args) {
      const int step = boundary + static_cast<int>(k);
      if (a.loc.k == Loc::kIn) last_read[a.loc.index] = std::max(last_read[a.loc.index], step);
      if (a.loc.k == Loc::kOut && a.loc.index < ni) first_write[a.loc.index] = std::min(first_write[a.loc.index], step);
    }
  std::vector<bool> paired(ni, false);
  std::vector<int> donors;
  for (int i = 0; i < num_out; ++i) {
    const Shape& s = spec.values[spec.outputs[i]].shape;
    int j = -1;
    for (const auto& v : spec.values)
      if (v.input >= 0 && v.shape == s && !paired[v.input] && first_write[v.input] != INT_MAX &&
          first_write[v.input] > last_read[i]) {
        j = v.input;
        break;
      }
    if (j >= 0) {
      paired[j] = true;
      bwd_inplace.push_back({i, j});
    } else {
      donors.push_back(i);
    }
  }
  for (int i = 0; i < num_out; ++i) donors.push_back(first_out + i);
  auto shape_of = [&](int d) -> const Shape& { return spec.values[spec.outputs[d < num_out ? d : d - first_out]].shape; };
  std::stable_sort(donors.begin(), donors.end(), [&](int a, int b) { return shape_of(a).Size() > shape_of(b).Size(); });
  // A block a kMaskLoad step writes may take the place of the inputs that step reads
  // (MaskLoadBlocked reads each part whole before writing it): the step then reads them
  // for the last time.
  auto fits = [&](int i, int d) {
    const int start = items[i].start;
    if (start > last_read[d]) return true;
    if (start != last_read[d]) return false;
    const Exec& e = bwd[start - boundary];
    return e.type == Exec::kMaskLoad && e.args[2].loc.k == Loc::kItem && e.args[2].loc.index == i &&
           ((e.args[0].loc.k == Loc::kIn && e.args[0].loc.index == d) ||
            (e.args[1].loc.k == Loc::kIn && e.args[1].loc.index == d));
  };
  for (int d : donors) {
    std::vector<int> fit, rest;
    for (int i : *left) (fits(i, d) ? fit : rest).push_back(i);
    if (fit.empty()) continue;
    std::vector<int> out = PlaceBySize(&items, fit, {}, static_cast<size_t>(shape_of(d).Size()) * sizeof(float));
    if (out.size() == fit.size()) continue;
    const int space = kSpare + static_cast<int>(spares.size());
    for (int i : fit)
      if (std::find(out.begin(), out.end(), i) == out.end()) items[i].space = space;
    rest.insert(rest.end(), out.begin(), out.end());
    left->swap(rest);
    bwd_inplace.push_back({d, ni + 1 + static_cast<int>(spares.size())});
    spares.push_back(Spare{d, shape_of(d)});
  }
}

void DnnlTrainRegion::Impl::Run(const std::vector<Exec>& seq, const std::vector<TBlob>& in,
                                const std::vector<OpReq>& req, const std::vector<TBlob>& out,
                                const std::vector<char*>& spaces, char* scratch, int mode) {
  const bool inference = mode == 2;
  if (inference && !kept_weights) kept_weights.reset(AlignedAlloc(kept_weight_bytes, "_dnnl_train_region"));
  static thread_local dnnl::stream strm(RegionEngine());
  std::unordered_map<int, memory> args;
  auto ptr = [&](const Loc& l) -> void* {
    switch (l.k) {
      case Loc::kIn: return in[l.index].dptr;
      case Loc::kOut: return out[l.index].dptr;
      case Loc::kItem: return spaces[l.space] + l.offset;
      case Loc::kScratch: return scratch;
      case Loc::kOnes: return ones.data();
      case Loc::kWeights: return inference ? kept_weights.get() + l.kept : spaces[l.space] + l.offset;
    }
    return nullptr;
  };
  for (const Exec& e : seq) {
    if (e.mode != 0 && e.mode != mode) continue;
    OpReq r = e.gate >= 0 ? req[e.gate] : OpReq::kWriteTo;
    if (r == OpReq::kNullOp) continue;
    bool add = !e.first || r == OpReq::kAddTo;
    if (e.weights >= 0 && inference) {
      const void* w = in[e.weights].dptr;
      bool known = static_cast<size_t>(e.weights) < watched.size();
      uint64_t writes = known ? watched[e.weights].var()->writes.load(std::memory_order_acquire) : 0;
      WeightCache& c = weight_cache[e.cache];
      if (known && c.valid && c.ptr == w && c.writes == writes) continue;
      c = WeightCache{w, writes, known};
      ++weight_reorders;
    }
    if (e.type == Exec::kPrim) {
      args.clear();
      for (const Arg& a : e.args) args.emplace(a.arg, memory(a.md, RegionEngine(), ptr(a.loc)));
      try {
        (add && e.prim_add ? e.prim_add : e.prim).execute(strm, args);
      } catch (const dnnl::error& err) {
        Throw(ErrorKind::kRuntime, "_dnnl_train_region: oneDNN failed on node '", e.unit, "': ", err.what());
      }
      continue;
    }
    strm.wait();  // the host loops read what the primitives before them wrote
    if (e.type == Exec::kMovingStats) {
      const float* mean = static_cast<const float*>(ptr(e.args[0].loc));
      const float* var = static_cast<const float*>(ptr(e.args[1].loc));
      float* mm = static_cast<float*>(ptr(e.args[2].loc));
      float* mv = static_cast<float*>(ptr(e.args[3].loc));
      for (int64_t c = 0; c < e.count; ++c) {
        mm[c] = mm[c] * e.momentum + mean[c] * (1.f - e.momentum);
        mv[c] = mv[c] * e.momentum + var[c] * (1.f - e.momentum);
      }
    } else if (e.type == Exec::kCopy) {
      const float* from = static_cast<const float*>(ptr(e.args[0].loc));
      float* to = static_cast<float*>(ptr(e.args[1].loc));
      const bool sum = e.sum;
      ParallelFor(e.count, kElemGrain, [&](int64_t lo, int64_t hi) {
        if (sum) {
#pragma omp simd
          for (int64_t i = lo; i < hi; ++i) to[i] += from[i];
        } else {
          std::memcpy(to + lo, from + lo, (hi - lo) * sizeof(float));
        }
      });
    } else if (e.type == Exec::kBnForward) {
      auto f = [&](int i) { return static_cast<float*>(ptr(e.args[i].loc)); };
      BnForward(e.bn, e.batch_stats, f(0), f(1), f(2), f(3), e.fix_gamma ? nullptr : f(4), f(5),
                e.args.size() > 6 ? f(6) : nullptr, e.add_relu);
    } else if (e.type == Exec::kBnAdd) {
      auto f = [&](int i) { return static_cast<float*>(ptr(e.args[i].loc)); };
      if (e.bn.lanes == 16) BnAddBlocked<16>(e.bn, f(0), f(1), f(2), f(3), f(4), e.fix_gamma ? nullptr : f(5), f(6));
      else BnAddBlocked<8>(e.bn, f(0), f(1), f(2), f(3), f(4), e.fix_gamma ? nullptr : f(5), f(6));
    } else if (e.type == Exec::kMaskLoad) {
      auto f = [&](int i) { return static_cast<float*>(ptr(e.args[i].loc)); };
      if (e.bn.lanes == 16) MaskLoadBlocked<16>(e.bn, f(0), f(1), f(2));
      else MaskLoadBlocked<8>(e.bn, f(0), f(1), f(2));
    } else if (e.type == Exec::kBnBackward) {
      auto f = [&](int i) { return static_cast<float*>(ptr(e.args[i].loc)); };
      BnBackward(e.bn, f(0), f(1), f(2), f(3), f(4), f(5), e.fix_gamma ? nullptr : f(6), f(7), f(8));
    } else if (e.type == Exec::kStore) {
      const float* from = static_cast<const float*>(ptr(e.args[0].loc));
      float* to = static_cast<float*>(ptr(e.args[1].loc));
      for (int64_t c = 0; c < e.count; ++c) to[c] = add ? to[c] + from[c] : from[c];
    } else {  // kZero: a zero gradient adds nothing
      if (e.gate < 0 || !add) std::memset(ptr(e.args.back().loc), 0, e.count * sizeof(float));
    }
  }
  strm.wait();
}

DnnlTrainRegion::DnnlTrainRegion(TrainRegionSpec spec) : impl_(std::make_unique<Impl>()) {
  impl_->spec = std::move(spec);
  try {
    impl_->Build();
  } catch (const dnnl::error& e) {
    Throw(ErrorKind::kUnsupported, "_dnnl_train_region: oneDNN refused a primitive: ", e.what());
  }
}

void DnnlTrainRegion::Forward(const OpContext& ctx, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                              const std::vector<TBlob>& out) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  for (const auto& v : m.spec.values)
    WEFT_CHECK(v.input < 0 || in[v.input].shape == v.shape, kShape, "_dnnl_train_region: input ", v.input,
               " has shape ", in[v.input].shape.ToString(), " but the region was made for ", v.shape.ToString());
  for (int i = 0; i < m.num_out; ++i)
    WEFT_CHECK(req[i] != OpReq::kAddTo, kUnsupported, "_dnnl_train_region: output ", i,
               " asks to be added to; a region only writes its outputs");
  m.Run(m.fwd, in, req, out, {static_cast<char*>(out[m.num_out].dptr), static_cast<char*>(out[m.num_out + 1].dptr)},
        m.Scratchpad(ctx), ctx.is_train ? 1 : 2);
}

void DnnlTrainRegion::Backward(const OpContext& ctx, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                               const std::vector<TBlob>& out) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  std::vector<char*> spaces{static_cast<char*>(in[m.num_out].dptr), static_cast<char*>(out[m.spec.num_inputs].dptr)};
  for (size_t k = 0; k < m.spares.size(); ++k)
    spaces.push_back(static_cast<char*>(out[m.spec.num_inputs + 1 + k].dptr));
  m.Run(m.bwd, in, req, out, spaces, m.Scratchpad(ctx), 0);
}

// At least one cache line: a region whose backward reads nothing from saved still has the
// output, and an empty shape would read as unknown (the same for work).
int64_t DnnlTrainRegion::saved_floats() const {
  return static_cast<int64_t>(std::max<size_t>(impl_->saved_bytes, 64) / sizeof(float));
}
int64_t DnnlTrainRegion::work_floats(bool backward) const {
  return static_cast<int64_t>(std::max<size_t>(backward ? impl_->bwd_work_bytes : impl_->fwd_work_bytes, 64) /
                              sizeof(float));
}
size_t DnnlTrainRegion::internal_bytes() const {
  return impl_->kept_weights ? impl_->kept_weight_bytes : 0;
}
std::vector<Shape> DnnlTrainRegion::spare_shapes() const {
  std::vector<Shape> shapes;
  for (const auto& s : impl_->spares) shapes.push_back(s.shape);
  return shapes;
}
std::vector<std::pair<int, int>> DnnlTrainRegion::backward_inplace() const { return impl_->bwd_inplace; }
void DnnlTrainRegion::Watch(std::vector<NDArray> inputs) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->watched = std::move(inputs);
}
size_t DnnlTrainRegion::weight_reorders() const { return impl_->weight_reorders; }
bool DnnlTrainRegionsAvailable() { return true; }

#else  // no oneDNN: the pass makes no regions

struct DnnlTrainRegion::Impl {
  TrainRegionSpec spec;
};

DnnlTrainRegion::DnnlTrainRegion(TrainRegionSpec spec) : impl_(std::make_unique<Impl>()) {
  impl_->spec = std::move(spec);
  Throw(ErrorKind::kUnsupported, "_dnnl_train_region: Weft was built without oneDNN");
}
void DnnlTrainRegion::Forward(const OpContext&, const std::vector<TBlob>&, const std::vector<OpReq>&,
                              const std::vector<TBlob>&) {
  Throw(ErrorKind::kUnsupported, "_dnnl_train_region: Weft was built without oneDNN");
}
void DnnlTrainRegion::Backward(const OpContext&, const std::vector<TBlob>&, const std::vector<OpReq>&,
                               const std::vector<TBlob>&) {
  Throw(ErrorKind::kUnsupported, "_dnnl_train_region: Weft was built without oneDNN");
}
int64_t DnnlTrainRegion::saved_floats() const { return 0; }
int64_t DnnlTrainRegion::work_floats(bool) const { return 0; }
size_t DnnlTrainRegion::internal_bytes() const { return 0; }
std::vector<Shape> DnnlTrainRegion::spare_shapes() const { return {}; }
std::vector<std::pair<int, int>> DnnlTrainRegion::backward_inplace() const { return {}; }
void DnnlTrainRegion::Watch(std::vector<NDArray>) {}
size_t DnnlTrainRegion::weight_reorders() const { return 0; }
bool DnnlTrainRegionsAvailable() { return false; }

#endif

DnnlTrainRegion::~DnnlTrainRegion() = default;
const TrainRegionSpec& DnnlTrainRegion::spec() const { return impl_->spec; }

namespace {

// The backward node is made by the gradient pass from string parameters only, so it names
// its region by a number; regions are looked up here (they live as long as the forward
// node, which the backward node reads).
struct RegionTable {
  std::mutex mu;
  int64_t next = 1;
  std::unordered_map<int64_t, std::pair<std::weak_ptr<DnnlTrainRegion>, const DnnlTrainRegion*>> regions;
  std::unordered_map<const DnnlTrainRegion*, int64_t> ids;
};
RegionTable& Table() {
  static RegionTable* t = new RegionTable();
  return *t;
}

struct TrainRegionGradParam {
  int64_t region = 0;
};
WEFT_PARAM_SCHEMA(TrainRegionGradParam, s) {
  s.Field("region", &TrainRegionGradParam::region).Min(1).Describe("The training region (made by the executor).");
}

DnnlTrainRegion& RegionOf(const NodeAttrs& attrs) {
  WEFT_CHECK(attrs.parsed != nullptr, kUnsupported,
             "_dnnl_train_region is made by the executor's training pass from a region of oneDNN operators; it "
             "cannot be called or composed directly");
  return *const_cast<DnnlTrainRegion*>(static_cast<const DnnlTrainRegion*>(attrs.parsed.get()));
}

// The backward node's parsed attributes: its parameter and the region it names, held so
// that a backward still queued on the engine when its executor goes (a script dropping a
// Module right after update()) finds its region.
struct TrainRegionGradParsed {
  TrainRegionGradParam param;
  std::shared_ptr<DnnlTrainRegion> region;
};

void ParseTrainRegionGrad(NodeAttrs* attrs) {
  auto parsed = std::make_shared<TrainRegionGradParsed>();
  parsed->param = *SchemaOf<TrainRegionGradParam>().Parse("_backward_dnnl_train_region", attrs->dict);
  const int64_t id = parsed->param.region;
  {
    RegionTable& t = Table();
    std::lock_guard<std::mutex> lock(t.mu);
    auto it = t.regions.find(id);
    parsed->region = it == t.regions.end() ? nullptr : it->second.first.lock();
  }
  WEFT_CHECK(parsed->region != nullptr, kValue, "_backward_dnnl_train_region: no training region ", id,
             " (the node is made by the executor's gradient pass, not for direct use)");
  attrs->parsed = std::move(parsed);
}

std::shared_ptr<DnnlTrainRegion> GradRegionOf(const NodeAttrs& attrs) {
  WEFT_CHECK(attrs.parsed != nullptr, kUnsupported,
             "_backward_dnnl_train_region is made by the executor's gradient pass; it cannot be called directly");
  return static_cast<const TrainRegionGradParsed*>(attrs.parsed.get())->region;
}

std::vector<int> AuxInputs(const TrainRegionSpec& s) {
  std::vector<int> aux;
  for (const auto& u : s.units)
    if (u.kind == TrainRegionSpec::Kind::kBatchNorm) {
      aux.push_back(u.moving_mean);
      aux.push_back(u.moving_var);
    }
  std::sort(aux.begin(), aux.end());
  aux.erase(std::unique(aux.begin(), aux.end()), aux.end());
  return aux;
}

std::vector<Shape> InputShapes(const TrainRegionSpec& s) {
  std::vector<Shape> shapes(s.num_inputs);
  for (const auto& v : s.values)
    if (v.input >= 0) shapes[v.input] = v.shape;
  for (const auto& u : s.units) {
    if (u.kind == TrainRegionSpec::Kind::kConv) {
      const Shape& x = s.values[u.src].shape;
      const Shape& y = s.values[u.dst].shape;
      int64_t g = u.conv.num_group;
      shapes[u.weight] = Shape{y[1], x[1] / g, u.conv.kernel[0], u.conv.kernel[1]};
      if (u.bias >= 0) shapes[u.bias] = Shape{y[1]};
    } else if (u.kind == TrainRegionSpec::Kind::kBatchNorm) {
      Shape c{s.values[u.src].shape[1]};
      for (int i : {u.gamma, u.beta, u.moving_mean, u.moving_var}) shapes[i] = c;
    }
  }
  return shapes;
}

// The primitives' scratchpad (see Impl::Scratch).
std::vector<ResourceRequest> ScratchpadRequest(const NodeAttrs&) {
  return {ResourceRequest{ResourceType::kTempSpace}};
}

bool AllFloat(const NodeAttrs&, std::vector<DType>* in, std::vector<DType>* out) {
  for (auto& t : *in) t = DType::kFloat32;
  for (auto& t : *out) t = DType::kFloat32;
  return true;
}

}  // namespace

NodeAttrs MakeDnnlTrainRegionAttrs(std::shared_ptr<DnnlTrainRegion> region, const std::string& name) {
  RegionTable& t = Table();
  {
    std::lock_guard<std::mutex> lock(t.mu);
    // Forget regions that are gone, so the table stays as small as the live executors.
    for (auto it = t.regions.begin(); it != t.regions.end();) {
      if (it->second.first.expired()) {
        t.ids.erase(it->second.second);
        it = t.regions.erase(it);
      } else {
        ++it;
      }
    }
    int64_t id = t.next++;
    t.regions[id] = {region, region.get()};
    t.ids[region.get()] = id;
  }
  NodeAttrs attrs;
  attrs.op = Op::Get("_dnnl_train_region");
  attrs.name = name;
  attrs.parsed = std::move(region);
  return attrs;
}

void WatchDnnlTrainRegion(const NodeAttrs& attrs, std::vector<NDArray> inputs) {
  static const Op* op = Op::Get("_dnnl_train_region");
  if (attrs.op == op && attrs.parsed) RegionOf(attrs).Watch(std::move(inputs));
}

WEFT_REGISTER_OP(_dnnl_train_region)
    .Describe("A region of convolution, batch-norm, relu and add nodes run by oneDNN in training (made by the "
              "executor's training pass; not for direct use). The hidden outputs hold what the gradient reads and "
              "the pass's work space.")
    .SetNumInputs([](const NodeAttrs& attrs) { return RegionOf(attrs).spec().num_inputs; })
    .SetNumOutputs([](const NodeAttrs& attrs) { return static_cast<int>(RegionOf(attrs).spec().outputs.size()) + 2; })
    .AddArgument("data", "NDArray-or-Symbol[]", "The inputs of the region")
    .SetAttr<FNumVisibleOutputs>("FNumVisibleOutputs",
                                 [](const NodeAttrs& attrs) {
                                   return static_cast<int>(RegionOf(attrs).spec().outputs.size());
                                 })
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs& attrs) { return AuxInputs(RegionOf(attrs).spec()); })
    .SetAttr<FInferShape>("FInferShape",
                          [](const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
                            const DnnlTrainRegion& r = RegionOf(attrs);
                            const auto& s = r.spec();
                            std::vector<Shape> want = InputShapes(s);
                            for (size_t i = 0; i < in->size(); ++i) {
                              WEFT_CHECK(!(*in)[i].is_known() || (*in)[i] == want[i], kShape, "_dnnl_train_region '",
                                         attrs.name, "': input ", i, " has shape ", (*in)[i].ToString(),
                                         " but the region was made for ", want[i].ToString());
                              (*in)[i] = want[i];
                            }
                            const size_t k = s.outputs.size();
                            for (size_t i = 0; i < k; ++i) (*out)[i] = s.values[s.outputs[i]].shape;
                            (*out)[k] = Shape{r.saved_floats()};
                            (*out)[k + 1] = Shape{r.work_floats(false)};
                            return true;
                          })
    .SetAttr<FInferType>("FInferType", AllFloat)
    .SetAttr<FResourceRequest>("FResourceRequest", ScratchpadRequest)
    .SetAttr<FCompute>("FCompute<cpu>",
                       [](const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
                         RegionOf(attrs).Forward(ctx, in, req, out);
                       })
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      DnnlTrainRegion& r = RegionOf(attrs);
      const auto& s = r.spec();
      int64_t id;
      {
        RegionTable& t = Table();
        std::lock_guard<std::mutex> lock(t.mu);
        id = t.ids.at(&r);
      }
      std::vector<GradValue> ins(a.out_grads.begin(), a.out_grads.begin() + s.outputs.size());
      ins.push_back(a.outputs[s.outputs.size()]);
      ins.insert(ins.end(), a.inputs.begin(), a.inputs.end());
      ins.insert(ins.end(), a.outputs.begin(), a.outputs.begin() + s.outputs.size());
      std::vector<GradValue> g = b.Call("_backward_dnnl_train_region", ins, {{"region", std::to_string(id)}});
      g.resize(s.num_inputs);  // then come the backward's work space and spare outputs
      for (int i : AuxInputs(s)) g[i] = GradValue();
      return g;
    });

WEFT_REGISTER_OP(_backward_dnnl_train_region)
    .Describe("The gradient of a _dnnl_train_region (made by the executor's gradient pass; not for direct use).")
    .SetNumInputs([](const NodeAttrs& attrs) {
      const auto& s = GradRegionOf(attrs)->spec();
      return 2 * static_cast<int>(s.outputs.size()) + 1 + s.num_inputs;
    })
    .SetNumOutputs([](const NodeAttrs& attrs) {
      auto r = GradRegionOf(attrs);
      return r->spec().num_inputs + 1 + static_cast<int>(r->spare_shapes().size());
    })
    .SetAttr<FNumVisibleOutputs>("FNumVisibleOutputs",
                                 [](const NodeAttrs& attrs) { return GradRegionOf(attrs)->spec().num_inputs; })
    .AddArgument("data", "NDArray-or-Symbol[]", "Output gradients, the saved values, the region's inputs, then its visible outputs")
    .SetParams<TrainRegionGradParam>()
    .SetAttr<FInferShape>("FInferShape",
                          [](const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
                            auto r = GradRegionOf(attrs);
                            const auto& s = r->spec();
                            std::vector<Shape> want = InputShapes(s);
                            size_t k = s.outputs.size();
                            for (size_t i = 0; i < k; ++i) (*in)[i] = s.values[s.outputs[i]].shape;
                            (*in)[k] = Shape{r->saved_floats()};
                            for (size_t i = 0; i < want.size(); ++i) (*in)[k + 1 + i] = (*out)[i] = want[i];
                            for (size_t i = 0; i < k; ++i) (*in)[k + 1 + want.size() + i] = s.values[s.outputs[i]].shape;
                            (*out)[want.size()] = Shape{r->work_floats(true)};
                            std::vector<Shape> spare = r->spare_shapes();
                            for (size_t i = 0; i < spare.size(); ++i) (*out)[want.size() + 1 + i] = spare[i];
                            return true;
                          })
    .SetAttr<FInferType>("FInferType", AllFloat)
    .SetAttr<FResourceRequest>("FResourceRequest", ScratchpadRequest)
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs& attrs) { return GradRegionOf(attrs)->backward_inplace(); })
    .SetAttr<FCompute>("FCompute<cpu>", [](const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                                           const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
      GradRegionOf(attrs)->Backward(ctx, in, req, out);
    });

// After the registration above (one translation unit initialises in order): the parser that
// keeps the region with the node.
[[maybe_unused]] const bool kTrainRegionGradParser = [] {
  OpRegistry::Get()->Register("_backward_dnnl_train_region").attr_parser = ParseTrainRegionGrad;
  return true;
}();

}  // namespace op
}  // namespace weft
