// The CPU kernels of conv_common.h: oneDNN convolution primitives for float32, im2col +
// Gemm for everything else.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/op/linalg/gemm.h"
#include "core/op/nn/conv_common.h"
#include "core/op/reduced_float.h"
#include "core/op/op_util.h"

#if defined(WEFT_USE_ONEDNN)
#include <oneapi/dnnl/dnnl.hpp>

#include "core/op/dnnl/dnnl_layout.h"
#endif

namespace weft {
namespace op {

std::string TupleString(const int64_t* v, int nd) {
  std::string s = "(";
  for (int i = 0; i < nd; ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + ")";
}

WindowAxes ParseWindow(const std::string& op, const Shape& kernel, const Shape& stride, const Shape* dilate,
                       const Shape& pad) {
  WindowAxes w;
  w.nd = kernel.ndim();
  if (w.nd < 1 || w.nd > 3)
    Throw(ErrorKind::kValue, "Operator '", op, "': parameter 'kernel' must have 1, 2 or 3 entries (1-D, 2-D or 3-D), got ",
          kernel.ToString());
  struct Item { const char* name; const Shape* v; int64_t* dst; int64_t min; };
  Item items[] = {{"kernel", &kernel, w.k, 1}, {"stride", &stride, w.s, 1}, {"dilate", dilate, w.d, 1},
                  {"pad", &pad, w.p, 0}};
  for (const Item& it : items) {
    if (it.v == nullptr || it.v->ndim() <= 0) continue;
    if (it.v->ndim() != w.nd)
      Throw(ErrorKind::kValue, "Operator '", op, "': parameter '", it.name, "' ", it.v->ToString(), " has ",
            it.v->ndim(), " entries but kernel ", kernel.ToString(), " has ", w.nd);
    for (int i = 0; i < w.nd; ++i) {
      if ((*it.v)[i] < it.min)
        Throw(ErrorKind::kValue, "Operator '", op, "': parameter '", it.name, "' ", it.v->ToString(),
              it.min == 1 ? " must be positive in every entry" : " must not be negative");
      it.dst[i] = (*it.v)[i];
    }
  }
  return w;
}

void CheckLayoutAndRank(const std::string& op, const std::string& layout, int nd, const Shape& data,
                        bool channels_last) {
  static const char* first[] = {"NCW", "NCHW", "NCDHW"};
  static const char* last[] = {"NWC", "NHWC", "NDHWC"};
  const bool is_last = IsChannelsLast(layout);
  const char* expected = is_last ? last[nd - 1] : first[nd - 1];
  if (layout != "None" && layout != expected) {
    Throw(ErrorKind::kValue, "Operator '", op, "': layout '", layout, "' does not fit a ", nd,
          "-D kernel; expected '", first[nd - 1], "' or '", last[nd - 1], "'");
  }
  if (is_last && !channels_last)
    Throw(ErrorKind::kUnsupported, "Operator '", op, "': layout '", layout,
          "' is not supported here; use '", first[nd - 1], "'");
  if (data.known_ndim() && data.ndim() != nd + 2)
    Throw(ErrorKind::kShape, "Operator '", op, "': input 'data' has shape ", data.ToString(), " of rank ",
          data.ndim(), " but a ", nd, "-D kernel needs rank ", nd + 2, " (", expected, ")");
}

namespace {

// ---------------------------------------------------------------- im2col + Gemm
// col (c/g * K, O) of one sample and group: row (ch, kd, kh, kw), column the output cell.
template <typename T>
void Im2Col(const ConvGeom& g, const T* x, int64_t cg, T* col) {
  const int64_t O = g.OutSize(), K = g.KSize();
  ParallelFor(cg * K, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(O, 1)), [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      int64_t ch = row / K, kk = row % K;
      int64_t kd = kk / (g.k[1] * g.k[2]), kh = kk / g.k[2] % g.k[1], kw = kk % g.k[2];
      const T* xc = x + ch * g.InSize();
      T* dst = col + row * O;
      for (int64_t od = 0; od < g.out[0]; ++od) {
        int64_t id = od * g.s[0] - g.pl[0] + kd * g.d[0];
        for (int64_t oh = 0; oh < g.out[1]; ++oh) {
          int64_t ih = oh * g.s[1] - g.pl[1] + kh * g.d[1];
          T* drow = dst + (od * g.out[1] + oh) * g.out[2];
          if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
            std::fill_n(drow, g.out[2], T(0));
            continue;
          }
          const T* xrow = xc + (id * g.in[1] + ih) * g.in[2];
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            int64_t iw = ow * g.s[2] - g.pl[2] + kw * g.d[2];
            drow[ow] = iw >= 0 && iw < g.in[2] ? xrow[iw] : T(0);
          }
        }
      }
    }
  });
}

// The transpose of Im2Col: adds col's entries into x. Channels are independent, so they
// split across threads.
template <typename T>
void Col2Im(const ConvGeom& g, const T* col, int64_t cg, T* x) {
  const int64_t O = g.OutSize(), K = g.KSize();
  ParallelFor(cg, 1, [&](int64_t b, int64_t e) {
    for (int64_t ch = b; ch < e; ++ch) {
      T* xc = x + ch * g.InSize();
      for (int64_t kk = 0; kk < K; ++kk) {
        int64_t kd = kk / (g.k[1] * g.k[2]), kh = kk / g.k[2] % g.k[1], kw = kk % g.k[2];
        const T* src = col + (ch * K + kk) * O;
        for (int64_t od = 0; od < g.out[0]; ++od) {
          int64_t id = od * g.s[0] - g.pl[0] + kd * g.d[0];
          if (id < 0 || id >= g.in[0]) continue;
          for (int64_t oh = 0; oh < g.out[1]; ++oh) {
            int64_t ih = oh * g.s[1] - g.pl[1] + kh * g.d[1];
            if (ih < 0 || ih >= g.in[1]) continue;
            const T* srow = src + (od * g.out[1] + oh) * g.out[2];
            T* xrow = xc + (id * g.in[1] + ih) * g.in[2];
            for (int64_t ow = 0; ow < g.out[2]; ++ow) {
              int64_t iw = ow * g.s[2] - g.pl[2] + kw * g.d[2];
              if (iw >= 0 && iw < g.in[2]) xrow[iw] = static_cast<T>(xrow[iw] + srow[ow]);
            }
          }
        }
      }
    }
  });
}

// A 1x1 kernel with unit stride and no padding reads the input as its own column matrix.
bool IsPointwise(const ConvGeom& g) {
  for (int i = 0; i < 3; ++i)
    if (g.k[i] != 1 || g.s[i] != 1 || g.pl[i] != 0 || g.out[i] != g.in[i]) return false;
  return true;
}

template <typename T>
void PlainForward(const char* op, const ConvGeom& g, const T* x, const T* w, T* y, OpReq req) {
  const int64_t cg = g.c / g.g, fg = g.f / g.g, K = g.KSize(), O = g.OutSize(), I = g.InSize();
  const bool direct = IsPointwise(g);
  std::vector<T> col(direct ? 0 : static_cast<size_t>(cg * K * O));
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t gi = 0; gi < g.g; ++gi) {
      const T* xg = x + (n * g.c + gi * cg) * I;
      const T* b = xg;
      if (!direct) {
        Im2Col(g, xg, cg, col.data());
        b = col.data();
      }
      Gemm(DTypeOf<T>::value, fg, O, cg * K, GemmOperand{w + gi * fg * cg * K, cg * K, 0, false}, GemmOperand{b, O, 0, false},
           req == OpReq::kAddTo ? 1.0 : 0.0, y + (n * g.f + gi * fg) * O, O, 0, 1, op);
    }
}

template <typename T>
void PlainBackwardData(const char* op, const ConvGeom& g, const T* dy, const T* w, T* dx, OpReq req) {
  const int64_t cg = g.c / g.g, fg = g.f / g.g, K = g.KSize(), O = g.OutSize(), I = g.InSize();
  const bool direct = IsPointwise(g);
  if (req != OpReq::kAddTo && !direct) std::fill_n(dx, g.n * g.c * I, T(0));
  std::vector<T> col(direct ? 0 : static_cast<size_t>(cg * K * O));
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t gi = 0; gi < g.g; ++gi) {
      T* dxg = dx + (n * g.c + gi * cg) * I;
      GemmOperand wt{w + gi * fg * cg * K, cg * K, 0, true};
      GemmOperand dyg{dy + (n * g.f + gi * fg) * O, O, 0, false};
      if (direct) {
        Gemm(DTypeOf<T>::value, cg, O, fg, wt, dyg, req == OpReq::kAddTo ? 1.0 : 0.0, dxg, O, 0, 1, op);
      } else {
        Gemm(DTypeOf<T>::value, cg * K, O, fg, wt, dyg, 0.0, col.data(), O, 0, 1, op);
        Col2Im(g, col.data(), cg, dxg);
      }
    }
}

template <typename T>
void PlainBackwardWeights(const char* op, const ConvGeom& g, const T* x, const T* dy, T* dw, OpReq req) {
  const int64_t cg = g.c / g.g, fg = g.f / g.g, K = g.KSize(), O = g.OutSize(), I = g.InSize();
  const bool direct = IsPointwise(g);
  std::vector<T> col(direct ? 0 : static_cast<size_t>(cg * K * O));
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t gi = 0; gi < g.g; ++gi) {
      const T* xg = x + (n * g.c + gi * cg) * I;
      const T* b = xg;
      if (!direct) {
        Im2Col(g, xg, cg, col.data());
        b = col.data();
      }
      double beta = n == 0 && req != OpReq::kAddTo ? 0.0 : 1.0;
      Gemm(DTypeOf<T>::value, fg, cg * K, O, GemmOperand{dy + (n * g.f + gi * fg) * O, O, 0, false},
           GemmOperand{b, O, 0, true}, beta, dw + gi * fg * cg * K, cg * K, 0, 1, op);
    }
  if (g.n == 0 && req != OpReq::kAddTo) std::fill_n(dw, g.f * cg * K, T(0));
}

// The weight gradient of a 1-D or 2-D convolution of one input channel (a grayscale image:
// LeNet's first layer). Both oneDNN kernels do poorly there: the blocked one pads the
// channel to 8 or 16, and the gemm one multiplies a (filters x oh*ow) by an (oh*ow x taps)
// matrix, both thin (LeNet's first layer at batch 64: 2.4 ms, 15 GFLOP/s). Here each
// thread takes whole filters. Per image, every input row is first laid out once per
// column tap as the row of inputs that tap reads for each output column (zeros for padding
// and for the columns past the output's width up to a whole number of vectors); then each
// tap's sum over the output rows is a run of vector multiply-adds in registers.
bool OneChannelWeights(const ConvGeom& g) { return g.g == 1 && g.c == 1 && g.k[0] == 1 && g.in[0] == 1; }

// One 32-byte vector of A (an AVX register: 8 floats or 4 doubles).
template <typename A>
struct Lanes {
  typedef A V __attribute__((vector_size(32)));
  static constexpr int64_t kN = 32 / sizeof(A);
  static V Load(const A* p) {
    V v;
    std::memcpy(&v, p, sizeof(V));
    return v;
  }
};

// out[j][l] += the sum over `rows` rows r and the row's vectors c of d[r][c] * t[r][j][c],
// for J taps at once: J taps, each with two accumulators (even and odd vectors), keep 2J
// multiply-add chains going, where one tap at a time waits on each add's latency.
template <int J, typename A>
void TapBlock(const A* d, int64_t d_stride, const A* t, int64_t t_stride, int64_t tap_stride, int64_t rows,
              int64_t width, A* out) {
  using L = Lanes<A>;
  typename L::V even[J] = {}, odd[J] = {};
  for (int64_t r = 0; r < rows; ++r) {
    const A* dr = d + r * d_stride;
    const A* tr = t + r * t_stride;
    int64_t c = 0;
    for (; c + 2 * L::kN <= width; c += 2 * L::kN) {
      typename L::V a = L::Load(dr + c), b = L::Load(dr + c + L::kN);
#pragma GCC unroll 8
      for (int j = 0; j < J; ++j) {
        even[j] += a * L::Load(tr + j * tap_stride + c);
        odd[j] += b * L::Load(tr + j * tap_stride + c + L::kN);
      }
    }
    if (c < width) {
      typename L::V a = L::Load(dr + c);
#pragma GCC unroll 8
      for (int j = 0; j < J; ++j) even[j] += a * L::Load(tr + j * tap_stride + c);
    }
  }
  for (int j = 0; j < J; ++j) {
    typename L::V sum = even[j] + odd[j];
    for (int64_t l = 0; l < L::kN; ++l) out[j * L::kN + l] += sum[l];
  }
}

template <typename T>
void OneChannelWeightsGrad(const ConvGeom& g, const T* x, const T* dy, T* dw, OpReq req) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  constexpr int64_t L = Lanes<A>::kN;
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2], KH = g.k[1], KW = g.k[2];
  const int64_t sh = g.s[1], sw = g.s[2], dh = g.d[1], dwc = g.d[2], ph = g.pl[1], pw = g.pl[2];
  const int64_t OWp = (OW + L - 1) / L * L;
  ParallelFor(g.f, 1, [&](int64_t lo, int64_t hi) {
    std::vector<A> taps(static_cast<size_t>(H * KW * OWp));  // [ih][kw][ow]
    std::vector<A> grad(static_cast<size_t>(OH * OWp), A(0));  // dy of one filter, rows padded
    std::vector<A> acc(static_cast<size_t>((hi - lo) * KH * KW * L), A(0));
    for (int64_t n = 0; n < g.n; ++n) {
      const T* xp = x + n * H * W;
      for (int64_t ih = 0; ih < H; ++ih)
        for (int64_t kw = 0; kw < KW; ++kw) {
          A* row = taps.data() + (ih * KW + kw) * OWp;
          for (int64_t ow = 0; ow < OWp; ++ow) {
            int64_t col = ow * sw + kw * dwc - pw;
            row[ow] = ow < OW && col >= 0 && col < W ? static_cast<A>(xp[ih * W + col]) : A(0);
          }
        }
      for (int64_t f = lo; f < hi; ++f) {
        const T* dyp = dy + (n * g.f + f) * OH * OW;
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) grad[oh * OWp + ow] = static_cast<A>(dyp[oh * OW + ow]);
        for (int64_t kh = 0; kh < KH; ++kh) {
          // The output rows whose tap kh reads a row inside the input.
          int64_t off = kh * dh - ph;
          int64_t oh_lo = off >= 0 ? 0 : (-off + sh - 1) / sh;
          int64_t oh_hi = H - 1 - off < 0 ? 0 : std::min(OH, (H - 1 - off) / sh + 1);
          if (oh_hi <= oh_lo) continue;
          const A* d = grad.data() + oh_lo * OWp;
          A* out = acc.data() + ((f - lo) * KH + kh) * KW * L;
          auto block = [&](auto taps_at_once, int64_t kw) {
            constexpr int J = decltype(taps_at_once)::value;
            TapBlock<J>(d, OWp, taps.data() + ((oh_lo * sh + off) * KW + kw) * OWp, sh * KW * OWp, OWp,
                        oh_hi - oh_lo, OWp, out + kw * L);
          };
          // A kernel row of up to 6 taps at once (12 accumulators fit AVX's 16 registers with
          // the two gradient vectors); longer rows by 4 and the rest.
          for (int64_t kw = 0; kw < KW;) {
            int64_t rest = KW - kw, j = rest <= 6 ? rest : 4;
            switch (j) {
              case 1: block(std::integral_constant<int, 1>(), kw); break;
              case 2: block(std::integral_constant<int, 2>(), kw); break;
              case 3: block(std::integral_constant<int, 3>(), kw); break;
              case 4: block(std::integral_constant<int, 4>(), kw); break;
              case 5: block(std::integral_constant<int, 5>(), kw); break;
              default: block(std::integral_constant<int, 6>(), kw); break;
            }
            kw += j;
          }
        }
      }
    }
    for (int64_t f = lo; f < hi; ++f)
      for (int64_t t = 0; t < KH * KW; ++t) {
        const A* a = acc.data() + ((f - lo) * KH * KW + t) * L;
        double total = 0;
        for (int64_t l = 0; l < L; ++l) total += a[l];
        Store(dw + f * KH * KW + t, req, total);
      }
  });
}

// ---------------------------------------------------------------- oneDNN
#if defined(WEFT_USE_ONEDNN)
using dnnl::memory;

dnnl::engine& Engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// One primitive with how each of its arguments meets the caller's plain arrays: used in
// place when the primitive takes the plain layout, otherwise reordered through a region
// of the temp space (before the primitive for inputs, after it for outputs).
struct DnnlArg {
  int arg = 0;
  memory::desc user, prim;
  bool output = false;
  bool reorder = false;
  bool internal = false;  // no caller array (the scratchpad)
  dnnl::reorder re;
  dnnl::reorder re_add;  // an output's reorder that adds into the caller's array (float32)
  size_t offset = 0;
};

struct DnnlPlan {
  dnnl::primitive prim;
  std::vector<DnnlArg> args;
  size_t temp_bytes = 0;
};

size_t Align(size_t b) { return (b + 63) / 64 * 64; }

void AddArg(DnnlPlan* p, int arg, const memory::desc& user, const memory::desc& prim, bool output) {
  DnnlArg a;
  a.arg = arg;
  a.user = user;
  a.prim = prim;
  a.output = output;
  a.reorder = user != prim;
  if (a.reorder)
    a.re = output ? dnnl::reorder(dnnl::reorder::primitive_desc(Engine(), prim, Engine(), user))
                  : dnnl::reorder(dnnl::reorder::primitive_desc(Engine(), user, Engine(), prim));
  if (a.reorder && output && user.data_type() == memory::data_type::f32) {
    dnnl::primitive_attr attr;
    dnnl::post_ops po;
    po.append_sum(1.f);
    attr.set_post_ops(po);
    a.re_add = dnnl::reorder(dnnl::reorder::primitive_desc(Engine(), prim, Engine(), user, attr));
  }
  if (a.reorder) {
    a.offset = p->temp_bytes;
    p->temp_bytes += Align(prim.get_size());
  }
  p->args.push_back(a);
}

void AddScratchpad(DnnlPlan* p, const memory::desc& md) {
  DnnlArg a;
  a.arg = DNNL_ARG_SCRATCHPAD;
  a.prim = md;
  a.internal = true;
  a.offset = p->temp_bytes;
  p->temp_bytes += Align(md.get_size());
  p->args.push_back(a);
}

// Lays the plan's temp space out again with argument `first`'s reordered copy at offset 0,
// then the other copies and the scratchpad in order: the two backward plans of one
// convolution then keep dy's blocked copy at the same place (ConvBackward reorders it once
// there for both).
void SlotFirst(DnnlPlan* p, size_t first) {
  size_t off = 0;
  auto place = [&](DnnlArg& a) {
    a.offset = off;
    off += Align(a.prim.get_size());
  };
  if (p->args[first].reorder) place(p->args[first]);
  for (size_t i = 0; i < p->args.size(); ++i)
    if (i != first && (p->args[i].reorder || p->args[i].internal)) place(p->args[i]);
  p->temp_bytes = off;
}

dnnl::stream& Stream() {
  static thread_local dnnl::stream strm(Engine());
  return strm;
}

// Whether plan argument i, an output, reaches the caller's array through a reorder that can
// add into it: accumulating (kAddTo) then needs no plain temporary of the output's size
// (196 MiB for ResNet-50's strided shortcut at batch 64). The sum is the float32 addition
// of AddInto.
bool AddsInReorder(const DnnlPlan& plan, size_t i) { return static_cast<bool>(plan.args.at(i).re_add); }

// `ptrs` holds the caller's arrays in the order of plan.args (the scratchpad's is ignored);
// `temp` has plan.temp_bytes. `ready`, when given, holds per argument either nullptr or an
// input already in the primitive's layout (reordered once for two plans), used as is.
// With `add`, outputs are added into the caller's arrays (each must be AddsInReorder).
void RunPlan(const DnnlPlan& plan, const std::vector<void*>& ptrs, char* temp,
             const std::vector<void*>* ready = nullptr, bool add = false) {
  dnnl::stream& strm = Stream();
  std::unordered_map<int, memory> margs;
  std::vector<std::pair<const DnnlArg*, memory>> outs;
  for (size_t i = 0; i < plan.args.size(); ++i) {
    const DnnlArg& a = plan.args[i];
    if (a.internal) {
      margs.emplace(a.arg, memory(a.prim, Engine(), temp + a.offset));
    } else if (!a.reorder) {
      margs.emplace(a.arg, memory(a.prim, Engine(), ptrs[i]));
    } else if (!a.output && ready && (*ready)[i]) {
      margs.emplace(a.arg, memory(a.prim, Engine(), (*ready)[i]));
    } else {
      memory inner(a.prim, Engine(), temp + a.offset);
      memory user(a.user, Engine(), ptrs[i]);
      if (a.output) outs.emplace_back(&a, user);
      else a.re.execute(strm, user, inner);
      margs.emplace(a.arg, inner);
    }
  }
  plan.prim.execute(strm, margs);
  for (auto& o : outs) (add ? o.first->re_add : o.first->re).execute(strm, margs.at(o.first->arg), o.second);
  strm.wait();
}

memory::dims Dims(int64_t a, int64_t b, const int64_t* sp, int nd) {
  memory::dims d{a, b};
  for (int i = 3 - nd; i < 3; ++i) d.push_back(sp[i]);
  return d;
}

// The oneDNN element type of the dtypes convolution runs through oneDNN: float32 and
// bfloat16 (native with AVX512-BF16/AMX; where the CPU lacks bf16 support oneDNN refuses
// the primitive and the plain kernels take the geometry).
bool DnnlConvType(DType dt) { return dt == DType::kFloat32 || dt == DType::kBfloat16; }

memory::data_type DnnlType(DType dt) { return dt == DType::kBfloat16 ? memory::data_type::bf16 : memory::data_type::f32; }

memory::desc PlainData(int64_t n, int64_t c, const int64_t* sp, int nd, memory::data_type dt) {
  static const memory::format_tag tags[] = {memory::format_tag::ncw, memory::format_tag::nchw,
                                            memory::format_tag::ncdhw};
  return memory::desc(Dims(n, c, sp, nd), dt, tags[nd - 1]);
}

memory::desc PlainWeights(const ConvGeom& g, memory::data_type dt) {
  int nd = g.nd;
  if (g.g == 1) {
    static const memory::format_tag tags[] = {memory::format_tag::oiw, memory::format_tag::oihw,
                                              memory::format_tag::oidhw};
    return memory::desc(Dims(g.f, g.c, g.k, nd), dt, tags[nd - 1]);
  }
  static const memory::format_tag tags[] = {memory::format_tag::goiw, memory::format_tag::goihw,
                                            memory::format_tag::goidhw};
  memory::dims d{g.g, g.f / g.g, g.c / g.g};
  for (int i = 3 - nd; i < 3; ++i) d.push_back(g.k[i]);
  return memory::desc(d, dt, tags[nd - 1]);
}

// The layout the primitive is created with: the caller's plain one, or format_tag::any so
// that oneDNN picks its blocked layout (nChw16c here) and the plan reorders around it.
memory::desc Layout(const memory::desc& plain, bool blocked) {
  if (!blocked) return plain;
  return memory::desc(plain.dims(), plain.data_type(), memory::format_tag::any);
}

enum class ConvPass { kForward, kBackwardData, kBackwardWeights, kBackwardWeightsBias };

// Whether a pass runs on blocked layouts. The rules come from timing oneDNN 2.6 on this
// machine's AVX-512 cores on ResNet shapes (bench/conv_direct_bench.py), reorders included:
// - Pointwise convolutions on NCHW are plain matrix products (oneDNN's gemm convolution).
//   Down to 28x28 outputs they beat the blocked 1x1 kernel plus its reorders by 1.2-1.45x
//   (forward + both gradients, batch 16); at 14x14 the two are even and at 7x7 (ResNet's
//   last stage: many channels, small images, small reorders) the blocked kernel wins by
//   1.3-1.6x.
// - The data gradient of a convolution with few input channels (ResNet's 7x7 stem on RGB)
//   runs 1.8x faster as a gemm convolution on NCHW than on a padded blocked layout.
// - So does the weight gradient of a convolution of one channel (a grayscale image), which
//   the blocked kernel pads to 8 or 16: LeNet's first layer at batch 64-128 took 1.7-2x
//   less time as a gemm convolution (timed on an AVX2 machine). Only 3-D ones get here: 1-D
//   and 2-D ones run OneChannelWeightsGrad, faster still. With RGB's three channels the
//   blocked kernel stayed ahead (ResNet's stem at batch 16: 100 against 115 ms for both
//   gradients).
// - Everything else is 2-3x faster blocked, reorders included.
bool UseBlocked(const ConvGeom& g, ConvPass pass) {
  if (IsPointwise(g)) return g.OutSize() <= 256;
  if (ConvPadsChannelsWastefully(g.c, g.f, g.g)) return false;
  if (pass == ConvPass::kBackwardData && g.g == 1 && g.c < 16) return false;
  if ((pass == ConvPass::kBackwardWeights || pass == ConvPass::kBackwardWeightsBias) && g.g == 1 && g.c == 1)
    return false;
  return true;
}

// Winograd (oneDNN's F(4x4, 3x3)) for 2-D 3x3 convolutions with unit stride and dilation:
// 1.5-2x faster than the direct kernel in all three passes at batch 16-32 on ResNet's 3x3
// layers. It rounds differently (on a 64-channel 3x3 layer, a largest error of 1.5e-6 of
// the output's scale against 3e-7 for the direct kernel), so WEFT_CONV_WINOGRAD=0 turns it
// off. Small batches keep the direct kernel, which
// is faster there (oneDNN's own heuristic draws the line at 4).
bool WinogradWanted(const ConvGeom& g) {
  static const bool enabled = [] {
    const char* v = std::getenv("WEFT_CONV_WINOGRAD");
    return v == nullptr || std::string(v) != "0";
  }();
  return enabled && g.g == 1 && g.n >= 4 && g.k[0] == 1 && g.k[1] == 3 && g.k[2] == 3 && g.s[1] == 1 &&
         g.s[2] == 1 && g.d[1] == 1 && g.d[2] == 1 && g.in[0] == 1;
}

struct ConvDescs {
  bool blocked = true;
  dnnl::algorithm alg = dnnl::algorithm::convolution_direct;
  memory::desc src, wei, bias, dst;
  memory::dims strides, dilates, pad_l, pad_r;
};

ConvDescs MakeDescs(const ConvGeom& g, ConvPass pass, bool winograd, memory::data_type dt) {
  ConvDescs d;
  d.blocked = UseBlocked(g, pass);
  if (winograd) d.alg = dnnl::algorithm::convolution_winograd;
  d.src = PlainData(g.n, g.c, g.in, g.nd, dt);
  d.dst = PlainData(g.n, g.f, g.out, g.nd, dt);
  d.wei = PlainWeights(g, dt);
  d.bias = memory::desc({g.f}, dt, memory::format_tag::x);
  for (int i = 3 - g.nd; i < 3; ++i) {
    d.strides.push_back(g.s[i]);
    d.dilates.push_back(g.d[i] - 1);
    d.pad_l.push_back(g.pl[i]);
    // oneDNN checks dst = (src + pad_l + pad_r - extent) / stride + 1 with integer division,
    // so a last window that stops short of the input's end is a right padding of 0.
    d.pad_r.push_back(std::max<int64_t>(0, g.PadRight(i)));
  }
  return d;
}

dnnl::convolution_forward::primitive_desc ForwardPd(const ConvDescs& d, bool bias) {
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_training, d.alg,
                                       Layout(d.src, d.blocked), Layout(d.wei, d.blocked), bias ? d.bias : memory::desc(), Layout(d.dst, d.blocked), d.strides,
                                       d.dilates, d.pad_l, d.pad_r);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return dnnl::convolution_forward::primitive_desc(desc, attr, Engine());
}

std::shared_ptr<DnnlPlan> MakeConvPlan(const ConvGeom& g, ConvPass pass, bool bias, bool winograd, DType dt) {
  ConvDescs d = MakeDescs(g, pass, winograd, DnnlType(dt));
  auto plan = std::make_shared<DnnlPlan>();
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (pass == ConvPass::kForward) {
    auto pd = ForwardPd(d, bias);
    plan->prim = dnnl::convolution_forward(pd);
    AddArg(plan.get(), DNNL_ARG_SRC, d.src, pd.src_desc(), false);
    AddArg(plan.get(), DNNL_ARG_WEIGHTS, d.wei, pd.weights_desc(), false);
    if (bias) AddArg(plan.get(), DNNL_ARG_BIAS, d.bias, pd.bias_desc(), false);
    AddArg(plan.get(), DNNL_ARG_DST, d.dst, pd.dst_desc(), true);
    AddScratchpad(plan.get(), pd.scratchpad_desc());
  } else if (pass == ConvPass::kBackwardData) {
    auto hint = ForwardPd(d, false);
    dnnl::convolution_backward_data::desc desc(d.alg, Layout(d.src, d.blocked), Layout(d.wei, d.blocked),
                                               Layout(d.dst, d.blocked), d.strides, d.dilates, d.pad_l, d.pad_r);
    dnnl::convolution_backward_data::primitive_desc pd(desc, attr, Engine(), hint);
    plan->prim = dnnl::convolution_backward_data(pd);
    AddArg(plan.get(), DNNL_ARG_DIFF_DST, d.dst, pd.diff_dst_desc(), false);
    AddArg(plan.get(), DNNL_ARG_WEIGHTS, d.wei, pd.weights_desc(), false);
    AddArg(plan.get(), DNNL_ARG_DIFF_SRC, d.src, pd.diff_src_desc(), true);
    AddScratchpad(plan.get(), pd.scratchpad_desc());
    SlotFirst(plan.get(), 0);
  } else {
    auto hint = ForwardPd(d, bias);
    dnnl::convolution_backward_weights::desc desc(d.alg, Layout(d.src, d.blocked), Layout(d.wei, d.blocked),
                                                  bias ? d.bias : memory::desc(), Layout(d.dst, d.blocked), d.strides, d.dilates,
                                                  d.pad_l, d.pad_r);
    dnnl::convolution_backward_weights::primitive_desc pd(desc, attr, Engine(), hint);
    plan->prim = dnnl::convolution_backward_weights(pd);
    AddArg(plan.get(), DNNL_ARG_SRC, d.src, pd.src_desc(), false);
    AddArg(plan.get(), DNNL_ARG_DIFF_DST, d.dst, pd.diff_dst_desc(), false);
    AddArg(plan.get(), DNNL_ARG_DIFF_WEIGHTS, d.wei, pd.diff_weights_desc(), true);
    if (bias) AddArg(plan.get(), DNNL_ARG_DIFF_BIAS, d.bias, pd.diff_bias_desc(), true);
    AddScratchpad(plan.get(), pd.scratchpad_desc());
    SlotFirst(plan.get(), 1);
  }
  return plan;
}

// Plans by geometry and pass; Winograd where wanted and oneDNN takes it, else the direct
// algorithm; a geometry oneDNN refuses is remembered as nullptr so that the plain path
// takes it without asking again.
std::shared_ptr<DnnlPlan> GetConvPlan(const ConvGeom& g, ConvPass pass, bool bias, DType dt) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::shared_ptr<DnnlPlan>> cache;
  std::string key;
  key.reserve(128);
  for (int64_t v : {int64_t(g.nd), g.n, g.c, g.f, g.g, int64_t(pass), int64_t(bias), int64_t(dt)})
    key += std::to_string(v) + ',';
  for (int i = 0; i < 3; ++i)
    for (int64_t v : {g.in[i], g.out[i], g.k[i], g.s[i], g.d[i], g.pl[i]}) key += std::to_string(v) + ',';
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  std::shared_ptr<DnnlPlan> plan;
  if (WinogradWanted(g)) {
    try {
      plan = MakeConvPlan(g, pass, bias, true, dt);
    } catch (const dnnl::error&) {
      plan = nullptr;
    }
  }
  if (!plan) {
    try {
      plan = MakeConvPlan(g, pass, bias, false, dt);
    } catch (const dnnl::error&) {
      plan = nullptr;
    }
  }
  cache.emplace(key, plan);
  return plan;
}

char* TempBytes(const OpContext& ctx, size_t bytes) {
  if (bytes == 0) return nullptr;
  return static_cast<char*>(ctx.requested.at(0).temp->Get(bytes));
}

template <typename T>
void AddIntoT(T* dst, const T* src, int64_t n) {
  ParallelFor(n, kElemGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dst[i] = static_cast<T>(static_cast<float>(dst[i]) + static_cast<float>(src[i]));
  });
}

void AddInto(DType dt, void* dst, const void* src, int64_t n) {
  if (dt == DType::kBfloat16)
    AddIntoT(static_cast<bfloat16*>(dst), static_cast<const bfloat16*>(src), n);
  else
    AddIntoT(static_cast<float*>(dst), static_cast<const float*>(src), n);
}
#endif

}  // namespace

void AddBias(DType dt, void* y, const void* bias, int64_t n, int64_t channels, int64_t spatial) {
  WEFT_TYPE_SWITCH(dt, T, {
    T* out = static_cast<T*>(y);
    const T* b = static_cast<const T*>(bias);
    ParallelFor(n * channels, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(spatial, 1)),
                [&](int64_t lo, int64_t hi) {
                  for (int64_t r = lo; r < hi; ++r) {
                    T v = b[r % channels];
                    T* row = out + r * spatial;
                    for (int64_t i = 0; i < spatial; ++i) row[i] = static_cast<T>(row[i] + v);
                  }
                });
  });
}

namespace {

// A row summed in vector lanes of its own precision (float for the narrower types): a
// double sum element by element is one add chain, 4 cycles per element.
template <typename T>
double RowSum(const T* row, int64_t n) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  A sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) sum += static_cast<A>(row[i]);
  return sum;
}

}  // namespace

void BiasGrad(DType dt, const void* dy, void* db, OpReq req, int64_t n, int64_t channels, int64_t spatial) {
  if (req == OpReq::kNullOp) return;
  WEFT_TYPE_SWITCH(dt, T, {
    const T* g = static_cast<const T*>(dy);
    T* out = static_cast<T*>(db);
    ParallelFor(channels, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t ch = lo; ch < hi; ++ch) {
        double acc = 0;
        for (int64_t b = 0; b < n; ++b) {
          const T* row = g + (b * channels + ch) * spatial;
          acc += RowSum(row, spatial);
        }
        Store(out + ch, req, acc);
      }
    });
  });
}

namespace {

int64_t WeightCount(const ConvGeom& g) { return g.f * (g.c / g.g) * g.KSize(); }

}  // namespace

void ConvForward(const char* op, const OpContext& ctx, const ConvGeom& g, DType dt, const void* x, const void* w,
                 const void* bias, void* y, OpReq req) {
  if (req == OpReq::kNullOp) return;
#if defined(WEFT_USE_ONEDNN)
  if (DnnlConvType(dt) && g.n > 0) {
    auto plan = GetConvPlan(g, ConvPass::kForward, bias != nullptr, dt);
    if (plan) {
      // Accumulation goes through a plain temporary: the output may be reordered from a
      // blocked layout, which a sum post-op could not read from.
      bool add = req == OpReq::kAddTo;
      size_t out_bytes = add ? Align(sizeof(float) * g.n * g.f * g.OutSize()) : 0;
      char* temp = TempBytes(ctx, plan->temp_bytes + out_bytes);
      void* target = add ? temp + plan->temp_bytes : y;
      std::vector<void*> ptrs{const_cast<void*>(x), const_cast<void*>(w)};
      if (bias) ptrs.push_back(const_cast<void*>(bias));
      ptrs.push_back(target);
      ptrs.push_back(nullptr);
      RunPlan(*plan, ptrs, temp);
      if (add) AddInto(dt, y, target, g.n * g.f * g.OutSize());
      return;
    }
  }
#endif
  // bfloat16 and float16 without a oneDNN kernel for them (bfloat16 below AVX512-BF16, float16
  // always) run as float32 (reduced_float.h), here and in both gradients: rounding Col2Im's
  // adds and the weight gradient's per-sample steps cost 1.2 % of the largest data-gradient
  // value for LeNet's second layer, against 0.3 % from rounding the inputs and result alone.
  if (ReducedFloat(dt)) {
    std::vector<float> xf = Widen(dt, x, g.n * g.c * g.InSize()), wf = Widen(dt, w, WeightCount(g));
    std::vector<float> bf = bias ? Widen(dt, bias, g.f) : std::vector<float>();
    std::vector<float> yf(static_cast<size_t>(g.n * g.f * g.OutSize()));
    ConvForward(op, ctx, g, DType::kFloat32, xf.data(), wf.data(), bias ? bf.data() : nullptr, yf.data(),
                OpReq::kWriteTo);
    Narrow(dt, yf, y, req);
    return;
  }
  WEFT_TYPE_SWITCH(dt, T, {
    if constexpr (std::is_same_v<T, bool>) {
      Throw(ErrorKind::kType, "Operator '", op, "': bool arrays are not supported");
    } else {
      PlainForward<T>(op, g, static_cast<const T*>(x), static_cast<const T*>(w), static_cast<T*>(y), req);
      if (bias) AddBias(dt, y, bias, g.n, g.f, g.OutSize());
    }
  });
}

#if defined(WEFT_USE_ONEDNN)
namespace {

// The data-gradient plan run into dx under `req`: kAddTo goes through a plain temporary
// after the plan's own temp space, unless dx is reordered from the primitive's layout,
// which then adds (argument 2 of the data plan is dx: MakeConvPlan). `ready_dy`: dy
// already in the plan's layout, or null.
size_t DataTempBytes(const DnnlPlan& plan, const ConvGeom& g, OpReq req) {
  bool temp = req == OpReq::kAddTo && !AddsInReorder(plan, 2);
  return plan.temp_bytes + (temp ? Align(sizeof(float) * g.n * g.c * g.InSize()) : 0);
}

void RunData(const DnnlPlan& plan, const ConvGeom& g, DType dt, const void* dy, const void* w, void* dx, OpReq req,
             char* temp, void* ready_dy) {
  const bool in_reorder = req == OpReq::kAddTo && AddsInReorder(plan, 2);
  const bool add = req == OpReq::kAddTo && !in_reorder;
  void* target = add ? temp + plan.temp_bytes : dx;
  std::vector<void*> ready{ready_dy, nullptr, nullptr, nullptr};
  RunPlan(plan, {const_cast<void*>(dy), const_cast<void*>(w), target, nullptr}, temp, &ready, in_reorder);
  if (add) AddInto(dt, dx, target, g.n * g.c * g.InSize());
}

// The weight-gradient plan (with the bias gradient when db is given), likewise.
size_t WeightsTempBytes(const DnnlPlan& plan, const ConvGeom& g, OpReq req_w, bool bias, OpReq req_b) {
  size_t w_elems = g.f * (g.c / g.g) * g.KSize();
  return plan.temp_bytes + (req_w == OpReq::kAddTo ? Align(sizeof(float) * w_elems) : 0) +
         (bias && req_b == OpReq::kAddTo ? Align(sizeof(float) * g.f) : 0);
}

void RunWeights(const DnnlPlan& plan, const ConvGeom& g, DType dt, const void* x, const void* dy, void* dw, OpReq req_w,
                void* db, OpReq req_b, char* temp, void* ready_dy) {
  bool add_w = req_w == OpReq::kAddTo, add_b = db && req_b == OpReq::kAddTo;
  size_t w_elems = g.f * (g.c / g.g) * g.KSize();
  size_t extra_w = add_w ? Align(sizeof(float) * w_elems) : 0;
  void* wt = add_w ? temp + plan.temp_bytes : dw;
  void* bt = add_b ? temp + plan.temp_bytes + extra_w : db;
  std::vector<void*> ptrs{const_cast<void*>(x), const_cast<void*>(dy), wt};
  if (db) ptrs.push_back(bt);
  ptrs.push_back(nullptr);
  std::vector<void*> ready(ptrs.size(), nullptr);
  ready[1] = ready_dy;
  RunPlan(plan, ptrs, temp, &ready);
  if (add_w) AddInto(dt, dw, wt, w_elems);
  if (add_b) AddInto(dt, db, bt, g.f);
}

}  // namespace
#endif

bool ConvPadsChannelsWastefully(int64_t c, int64_t f, int64_t groups) {
#if defined(WEFT_USE_ONEDNN)
  const int64_t b = DnnlChannelBlock();
  if (groups != 1 || c < 16 || c % b == 0 || f % b == 0) return false;
  return 2 * ((c + b - 1) / b * b) * ((f + b - 1) / b * b) >= 3 * c * f;
#else
  (void)c, (void)f, (void)groups;
  return false;
#endif
}

void ConvBackwardData(const char* op, const OpContext& ctx, const ConvGeom& g, DType dt, const void* dy,
                      const void* w, void* dx, OpReq req) {
  if (req == OpReq::kNullOp) return;
#if defined(WEFT_USE_ONEDNN)
  if (DnnlConvType(dt) && g.n > 0) {
    auto plan = GetConvPlan(g, ConvPass::kBackwardData, false, dt);
    if (plan) {
      RunData(*plan, g, dt, dy, w, dx, req, TempBytes(ctx, DataTempBytes(*plan, g, req)), nullptr);
      return;
    }
  }
#endif
  if (ReducedFloat(dt)) {
    std::vector<float> dyf = Widen(dt, dy, g.n * g.f * g.OutSize()), wf = Widen(dt, w, WeightCount(g));
    std::vector<float> dxf(static_cast<size_t>(g.n * g.c * g.InSize()));
    ConvBackwardData(op, ctx, g, DType::kFloat32, dyf.data(), wf.data(), dxf.data(), OpReq::kWriteTo);
    Narrow(dt, dxf, dx, req);
    return;
  }
  WEFT_TYPE_SWITCH(dt, T, {
    if constexpr (std::is_same_v<T, bool>) {
      Throw(ErrorKind::kType, "Operator '", op, "': bool arrays are not supported");
    } else {
      PlainBackwardData<T>(op, g, static_cast<const T*>(dy), static_cast<const T*>(w), static_cast<T*>(dx), req);
    }
  });
}

void ConvBackwardWeights(const char* op, const OpContext& ctx, const ConvGeom& g, DType dt, const void* x,
                         const void* dy, void* dw, OpReq req_w, void* db, OpReq req_b) {
  if (req_b == OpReq::kNullOp) db = nullptr;
  if (req_w == OpReq::kNullOp) {
    if (db) BiasGrad(dt, dy, db, req_b, g.n, g.f, g.OutSize());
    return;
  }
  if (OneChannelWeights(g) && dt != DType::kBool) {
    WEFT_TYPE_SWITCH(dt, T, {
      if constexpr (!std::is_same_v<T, bool>)
        OneChannelWeightsGrad<T>(g, static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dw), req_w);
    });
    if (db) BiasGrad(dt, dy, db, req_b, g.n, g.f, g.OutSize());
    return;
  }
#if defined(WEFT_USE_ONEDNN)
  if (DnnlConvType(dt) && g.n > 0) {
    auto plan = GetConvPlan(g, db ? ConvPass::kBackwardWeightsBias : ConvPass::kBackwardWeights, db != nullptr, dt);
    if (plan) {
      RunWeights(*plan, g, dt, x, dy, dw, req_w, db, req_b,
                 TempBytes(ctx, WeightsTempBytes(*plan, g, req_w, db != nullptr, req_b)), nullptr);
      return;
    }
  }
#endif
  if (ReducedFloat(dt)) {
    std::vector<float> xf = Widen(dt, x, g.n * g.c * g.InSize()), dyf = Widen(dt, dy, g.n * g.f * g.OutSize());
    std::vector<float> dwf(static_cast<size_t>(WeightCount(g))), dbf(db ? static_cast<size_t>(g.f) : 0);
    ConvBackwardWeights(op, ctx, g, DType::kFloat32, xf.data(), dyf.data(), dwf.data(), OpReq::kWriteTo,
                        db ? dbf.data() : nullptr, db ? OpReq::kWriteTo : OpReq::kNullOp);
    Narrow(dt, dwf, dw, req_w);
    if (db) Narrow(dt, dbf, db, req_b);
    return;
  }
  WEFT_TYPE_SWITCH(dt, T, {
    if constexpr (std::is_same_v<T, bool>) {
      Throw(ErrorKind::kType, "Operator '", op, "': bool arrays are not supported");
    } else {
      PlainBackwardWeights<T>(op, g, static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dw), req_w);
    }
  });
  if (db) BiasGrad(dt, dy, db, req_b, g.n, g.f, g.OutSize());
}

void ConvBackward(const char* op, const OpContext& ctx, const ConvGeom& g, DType dt, const void* dy, const void* x,
                  const void* w, void* dx, OpReq req_d, void* dw, OpReq req_w, void* db, OpReq req_b) {
#if defined(WEFT_USE_ONEDNN)
  if (DnnlConvType(dt) && g.n > 0 && req_d != OpReq::kNullOp && req_w != OpReq::kNullOp &&
      !OneChannelWeights(g)) {
    bool bias = db != nullptr && req_b != OpReq::kNullOp;
    auto pd = GetConvPlan(g, ConvPass::kBackwardData, false, dt);
    auto pw = GetConvPlan(g, bias ? ConvPass::kBackwardWeightsBias : ConvPass::kBackwardWeights, bias, dt);
    // diff_dst is argument 0 of the data plan and 1 of the weights plan (MakeConvPlan).
    if (pd && pw && pd->args[0].reorder && pw->args[1].reorder && pd->args[0].prim == pw->args[1].prim) {
      // Both passes read dy in the same blocked layout: reorder it once, at offset 0 of the
      // temp space, where both plans keep it (SlotFirst), and run them one after the other.
      const DnnlArg& a = pd->args[0];
      size_t need = std::max(DataTempBytes(*pd, g, req_d), WeightsTempBytes(*pw, g, req_w, bias, req_b));
      char* temp = TempBytes(ctx, need);
      memory user(a.user, Engine(), const_cast<void*>(dy)), inner(a.prim, Engine(), temp);
      a.re.execute(Stream(), user, inner);
      RunData(*pd, g, dt, dy, w, dx, req_d, temp, temp);
      RunWeights(*pw, g, dt, x, dy, dw, req_w, bias ? db : nullptr, req_b, temp, temp);
      return;
    }
  }
#endif
  ConvBackwardData(op, ctx, g, dt, dy, w, dx, req_d);
  ConvBackwardWeights(op, ctx, g, dt, x, dy, dw, req_w, db, req_b);
}

}  // namespace op
}  // namespace weft
