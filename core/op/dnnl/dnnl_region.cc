#include "core/op/dnnl/dnnl_region.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "core/engine/engine_impl.h"

#if defined(WEFT_USE_ONEDNN)
#include <oneapi/dnnl/dnnl.hpp>

#include "core/op/dnnl/dnnl_layout.h"
#include "core/op/dnnl/region_arena.h"
#endif

namespace weft {
namespace op {

#if defined(WEFT_USE_ONEDNN)
namespace {

using dnnl::memory;
using Kind = DnnlRegionSpec::Kind;
using Act = DnnlRegionSpec::Act;

memory::desc Any(const Shape& s) {
  return memory::desc({s[0], s[1], s[2], s[3]}, memory::data_type::f32, memory::format_tag::any);
}

// Winograd F(4x4, 3x3) (F(2x2, 3x3) where oneDNN prefers it) for 3x3 convolutions with
// unit stride and dilation: it rounds a little differently from the direct kernel (about
// 1e-6 of the output's scale), so WEFT_CONV_WINOGRAD=0 turns it off, as for the operators.
bool WinogradWanted() {
  static const bool enabled = [] {
    const char* v = std::getenv("WEFT_CONV_WINOGRAD");
    return v == nullptr || std::string(v) != "0";
  }();
  return enabled;
}

// The layout a convolution's source and destination are created with: oneDNN's blocked
// layout (nChw16c with AVX-512, nChw8c on AVX2: dnnl_layout.h), on which its direct and
// Winograd kernels ran ResNet-50 at batch 32 about 1.2x faster than on the layout oneDNN
// picks when asked (nhwc, for its brgconv kernels). Below batch 4 that holds only with
// Winograd, which oneDNN 2.6 has for AVX-512 alone and runs on the blocked layout: there
// its 3x3 kernels took 0.2-0.45 ms per ResNet-50 layer at batch 1 (2 threads, AMD EPYC
// Zen 5) against 0.43-0.5 for brgconv on nhwc, and its blocked 1x1 kernel kept pace with
// brgconv's; without Winograd brgconv on nhwc was 1.2x faster there, and a region with no
// 3x3 unit-stride convolution keeps nhwc (MobileNet's depthwise kernel was 1.3x faster on
// it at batch 1: brdgmm_dw against jit_dw). The exception is a
// convolution with a kernel larger than 1x1 and a stride: oneDNN's nChw16c kernel for
// those is its slowest (3x3 stride 2 on ResNet-50's shapes at batch 32: 210-310 GFLOP/s
// against 360 for brgconv on nhwc; at batch 1, 0.53-0.87 ms against 0.46-0.59), so such a
// convolution gets the layout oneDNN picks, which pays for the reorder of its source into
// nhwc and of its (four times smaller) result back: ResNet-18 at batch 32 ran about 3 %
// faster, ResNet-50 (fewer such layers) about 1 %.
// Whether unit `un` is a convolution Winograd can run: 3x3, unit stride and dilation, one group.
bool WinogradCandidate(const DnnlRegionSpec::Unit& un) {
  const ConvolutionParam& p = un.conv;
  if (!WinogradWanted() || un.kind != Kind::kConv || p.num_group != 1 || p.kernel.ndim() != 2) return false;
  for (int i = 0; i < 2; ++i)
    if (p.kernel[i] != 3 || (p.stride.ndim() && p.stride[i] != 1) || (p.dilate.ndim() && p.dilate[i] != 1))
      return false;
  return true;
}

// `winograd_region`: the region has a convolution that can take Winograd.
memory::desc ConvLayout(const Shape& s, bool strided_window, bool winograd_region) {
  bool blocked_batch = s[0] >= 4 || (winograd_region && DnnlChannelBlock() == 16);
  if (blocked_batch && s[1] % DnnlChannelBlock() == 0 && !strided_window)
    return memory::desc({s[0], s[1], s[2], s[3]}, memory::data_type::f32, DnnlBlockedTag());
  return Any(s);
}

dnnl::algorithm EltwiseAlg(Act a) {
  switch (a) {
    case Act::kRelu: return dnnl::algorithm::eltwise_relu;
    case Act::kSigmoid: return dnnl::algorithm::eltwise_logistic;
    case Act::kTanh: return dnnl::algorithm::eltwise_tanh;
    case Act::kSoftRelu: return dnnl::algorithm::eltwise_soft_relu;
    case Act::kNone: break;
  }
  Throw(ErrorKind::kInternal, "_dnnl_region: no oneDNN function for this activation");
}

// Where an argument's memory is at run time.
struct Loc {
  enum K { kIn, kOut, kArena, kWeights, kBias, kScratch } k = kArena;
  int index = 0;      // kIn/kOut: the node input/output; kWeights/kBias: the unit; kArena: the block
  size_t offset = 0;  // kArena: set once every block is sized
};
struct Arg {
  int arg;
  memory::desc md;
  Loc loc;
};
struct Exec {
  dnnl::primitive prim;
  std::vector<Arg> args;
  int output = -1;  // a copy to this node output (skipped when its request is kNullOp)
  std::string what;  // for DnnlRegion::primitives()
};

// The name of a 4-D layout, for the description of a region's primitives.
std::string LayoutName(const memory::desc& d) {
  static const std::pair<memory::format_tag, const char*> known[] = {{memory::format_tag::nchw, "nchw"},
                                                                     {memory::format_tag::nhwc, "nhwc"},
                                                                     {memory::format_tag::nChw16c, "nChw16c"},
                                                                     {memory::format_tag::nChw8c, "nChw8c"}};
  for (const auto& k : known)
    if (d == memory::desc(d.dims(), d.data_type(), k.first)) return k.second;
  return "blocked";
}

// The oneDNN implementation a primitive runs (e.g. "jit_wino_4x3:avx512_core").
std::string ImplName(const dnnl::primitive& p) {
  const char* name = nullptr;
  if (dnnl_primitive_desc_query(p.get_primitive_desc(), dnnl_query_impl_info_str, 0, &name) != dnnl_success || !name)
    return "unknown";
  return name;
}

std::string Reorder(const memory::desc& from, const memory::desc& to) {
  return "reorder " + LayoutName(from) + " -> " + LayoutName(to);
}

// A convolution's folded parameters and its weights in the primitive's layout, kept
// between calls while the weights and the folded scale stay the same.
struct ConvState {
  memory::desc plain_w, prim_w;
  int64_t out_channels = 0, per_channel = 0;  // weights: out_channels rows of per_channel
  bool has_bias = false;
  std::vector<float> scale, bias, scaled, cached_scale;
  std::unique_ptr<char, decltype(&std::free)> weights{nullptr, &std::free};
  const void* cached_ptr = nullptr;
  uint64_t cached_writes = 0;
  bool valid = false;
  // The arrays the convolution folds (weights, bias, the BatchNorm's four) as the last call
  // found them, buffer and engine write count: a call that finds them all unchanged skips
  // the folding, which otherwise recomputes every per-channel scale at every call.
  using Seen = std::array<std::pair<const void*, uint64_t>, 6>;
  Seen params_seen{};
  bool params_valid = false;
};

bool ParseAttrBool(const std::string& v) { return v == "True" || v == "true" || v == "1"; }

}  // namespace

struct DnnlRegion::Impl {
  DnnlRegionSpec spec;
  std::vector<memory::desc> md;  // per value: the layout it lives in
  std::vector<Exec> execs;
  std::vector<ConvState> conv;  // per unit (used by convolutions)
  size_t arena_bytes = 0, scratch_bytes = 0;
  std::unique_ptr<char, decltype(&std::free)> arena{nullptr, &std::free}, scratch{nullptr, &std::free};
  std::vector<NDArray> watched;
  std::mutex mu;
  size_t weight_reorders = 0;
  bool winograd_region = false;  // some convolution can take Winograd (ConvLayout)
  // Per step, its arguments as oneDNN memory objects, made at the first call: creating
  // them (and their argument map) at every call took about 1 % of ResNet-50's batch-1
  // inference. A call points again only those whose buffer may move (the node's inputs
  // and outputs, a bias vector) and those with a padded layout, since setting the buffer
  // is what zero-fills the padding a value sharing its arena block may have overwritten.
  std::vector<std::unordered_map<int, memory>> bound;
  std::vector<std::vector<std::pair<int, int>>> rebind;  // per step: (argument, index into its args)

  // Arena blocks, planned as the units are emitted: an internal value or a temporary holds
  // a block while it is live; blocks grow to their largest tenant.
  ArenaBlocks blocks;
  std::vector<int> block_of;  // per value, while it is live

  static Arg Block(int arg, const memory::desc& d, int block) { return {arg, d, Loc{Loc::kArena, block, 0}}; }
  Arg ValueArg(int arg, int v) const {
    const auto& val = spec.values[v];
    if (val.input >= 0) return {arg, md[v], Loc{Loc::kIn, val.input, 0}};
    return Block(arg, md[v], block_of[v]);
  }
  void AddScratch(Exec* e, const memory::desc& d) {
    scratch_bytes = std::max(scratch_bytes, d.get_size());
    e->args.push_back({DNNL_ARG_SCRATCHPAD, d, Loc{Loc::kScratch, 0, 0}});
  }
  // Gives `prim` value v in layout `want`: v itself when it has that layout, else a copy
  // reordered into a temporary block (appended to *seq, freed after the unit).
  void Source(Exec* prim, int arg, int v, const memory::desc& want, std::vector<Exec>* seq, std::vector<int>* temps) {
    if (md[v] == want) {
      prim->args.push_back(ValueArg(arg, v));
      return;
    }
    int block = blocks.Alloc(want.get_size());
    temps->push_back(block);
    Exec r;
    r.prim = dnnl::reorder(dnnl::reorder::primitive_desc(RegionEngine(), md[v], RegionEngine(), want));
    r.args = {ValueArg(DNNL_ARG_FROM, v), Block(DNNL_ARG_TO, want, block)};
    r.what = Reorder(md[v], want) + " (an operand)";
    seq->push_back(std::move(r));
    prim->args.push_back(Block(arg, want, block));
  }

  void Build();
  void EmitUnit(size_t u, const std::vector<int>& last_use);
  void Prepare(const std::vector<TBlob>& in);
};

void DnnlRegion::Impl::Build() {
  const size_t nv = spec.values.size();
  md.resize(nv);
  block_of.assign(nv, -1);
  conv.resize(spec.units.size());
  for (size_t v = 0; v < nv; ++v)
    if (spec.values[v].input >= 0) md[v] = PlainNchw(spec.values[v].shape);
  std::vector<int> last_use(nv, -1);
  for (size_t u = 0; u < spec.units.size(); ++u) {
    const auto& un = spec.units[u];
    winograd_region = winograd_region || WinogradCandidate(un);
    last_use[un.src] = static_cast<int>(u);
    if (un.src2 >= 0) last_use[un.src2] = static_cast<int>(u);
    for (int v : un.srcs) last_use[v] = static_cast<int>(u);
  }
  for (size_t u = 0; u < spec.units.size(); ++u) EmitUnit(u, last_use);
  std::vector<size_t> offset(blocks.bytes.size());
  for (size_t b = 0; b < blocks.bytes.size(); ++b) {
    offset[b] = arena_bytes;
    arena_bytes += blocks.bytes[b];
  }
  for (Exec& e : execs)
    for (Arg& a : e.args)
      if (a.loc.k == Loc::kArena) a.loc.offset = offset[a.loc.index];
}

void DnnlRegion::Impl::EmitUnit(size_t u, const std::vector<int>& last_use) {
  const auto& un = spec.units[u];
  const Shape& ds = spec.values[un.dst].shape;
  const Shape& ss = spec.values[un.src].shape;
  std::vector<int> temps;
  std::vector<Exec> seq;  // what the unit runs, in order
  Exec prim;
  // The destination gets its own block, except that a convolution adding value s may take
  // over s's block when s is an internal value read last here in the same layout and not
  // the convolution's own source (the sum post-op then accumulates in place); otherwise s
  // is first copied into the destination.
  auto place_dst = [&](const memory::desc& d) {
    md[un.dst] = d;
    if (un.sum) {
      int s = un.src2;
      if (spec.values[s].input < 0 && last_use[s] == static_cast<int>(u) && md[s] == d && s != un.src) {
        block_of[un.dst] = block_of[s];
        block_of[s] = -1;
        return;
      }
      block_of[un.dst] = blocks.Alloc(d.get_size());
      Exec r;
      r.prim = dnnl::reorder(dnnl::reorder::primitive_desc(RegionEngine(), md[s], RegionEngine(), d));
      r.args = {ValueArg(DNNL_ARG_FROM, s), Block(DNNL_ARG_TO, d, block_of[un.dst])};
      r.what = Reorder(md[s], d) + " (the value added)";
      seq.push_back(std::move(r));
      return;
    }
    block_of[un.dst] = blocks.Alloc(d.get_size());
  };

  if (un.kind == Kind::kConv) {
    const ConvolutionParam& p = un.conv;
    ConvState& cs = conv[u];
    int64_t g = p.num_group, f = ds[1], c = ss[1];
    memory::dims kd{p.kernel[0], p.kernel[1]};
    memory::dims strides{1, 1}, dil{0, 0}, pl{0, 0}, pr{0, 0};
    for (int i = 0; i < 2; ++i) {
      int64_t s = p.stride.ndim() ? p.stride[i] : 1, d = p.dilate.ndim() ? p.dilate[i] : 1;
      int64_t pad = p.pad.ndim() ? p.pad[i] : 0;
      strides[i] = s;
      dil[i] = d - 1;
      pl[i] = pad;
      // oneDNN checks dst = (src + pad_l + pad_r - extent) / stride + 1 with integer
      // division, so a last window that stops short of the input's end is a right pad of 0.
      pr[i] = std::max<int64_t>(0, (ds[2 + i] - 1) * s + (kd[i] - 1) * d + 1 - ss[2 + i] - pad);
    }
    if (g == 1) cs.plain_w = memory::desc({f, c, kd[0], kd[1]}, memory::data_type::f32, memory::format_tag::oihw);
    else
      cs.plain_w = memory::desc({g, f / g, c / g, kd[0], kd[1]}, memory::data_type::f32, memory::format_tag::goihw);
    cs.out_channels = f;
    cs.per_channel = c / g * kd[0] * kd[1];
    cs.has_bias = un.bn || un.bias >= 0;
    memory::desc any_w(cs.plain_w.dims(), memory::data_type::f32, memory::format_tag::any);
    memory::desc bias_md = cs.has_bias ? memory::desc({f}, memory::data_type::f32, memory::format_tag::x) : memory::desc();
    dnnl::post_ops po;
    if (un.sum) po.append_sum(1.f);
    if (un.act != Act::kNone) po.append_eltwise(1.f, EltwiseAlg(un.act), 0.f, 0.f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(po);
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    // Not for grouped convolutions (no brgconv kernel for them), nor for one reading a
    // few channels (a network's first: its plain source suits oneDNN's kernel for it).
    bool strided_window =
        g == 1 && (kd[0] > 1 || kd[1] > 1) && (strides[0] > 1 || strides[1] > 1) && c % DnnlChannelBlock() == 0;
    auto make_pd = [&](dnnl::algorithm alg, bool free) {
      dnnl::convolution_forward::desc desc(
          dnnl::prop_kind::forward_inference, alg, free ? Any(ss) : ConvLayout(ss, strided_window, winograd_region),
          any_w, bias_md, free ? Any(ds) : ConvLayout(ds, strided_window, winograd_region), strides, dil, pl, pr);
      return dnnl::convolution_forward::primitive_desc(desc, attr, RegionEngine());
    };
    dnnl::convolution_forward::primitive_desc pd;
    bool wino = WinogradWanted() && g == 1 && kd[0] == 3 && kd[1] == 3 && strides[0] == 1 &&
                strides[1] == 1 && dil[0] == 0 && dil[1] == 0;
    if (wino) {
      try {
        pd = make_pd(dnnl::algorithm::convolution_winograd, false);
      } catch (const dnnl::error&) {
        wino = false;  // not for this shape or machine
      }
    }
    if (!wino) {
      pd = make_pd(dnnl::algorithm::convolution_direct, false);
      if (DnnlIsReference(pd)) pd = make_pd(dnnl::algorithm::convolution_direct, true);
    }
    cs.prim_w = pd.weights_desc();
    cs.weights.reset(AlignedAlloc(cs.prim_w.get_size(), "_dnnl_region"));
    prim.prim = dnnl::convolution_forward(pd);
    Source(&prim, DNNL_ARG_SRC, un.src, pd.src_desc(), &seq, &temps);
    prim.args.push_back({DNNL_ARG_WEIGHTS, cs.prim_w, Loc{Loc::kWeights, static_cast<int>(u), 0}});
    if (cs.has_bias) prim.args.push_back({DNNL_ARG_BIAS, bias_md, Loc{Loc::kBias, static_cast<int>(u), 0}});
    place_dst(pd.dst_desc());
    AddScratch(&prim, pd.scratchpad_desc());
  } else if (un.kind == Kind::kPool) {
    const PoolingParam& p = un.pool;
    memory::dims kd, strides{1, 1}, pl{0, 0}, pr{0, 0};
    if (p.global_pool) {
      kd = {ss[2], ss[3]};
    } else {
      kd = {p.kernel[0], p.kernel[1]};
      for (int i = 0; i < 2; ++i) {
        strides[i] = p.stride.ndim() ? p.stride[i] : 1;
        pl[i] = p.pad.ndim() ? p.pad[i] : 0;
        pr[i] = std::max<int64_t>(0, (ds[2 + i] - 1) * strides[i] + kd[i] - ss[2 + i] - pl[i]);
      }
    }
    bool include_pad = p.count_include_pad == "None" || ParseAttrBool(p.count_include_pad);
    dnnl::algorithm alg = p.pool_type == "max"  ? dnnl::algorithm::pooling_max
                          : include_pad         ? dnnl::algorithm::pooling_avg_include_padding
                                                : dnnl::algorithm::pooling_avg_exclude_padding;
    // A pooling reading the region's plain NCHW input takes it reordered into the blocked
    // layout: on plain NCHW oneDNN 2.6 has only its reference kernel on AVX2, which took
    // 30 % of an Inception-BN inference (the pooling branch after each concat).
    memory::desc src_md = md[un.src];
    if (spec.values[un.src].input >= 0 && ss[1] % DnnlChannelBlock() == 0)
      src_md = memory::desc({ss[0], ss[1], ss[2], ss[3]}, memory::data_type::f32, DnnlBlockedTag());
    dnnl::pooling_forward::desc desc(dnnl::prop_kind::forward_inference, alg, src_md, Any(ds), strides, kd, pl, pr);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::pooling_forward::primitive_desc pd(desc, attr, RegionEngine());
    prim.prim = dnnl::pooling_forward(pd);
    Source(&prim, DNNL_ARG_SRC, un.src, pd.src_desc(), &seq, &temps);
    place_dst(pd.dst_desc());
    AddScratch(&prim, pd.scratchpad_desc());
  } else if (un.kind == Kind::kEltwise) {
    dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_inference, EltwiseAlg(un.act), md[un.src], 0.f, 0.f);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::eltwise_forward::primitive_desc pd(desc, attr, RegionEngine());
    prim.prim = dnnl::eltwise_forward(pd);
    Source(&prim, DNNL_ARG_SRC, un.src, pd.src_desc(), &seq, &temps);
    place_dst(pd.dst_desc());
    AddScratch(&prim, pd.scratchpad_desc());
  } else if (un.kind == Kind::kCopy) {
    memory::desc d = PlainNchw(ds);
    prim.prim = dnnl::reorder(dnnl::reorder::primitive_desc(RegionEngine(), md[un.src], RegionEngine(), d));
    Source(&prim, DNNL_ARG_FROM, un.src, md[un.src], &seq, &temps);
    place_dst(d);
  } else if (un.kind == Kind::kConcat) {
    // Joined in the blocked layout when every part fills whole channel blocks (the branches
    // of an Inception block: the next block's convolutions then read the result as it is,
    // where a concatenation outside the region cost each of them a reorder of its plain
    // NCHW copy, and each branch one into it), else in plain NCHW.
    bool blocked = true;
    for (int v : un.srcs) blocked = blocked && spec.values[v].shape[1] % DnnlChannelBlock() == 0;
    auto layout = [&](const Shape& s) {
      return blocked ? memory::desc({s[0], s[1], s[2], s[3]}, memory::data_type::f32, DnnlBlockedTag()) : PlainNchw(s);
    };
    std::vector<memory::desc> parts;
    for (int v : un.srcs) parts.push_back(layout(spec.values[v].shape));
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::concat::primitive_desc pd(layout(ds), 1, parts, RegionEngine(), attr);
    prim.prim = dnnl::concat(pd);
    for (size_t i = 0; i < un.srcs.size(); ++i)
      Source(&prim, DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), un.srcs[i], pd.src_desc(static_cast<int>(i)), &seq,
             &temps);
    place_dst(pd.dst_desc());
    AddScratch(&prim, pd.scratchpad_desc());
  } else {  // kAdd
    const memory::desc& a = md[un.src];
    dnnl::binary::desc desc(dnnl::algorithm::binary_add, a, a, a);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::binary::primitive_desc pd(desc, attr, RegionEngine());
    prim.prim = dnnl::binary(pd);
    Source(&prim, DNNL_ARG_SRC_0, un.src, a, &seq, &temps);
    Source(&prim, DNNL_ARG_SRC_1, un.src2, a, &seq, &temps);
    place_dst(pd.dst_desc());
    AddScratch(&prim, pd.scratchpad_desc());
  }
  prim.args.push_back(Block(DNNL_ARG_DST, md[un.dst], block_of[un.dst]));
  static const char* kinds[] = {"convolution", "pooling", "eltwise", "add", "copy", "concat"};
  prim.what = std::string(kinds[static_cast<int>(un.kind)]) + " " + ImplName(prim.prim) + " " +
              LayoutName(prim.args.front().md) + " -> " + LayoutName(md[un.dst]);
  seq.push_back(std::move(prim));
  int out = spec.values[un.dst].output;
  if (out >= 0) {
    Exec r;
    r.prim = dnnl::reorder(dnnl::reorder::primitive_desc(RegionEngine(), md[un.dst], RegionEngine(), PlainNchw(ds)));
    r.what = Reorder(md[un.dst], PlainNchw(ds)) + " (output " + std::to_string(out) + ")";
    r.output = out;
    r.args = {Block(DNNL_ARG_FROM, md[un.dst], block_of[un.dst]), Arg{DNNL_ARG_TO, PlainNchw(ds), Loc{Loc::kOut, out, 0}}};
    seq.push_back(std::move(r));
  }
  for (Exec& e : seq) {
    e.what = un.name + ": " + e.what;
    execs.push_back(std::move(e));
  }
  for (int b : temps) blocks.Free(b);
  std::vector<int> read = un.srcs;
  read.push_back(un.src);
  read.push_back(un.src2);
  for (int v : read)
    if (v >= 0 && last_use[v] == static_cast<int>(u) && block_of[v] >= 0) {
      blocks.Free(block_of[v]);
      block_of[v] = -1;
    }
  // A value nothing inside reads (a region output only) is dead once copied out.
  if (last_use[un.dst] < 0) {
    blocks.Free(block_of[un.dst]);
    block_of[un.dst] = -1;
  }
}

// Folds each convolution's BatchNorm from the current parameters and brings its weights
// into the primitive's layout when they (or the folded scale) changed.
void DnnlRegion::Impl::Prepare(const std::vector<TBlob>& in) {
  for (size_t u = 0; u < spec.units.size(); ++u) {
    const auto& un = spec.units[u];
    if (un.kind != Kind::kConv) continue;
    ConvState& cs = conv[u];
    ConvState::Seen seen{};
    bool all_watched = true;
    int slot = 0;
    for (int i : {un.weight, un.bias, un.gamma, un.beta, un.mean, un.var}) {
      if (i < 0) {
        ++slot;
        continue;
      }
      if (static_cast<size_t>(i) >= watched.size()) {
        all_watched = false;
        break;
      }
      seen[slot++] = {in[i].dptr, watched[i].var()->writes.load(std::memory_order_acquire)};
    }
    if (all_watched && cs.valid && cs.params_valid && seen == cs.params_seen) continue;
    cs.params_valid = false;
    const int64_t f = cs.out_channels;
    const float* b = un.bias >= 0 ? in[un.bias].ptr<float>() : nullptr;
    cs.scale.clear();
    if (un.bn) {
      const float* gamma = in[un.gamma].ptr<float>();
      const float* beta = in[un.beta].ptr<float>();
      const float* mean = in[un.mean].ptr<float>();
      const float* var = in[un.var].ptr<float>();
      cs.scale.resize(f);
      cs.bias.resize(f);
      for (int64_t o = 0; o < f; ++o) {
        double s = (un.fix_gamma ? 1.0 : gamma[o]) / std::sqrt(static_cast<double>(var[o]) + un.eps);
        cs.scale[o] = static_cast<float>(s);
        cs.bias[o] = static_cast<float>(((b ? b[o] : 0.0) - mean[o]) * s + beta[o]);
      }
    } else if (b) {
      cs.bias.assign(b, b + f);
    }
    const TBlob& w = in[un.weight];
    uint64_t writes = 0;
    bool watched_w = static_cast<size_t>(un.weight) < watched.size();
    if (watched_w) writes = watched[un.weight].var()->writes.load(std::memory_order_acquire);
    if (cs.valid && watched_w && cs.cached_ptr == w.dptr && cs.cached_writes == writes && cs.cached_scale == cs.scale) {
      cs.params_seen = seen;
      cs.params_valid = all_watched;
      continue;
    }
    const float* src = w.ptr<float>();
    if (!cs.scale.empty()) {
      cs.scaled.resize(static_cast<size_t>(f * cs.per_channel));
      for (int64_t o = 0; o < f; ++o)
        for (int64_t k = 0; k < cs.per_channel; ++k) cs.scaled[o * cs.per_channel + k] = src[o * cs.per_channel + k] * cs.scale[o];
      src = cs.scaled.data();
    }
    static thread_local dnnl::stream strm(RegionEngine());
    memory from(cs.plain_w, RegionEngine(), const_cast<float*>(src));
    memory to(cs.prim_w, RegionEngine(), cs.weights.get());
    dnnl::reorder(from, to).execute(strm, from, to);
    strm.wait();
    ++weight_reorders;
    cs.valid = true;
    cs.cached_ptr = w.dptr;
    cs.cached_writes = writes;
    cs.cached_scale = cs.scale;
    cs.params_seen = seen;
    cs.params_valid = all_watched;
  }
}

DnnlRegion::DnnlRegion(DnnlRegionSpec spec) : impl_(std::make_unique<Impl>()) {
  impl_->spec = std::move(spec);
  try {
    impl_->Build();
  } catch (const dnnl::error& e) {
    Throw(ErrorKind::kUnsupported, "_dnnl_region: oneDNN refused a primitive: ", e.what());
  }
}

void DnnlRegion::Run(const std::vector<TBlob>& in, const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  for (const auto& v : m.spec.values)
    WEFT_CHECK(v.input < 0 || in[v.input].shape == v.shape, kShape, "_dnnl_region: input ", v.input,
               " has shape ", in[v.input].shape.ToString(), " but the region was made for ", v.shape.ToString());
  for (size_t i = 0; i < req.size(); ++i)
    WEFT_CHECK(req[i] != OpReq::kAddTo, kUnsupported, "_dnnl_region: output ", i,
               " asks to be added to; a region only writes its outputs");
  if (!m.arena) {
    m.arena.reset(AlignedAlloc(m.arena_bytes, "_dnnl_region"));
    m.scratch.reset(AlignedAlloc(m.scratch_bytes, "_dnnl_region"));
  }
  m.Prepare(in);
  auto where = [&](const Loc& l) -> void* {
    switch (l.k) {
      case Loc::kIn: return in[l.index].dptr;
      case Loc::kOut: return out[l.index].dptr;
      case Loc::kArena: return m.arena.get() + l.offset;
      case Loc::kWeights: return m.conv[l.index].weights.get();
      case Loc::kBias: return m.conv[l.index].bias.data();
      case Loc::kScratch: return m.scratch.get();
    }
    return nullptr;
  };
  if (m.bound.empty()) {
    m.bound.resize(m.execs.size());
    m.rebind.resize(m.execs.size());
    for (size_t i = 0; i < m.execs.size(); ++i)
      for (size_t j = 0; j < m.execs[i].args.size(); ++j) {
        const Arg& a = m.execs[i].args[j];
        m.bound[i].emplace(a.arg, memory(a.md, RegionEngine(), where(a.loc)));
        const dnnl_memory_desc_t& d = a.md.data;
        bool padded = !std::equal(d.dims, d.dims + d.ndims, d.padded_dims);
        if (padded || a.loc.k == Loc::kIn || a.loc.k == Loc::kOut || a.loc.k == Loc::kBias)
          m.rebind[i].emplace_back(a.arg, static_cast<int>(j));
      }
  } else {
    for (size_t i = 0; i < m.execs.size(); ++i)
      for (const auto& r : m.rebind[i]) m.bound[i].at(r.first).set_data_handle(where(m.execs[i].args[r.second].loc));
  }
  static thread_local dnnl::stream strm(RegionEngine());
  for (size_t i = 0; i < m.execs.size(); ++i) {
    const Exec& e = m.execs[i];
    if (e.output >= 0 && req[e.output] == OpReq::kNullOp) continue;
    e.prim.execute(strm, m.bound[i]);
  }
  strm.wait();
}

size_t DnnlRegion::internal_bytes() const { return impl_->arena_bytes + impl_->scratch_bytes; }
size_t DnnlRegion::weight_reorders() const { return impl_->weight_reorders; }
std::vector<std::string> DnnlRegion::primitives() const {
  std::vector<std::string> r;
  for (const Exec& e : impl_->execs) r.push_back(e.what);
  return r;
}

bool DnnlRegionsAvailable() { return true; }

#else  // no oneDNN: the pass makes no regions

struct DnnlRegion::Impl {
  DnnlRegionSpec spec;
  std::vector<NDArray> watched;
};

DnnlRegion::DnnlRegion(DnnlRegionSpec spec) : impl_(std::make_unique<Impl>()) {
  impl_->spec = std::move(spec);
  Throw(ErrorKind::kUnsupported, "_dnnl_region: Weft was built without oneDNN");
}
void DnnlRegion::Run(const std::vector<TBlob>&, const std::vector<OpReq>&, const std::vector<TBlob>&) {
  Throw(ErrorKind::kUnsupported, "_dnnl_region: Weft was built without oneDNN");
}
size_t DnnlRegion::internal_bytes() const { return 0; }
size_t DnnlRegion::weight_reorders() const { return 0; }
std::vector<std::string> DnnlRegion::primitives() const { return {}; }
bool DnnlRegionsAvailable() { return false; }

#endif

DnnlRegion::~DnnlRegion() = default;
const DnnlRegionSpec& DnnlRegion::spec() const { return impl_->spec; }
void DnnlRegion::Watch(std::vector<NDArray> inputs) { impl_->watched = std::move(inputs); }

namespace {

DnnlRegion& RegionOf(const NodeAttrs& attrs) {
  WEFT_CHECK(attrs.parsed != nullptr, kUnsupported,
             "_dnnl_region is made by the executor's inference pass from a region of oneDNN operators; it cannot "
             "be called or composed directly");
  return *const_cast<DnnlRegion*>(static_cast<const DnnlRegion*>(attrs.parsed.get()));
}

}  // namespace

NodeAttrs MakeDnnlRegionAttrs(std::shared_ptr<DnnlRegion> region, const std::string& name) {
  NodeAttrs attrs;
  attrs.op = Op::Get("_dnnl_region");
  attrs.name = name;
  attrs.parsed = std::move(region);
  return attrs;
}

WEFT_REGISTER_OP(_dnnl_region)
    .Describe("A region of convolution, batch-norm, activation, add, pooling and concat nodes run by oneDNN at "
              "inference (made by the executor's inference pass; not for direct use).")
    .SetNumInputs([](const NodeAttrs& attrs) { return RegionOf(attrs).spec().num_inputs; })
    .SetNumOutputs([](const NodeAttrs& attrs) { return static_cast<int>(RegionOf(attrs).spec().outputs.size()); })
    .AddArgument("data", "NDArray-or-Symbol[]", "The inputs of the region")
    .SetAttr<FInferShape>("FInferShape",
                          [](const NodeAttrs& attrs, std::vector<Shape>*, std::vector<Shape>* out) {
                            const auto& s = RegionOf(attrs).spec();
                            for (size_t i = 0; i < out->size(); ++i) (*out)[i] = s.values[s.outputs[i]].shape;
                            return true;
                          })
    .SetAttr<FInferType>("FInferType",
                         [](const NodeAttrs&, std::vector<DType>* in, std::vector<DType>* out) {
                           for (auto& t : *in) t = DType::kFloat32;
                           for (auto& t : *out) t = DType::kFloat32;
                           return true;
                         })
    .SetAttr<FCompute>("FCompute<cpu>", [](const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                                           const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
      RegionOf(attrs).Run(in, req, out);
    });

}  // namespace op
}  // namespace weft
