// The fused RNN operator on the CPU (rnn_relu, rnn_tanh, lstm, gru; stacked,
// bidirectional, with dropout between layers, an optional LSTM projection, cell-state
// clipping and per-sequence lengths) and its gradient `_backward_RNN`.
//
// Each layer and direction does its input projection for all time steps as one GEMM
// (T*N x G*H), then per step one GEMM for the recurrent part and a vectorised gate loop.
// The backward walks back through time from the forward's gate activations and states:
// per step one GEMM for the recurrent gradient, and once per layer and direction the
// weight gradients as single GEMMs over all time steps. A training forward leaves those
// activations and states in a hidden output, the reserve, which the backward reads; after
// a forward that did not fill it (inference, or a reserve given by hand) the backward
// recomputes them. The dropout masks (which must be reproduced exactly) are another hidden
// output, present when p > 0.
//
// Sequence lengths: a sequence n stops at len[n]; past it the output is 0 and the state
// is carried unchanged, so the reverse direction starts at len[n] - 1 and the final
// states are those of the last valid step.
#include "core/op/nn/rnn.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/op/linalg/gemm.h"
#include "core/op/nn/rnn_math.h"
#include "core/op/op_util.h"
#include "core/op/random/sampler.h"

namespace weft {
namespace op {

RnnMode ParseRnnMode(const std::string& mode) {
  if (mode == "rnn_relu") return RnnMode::kRelu;
  if (mode == "rnn_tanh") return RnnMode::kTanh;
  if (mode == "gru") return RnnMode::kGru;
  return RnnMode::kLstm;
}

RnnDims MakeRnnDims(const NodeAttrs& attrs, int64_t T, int64_t N, int64_t I) {
  const auto& p = attrs.Params<RNNParam>();
  RnnDims d;
  d.mode = ParseRnnMode(p.mode);
  d.T = T;
  d.N = N;
  d.I = I;
  d.H = p.state_size;
  d.L = p.num_layers;
  d.D = p.bidirectional ? 2 : 1;
  d.G = d.mode == RnnMode::kLstm ? 4 : d.mode == RnnMode::kGru ? 3 : 1;
  if (p.projection_size) {
    WEFT_CHECK(d.mode == RnnMode::kLstm, kValue, "Operator '", attrs.op->name,
               "': parameter 'projection_size' is only supported with mode='lstm', got mode='", p.mode, "'");
    WEFT_CHECK(*p.projection_size >= 1, kValue, "Operator '", attrs.op->name,
               "': parameter 'projection_size': expected a value >= 1, got ", *p.projection_size);
  }
  if (p.lstm_state_clip_min || p.lstm_state_clip_max) {
    WEFT_CHECK(d.mode == RnnMode::kLstm, kValue, "Operator '", attrs.op->name,
               "': parameters 'lstm_state_clip_min'/'lstm_state_clip_max' need mode='lstm', got mode='", p.mode, "'");
    WEFT_CHECK(!(p.lstm_state_clip_min && p.lstm_state_clip_max && *p.lstm_state_clip_min > *p.lstm_state_clip_max),
               kValue, "Operator '", attrs.op->name, "': lstm_state_clip_min = ", *p.lstm_state_clip_min,
               " is greater than lstm_state_clip_max = ", *p.lstm_state_clip_max);
  }
  d.proj = p.projection_size.has_value();
  d.Hout = d.proj ? *p.projection_size : d.H;
  return d;
}

namespace {

std::string InName(const RNNParam& p, int i) {
  if (i == 0) return "data";
  if (i == 1) return "parameters";
  if (i == 2) return "state";
  if (i == CellInput(p)) return "state_cell";
  return "sequence_length";
}

Shape MaskShape(const RnnDims& d) { return Shape({d.L - 1, d.T, d.N, d.D * d.Hout}); }

// The elementwise math (ExpApprox, Sigmoid, Tanh) is in rnn_math.h, shared with the int8
// LSTM.
using rnn_math::ExpApprox;
using rnn_math::Sigmoid;
using rnn_math::Tanh;

// Gate kernels of one sequence and step, as free functions with restrict-qualified
// pointers: inside the step lambdas the compiler reloads captured pointers on every
// iteration and does not vectorise. g holds the gate pre-activations on entry (input
// projection only) and the activations on exit.
template <typename DT, bool kClip>
WEFT_RNN_VECTOR_LOOP
void LstmForwardRow(int64_t H, DT* __restrict g, const DT* __restrict bx, const DT* __restrict gh,
                    const DT* __restrict bh, const DT* __restrict cp, DT* __restrict c, DT* __restrict h, DT lo,
                    DT hi, DT nan_to) {
#pragma omp simd
  for (int64_t j = 0; j < H; ++j) {
    DT i = Sigmoid(g[j] + bx[j] + gh[j] + bh[j]);
    DT f = Sigmoid(g[H + j] + bx[H + j] + gh[H + j] + bh[H + j]);
    DT gg = Tanh(g[2 * H + j] + bx[2 * H + j] + gh[2 * H + j] + bh[2 * H + j]);
    DT o = Sigmoid(g[3 * H + j] + bx[3 * H + j] + gh[3 * H + j] + bh[3 * H + j]);
    DT cv = f * cp[j] + i * gg;
    if constexpr (kClip) {
      DT v = cv < lo ? lo : (cv > hi ? hi : cv);
      cv = cv == cv ? v : nan_to;
    }
    g[j] = i;
    g[H + j] = f;
    g[2 * H + j] = gg;
    g[3 * H + j] = o;
    c[j] = cv;
    h[j] = o * Tanh(cv);
  }
}

// MXNet's GRU: the reset gate multiplies (W_hn h + b_hn), kept in `lin` for the backward.
template <typename DT>
WEFT_RNN_VECTOR_LOOP
void GruForwardRow(int64_t H, DT* __restrict g, const DT* __restrict bx, const DT* __restrict gh,
                   const DT* __restrict bh, const DT* __restrict hp, DT* __restrict lin, DT* __restrict h) {
#pragma omp simd
  for (int64_t j = 0; j < H; ++j) {
    DT r = Sigmoid(g[j] + bx[j] + gh[j] + bh[j]);
    DT z = Sigmoid(g[H + j] + bx[H + j] + gh[H + j] + bh[H + j]);
    DT l = gh[2 * H + j] + bh[2 * H + j];
    DT nv = Tanh(g[2 * H + j] + bx[2 * H + j] + r * l);
    g[j] = r;
    g[H + j] = z;
    g[2 * H + j] = nv;
    lin[j] = l;
    h[j] = (DT(1) - z) * nv + z * hp[j];
  }
}

// dh: gradient of the step's h; dc: of its c on entry, of the previous c on exit.
template <typename DT, bool kClip>
WEFT_RNN_VECTOR_LOOP
void LstmBackwardRow(int64_t H, const DT* __restrict g, const DT* __restrict c, const DT* __restrict cp,
                     const DT* __restrict dh, DT* __restrict dc, DT* __restrict dg, DT lo, DT hi) {
#pragma omp simd
  for (int64_t j = 0; j < H; ++j) {
    DT i = g[j], f = g[H + j], gg = g[2 * H + j], o = g[3 * H + j];
    DT tc = Tanh(c[j]);
    DT dct = dc[j] + dh[j] * o * (DT(1) - tc * tc);
    // A clipped cell state passes no gradient to what produced it.
    if constexpr (kClip) dct = c[j] > lo && c[j] < hi ? dct : DT(0);
    dg[j] = dct * gg * i * (DT(1) - i);
    dg[H + j] = dct * cp[j] * f * (DT(1) - f);
    dg[2 * H + j] = dct * i * (DT(1) - gg * gg);
    dg[3 * H + j] = dh[j] * tc * o * (DT(1) - o);
    dc[j] = dct * f;
  }
}

// dgx: gradients of the input-side pre-activations; dgh: of the recurrent ones (they differ
// in the n gate, where the recurrent part is scaled by r).
template <typename DT>
void GruBackwardRow(int64_t H, const DT* __restrict g, const DT* __restrict hp, const DT* __restrict lin,
                    const DT* __restrict dh, DT* __restrict dgx, DT* __restrict dgh) {
#pragma omp simd
  for (int64_t j = 0; j < H; ++j) {
    DT r = g[j], z = g[H + j], nv = g[2 * H + j];
    DT dn = dh[j] * (DT(1) - z) * (DT(1) - nv * nv);
    DT dr = dn * lin[j] * r * (DT(1) - r);
    DT dz = dh[j] * (hp[j] - nv) * z * (DT(1) - z);
    dgx[j] = dr;
    dgx[H + j] = dz;
    dgx[2 * H + j] = dn;
    dgh[j] = dr;
    dgh[H + j] = dz;
    dgh[2 * H + j] = dn * r;
  }
}

// ------------------------------------------------------------------ the runner
// Element offsets of the saved values inside the temporary space.
struct RnnLayout {
  // Per (layer, direction): gate activations (T, N, G*H), states h by slot (T+1, N, Hout)
  // and c (T+1, N, H), and `extra` (T, N, H): GRU's W_hn h + b_hn, or the LSTM's
  // unprojected h with projection.
  std::vector<int64_t> gates, hs, cs, extra;
  // Per layer: its output (T, N, D*Hout) and, with dropout, the masked copy the next
  // layer reads.
  std::vector<int64_t> y, ydrop;
  int64_t gh = 0;  // per-step recurrent product (N, G*H), one per direction
  // Backward only: the time loop's scratch, one set per direction (both directions of a
  // layer run their time loops at once), and what the layers share.
  struct DirScratch {
    int64_t dgx = 0, dgh = 0, dr = 0, dh = 0, dc = 0, dtmp = 0, dhf = 0;
  };
  std::vector<DirScratch> dirs;
  int64_t dbuf0 = 0, dbuf1 = 0, dw = 0;
  int64_t total = 0;
};

RnnLayout MakeLayout(const RnnDims& d, bool dropout, bool backward) {
  RnnLayout w;
  int64_t off = 0;
  auto take = [&off](int64_t n) {
    int64_t o = off;
    off += (n + 15) / 16 * 16;  // 64-byte aligned blocks for the vector loops
    return o;
  };
  const int64_t TN = d.T * d.N;
  for (int64_t ld = 0; ld < d.L * d.D; ++ld) {
    w.gates.push_back(take(TN * d.GH()));
    w.hs.push_back(take((d.T + 1) * d.N * d.Hout));
    w.cs.push_back(d.mode == RnnMode::kLstm ? take((d.T + 1) * d.N * d.H) : -1);
    w.extra.push_back(d.mode == RnnMode::kGru || d.proj ? take(TN * d.H) : -1);
  }
  for (int64_t l = 0; l < d.L; ++l) {
    w.y.push_back(take(TN * d.D * d.Hout));
    w.ydrop.push_back(dropout && l + 1 < d.L ? take(TN * d.D * d.Hout) : -1);
  }
  w.gh = take(d.D * d.N * d.GH());
  if (backward) {
    int64_t widest = std::max(d.I, d.D * d.Hout);
    for (int64_t dir = 0; dir < d.D; ++dir) {
      RnnLayout::DirScratch s;
      s.dgx = take(TN * d.GH());
      s.dgh = d.mode == RnnMode::kGru ? take(TN * d.GH()) : s.dgx;
      s.dr = take(TN * d.Hout);
      s.dh = take(d.N * d.Hout);
      s.dc = take(d.N * d.H);
      s.dtmp = take(d.N * std::max(d.H, d.Hout));
      s.dhf = take(d.N * d.H);
      w.dirs.push_back(s);
    }
    w.dbuf0 = take(TN * widest);
    w.dbuf1 = take(TN * widest);
    w.dw = take(d.ParamSize());
  }
  w.total = off;
  return w;
}

// The reserve: a training forward's whole workspace, whose start (everything before the
// per-step product `gh`) is the start of the backward's workspace, then one flag, 1 when
// the forward filled it. Dropout between layers adds the masked layer outputs.
bool ReserveDropout(const RNNParam& p, const RnnDims& d) { return p.p > 0 && d.L > 1; }
int64_t ReserveFloats(const RNNParam& p, const RnnDims& d) {
  return MakeLayout(d, ReserveDropout(p, d), false).total + 1;
}

template <typename DT>
void StoreArray(DT* dst, const DT* src, int64_t n, OpReq req) {
  if (req == OpReq::kNullOp) return;
  if (req == OpReq::kAddTo) {
    for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
  } else if (dst != src) {
    std::memcpy(dst, src, sizeof(DT) * n);
  }
}

template <typename DT>
class RnnRunner {
 public:
  RnnRunner(const NodeAttrs& attrs, const RnnDims& d, const RnnLayout& w, DT* ws, const DT* params)
      : d_(d), w_(w), ws_(ws), wts_(params), name_(attrs.op->name.c_str()) {
    const auto& p = attrs.Params<RNNParam>();
    clip_lo_ = p.lstm_state_clip_min ? static_cast<DT>(*p.lstm_state_clip_min) : -HUGE_VAL;
    clip_hi_ = p.lstm_state_clip_max ? static_cast<DT>(*p.lstm_state_clip_max) : HUGE_VAL;
    clip_ = p.lstm_state_clip_min || p.lstm_state_clip_max;
    // With lstm_state_clip_nan a NaN cell state becomes the lower bound (the upper one when
    // only that is set); otherwise it propagates.
    nan_to_ = clip_ && p.lstm_state_clip_nan ? (p.lstm_state_clip_min ? clip_lo_ : clip_hi_)
                                            : std::numeric_limits<DT>::quiet_NaN();
  }

  // lens: per-sequence valid lengths (T for every sequence when none are given). mask:
  // (L-1, T, N, D*Hout) multipliers of the layer outputs, or null without dropout.
  void Forward(const DT* x, const DT* h0, const DT* c0, const std::vector<int64_t>& lens, const DT* mask) {
    lens_ = &lens;
    const int64_t TN = d_.T * d_.N, DHo = d_.D * d_.Hout;
    for (int64_t l = 0; l < d_.L; ++l) {
      const DT* in = l == 0 ? x : LayerInput(l);
      for (int64_t dir = 0; dir < d_.D; ++dir) ForwardProject(l, dir, in, h0, c0);
      OverSequences([&](int64_t dir, int64_t n0, int64_t n1) { ForwardSteps(l, dir, n0, n1); });
      if (l + 1 < d_.L && mask != nullptr) {
        const DT* y = ws_ + w_.y[l];
        const DT* m = mask + l * TN * DHo;
        DT* yd = ws_ + w_.ydrop[l];
        ParallelFor(TN * DHo, kElemGrain, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) yd[i] = y[i] * m[i];
        });
      }
    }
  }

  // Instead of Forward: the forward's workspace start, saved by a training forward.
  void Restore(const DT* saved, int64_t floats, const std::vector<int64_t>& lens) {
    lens_ = &lens;
    std::memcpy(ws_, saved, sizeof(DT) * floats);
  }

  const DT* Output() const { return ws_ + w_.y[d_.L - 1]; }
  // The final state of (layer, direction): slot T forward, slot 0 reverse.
  const DT* FinalH(int64_t ld) const { return ws_ + w_.hs[ld] + (ld % d_.D == 0 ? d_.T : 0) * d_.N * d_.Hout; }
  const DT* FinalC(int64_t ld) const { return ws_ + w_.cs[ld] + (ld % d_.D == 0 ? d_.T : 0) * d_.N * d_.H; }

  // After Forward with the same arguments. dy: (T, N, D*Hout); dhy/dcy may be null (no
  // gradient). Writes into the given outputs as `req` says.
  void Backward(const DT* x, const DT* dy, const DT* dhy, const DT* dcy, const DT* mask, DT* dx, OpReq dx_req,
                DT* dparams, OpReq dp_req, DT* dh0, OpReq dh0_req, DT* dc0, OpReq dc0_req) {
    const int64_t TN = d_.T * d_.N, DHo = d_.D * d_.Hout;
    DT* dw = ws_ + w_.dw;
    DT* dcur = ws_ + w_.dbuf0;   // gradient of the current layer's output
    DT* dnext = ws_ + w_.dbuf1;  // gradient of its input
    std::memcpy(dcur, dy, sizeof(DT) * TN * DHo);
    for (int64_t l = d_.L - 1; l >= 0; --l) {
      const DT* in = l == 0 ? x : LayerInput(l);
      for (int64_t dir = 0; dir < d_.D; ++dir) {
        int64_t ld = l * d_.D + dir;
        BackwardStart(dir, dhy ? dhy + ld * d_.N * d_.Hout : nullptr, dcy ? dcy + ld * d_.N * d_.H : nullptr);
      }
      OverSequences([&](int64_t dir, int64_t n0, int64_t n1) { BackwardSteps(l, dir, dcur, n0, n1); });
      for (int64_t dir = 0; dir < d_.D; ++dir) {
        int64_t ld = l * d_.D + dir;
        const auto& s = w_.dirs[dir];
        BackwardWeights(l, dir, in, dnext, dw);
        StoreArray(dh0 + ld * d_.N * d_.Hout, ws_ + s.dh, d_.N * d_.Hout, dh0_req);
        if (d_.mode == RnnMode::kLstm) StoreArray(dc0 + ld * d_.N * d_.H, ws_ + s.dc, d_.N * d_.H, dc0_req);
      }
      if (l > 0) {
        if (mask != nullptr) {
          const DT* m = mask + (l - 1) * TN * DHo;
          ParallelFor(TN * DHo, kElemGrain, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) dnext[i] *= m[i];
          });
        }
        std::swap(dcur, dnext);
      }
    }
    StoreArray(dx, dnext, TN * d_.I, dx_req);
    StoreArray(dparams, dw, d_.ParamSize(), dp_req);
  }

 private:
  const DT* LayerInput(int64_t l) const { return ws_ + (w_.ydrop[l - 1] >= 0 ? w_.ydrop[l - 1] : w_.y[l - 1]); }
  const DT* Wx(int64_t l, int64_t dir) const { return wts_ + d_.WeightOffset(l, dir); }
  const DT* Wh(int64_t l, int64_t dir) const { return Wx(l, dir) + d_.GH() * d_.InSize(l); }
  const DT* Wr(int64_t l, int64_t dir) const { return Wh(l, dir) + d_.GH() * d_.Hout; }
  const DT* Bx(int64_t l, int64_t dir) const { return wts_ + d_.BiasOffset(l, dir); }
  const DT* Bh(int64_t l, int64_t dir) const { return Bx(l, dir) + d_.GH(); }

  // C (m x n) = op(A) op(B) (+ C when acc).
  void Mm(int64_t m, int64_t n, int64_t k, const DT* a, int64_t lda, bool ta, const DT* b, int64_t ldb, bool tb,
          DT* c, int64_t ldc, bool acc) const {
    Gemm(DTypeOf<DT>::value, m, n, k, GemmOperand{a, lda, 0, ta}, GemmOperand{b, ldb, 0, tb}, acc ? 1.0 : 0.0, c,
         ldc, 0, 1, name_);
  }

  bool Masked(int64_t t, int64_t n) const { return t >= (*lens_)[n]; }

  // Loop over the sequences [n0, n1) of one step. A step's gate loop is tens of
  // microseconds, about what waking the other threads costs, so only wide steps are split
  // across threads (and none inside a thread's own rows: ParallelFor runs serially there).
  template <typename F>
  void Rows(int64_t n0, int64_t n1, F&& f) const {
    int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, d_.GH()));
    ParallelFor(n1 - n0, grain, [&](int64_t b, int64_t e) {
      for (int64_t n = n0 + b; n < n0 + e; ++n) f(n);
    });
  }
  // The same for loops that only copy or add a row: never worth a thread.
  template <typename F>
  void RowsSerial(int64_t n0, int64_t n1, F&& f) const {
    for (int64_t n = n0; n < n1; ++n) f(n);
  }
  // Runs steps(dir, n0, n1) over both directions and all N sequences. They are
  // independent through time, so with enough of them each thread runs the whole time loop
  // on its own rows, its GEMMs on one thread: one parallel region per layer instead of two
  // or three per step, whose wake-ups and barriers took about a third of an LSTM layer's
  // forward at batch 32 (2 threads). The two directions of a layer are independent too and
  // share the threads first: on 2 threads each runs one direction on all its rows, each
  // step's GEMM reading its recurrent weight for 32 rows instead of 16 at batch 32 (a
  // bidirectional 2x256 LSTM's forward on Zen 5: 17.5 -> 15.5 ms, 29.7 -> 27.8 capped at
  // AVX2). One direction with fewer sequences keeps the steps' GEMMs and gate loops
  // threaded.
  template <typename F>
  void OverSequences(F&& steps) const {
    constexpr int64_t kRowsPerThread = 8;
    const int64_t threads = omp_get_max_threads(), N = d_.N, D = d_.D;
    const int64_t per_dir = N >= 2 * kRowsPerThread
                                ? std::max<int64_t>(1, std::min(threads / D, (N + kRowsPerThread - 1) / kRowsPerThread))
                                : 1;
    if (D * per_dir == 1) {
      steps(int64_t{0}, int64_t{0}, N);
      return;
    }
    ParallelFor(D * per_dir, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t dir = i / per_dir, c = i % per_dir;
        steps(dir, c * N / per_dir, (c + 1) * N / per_dir);
      }
    });
  }

  // The input projection of every step at once, and the initial states in their slots.
  void ForwardProject(int64_t l, int64_t dir, const DT* in, const DT* h0, const DT* c0) {
    const int64_t N = d_.N, H = d_.H, Ho = d_.Hout, GH = d_.GH(), In = d_.InSize(l), ld = l * d_.D + dir;
    Mm(d_.T * N, GH, In, in, In, false, Wx(l, dir), In, true, ws_ + w_.gates[ld], GH, false);
    const int64_t first = dir == 0 ? 0 : d_.T;
    std::memcpy(ws_ + w_.hs[ld] + first * N * Ho, h0 + ld * N * Ho, sizeof(DT) * N * Ho);
    if (w_.cs[ld] >= 0) std::memcpy(ws_ + w_.cs[ld] + first * N * H, c0 + ld * N * H, sizeof(DT) * N * H);
  }

  // The time loop of one layer and direction over the sequences [n0, n1).
  void ForwardSteps(int64_t l, int64_t dir, int64_t n0, int64_t n1) {
    const int64_t N = d_.N, H = d_.H, Ho = d_.Hout, GH = d_.GH(), ld = l * d_.D + dir;
    const int64_t DHo = d_.D * Ho;
    DT* gates = ws_ + w_.gates[ld];
    DT* hs = ws_ + w_.hs[ld];
    DT* cs = w_.cs[ld] >= 0 ? ws_ + w_.cs[ld] : nullptr;
    DT* extra = w_.extra[ld] >= 0 ? ws_ + w_.extra[ld] : nullptr;
    DT* y = ws_ + w_.y[l];
    DT* gh = ws_ + w_.gh + dir * N * GH;
    const DT* bx = Bx(l, dir);
    const DT* bh = Bh(l, dir);
    for (int64_t s = 0; s < d_.T; ++s) {
      const int64_t t = dir == 0 ? s : d_.T - 1 - s;
      const int64_t prev = dir == 0 ? t : t + 1, next = dir == 0 ? t + 1 : t;
      const DT* hp = hs + prev * N * Ho;
      DT* hn = hs + next * N * Ho;
      DT* g = gates + t * N * GH;
      Mm(n1 - n0, GH, Ho, hp + n0 * Ho, Ho, false, Wh(l, dir), Ho, true, gh + n0 * GH, GH, false);
      Rows(n0, n1, [&](int64_t n) {
        DT* gr = g + n * GH;
        const DT* ghr = gh + n * GH;
        switch (d_.mode) {
          case RnnMode::kRelu:
          case RnnMode::kTanh: {
            DT* h = hn + n * Ho;
            bool relu = d_.mode == RnnMode::kRelu;
            #pragma omp simd
            for (int64_t j = 0; j < H; ++j) {
              DT a = gr[j] + bx[j] + ghr[j] + bh[j];
              DT v = relu ? (a > DT(0) ? a : DT(0)) : Tanh(a);
              gr[j] = v;
              h[j] = v;
            }
            break;
          }
          case RnnMode::kLstm: {
            const DT* cp = cs + prev * N * H + n * H;
            DT* c = cs + next * N * H + n * H;
            DT* h = d_.proj ? extra + t * N * H + n * H : hn + n * Ho;
            if (clip_) LstmForwardRow<DT, true>(H, gr, bx, ghr, bh, cp, c, h, clip_lo_, clip_hi_, nan_to_);
            else LstmForwardRow<DT, false>(H, gr, bx, ghr, bh, cp, c, h, clip_lo_, clip_hi_, nan_to_);
            break;
          }
          case RnnMode::kGru: {
            const DT* hpr = hp + n * Ho;
            DT* h = hn + n * Ho;
            GruForwardRow<DT>(H, gr, bx, ghr, bh, hpr, extra + t * N * H + n * H, h);
            break;
          }
        }
      });
      if (d_.proj)
        Mm(n1 - n0, Ho, H, extra + (t * N + n0) * H, H, false, Wr(l, dir), H, true, hn + n0 * Ho, Ho, false);
      // Sequences past their length keep their state and emit zeros.
      RowsSerial(n0, n1, [&](int64_t n) {
        DT* yr = y + (t * N + n) * DHo + dir * Ho;
        if (Masked(t, n)) {
          std::memcpy(hn + n * Ho, hp + n * Ho, sizeof(DT) * Ho);
          if (cs) std::memcpy(cs + next * N * H + n * H, cs + prev * N * H + n * H, sizeof(DT) * H);
          std::fill(yr, yr + Ho, DT(0));
        } else {
          std::memcpy(yr, hn + n * Ho, sizeof(DT) * Ho);
        }
      });
    }
  }

  // Backpropagation through time for one layer and direction, in three parts: the
  // gradients of the final states (dhy/dcy, null for none) as the direction's running dh
  // and dc; the time loop over the sequences [n0, n1), from dy, the gradient of the layer's
  // output (T, N, D*Hout), which leaves dL/dh0 and dL/dc0 in the direction's dh and dc; then
  // the weight gradients and the input's.
  void BackwardStart(int64_t dir, const DT* dhy, const DT* dcy) {
    const int64_t N = d_.N, H = d_.H, Ho = d_.Hout;
    DT* dh = ws_ + w_.dirs[dir].dh;
    DT* dc = ws_ + w_.dirs[dir].dc;
    if (dhy) std::memcpy(dh, dhy, sizeof(DT) * N * Ho);
    else std::fill(dh, dh + N * Ho, DT(0));
    if (d_.mode == RnnMode::kLstm) {
      if (dcy) std::memcpy(dc, dcy, sizeof(DT) * N * H);
      else std::fill(dc, dc + N * H, DT(0));
    }
  }

  void BackwardSteps(int64_t l, int64_t dir, const DT* dy, int64_t n0, int64_t n1) {
    const int64_t N = d_.N, H = d_.H, Ho = d_.Hout, GH = d_.GH(), ld = l * d_.D + dir;
    const int64_t DHo = d_.D * Ho, T = d_.T;
    const DT* gates = ws_ + w_.gates[ld];
    const DT* hs = ws_ + w_.hs[ld];
    const DT* cs = w_.cs[ld] >= 0 ? ws_ + w_.cs[ld] : nullptr;
    const DT* extra = w_.extra[ld] >= 0 ? ws_ + w_.extra[ld] : nullptr;
    const auto& sc = w_.dirs[dir];
    DT* dgx = ws_ + sc.dgx;
    DT* dgh = ws_ + sc.dgh;
    DT* dr = ws_ + sc.dr;
    DT* dh = ws_ + sc.dh;
    DT* dc = ws_ + sc.dc;
    DT* dtmp = ws_ + sc.dtmp;
    DT* dhf = ws_ + sc.dhf;
    const DT* wh = Wh(l, dir);
    for (int64_t s = T - 1; s >= 0; --s) {
      const int64_t t = dir == 0 ? s : T - 1 - s;
      const int64_t prev = dir == 0 ? t : t + 1, next = dir == 0 ? t + 1 : t;
      const DT* g = gates + t * N * GH;
      // Gradient of this step's (projected) hidden state; zero for finished sequences.
      DT* dhr = dr + t * N * Ho;
      RowsSerial(n0, n1, [&](int64_t n) {
        const DT* dyr = dy + (t * N + n) * DHo + dir * Ho;
        DT* o = dhr + n * Ho;
        if (Masked(t, n)) {
          std::fill(o, o + Ho, DT(0));
        } else {
          for (int64_t j = 0; j < Ho; ++j) o[j] = dyr[j] + dh[n * Ho + j];
        }
      });
      const DT* dhcell = dhr;  // gradient of the cell's own h (before projection)
      if (d_.proj) {
        Mm(n1 - n0, H, Ho, dhr + n0 * Ho, Ho, false, Wr(l, dir), H, false, dhf + n0 * H, H, false);
        dhcell = dhf;
      }
      DT* dgxr_t = dgx + t * N * GH;
      DT* dghr_t = dgh + t * N * GH;
      Rows(n0, n1, [&](int64_t n) {
        DT* dgxr = dgxr_t + n * GH;
        DT* dghr = dghr_t + n * GH;
        if (Masked(t, n)) {
          std::fill(dgxr, dgxr + GH, DT(0));
          if (dghr != dgxr) std::fill(dghr, dghr + GH, DT(0));
          return;
        }
        const DT* gr = g + n * GH;
        const DT* dhn = dhcell + n * H;
        switch (d_.mode) {
          case RnnMode::kRelu:
          case RnnMode::kTanh: {
            bool relu = d_.mode == RnnMode::kRelu;
            #pragma omp simd
            for (int64_t j = 0; j < H; ++j) {
              DT v = gr[j];
              dgxr[j] = dhn[j] * (relu ? (v > DT(0) ? DT(1) : DT(0)) : DT(1) - v * v);
            }
            break;
          }
          case RnnMode::kLstm: {
            const DT* c = cs + next * N * H + n * H;
            const DT* cp = cs + prev * N * H + n * H;
            DT* dcr = dc + n * H;
            if (clip_) LstmBackwardRow<DT, true>(H, gr, c, cp, dhn, dcr, dgxr, clip_lo_, clip_hi_);
            else LstmBackwardRow<DT, false>(H, gr, c, cp, dhn, dcr, dgxr, clip_lo_, clip_hi_);
            break;
          }
          case RnnMode::kGru: {
            const DT* hpr = hs + prev * N * Ho + n * Ho;
            GruBackwardRow<DT>(H, gr, hpr, extra + t * N * H + n * H, dhn, dgxr, dghr);
            break;
          }
        }
      });
      // dh_prev = dG_h W_h (+ z dh for GRU); finished sequences pass dh on unchanged.
      Mm(n1 - n0, Ho, GH, dghr_t + n0 * GH, GH, false, wh, Ho, false, dtmp + n0 * Ho, Ho, false);
      RowsSerial(n0, n1, [&](int64_t n) {
        if (Masked(t, n)) return;
        DT* o = dh + n * Ho;
        const DT* v = dtmp + n * Ho;
        if (d_.mode == RnnMode::kGru) {
          const DT* z = g + n * GH + H;
          const DT* dhn = dhr + n * Ho;
          for (int64_t j = 0; j < Ho; ++j) o[j] = v[j] + z[j] * dhn[j];
        } else {
          std::memcpy(o, v, sizeof(DT) * Ho);
        }
      });
    }
  }

  // dx: gradient of the layer's input (T, N, In), written for dir 0 and added to for dir 1;
  // dw: the flat parameter gradient.
  void BackwardWeights(int64_t l, int64_t dir, const DT* in, DT* dx, DT* dw) {
    const int64_t N = d_.N, H = d_.H, Ho = d_.Hout, GH = d_.GH(), In = d_.InSize(l), ld = l * d_.D + dir;
    const int64_t TN = d_.T * N;
    const DT* hs = ws_ + w_.hs[ld];
    const DT* extra = w_.extra[ld] >= 0 ? ws_ + w_.extra[ld] : nullptr;
    const DT* dgx = ws_ + w_.dirs[dir].dgx;
    const DT* dgh = ws_ + w_.dirs[dir].dgh;
    const DT* dr = ws_ + w_.dirs[dir].dr;
    // Weight and bias gradients over every step at once. The previous state of step t
    // lies in slot t (forward) or t + 1 (reverse), so the slots form one (T*N x Hout) matrix.
    DT* dwx = dw + d_.WeightOffset(l, dir);
    DT* dwh = dwx + GH * In;
    DT* dbx = dw + d_.BiasOffset(l, dir);
    DT* dbh = dbx + GH;
    const DT* hprev = hs + (dir == 0 ? 0 : N * Ho);
    Mm(GH, Ho, TN, dgh, GH, true, hprev, Ho, false, dwh, Ho, false);
    Mm(GH, In, TN, dgx, GH, true, in, In, false, dwx, In, false);
    if (d_.proj) Mm(Ho, H, TN, dr, Ho, true, extra, H, false, dwh + GH * Ho, H, false);
    Mm(TN, In, GH, dgx, GH, false, Wx(l, dir), In, false, dx, In, dir > 0);
    ColumnSums(dgx, TN, GH, dbx);
    ColumnSums(dgh, TN, GH, dbh);
  }

  // out[j] = sum over rows of a (rows x cols), split by columns across threads.
  void ColumnSums(const DT* a, int64_t rows, int64_t cols, DT* out) const {
    ParallelFor(cols, 64, [&](int64_t b, int64_t e) {
      std::fill(out + b, out + e, DT(0));
      for (int64_t r = 0; r < rows; ++r) {
        const DT* row = a + r * cols;
        for (int64_t j = b; j < e; ++j) out[j] += row[j];
      }
    });
  }

  const RnnDims& d_;
  const RnnLayout& w_;
  DT* ws_;
  const DT* wts_;
  const char* name_;
  const std::vector<int64_t>* lens_ = nullptr;
  DT clip_lo_, clip_hi_;
  DT nan_to_;
  bool clip_ = false;
};

// ------------------------------------------------------------------ inference
RnnDims DimsFromData(const NodeAttrs& attrs, const Shape& data) {
  return MakeRnnDims(attrs, data[0], data[1], data[2]);
}

bool RnnShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<RNNParam>();
  const std::string& op = attrs.op->name;
  const Shape& data = (*in)[0];
  if (!data.known_ndim()) return false;
  WEFT_CHECK(data.ndim() == 3, kShape, "Operator '", op, "': input 'data' must be 3-D (T, N, C) in layout TNC, got ",
             data.ToString());
  if (!data.is_known()) return false;
  RnnDims d = DimsFromData(attrs, data);
  const Shape& given = (*in)[1];
  if (given.known_ndim()) {
    WEFT_CHECK(given.ndim() == 1 && (given[0] < 0 || given[0] == d.ParamSize()), kShape, "Operator '", op,
               "': input 'parameters' must be a vector of length ", d.ParamSize(), " for mode='", p.mode,
               "', num_layers=", d.L, ", bidirectional=", p.bidirectional ? "True" : "False", ", state_size=", d.H,
               d.proj ? ", projection_size=" + std::to_string(d.Hout) : std::string(), " and input size ", d.I,
               ", got shape ", given.ToString());
  }
  (*in)[1] = Shape({d.ParamSize()});
  auto assign = [&](int i, const Shape& s) {
    Shape& cur = (*in)[i];
    if (cur.known_ndim() && cur != s) {
      bool ok = cur.ndim() == s.ndim();
      for (int k = 0; ok && k < s.ndim(); ++k) ok = cur[k] < 0 || cur[k] == s[k];
      WEFT_CHECK(ok, kShape, "Operator '", op, "': input '", InName(p, i), "' has shape ", cur.ToString(),
                 " but the operator expects ", s.ToString(), " (num_layers * directions, batch, ",
                 i == CellInput(p) ? "state_size" : (d.proj ? "projection_size" : "state_size"), ")");
    }
    cur = s;
  };
  assign(2, Shape({d.L * d.D, d.N, d.Hout}));
  if (CellInput(p) >= 0) assign(CellInput(p), Shape({d.L * d.D, d.N, d.H}));
  if (LengthInput(p) >= 0) {
    Shape& len = (*in)[LengthInput(p)];
    WEFT_CHECK(!len.known_ndim() || (len.ndim() == 1 && (len[0] < 0 || len[0] == d.N)), kShape, "Operator '", op,
               "': input 'sequence_length' must have shape (", d.N, ",) (one length per sequence), got ",
               len.ToString());
    len = Shape({d.N});
  }
  AssignShape(attrs, out, 0, Shape({d.T, d.N, d.D * d.Hout}), "output");
  size_t k = 1;
  if (p.state_outputs) {
    AssignShape(attrs, out, k++, Shape({d.L * d.D, d.N, d.Hout}), "output");
    if (IsLstm(p)) AssignShape(attrs, out, k++, Shape({d.L * d.D, d.N, d.H}), "output");
  }
  if (HasMask(p)) AssignShape(attrs, out, k++, MaskShape(d), "output");
  AssignShape(attrs, out, k, Shape({ReserveFloats(p, d)}), "output");
  return true;
}

bool RnnType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const auto& p = attrs.Params<RNNParam>();
  DType t = (*in)[0];
  if (t == DType::kUnknown) t = (*in)[1];
  if (t == DType::kUnknown) return false;
  WEFT_CHECK(t == DType::kFloat32 || t == DType::kFloat64, kType, "Operator '", attrs.op->name,
             "': input 'data' must be float32 or float64, got ", DTypeName(t));
  for (int i = 0; i < NumForwardInputs(p); ++i) {
    if (i == LengthInput(p)) {
      DType lt = (*in)[i];
      WEFT_CHECK(lt == DType::kUnknown || lt == DType::kInt32 || lt == DType::kInt64 || lt == DType::kFloat32 ||
                     lt == DType::kFloat64,
                 kType, "Operator '", attrs.op->name,
                 "': input 'sequence_length' must be int32, int64, float32 or float64, got ", DTypeName(lt));
      if (lt == DType::kUnknown) (*in)[i] = DType::kInt32;
      continue;
    }
    WEFT_CHECK((*in)[i] == DType::kUnknown || (*in)[i] == t, kType, "Operator '", attrs.op->name, "': input '",
               InName(p, i), "' has dtype ", DTypeName((*in)[i]), " but 'data' has ", DTypeName(t));
    (*in)[i] = t;
  }
  for (size_t i = 0; i < out->size(); ++i) AssignType(attrs, out, i, t, "output");
  return true;
}

// ------------------------------------------------------------------ compute
std::vector<int64_t> ReadLengths(const NodeAttrs& attrs, const RnnDims& d, const std::vector<TBlob>& in) {
  const auto& p = attrs.Params<RNNParam>();
  std::vector<int64_t> lens(d.N, d.T);
  if (LengthInput(p) < 0) return lens;
  const TBlob& b = in[LengthInput(p)];
  for (int64_t n = 0; n < d.N; ++n) {
    double v = 0;
    switch (b.dtype) {
      case DType::kInt32: v = b.ptr<int32_t>()[n]; break;
      case DType::kInt64: v = static_cast<double>(b.ptr<int64_t>()[n]); break;
      case DType::kFloat32: v = b.ptr<float>()[n]; break;
      default: v = b.ptr<double>()[n]; break;
    }
    // Fractional lengths truncate, as MXNet's cast to an integer does.
    v = std::trunc(v);
    WEFT_CHECK(v >= 0 && v <= static_cast<double>(d.T), kValue, "Operator '", attrs.op->name, "': sequence_length[",
               n, "] = ", v, " is not in [0, ", d.T, "] (the sequence length T)");
    lens[n] = static_cast<int64_t>(v);
  }
  return lens;
}

// Draws the dropout masks: each kept element is 1 / (1 - p), each dropped one 0. Every
// Philox block gives the uniforms of four consecutive elements.
template <typename DT>
void DrawMask(const NodeAttrs& attrs, const OpContext& ctx, double p, DT* mask, int64_t n) {
  const int64_t blocks = (n + 3) / 4;
  random::Draw draw = random::Reserve(attrs, ctx, static_cast<uint64_t>(blocks));
  const DT keep = p >= 1 ? DT(0) : static_cast<DT>(1.0 / (1.0 - p));
  const float pf = static_cast<float>(p);
  ParallelFor(blocks, 1024, [&](int64_t b, int64_t e) {
    for (int64_t blk = b; blk < e; ++blk) {
      uint32_t u[4];
      draw.gen.Generate(draw.first + static_cast<uint64_t>(blk), 0, u);
      for (int64_t k = 0; k < 4 && blk * 4 + k < n; ++k)
        mask[blk * 4 + k] = Philox4x32::ToUniformFloat(u[k]) < pf ? DT(0) : keep;
    }
  });
}

TempSpace* Temp(const OpContext& ctx) {
  for (const auto& r : ctx.requested)
    if (r.type == ResourceType::kTempSpace && r.temp != nullptr) return r.temp;
  Throw(ErrorKind::kInternal, "Operator 'RNN': no temporary space was provided (FResourceRequest not honoured)");
}

void RnnForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<RNNParam>();
  RnnDims d = DimsFromData(attrs, in[0].shape);
  std::vector<int64_t> lens = ReadLengths(attrs, d, in);
  const bool has_mask = HasMask(p);
  const bool dropout = has_mask && ctx.is_train && d.L > 1;
  RnnLayout w = MakeLayout(d, dropout, false);
  const TBlob& reserve = out.back();
  // A training forward works in the reserve itself (its layout is the workspace's start);
  // otherwise in temporary space, and the reserve says it holds nothing.
  const bool keep = ctx.is_train && req.back() != OpReq::kNullOp;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, DT, "Operator 'RNN': input 'data'", {
    if constexpr (std::is_same_v<DT, float> || std::is_same_v<DT, double>) {
      DT* ws = keep ? reserve.ptr<DT>() : static_cast<DT*>(Temp(ctx)->Get(sizeof(DT) * std::max<int64_t>(w.total, 1)));
      const DT* mask = nullptr;
      if (has_mask) {
        const TBlob& m = out[out.size() - 2];
        DT* mp = m.ptr<DT>();
        // The mask is the record the backward replays: ones when nothing is dropped.
        if (dropout) DrawMask(attrs, ctx, p.p, mp, m.Size());
        else std::fill(mp, mp + m.Size(), DT(1));
        if (dropout) mask = mp;
      }
      RnnRunner<DT> run(attrs, d, w, ws, in[1].ptr<DT>());
      const DT* c0 = CellInput(p) >= 0 ? in[CellInput(p)].ptr<DT>() : nullptr;
      run.Forward(in[0].ptr<DT>(), in[2].ptr<DT>(), c0, lens, mask);
      if (req.back() != OpReq::kNullOp) reserve.ptr<DT>()[reserve.Size() - 1] = keep ? DT(1) : DT(0);
      StoreArray(out[0].ptr<DT>(), run.Output(), out[0].Size(), req[0]);
      if (p.state_outputs) {
        for (int64_t ld = 0; ld < d.L * d.D; ++ld) {
          StoreArray(out[1].ptr<DT>() + ld * d.N * d.Hout, run.FinalH(ld), d.N * d.Hout, req[1]);
          if (IsLstm(p)) StoreArray(out[2].ptr<DT>() + ld * d.N * d.H, run.FinalC(ld), d.N * d.H, req[2]);
        }
      }
    } else {
      Throw(ErrorKind::kType, "Operator 'RNN': input 'data' must be float32 or float64, got ", DTypeName(in[0].dtype));
    }
  });
}

// _backward_RNN inputs: the forward inputs, the dropout mask (p > 0), the reserve, then the
// gradients of the visible outputs. Outputs: gradients of data, parameters, state (and
// state_cell).
void RnnBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<RNNParam>();
  RnnDims d = DimsFromData(attrs, in[0].shape);
  std::vector<int64_t> lens = ReadLengths(attrs, d, in);
  int k = NumForwardInputs(p);
  const TBlob* mask_blob = HasMask(p) ? &in[k++] : nullptr;
  const TBlob& reserve = in[k++];
  const TBlob& dy = in[k++];
  const TBlob* dhy = p.state_outputs ? &in[k++] : nullptr;
  const TBlob* dcy = p.state_outputs && IsLstm(p) ? &in[k++] : nullptr;
  const bool dropout = mask_blob != nullptr && d.L > 1;
  RnnLayout w = MakeLayout(d, dropout, true);
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, DT, "Operator '_backward_RNN': input 'data'", {
    if constexpr (std::is_same_v<DT, float> || std::is_same_v<DT, double>) {
      DT* ws = static_cast<DT*>(Temp(ctx)->Get(sizeof(DT) * std::max<int64_t>(w.total, 1)));
      const DT* mask = dropout ? mask_blob->ptr<DT>() : nullptr;
      RnnRunner<DT> run(attrs, d, w, ws, in[1].ptr<DT>());
      const DT* c0 = CellInput(p) >= 0 ? in[CellInput(p)].ptr<DT>() : nullptr;
      // The reserve of a training forward with these arguments holds what the backward's
      // workspace starts with; the masked outputs' place depends on dropout, which both
      // sides agree on here.
      const int64_t flag = ReserveFloats(p, d) - 1;
      if (dropout == ReserveDropout(p, d) && reserve.Size() == flag + 1 && reserve.ptr<DT>()[flag] == DT(1))
        run.Restore(reserve.ptr<DT>(), w.gh, lens);
      else
        run.Forward(in[0].ptr<DT>(), in[2].ptr<DT>(), c0, lens, mask);
      DT* dc0 = IsLstm(p) ? out[3].ptr<DT>() : nullptr;
      run.Backward(in[0].ptr<DT>(), dy.ptr<DT>(), dhy ? dhy->ptr<DT>() : nullptr, dcy ? dcy->ptr<DT>() : nullptr,
                   mask, out[0].ptr<DT>(), req[0], out[1].ptr<DT>(), req[1], out[2].ptr<DT>(), req[2], dc0,
                   IsLstm(p) ? req[3] : OpReq::kNullOp);
    } else {
      Throw(ErrorKind::kType, "Operator '_backward_RNN': input 'data' must be float32 or float64, got ",
            DTypeName(in[0].dtype));
    }
  });
}

bool RnnBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<RNNParam>();
  int nin = NumForwardInputs(p);
  std::vector<Shape> fin(in->begin(), in->begin() + nin);
  std::vector<Shape> fout(NumForwardOutputs(p));
  if (!RnnShape(attrs, &fin, &fout)) return false;
  for (int i = 0; i < nin; ++i) (*in)[i] = fin[i];
  int k = nin;
  if (HasMask(p)) AssignShape(attrs, in, k++, fout[NumVisibleOutputs(p)], "input");
  // Any vector passes as the reserve: one that is not a training forward's makes the
  // backward recompute the forward.
  Shape& reserve = (*in)[k++];
  if (!reserve.known_ndim()) reserve = fout.back();
  WEFT_CHECK(reserve.ndim() == 1, kShape, "Operator '_backward_RNN': input 'reserve' must be a vector, got ",
             reserve.ToString());
  for (int i = 0; i < NumVisibleOutputs(p); ++i) AssignShape(attrs, in, k++, fout[i], "input");
  for (int i = 0; i < static_cast<int>(out->size()); ++i) AssignShape(attrs, out, i, fin[i], "output");
  return true;
}

bool RnnBackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const auto& p = attrs.Params<RNNParam>();
  int nin = NumForwardInputs(p);
  std::vector<DType> fin(in->begin(), in->begin() + nin);
  std::vector<DType> fout(NumForwardOutputs(p), DType::kUnknown);
  if (!RnnType(attrs, &fin, &fout)) return false;
  for (int i = 0; i < nin; ++i) (*in)[i] = fin[i];
  for (size_t i = nin; i < in->size(); ++i) AssignType(attrs, in, i, fin[0], "input");
  for (size_t i = 0; i < out->size(); ++i) AssignType(attrs, out, i, fin[0], "output");
  return true;
}

std::vector<GradValue> RnnGrad(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
  const auto& p = attrs.Params<RNNParam>();
  int nin = NumForwardInputs(p);
  std::vector<GradValue> ins(a.inputs.begin(), a.inputs.begin() + nin);
  if (HasMask(p)) ins.push_back(a.outputs[NumVisibleOutputs(p)]);
  ins.push_back(a.outputs[NumForwardOutputs(p) - 1]);
  for (int i = 0; i < NumVisibleOutputs(p); ++i) ins.push_back(a.out_grads[i]);
  std::vector<GradValue> g = b.Call("_backward_RNN", ins, attrs.dict);
  std::vector<GradValue> r(nin);
  for (int i = 0; i < 3 + (IsLstm(p) ? 1 : 0); ++i) r[i] = g[i];
  return r;  // sequence_length (an index) gets none
}

std::vector<ResourceRequest> RnnResources(const NodeAttrs& attrs) {
  if (HasMask(attrs.Params<RNNParam>())) return {{ResourceType::kRandom}, {ResourceType::kTempSpace}};
  return {{ResourceType::kTempSpace}};
}

}  // namespace

WEFT_REGISTER_OP(RNN)
    .Describe(
        "Applies a stacked (optionally bidirectional) recurrent network, mode rnn_relu, rnn_tanh, lstm or gru, to "
        "a (T, N, C) sequence. All weights and biases come packed in one vector, laid out as MXNet lays it out.")
    .SetParams<RNNParam>()
    .SetNumInputs([](const NodeAttrs& attrs) { return NumForwardInputs(attrs.Params<RNNParam>()); })
    .SetNumOutputs([](const NodeAttrs& attrs) { return NumForwardOutputs(attrs.Params<RNNParam>()); })
    .SetAttr<FNumVisibleOutputs>("FNumVisibleOutputs",
                                 [](const NodeAttrs& attrs) { return NumVisibleOutputs(attrs.Params<RNNParam>()); })
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs& attrs) {
                           const auto& p = attrs.Params<RNNParam>();
                           std::vector<std::string> names{"output"};
                           if (p.state_outputs) {
                             names.push_back("state");
                             if (IsLstm(p)) names.push_back("state_cell");
                           }
                           if (HasMask(p)) names.push_back("dropout_mask");
                           names.push_back("reserve");
                           return names;
                         })
    .AddArgument("data", "NDArray-or-Symbol", "Input sequence (T, N, C), layout TNC.")
    .AddArgument("parameters", "NDArray-or-Symbol", "All weights then all biases, packed as one vector.")
    .AddArgument("state", "NDArray-or-Symbol", "Initial hidden state (num_layers * directions, N, state_size).")
    .AddArgument("state_cell", "NDArray-or-Symbol", "Initial LSTM cell state (lstm only).")
    .AddArgument("sequence_length", "NDArray-or-Symbol", "Valid length of each sequence (use_sequence_length).")
    .SetAttr<FInferShape>("FInferShape", RnnShape)
    .SetAttr<FInferType>("FInferType", RnnType)
    .SetAttr<FResourceRequest>("FResourceRequest", RnnResources)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", RnnForward)
    .SetAttr<FGradient>("FGradient", RnnGrad);

WEFT_REGISTER_OP(_backward_RNN)
    .Describe("Gradient of RNN: backpropagates through time from the training forward's reserve (or recomputes "
              "the forward when the reserve is not one).")
    .SetParams<RNNParam>()
    .SetNumInputs([](const NodeAttrs& attrs) {
      const auto& p = attrs.Params<RNNParam>();
      return NumForwardInputs(p) + (HasMask(p) ? 1 : 0) + 1 + NumVisibleOutputs(p);
    })
    .SetNumOutputs([](const NodeAttrs& attrs) { return IsLstm(attrs.Params<RNNParam>()) ? 4 : 3; })
    .SetAttr<FInferShape>("FInferShape", RnnBackwardShape)
    .SetAttr<FInferType>("FInferType", RnnBackwardType)
    .SetAttr<FResourceRequest>("FResourceRequest",
                               [](const NodeAttrs&) { return std::vector<ResourceRequest>{{ResourceType::kTempSpace}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", RnnBackward);

}  // namespace op
}  // namespace weft
