// The kernels of quantized_product.h.
#include "core/op/quantization/quantized_product.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#if defined(WEFT_USE_ONEDNN)
#include <oneapi/dnnl/dnnl.hpp>

#include "core/op/dnnl/dnnl_layout.h"
#endif

namespace weft {
namespace op {
namespace quant {

void RescaleBias(const int8_t* b, int64_t n, double bias_step, double acc_step, int32_t* out,
                 const std::vector<double>& acc_steps) {
  for (int64_t i = 0; i < n; ++i) {
    const double step = acc_steps.empty() ? acc_step : acc_steps[static_cast<size_t>(i)];
    out[i] = Saturate<int32_t>(step > 0 ? b[i] * (bias_step / step) : 0.0);
  }
}

namespace {

// Calls f(typed pointer) for an int8 or uint8 array.
template <typename F>
void With8Bit(DType t, const void* p, F&& f) {
  if (t == DType::kUint8) f(static_cast<const uint8_t*>(p));
  else f(static_cast<const int8_t*>(p));
}

double SumAt(const Epilogue& e, const void* sum, int64_t i) {
  if (!e.sum) return 0.0;
  return e.sum_type == DType::kUint8 ? static_cast<const uint8_t*>(sum)[i] : static_cast<const int8_t*>(sum)[i];
}

// Writes acc[i] through the epilogue into y[offset + i] for i in [0, count): all of
// output channel `channel`, or with channel < 0 (a row of an inner product) item i of
// channel i.
template <typename T>
void StoreAs(const Epilogue& e, const int32_t* acc, int64_t count, const void* sum, T* y, int64_t offset,
             int64_t channel) {
  if constexpr (std::is_integral_v<T>) {
    if (!e.sum && !(e.out == DType::kInt32 && !e.relu && e.scales.empty())) {
      // No sum: Finish's arithmetic with its choices made once, loops the compiler
      // vectorises (the split products' epilogue runs them on every value).
      const double lo = e.relu ? 0.0 : static_cast<double>(std::numeric_limits<T>::lowest());
      const double hi = static_cast<double>(std::numeric_limits<T>::max());
      T* out = y + offset;
      auto put = [&](int64_t i, float scale) {
        const double v = std::rint(static_cast<double>(static_cast<float>(acc[i]) * scale));
        out[i] = static_cast<T>(std::min(std::max(v, lo), hi));
      };
      if (channel < 0 && !e.scales.empty()) {
        for (int64_t i = 0; i < count; ++i) put(i, e.scales[static_cast<size_t>(i)]);
      } else {
        const float scale = e.scales.empty() ? e.scale : e.scales[static_cast<size_t>(channel)];
        for (int64_t i = 0; i < count; ++i) put(i, scale);
      }
      return;
    }
  }
  for (int64_t i = 0; i < count; ++i)
    y[offset + i] = Finish<T>(e, acc[i], SumAt(e, sum, offset + i), channel < 0 ? i : channel);
}

void Store(const Epilogue& e, const int32_t* acc, int64_t count, const void* sum, void* y, int64_t offset,
           int64_t channel) {
  if (e.out == DType::kInt32 && !e.sum && !e.relu && e.scales.empty()) {
    // The accumulators as they are (Finish's first case), copied at once.
    std::memcpy(static_cast<int32_t*>(y) + offset, acc, static_cast<size_t>(count) * sizeof(int32_t));
    return;
  }
  if (e.out == DType::kFloat32) StoreAs(e, acc, count, sum, static_cast<float*>(y), offset, channel);
  else if (e.out == DType::kInt32) StoreAs(e, acc, count, sum, static_cast<int32_t*>(y), offset, channel);
  else if (e.out == DType::kUint8) StoreAs(e, acc, count, sum, static_cast<uint8_t*>(y), offset, channel);
  else StoreAs(e, acc, count, sum, static_cast<int8_t*>(y), offset, channel);
}

}  // namespace

namespace {

// Copies a (n, a, b) array of `bytes`-wide elements to (n, b, a).
void SwapLastTwo(const void* from, void* to, int64_t n, int64_t a, int64_t b, size_t bytes) {
  const char* src = static_cast<const char*>(from);
  char* dst = static_cast<char*>(to);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t r = 0; r < a; ++r)
      for (int64_t c = 0; c < b; ++c)
        std::memcpy(dst + ((i * b + c) * a + r) * bytes, src + ((i * a + r) * b + c) * bytes, bytes);
}

size_t Width(DType t) { return t == DType::kInt32 || t == DType::kFloat32 ? 4 : 1; }

}  // namespace

void ReferenceConv(const ConvGeom& g, DType src, const void* x, const int8_t* w, const int32_t* bias,
                   const Epilogue& e, const void* sum, void* y, bool channels_last) {
  if (channels_last) {
    // The loops below are channels-first: permute in, run them, permute out.
    const int64_t I = g.InSize(), O = g.OutSize(), K = g.KSize(), cg = g.c / g.g;
    std::vector<char> xc(static_cast<size_t>(g.n * g.c * I)), wc(static_cast<size_t>(g.f * cg * K));
    std::vector<char> sc(e.sum ? static_cast<size_t>(g.n * g.f * O) : 0), yc(static_cast<size_t>(g.n * g.f * O) * Width(e.out));
    SwapLastTwo(x, xc.data(), g.n, I, g.c, 1);
    SwapLastTwo(w, wc.data(), g.f, K, cg, 1);
    if (e.sum) SwapLastTwo(sum, sc.data(), g.n, O, g.f, 1);
    ReferenceConv(g, src, xc.data(), reinterpret_cast<const int8_t*>(wc.data()), bias, e,
                  e.sum ? sc.data() : nullptr, yc.data(), false);
    SwapLastTwo(yc.data(), y, g.n, g.f, O, Width(e.out));
    return;
  }
  const int64_t cg = g.c / g.g, fg = g.f / g.g, K = g.KSize(), O = g.OutSize(), I = g.InSize();
  With8Bit(src, x, [&](auto* xs) {
    ParallelFor(g.n * g.f, 1, [&](int64_t lo, int64_t hi) {
      std::vector<int32_t> acc(static_cast<size_t>(O));
      for (int64_t nf = lo; nf < hi; ++nf) {
        const int64_t n = nf / g.f, f = nf % g.f, grp = f / fg;
        std::fill(acc.begin(), acc.end(), bias ? bias[f] : 0);
        for (int64_t ci = 0; ci < cg; ++ci) {
          const auto* xc = xs + (n * g.c + grp * cg + ci) * I;
          const int8_t* wc = w + (f * cg + ci) * K;
          for (int64_t kk = 0; kk < K; ++kk) {
            const int64_t kd = kk / (g.k[1] * g.k[2]), kh = kk / g.k[2] % g.k[1], kw = kk % g.k[2];
            const int32_t wv = wc[kk];
            if (wv == 0) continue;
            for (int64_t od = 0; od < g.out[0]; ++od) {
              const int64_t id = od * g.s[0] - g.pl[0] + kd * g.d[0];
              if (id < 0 || id >= g.in[0]) continue;
              for (int64_t oh = 0; oh < g.out[1]; ++oh) {
                const int64_t ih = oh * g.s[1] - g.pl[1] + kh * g.d[1];
                if (ih < 0 || ih >= g.in[1]) continue;
                const auto* xrow = xc + (id * g.in[1] + ih) * g.in[2];
                int32_t* arow = acc.data() + (od * g.out[1] + oh) * g.out[2];
                for (int64_t ow = 0; ow < g.out[2]; ++ow) {
                  const int64_t iw = ow * g.s[2] - g.pl[2] + kw * g.d[2];
                  if (iw >= 0 && iw < g.in[2]) arow[ow] += wv * static_cast<int32_t>(xrow[iw]);
                }
              }
            }
          }
        }
        Store(e, acc.data(), O, sum, y, nf * O, f);
      }
    });
  });
}

void ReferenceFc(int64_t m, int64_t k, int64_t n, DType src, const void* x, const int8_t* w, const int32_t* bias,
                 const Epilogue& e, const void* sum, void* y) {
  With8Bit(src, x, [&](auto* xs) {
    ParallelFor(m, 1, [&](int64_t lo, int64_t hi) {
      std::vector<int32_t> acc(static_cast<size_t>(n));
      for (int64_t r = lo; r < hi; ++r) {
        const auto* xr = xs + r * k;
        for (int64_t j = 0; j < n; ++j) {
          const int8_t* wr = w + j * k;
          int32_t s = bias ? bias[j] : 0;
          for (int64_t i = 0; i < k; ++i) s += static_cast<int32_t>(xr[i]) * wr[i];
          acc[j] = s;
        }
        Store(e, acc.data(), n, sum, y, r * n, -1);
      }
    });
  });
}

#if defined(WEFT_USE_ONEDNN)
using dnnl::memory;

namespace {

memory::data_type DnnlType(DType t) {
  switch (t) {
    case DType::kInt8: return memory::data_type::s8;
    case DType::kUint8: return memory::data_type::u8;
    case DType::kFloat32: return memory::data_type::f32;
    default: return memory::data_type::s32;
  }
}

size_t Align(size_t b) { return (b + 63) / 64 * 64; }

// One primitive argument and how the caller's plain array meets it: used in place when
// the layouts agree, otherwise reordered through the temp space.
struct Arg {
  int id = 0;
  memory::desc user, prim;
  bool output = false, reorder = false;
  dnnl::reorder re;
  size_t offset = 0;
};

}  // namespace

struct Int8Plan {
  dnnl::primitive prim;
  // Split (u8 data without VNNI, see VnniProducts): the primitive computes, with int32
  // output and nothing fused, each output channel c twice, against hi = floor(w / 2) and
  // against lo = w - 2 * hi (0 or 1), channels ordered per group: a group's fg hi channels,
  // then its fg lo ones. Each |hi| <= 64 keeps vpmaddubsw's pair of u8 x s8 products
  // (<= 2 * 255 * 64 = 32640) within int16, so 2 * hi-sum + lo-sum is the exact
  // accumulator; the bias, the epilogue and the sum are then applied by Store.
  bool split = false;
  Epilogue epilogue;
  bool split_bias = false;
  // The output as [outer][channels][inner] (conv NCHW: n, f, spatial; NHWC and FC: rows,
  // f, 1), fg channels per group and `filter` weights per output channel.
  int64_t outer = 0, channels = 0, inner = 0, fg = 0, filter = 0;
  size_t split_w_offset = 0, split_acc_offset = 0;
  // s8 data of an inner product on a split plan: oneDNN's s8 x s8 GEMM saturates without
  // VNNI too, so the data goes in as u8 x + 128 (`shifted` bytes at shift_x_offset) and
  // 128 * the row's weight sum is taken out again.
  // A convolution's shifted data leaves its padding at u8 0, so what is taken out at an
  // output position is 128 * the weights of the taps inside the input there (`geom`).
  bool shift_data = false, conv = false, channels_last = false;
  // The primitive's int32 output is channels-last while the output is channels-first (the
  // layout oneDNN's int8 convolutions write): read as it is instead of reordered first.
  bool wide_channels_last = false;
  ConvGeom geom;
  size_t shift_x_offset = 0, shifted = 0;
  std::string impl;
  Arg src, wei, bias, dst;
  bool has_bias = false;
  // The sum input: reordered (converted to int32 for an int32 output) into the primitive's
  // destination before it runs, where oneDNN's sum post-op reads it.
  bool has_sum = false;
  memory::desc sum_user, sum_prim;
  dnnl::reorder sum_re;
  // A sum in another layout than the output's: where it is copied first when the executor
  // runs the layer in place of it (its reorder cannot read and write the same bytes).
  bool sum_layout_differs = false;
  size_t sum_copy_offset = 0;
  memory::desc scratch;
  size_t scratch_offset = 0, temp_bytes = 0;
};

namespace {

void Place(Int8Plan* p, Arg* a, int id, const memory::desc& user, const memory::desc& prim, bool output) {
  auto& eng = RegionEngine();
  a->id = id;
  a->user = user;
  a->prim = prim;
  a->output = output;
  a->reorder = user != prim;
  if (a->reorder) {
    a->re = output ? dnnl::reorder(dnnl::reorder::primitive_desc(eng, prim, eng, user))
                   : dnnl::reorder(dnnl::reorder::primitive_desc(eng, user, eng, prim));
    a->offset = p->temp_bytes;
    p->temp_bytes += Align(prim.get_size());
  }
}

dnnl::primitive_attr MakeAttr(const Epilogue& e) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  // Channel-wise scales run along the output's dimension 1 (conv channels, FC outputs).
  if (!e.scales.empty()) attr.set_output_scales(1 << 1, e.scales);
  else if (e.scale != 1.0f) attr.set_output_scales(0, {e.scale});
  dnnl::post_ops ops;
  if (e.sum) {
    // An 8-bit sum of the other signedness is read through the output's bytes as its own
    // type; a wide output holds the sum already converted.
    if (!WideOutput(e.out) && e.sum_type != e.out) ops.append_sum(e.sum_scale, DnnlType(e.sum_type));
    else ops.append_sum(e.sum_scale);
  }
  if (e.relu) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  attr.set_post_ops(ops);
  return attr;
}

template <typename PD>
void Finalize(Int8Plan* p, const PD& pd, const memory::desc& src, const memory::desc& wei, const memory::desc& dst,
              const Epilogue& e, bool bias, const memory::desc* sum_layout = nullptr) {
  p->impl = pd.impl_info_str();
  Place(p, &p->src, DNNL_ARG_SRC, src, pd.src_desc(), false);
  Place(p, &p->wei, DNNL_ARG_WEIGHTS, wei, pd.weights_desc(), false);
  p->has_bias = bias;
  if (bias) Place(p, &p->bias, DNNL_ARG_BIAS, pd.bias_desc(), pd.bias_desc(), false);
  Place(p, &p->dst, DNNL_ARG_DST, dst, pd.dst_desc(), true);
  if (e.sum) {
    p->has_sum = true;
    memory::desc user = sum_layout ? *sum_layout : dst, prim = pd.dst_desc();
    user.data.data_type = memory::convert_to_c(DnnlType(e.sum_type));
    if (sum_layout && *sum_layout != dst) {
      p->sum_layout_differs = true;
      p->sum_copy_offset = p->temp_bytes;
      p->temp_bytes += Align(user.get_size());
    }
    if (!WideOutput(e.out)) prim.data.data_type = memory::convert_to_c(DnnlType(e.sum_type));
    p->sum_user = user;
    p->sum_prim = prim;
    p->sum_re = dnnl::reorder(dnnl::reorder::primitive_desc(RegionEngine(), user, RegionEngine(), prim));
  }
  p->scratch = pd.scratchpad_desc();
  p->scratch_offset = p->temp_bytes;
  p->temp_bytes += Align(p->scratch.get_size());
}

std::string EpilogueKey(const Epilogue& e) {
  std::string k;
  for (int64_t v : {int64_t(e.out), int64_t(e.relu), int64_t(e.sum), int64_t(e.sum_type)}) k += std::to_string(v) + ',';
  uint32_t bits[2];
  std::memcpy(&bits[0], &e.scale, 4);
  std::memcpy(&bits[1], &e.sum_scale, 4);
  k += std::to_string(bits[0]) + ',' + std::to_string(bits[1]);
  for (float s : e.scales) {
    std::memcpy(&bits[0], &s, 4);
    k += ',' + std::to_string(bits[0]);
  }
  return k;
}

// Plans by key; a refused geometry is remembered as null. The scales are part of the key
// (oneDNN 2.6 bakes them into its JIT kernels): calibrated graphs have fixed ones, and an
// uncalibrated int32 output has none, so the cache stays small; it is emptied should a
// graph with ever-changing ranges fill it.
std::shared_ptr<const Int8Plan> Cached(const std::string& key, const std::function<std::shared_ptr<Int8Plan>()>& make) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::shared_ptr<const Int8Plan>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= 1024) cache.clear();
  std::shared_ptr<const Int8Plan> plan;
  try {
    plan = make();
  } catch (const dnnl::error&) {
    plan = nullptr;
  }
  cache.emplace(key, plan);
  return plan;
}

memory::dims Dims(int64_t a, int64_t b, const int64_t* sp, int nd) {
  memory::dims d{a, b};
  for (int i = 3 - nd; i < 3; ++i) d.push_back(sp[i]);
  return d;
}

memory::format_tag PlainTag(int nd) {
  static const memory::format_tag tags[] = {memory::format_tag::ncw, memory::format_tag::nchw,
                                            memory::format_tag::ncdhw};
  return tags[nd - 1];
}

memory::desc PlainWeights(const ConvGeom& g, bool channels_last) {
  const int nd = g.nd;
  if (channels_last) {
    if (g.g == 1) return memory::desc({g.f, g.c, g.k[1], g.k[2]}, memory::data_type::s8, memory::format_tag::ohwi);
    return memory::desc({g.g, g.f / g.g, g.c / g.g, g.k[1], g.k[2]}, memory::data_type::s8, memory::format_tag::gohwi);
  }
  if (g.g == 1) {
    static const memory::format_tag tags[] = {memory::format_tag::oiw, memory::format_tag::oihw,
                                              memory::format_tag::oidhw};
    return memory::desc(Dims(g.f, g.c, g.k, nd), memory::data_type::s8, tags[nd - 1]);
  }
  static const memory::format_tag tags[] = {memory::format_tag::goiw, memory::format_tag::goihw,
                                            memory::format_tag::goidhw};
  memory::dims d{g.g, g.f / g.g, g.c / g.g};
  for (int i = 3 - nd; i < 3; ++i) d.push_back(g.k[i]);
  return memory::desc(d, memory::data_type::s8, tags[nd - 1]);
}

memory::desc Any(const memory::desc& d) { return memory::desc(d.dims(), d.data_type(), memory::format_tag::any); }

dnnl::stream& Stream() {
  static thread_local dnnl::stream strm(RegionEngine());
  return strm;
}

// Makes `p` a split plan (see Int8Plan::split): its temp space gets the split weights and the
// int32 output of both halves.
void SetSplit(Int8Plan* p, const Epilogue& e, bool bias, int64_t outer, int64_t channels, int64_t inner, int64_t fg,
              int64_t filter) {
  p->split = true;
  p->epilogue = e;
  p->split_bias = bias;
  p->outer = outer;
  p->channels = channels;
  p->inner = inner;
  p->fg = fg;
  p->filter = filter;
  p->split_w_offset = p->temp_bytes;
  p->temp_bytes += Align(static_cast<size_t>(2 * channels * filter));
  p->split_acc_offset = p->temp_bytes;
  p->temp_bytes += Align(static_cast<size_t>(outer * 2 * channels * inner) * sizeof(int32_t));
}

// Output channel c's hi half in a split plan's channel order (its lo half follows fg later).
int64_t HiChannel(const Int8Plan& p, int64_t c) { return c + c / p.fg * p.fg; }

void SplitWeights(const Int8Plan& p, const int8_t* w, int8_t* out) {
  for (int64_t c = 0; c < p.channels; ++c) {
    const int8_t* from = w + c * p.filter;
    int8_t* hi = out + HiChannel(p, c) * p.filter;
    int8_t* lo = hi + p.fg * p.filter;
    for (int64_t k = 0; k < p.filter; ++k) {
      const int v = from[k], low = v & 1;  // v = 2 * hi + low, hi = floor(v / 2) in [-64, 63]
      hi[k] = static_cast<int8_t>((v - low) / 2);
      lo[k] = static_cast<int8_t>(low);
    }
  }
}

// Joins a split plan's halves into the accumulators and writes them through the epilogue;
// `w` (the plain weights) gives the row sums a shifted plan takes out.
void FinishSplit(const Int8Plan& p, const int8_t* w, const int32_t* bias, const int32_t* wide, const void* sum,
                 void* y) {
  const int64_t f = p.channels, inner = p.inner, fg = p.fg;
  std::vector<int64_t> offset(static_cast<size_t>(f), 0);
  // Convolution: each channel's weight sum per tap, and what the shift added at position i.
  const ConvGeom& g = p.geom;
  const int64_t K = g.KSize(), cg = g.c / std::max<int64_t>(g.g, 1);
  std::vector<int64_t> taps(p.conv && p.shift_data ? static_cast<size_t>(f * K) : 0, 0);
  if (!taps.empty())
    for (int64_t c = 0; c < f; ++c)
      for (int64_t ci = 0; ci < cg; ++ci)
        for (int64_t kk = 0; kk < K; ++kk)
          taps[c * K + kk] += w[p.channels_last ? (c * K + kk) * cg + ci : (c * cg + ci) * K + kk];
  // Per channel and output position (the same for every image), made once per call.
  const int64_t O = g.OutSize();
  std::vector<int64_t> comp(taps.empty() ? 0 : static_cast<size_t>(f * O));
  auto shifted_in = [&](int64_t c, int64_t i) {
    const int64_t od = i / (g.out[1] * g.out[2]), oh = i / g.out[2] % g.out[1], ow = i % g.out[2];
    int64_t t = 0;
    for (int64_t kk = 0; kk < K; ++kk) {
      const int64_t id = od * g.s[0] - g.pl[0] + kk / (g.k[1] * g.k[2]) * g.d[0];
      const int64_t ih = oh * g.s[1] - g.pl[1] + kk / g.k[2] % g.k[1] * g.d[1];
      const int64_t iw = ow * g.s[2] - g.pl[2] + kk % g.k[2] * g.d[2];
      if (id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1] && iw >= 0 && iw < g.in[2]) t += taps[c * K + kk];
    }
    return 128 * t;
  };
  if (!comp.empty())
    ParallelFor(f, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t c = lo; c < hi; ++c)
        for (int64_t i = 0; i < O; ++i) comp[c * O + i] = shifted_in(c, i);
    });
  for (int64_t c = 0; c < f; ++c) {
    if (bias) offset[c] += bias[c];
    if (p.shift_data && !p.conv) {
      int64_t rowsum = 0;
      for (int64_t k = 0; k < p.filter; ++k) rowsum += w[c * p.filter + k];
      offset[c] -= 128 * rowsum;
    }
  }
  // Where channel c's hi half lies in a row of the wide output (its lo half fg later).
  std::vector<int64_t> hi_at(static_cast<size_t>(f));
  for (int64_t c = 0; c < f; ++c) hi_at[c] = HiChannel(p, c);
  ParallelFor(p.outer, 1, [&](int64_t lo, int64_t hi) {
    std::vector<int32_t> acc(static_cast<size_t>(inner == 1 ? f : inner));
    for (int64_t o = lo; o < hi; ++o) {
      if (inner == 1) {
        // A row holds every channel of one output position (FC rows, channels-last conv).
        const int32_t* row = wide + o * 2 * f;
        const int64_t* shifted = comp.empty() ? nullptr : comp.data() + o % O;
        for (int64_t c = 0; c < f; ++c) {
          const int64_t at = hi_at[c];
          int64_t v = 2 * static_cast<int64_t>(row[at]) + row[at + fg] + offset[c];
          if (shifted) v -= shifted[c * O];
          acc[c] = static_cast<int32_t>(v);
        }
        Store(p.epilogue, acc.data(), f, sum, y, o * f, -1);
        continue;
      }
      // A channels-first image: the wide output is that too, or channels-last.
      for (int64_t c = 0; c < f; ++c) {
        const int64_t at = hi_at[c];
        const int32_t* hs = p.wide_channels_last ? wide + o * inner * 2 * f + at : wide + (o * 2 * f + at) * inner;
        const int32_t* ls = p.wide_channels_last ? hs + fg : hs + fg * inner;
        const int64_t step = p.wide_channels_last ? 2 * f : 1;
        const int64_t* shifted = comp.empty() ? nullptr : comp.data() + c * O;
        for (int64_t i = 0; i < inner; ++i) {
          int64_t v = 2 * static_cast<int64_t>(hs[i * step]) + ls[i * step] + offset[c];
          if (shifted) v -= shifted[i];
          acc[i] = static_cast<int32_t>(v);
        }
        Store(p.epilogue, acc.data(), inner, sum, y, (o * f + c) * inner, c);
      }
    }
  });
}

}  // namespace

bool VnniProducts() {
  static const bool vnni = [] {
    auto has = [](dnnl_cpu_isa_t isa, dnnl_cpu_isa_t want) { return (isa & want) == want; };
    const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return has(isa, dnnl_cpu_isa_avx512_core_vnni) || has(isa, dnnl_cpu_isa_avx2_vnni);
  }();
  return vnni;
}

size_t Int8TempBytes(const Int8Plan& plan) { return plan.temp_bytes; }
std::string Int8Impl(const Int8Plan& plan) { return plan.impl; }

std::shared_ptr<const Int8Plan> Int8ConvPlan(const ConvGeom& g, DType src, bool bias, const Epilogue& e,
                                             bool channels_last, bool src_last, bool dst_last, bool sum_last) {
  const bool split = !VnniProducts();
  if (channels_last && g.nd != 2) return nullptr;
  // Plain weights with (n, h, w, c) data, output or sum: 2-D, and unsplit (FinishSplit reads
  // the output and sum in one layout with its weights).
  if ((src_last || dst_last || sum_last) && (channels_last || g.nd != 2 || split)) return nullptr;
  std::string key = "conv,";
  for (int64_t v : {int64_t(g.nd), g.n, g.c, g.f, g.g, int64_t(src), int64_t(bias), int64_t(channels_last),
                    int64_t(src_last), int64_t(dst_last), int64_t(sum_last)})
    key += std::to_string(v) + ',';
  for (int i = 0; i < 3; ++i)
    for (int64_t v : {g.in[i], g.out[i], g.k[i], g.s[i], g.d[i], g.pl[i]}) key += std::to_string(v) + ',';
  key += EpilogueKey(e);
  const bool shift = split && src == DType::kInt8;
  return Cached(key, [&] {
    auto p = std::make_shared<Int8Plan>();
    // Split, the primitive computes 2f channels into int32 with nothing fused (Int8Plan::split).
    ConvGeom pg = g;
    if (split) pg.f = 2 * g.f;
    const Epilogue fused = split ? Epilogue() : e;
    const bool fused_bias = bias && !split;
    const memory::format_tag tag = channels_last ? memory::format_tag::nhwc : PlainTag(g.nd);
    memory::desc s(Dims(g.n, g.c, g.in, g.nd), DnnlType(shift ? DType::kUint8 : src),
                   src_last ? memory::format_tag::nhwc : tag);
    memory::desc d(Dims(g.n, pg.f, g.out, g.nd), DnnlType(fused.out), dst_last ? memory::format_tag::nhwc : tag);
    memory::desc w = PlainWeights(pg, channels_last);
    memory::desc b =
        fused_bias ? memory::desc({g.f}, memory::data_type::s32, memory::format_tag::x) : memory::desc();
    memory::dims strides, dilates, pl, pr;
    for (int i = 3 - g.nd; i < 3; ++i) {
      strides.push_back(g.s[i]);
      dilates.push_back(g.d[i] - 1);
      pl.push_back(g.pl[i]);
      pr.push_back(std::max<int64_t>(0, g.PadRight(i)));
    }
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                         Any(s), Any(w), b, Any(d), strides, dilates, pl, pr);
    dnnl::convolution_forward::primitive_desc pd(desc, MakeAttr(fused), RegionEngine());
    p->prim = dnnl::convolution_forward(pd);
    if (split && !channels_last) {
      static const memory::format_tag last[] = {memory::format_tag::nwc, memory::format_tag::nhwc,
                                                memory::format_tag::ndhwc};
      memory::desc wide_last(Dims(g.n, pg.f, g.out, g.nd), memory::data_type::s32, last[g.nd - 1]);
      if (pd.dst_desc() == wide_last) {
        d = wide_last;
        p->wide_channels_last = true;
      }
    }
    const memory::desc sum_layout(Dims(g.n, pg.f, g.out, g.nd), DnnlType(fused.out),
                                  sum_last ? memory::format_tag::nhwc : tag);
    Finalize(p.get(), pd, s, w, d, fused, fused_bias, sum_last != dst_last ? &sum_layout : nullptr);
    if (split) {
      const int64_t O = g.OutSize();
      SetSplit(p.get(), e, bias, channels_last ? g.n * O : g.n, g.f, channels_last ? 1 : O, g.f / g.g,
               g.c / g.g * g.KSize());
      p->conv = true;
      p->channels_last = channels_last;
      p->geom = g;
    }
    if (shift) {
      p->shift_data = true;
      p->shifted = static_cast<size_t>(g.n * g.c * g.InSize());
      p->shift_x_offset = p->temp_bytes;
      p->temp_bytes += Align(p->shifted);
    }
    return p;
  });
}

std::shared_ptr<const Int8Plan> Int8FcPlan(int64_t m, int64_t k, int64_t n, DType src, bool bias, const Epilogue& e,
                                           bool narrow_weights) {
  std::string key = "fc,";
  for (int64_t v : {m, k, n, int64_t(src), int64_t(bias), int64_t(narrow_weights)}) key += std::to_string(v) + ',';
  key += EpilogueKey(e);
  const bool split = !VnniProducts() && !(narrow_weights && src == DType::kUint8);
  const bool shift = split && src == DType::kInt8;
  return Cached(key, [&] {
    auto p = std::make_shared<Int8Plan>();
    const int64_t pn = split ? 2 * n : n;  // split: both halves, int32, nothing fused
    const Epilogue fused = split ? Epilogue() : e;
    const bool fused_bias = bias && !split;
    memory::desc s({m, k}, DnnlType(shift ? DType::kUint8 : src), memory::format_tag::ab);
    memory::desc w({pn, k}, memory::data_type::s8, memory::format_tag::ab);
    memory::desc d({m, pn}, DnnlType(fused.out), memory::format_tag::ab);
    memory::desc b = fused_bias ? memory::desc({n}, memory::data_type::s32, memory::format_tag::x) : memory::desc();
    dnnl::inner_product_forward::desc desc(dnnl::prop_kind::forward_inference, Any(s), Any(w), b, Any(d));
    dnnl::inner_product_forward::primitive_desc pd(desc, MakeAttr(fused), RegionEngine());
    p->prim = dnnl::inner_product_forward(pd);
    Finalize(p.get(), pd, s, w, d, fused, fused_bias);
    if (split) SetSplit(p.get(), e, bias, m, n, 1, n, k);
    if (shift) {
      p->shift_data = true;
      p->shifted = static_cast<size_t>(m * k);
      p->shift_x_offset = p->temp_bytes;
      p->temp_bytes += Align(p->shifted);
    }
    return p;
  });
}

namespace {

std::atomic<size_t> weight_reorders{0};

// Weights in a primitive's layout, by the array (its memory block and the offset of the
// weights in it) and that layout, valid while the array lives and is not written.
struct PreparedWeights {
  std::weak_ptr<const void> array;
  uint64_t writes = 0;
  memory::desc layout;
  std::shared_ptr<std::vector<char>> bytes;
};

// The weights `w` reordered into a.prim: kept from an earlier call when `v` says the array
// is the same and unwritten since, reordered (and kept) otherwise.
std::shared_ptr<std::vector<char>> Prepared(const Int8Plan& p, const int8_t* w, const InputVersion& v,
                                            dnnl::stream& strm) {
  const Arg& a = p.wei;
  static std::mutex mu;
  static std::map<std::pair<const void*, const void*>, std::vector<PreparedWeights>> cache;
  std::shared_ptr<const void> owner = v.array.lock();
  if (!owner) return nullptr;
  const auto key = std::make_pair(owner.get(), static_cast<const void*>(w));
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end())
      for (const auto& e : it->second)
        if (e.writes == v.writes && e.layout == a.prim && e.array.lock() == owner) return e.bytes;
  }
  auto bytes = std::make_shared<std::vector<char>>(a.prim.get_size());
  auto& eng = RegionEngine();
  std::vector<int8_t> halves;
  if (p.split) {
    halves.resize(static_cast<size_t>(2 * p.channels * p.filter));
    SplitWeights(p, w, halves.data());
  }
  if (a.reorder) {
    memory from(a.user, eng, const_cast<int8_t*>(p.split ? halves.data() : w)), to(a.prim, eng, bytes->data());
    a.re.execute(strm, from, to);
    strm.wait();
  } else {
    std::memcpy(bytes->data(), halves.data(), halves.size());  // split weights the primitive reads as they are
  }
  weight_reorders.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu);
  // Entries of arrays that are gone, or of this array before its last write, go.
  for (auto it = cache.begin(); it != cache.end();) {
    auto& list = it->second;
    list.erase(std::remove_if(list.begin(), list.end(),
                              [&](const PreparedWeights& e) {
                                return e.array.expired() || (it->first == key && e.layout == a.prim);
                              }),
               list.end());
    it = list.empty() ? cache.erase(it) : std::next(it);
  }
  cache[key].push_back({owner, v.writes, a.prim, bytes});
  return bytes;
}

}  // namespace

size_t Int8WeightReorders() { return weight_reorders.load(); }

void RunInt8(const Int8Plan& p, const void* x, const int8_t* w, const int32_t* bias, const void* sum, void* y,
             char* temp, const InputVersion* w_version) {
  auto& eng = RegionEngine();
  dnnl::stream& strm = Stream();
  std::unordered_map<int, memory> args;
  std::shared_ptr<std::vector<char>> kept;
  // Split weights are kept even where the primitive reads the plain layout: splitting them
  // at every call (every step of the int8 LSTM) would cost as much as the product.
  if ((p.wei.reorder || p.split) && w_version) kept = Prepared(p, w, *w_version, strm);
  auto input = [&](const Arg& a, const void* ptr) {
    memory user(a.user, eng, const_cast<void*>(ptr));
    if (!a.reorder) {
      args.emplace(a.id, user);
      return;
    }
    memory inner(a.prim, eng, temp + a.offset);
    a.re.execute(strm, user, inner);
    args.emplace(a.id, inner);
  };
  if (p.shift_data) {
    uint8_t* u = reinterpret_cast<uint8_t*>(temp + p.shift_x_offset);
    const int8_t* xs = static_cast<const int8_t*>(x);
    ParallelFor(static_cast<int64_t>(p.shifted), kElemGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) u[i] = static_cast<uint8_t>(xs[i] + 128);
    });
    x = u;
  }
  input(p.src, x);
  if (kept) {
    args.emplace(DNNL_ARG_WEIGHTS, memory(p.wei.prim, eng, kept->data()));
  } else if (p.split) {
    int8_t* halves = reinterpret_cast<int8_t*>(temp + p.split_w_offset);
    SplitWeights(p, w, halves);
    input(p.wei, halves);
  } else {
    input(p.wei, w);
  }
  if (p.has_bias) input(p.bias, bias);
  int32_t* wide = p.split ? reinterpret_cast<int32_t*>(temp + p.split_acc_offset) : nullptr;
  memory user_dst(p.dst.user, eng, p.split ? static_cast<void*>(wide) : y);
  memory dst = p.dst.reorder ? memory(p.dst.prim, eng, temp + p.dst.offset) : user_dst;
  // The sum already where the primitive adds to it (the executor ran the layer in place of
  // its sum, FInplaceOption) needs no copy.
  const bool sum_in_place = sum == y && !p.dst.reorder && p.sum_user == p.sum_prim;
  if (p.has_sum && !sum_in_place && p.sum_layout_differs && sum == dst.get_data_handle()) {
    std::memcpy(temp + p.sum_copy_offset, sum, p.sum_user.get_size());
    sum = temp + p.sum_copy_offset;
  }
  if (p.has_sum && !sum_in_place) {
    memory from(p.sum_user, eng, const_cast<void*>(sum)), to(p.sum_prim, eng, dst.get_data_handle());
    p.sum_re.execute(strm, from, to);
  }
  args.emplace(DNNL_ARG_DST, dst);
  args.emplace(DNNL_ARG_SCRATCHPAD, memory(p.scratch, eng, temp + p.scratch_offset));
  p.prim.execute(strm, args);
  if (p.dst.reorder) p.dst.re.execute(strm, dst, user_dst);
  strm.wait();
  if (p.split) FinishSplit(p, w, p.split_bias ? bias : nullptr, wide, p.epilogue.sum ? sum : nullptr, y);
}

#else

struct Int8Plan {};
size_t Int8TempBytes(const Int8Plan&) { return 0; }
std::string Int8Impl(const Int8Plan&) { return ""; }
std::shared_ptr<const Int8Plan> Int8ConvPlan(const ConvGeom&, DType, bool, const Epilogue&, bool, bool, bool, bool) {
  return nullptr;
}
std::shared_ptr<const Int8Plan> Int8FcPlan(int64_t, int64_t, int64_t, DType, bool, const Epilogue&, bool) {
  return nullptr;
}
void RunInt8(const Int8Plan&, const void*, const int8_t*, const int32_t*, const void*, void*, char*,
             const InputVersion*) {}
bool VnniProducts() { return false; }
size_t Int8WeightReorders() { return 0; }

#endif

}  // namespace quant
}  // namespace op
}  // namespace weft
