// RNN and _backward_RNN on the GPU through cuDNN 9's RNN API (builds with WEFT_USE_CUDNN).
//
// Each layer is its own one-layer cuDNN RNN (both directions in one call), so that the
// dropout between layers is Weft's own Philox mask, drawn exactly as the CPU draws it and
// returned as the `dropout_mask` output, instead of cuDNN's generator. Per layer, a kernel
// copies the layer's slices of Weft's packed parameter vector (MXNet's layout, rnn.h) into
// cuDNN's weight space at the places cudnnGetRNNWeightParams names; the weight gradient
// goes back the same way, written or added as `req` says.
//
// The forward runs cuDNN's inference mode and leaves the reserve output empty (its flag
// 0): whether a reserve was filled cannot be known on the host without waiting for the
// device, so `_backward_RNN` always reruns the forward in training mode, keeping each
// layer's input, output and cuDNN reserve in temporary space, and then walks the layers
// back with cudnnRNNBackwardData_v8 and cudnnRNNBackwardWeights_v8.
//
// Not on the GPU: use_sequence_length (cuDNN needs the lengths on the host, which would
// mean waiting for the device) and lstm_state_clip_nan (cuDNN 9's clipping has no NaN
// option); both are refused with kUnsupported.
#ifdef WEFT_USE_CUDNN

#include <cuda_runtime.h>

#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/base/cuda_utils.h"
#include "core/op/cuda/cudnn.h"
#include "core/op/cuda/cudnn_conv.h"
#include "core/op/nn/rnn.h"
#include "core/resource/philox.h"
#include "core/resource/resource.h"

namespace weft {
namespace op {
namespace {

// ------------------------------------------------------------------ kernels
// One contiguous run of parameters: `n` elements at `flat` in Weft's packed vector and at
// `space` in cuDNN's weight space. A layer has at most 2 directions x (4 + 4 + 1 matrices
// + 8 biases) = 34 of them.
struct ParamRun {
  int64_t flat, space, n;
};
constexpr int kMaxRuns = 40;
struct ParamRuns {
  ParamRun run[kMaxRuns];
  int count;
};

// blockIdx.y picks the run. Packed -> weight space.
template <typename DT>
__global__ void PackParamsKernel(ParamRuns runs, const DT* __restrict__ flat, DT* __restrict__ space) {
  const ParamRun r = runs.run[blockIdx.y];
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < r.n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    space[r.space + i] = flat[r.flat + i];
}

// Weight-space gradient -> packed gradient. The runs are disjoint in the packed vector.
template <typename DT>
__global__ void UnpackGradKernel(ParamRuns runs, const DT* __restrict__ space, DT* __restrict__ flat, bool add) {
  const ParamRun r = runs.run[blockIdx.y];
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < r.n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    DT v = space[r.space + i];
    flat[r.flat + i] = add ? flat[r.flat + i] + v : v;
  }
}

template <typename DT>
__global__ void AddKernel(DT* __restrict__ dst, const DT* __restrict__ src, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] += src[i];
}

// dst = a * m (dst may be a).
template <typename DT>
__global__ void MulKernel(DT* dst, const DT* a, const DT* __restrict__ m, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = a[i] * m[i];
}

template <typename DT>
__global__ void FillKernel(DT* dst, DT v, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = v;
}

// The CPU's DrawMask (rnn.cc) element for element: Philox block b (counter first + b,
// stream 0) gives the uniforms of elements 4b .. 4b+3.
template <typename DT>
__global__ void DrawMaskKernel(DT* __restrict__ mask, int64_t n, Philox4x32 gen, uint64_t first, float pf, DT keep) {
  const int64_t blocks = (n + 3) / 4;
  for (int64_t b = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; b < blocks;
       b += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint32_t u[4];
    gen.Generate(first + static_cast<uint64_t>(b), 0, u);
    for (int k = 0; k < 4 && b * 4 + k < n; ++k)
      mask[b * 4 + k] = Philox4x32::ToUniformFloat(u[k]) < pf ? DT(0) : keep;
  }
}

// ------------------------------------------------------------------ cuDNN descriptors
template <typename T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
class Desc {
 public:
  explicit Desc(const char* op) { cuda::CheckCudnn(Create(&d_), "cudnnCreate*Descriptor", op); }
  ~Desc() {
    if (d_) Destroy(d_);
  }
  Desc(Desc&& o) noexcept : d_(o.d_) { o.d_ = nullptr; }
  Desc& operator=(Desc&&) = delete;
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  T get() const { return d_; }

 private:
  T d_ = nullptr;
};
using RnnDescr = Desc<cudnnRNNDescriptor_t, cudnnCreateRNNDescriptor, cudnnDestroyRNNDescriptor>;
using DataDescr = Desc<cudnnRNNDataDescriptor_t, cudnnCreateRNNDataDescriptor, cudnnDestroyRNNDataDescriptor>;
using TensorDescr = Desc<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using DropoutDescr = Desc<cudnnDropoutDescriptor_t, cudnnCreateDropoutDescriptor, cudnnDestroyDropoutDescriptor>;

template <typename DT>
constexpr cudnnDataType_t kCudnnType = std::is_same_v<DT, double> ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;

void SetTensor3(const TensorDescr& t, cudnnDataType_t type, int64_t a, int64_t b, int64_t c, const char* op) {
  const int dims[3] = {static_cast<int>(a), static_cast<int>(b), static_cast<int>(c)};
  const int strides[3] = {static_cast<int>(b * c), static_cast<int>(c), 1};
  cuda::CheckCudnn(cudnnSetTensorNdDescriptor(t.get(), type, 3, dims, strides), "cudnnSetTensorNdDescriptor", op);
}

// One layer of the stack (both directions) as a one-layer cuDNN RNN, with its data and
// state descriptors.
template <typename DT>
class CudnnLayer {
 public:
  CudnnLayer(cudnnHandle_t handle, const RNNParam& p, const RnnDims& d, int64_t l, const DropoutDescr& no_dropout,
             const int* lens, const char* op)
      : rnn_(op), x_(op), y_(op), h_(op), c_(op), op_(op), handle_(handle), d_(d), l_(l) {
    const cudnnRNNMode_t cell = d.mode == RnnMode::kRelu   ? CUDNN_RNN_RELU
                                : d.mode == RnnMode::kTanh ? CUDNN_RNN_TANH
                                : d.mode == RnnMode::kLstm ? CUDNN_LSTM
                                                           : CUDNN_GRU;
    // float32 may run on TF32 tensor cores as the convolutions do (WEFT_CUDNN_ALLOW_TF32,
    // default on, as in PyTorch); FMA math keeps it in float32. Nothing is down-converted
    // otherwise.
    const cudnnMathType_t math =
        std::is_same_v<DT, float> && !cuda::CudnnAllowTf32() ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
    cuda::CheckCudnn(
        cudnnSetRNNDescriptor_v8(rnn_.get(), CUDNN_RNN_ALGO_STANDARD, cell, CUDNN_RNN_DOUBLE_BIAS,
                                 d.D == 2 ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT,
                                 kCudnnType<DT>, kCudnnType<DT>, math, static_cast<int32_t>(d.InSize(l)),
                                 static_cast<int32_t>(d.H), static_cast<int32_t>(d.Hout), 1, no_dropout.get(),
                                 CUDNN_RNN_PADDED_IO_DISABLED),
        "cudnnSetRNNDescriptor_v8", op);
    if (p.lstm_state_clip_min || p.lstm_state_clip_max) {
      const double big = std::numeric_limits<DT>::max();
      cuda::CheckCudnn(cudnnRNNSetClip_v9(rnn_.get(), CUDNN_RNN_CLIP_MINMAX,
                                          p.lstm_state_clip_min ? *p.lstm_state_clip_min : -big,
                                          p.lstm_state_clip_max ? *p.lstm_state_clip_max : big),
                       "cudnnRNNSetClip_v9", op);
    }
    // Every sequence runs all T steps, so the sequence-major data is packed (T, N, C).
    cuda::CheckCudnn(cudnnSetRNNDataDescriptor(x_.get(), kCudnnType<DT>, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED,
                                               static_cast<int>(d.T), static_cast<int>(d.N),
                                               static_cast<int>(d.InSize(l)), lens, nullptr),
                     "cudnnSetRNNDataDescriptor", op);
    cuda::CheckCudnn(cudnnSetRNNDataDescriptor(y_.get(), kCudnnType<DT>, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED,
                                               static_cast<int>(d.T), static_cast<int>(d.N),
                                               static_cast<int>(d.D * d.Hout), lens, nullptr),
                     "cudnnSetRNNDataDescriptor", op);
    SetTensor3(h_, kCudnnType<DT>, d.D, d.N, d.Hout, op);
    SetTensor3(c_, kCudnnType<DT>, d.D, d.N, d.H, op);
    cuda::CheckCudnn(cudnnGetRNNWeightSpaceSize(handle, rnn_.get(), &weight_bytes_), "cudnnGetRNNWeightSpaceSize",
                     op);
  }

  cudnnRNNDescriptor_t rnn() const { return rnn_.get(); }
  cudnnRNNDataDescriptor_t x() const { return x_.get(); }
  cudnnRNNDataDescriptor_t y() const { return y_.get(); }
  cudnnTensorDescriptor_t h() const { return h_.get(); }
  cudnnTensorDescriptor_t c() const { return c_.get(); }
  size_t weight_bytes() const { return weight_bytes_; }

  void TempSizes(cudnnForwardMode_t mode, size_t* work, size_t* reserve) const {
    cuda::CheckCudnn(cudnnGetRNNTempSpaceSizes(handle_, rnn_.get(), mode, x_.get(), work, reserve),
                     "cudnnGetRNNTempSpaceSizes", op_);
  }

  // Where this layer's parameters lie in the packed vector and in a weight space at
  // `space` (only its address is used: cuDNN computes the places, reading nothing).
  ParamRuns Runs(void* space) const {
    ParamRuns runs{};
    TensorDescr m(op_), b(op_);
    const int64_t G = d_.G, H = d_.H, Ho = d_.Hout, In = d_.InSize(l_);
    auto add = [&](int64_t flat, void* addr, int64_t n, bool bias, const char* what) {
      WEFT_CHECK(addr != nullptr, kInternal, "Operator '", op_, "': cuDNN gave no place for the ", what);
      // The matrix or bias cuDNN describes must have exactly the elements Weft packs.
      cudnnDataType_t type;
      int nd = 0, dims[8], strides[8];
      cuda::CheckCudnn(cudnnGetTensorNdDescriptor(bias ? b.get() : m.get(), 8, &type, &nd, dims, strides),
                       "cudnnGetTensorNdDescriptor", op_);
      int64_t elems = 1;
      for (int k = 0; k < nd; ++k) elems *= dims[k];
      WEFT_CHECK(elems == n, kInternal, "Operator '", op_, "': cuDNN's ", what, " has ", elems,
                 " elements, Weft packs ", n);
      WEFT_CHECK(runs.count < kMaxRuns, kInternal, "Operator '", op_, "': too many parameter runs");
      runs.run[runs.count++] =
          ParamRun{flat, (static_cast<char*>(addr) - static_cast<char*>(space)) / static_cast<int64_t>(sizeof(DT)), n};
    };
    auto params = [&](int64_t dir, int32_t id, void** maddr, void** baddr) {
      cuda::CheckCudnn(cudnnGetRNNWeightParams(handle_, rnn_.get(), static_cast<int32_t>(dir), weight_bytes_, space,
                                               id, m.get(), maddr, b.get(), baddr),
                       "cudnnGetRNNWeightParams", op_);
    };
    for (int64_t dir = 0; dir < d_.D; ++dir) {
      const int64_t wx = d_.WeightOffset(l_, dir), wh = wx + G * H * In, wr = wh + G * H * Ho;
      const int64_t bx = d_.BiasOffset(l_, dir), bh = bx + G * H;
      // cuDNN's linear-layer ids: gates 0..G-1 act on the input, G..2G-1 on the recurrent
      // state, both in MXNet's gate order (i, f, g, o for lstm; r, z, n for gru); id 8 is
      // an LSTM's projection. Gate g is rows g*H .. g*H+H-1 of Weft's matrices, so one
      // contiguous run.
      for (int64_t g = 0; g < G; ++g) {
        void *ma = nullptr, *ba = nullptr;
        params(dir, static_cast<int32_t>(g), &ma, &ba);
        add(wx + g * H * In, ma, H * In, false, "i2h weight");
        add(bx + g * H, ba, H, true, "i2h bias");
        params(dir, static_cast<int32_t>(G + g), &ma, &ba);
        add(wh + g * H * Ho, ma, H * Ho, false, "h2h weight");
        add(bh + g * H, ba, H, true, "h2h bias");
      }
      if (d_.proj) {
        void *ma = nullptr, *ba = nullptr;
        params(dir, 8, &ma, &ba);
        add(wr, ma, Ho * H, false, "h2r weight");
      }
    }
    return runs;
  }

 private:
  RnnDescr rnn_;
  DataDescr x_, y_;
  TensorDescr h_, c_;
  const char* op_;
  cudnnHandle_t handle_;
  RnnDims d_;
  int64_t l_;
  size_t weight_bytes_ = 0;
};

// ------------------------------------------------------------------ helpers
// Sub-buffers of one temporary-space block, 256-byte aligned.
class Carve {
 public:
  size_t Take(size_t bytes) {
    size_t o = total_;
    total_ += (bytes + 255) / 256 * 256;
    return o;
  }
  size_t total() const { return std::max<size_t>(total_, 256); }

 private:
  size_t total_ = 0;
};

TempSpace* TempOf(const OpContext& ctx, const char* op) {
  for (const auto& r : ctx.requested)
    if (r.type == ResourceType::kTempSpace && r.temp != nullptr) return r.temp;
  Throw(ErrorKind::kInternal, "Operator '", op, "': no temporary space was provided (FResourceRequest not honoured)");
}

class GpuRun {
 public:
  explicit GpuRun(const OpContext& ctx) : dev_(ctx.run_ctx.ctx), stream_(cuda::StreamOf(ctx.run_ctx.stream)) {}
  cudaStream_t stream() const { return stream_; }

  void Check(cudaError_t e, const char* call) const { cuda::Check(e, call, &dev_); }

  template <typename DT>
  void Fill(DT* dst, DT v, int64_t n) const {
    if (n <= 0) return;
    FillKernel<DT><<<cuda::GridFor(n), cuda::kBlockThreads, 0, stream_>>>(dst, v, n);
    cuda::CheckLaunch("RNN FillKernel");
  }
  template <typename DT>
  void Mul(DT* dst, const DT* a, const DT* m, int64_t n) const {
    if (n <= 0) return;
    MulKernel<DT><<<cuda::GridFor(n), cuda::kBlockThreads, 0, stream_>>>(dst, a, m, n);
    cuda::CheckLaunch("RNN MulKernel");
  }
  // dst (an output) from src as req says.
  template <typename DT>
  void Store(DT* dst, const DT* src, int64_t n, OpReq req) const {
    if (req == OpReq::kNullOp || n <= 0) return;
    if (req == OpReq::kAddTo) {
      AddKernel<DT><<<cuda::GridFor(n), cuda::kBlockThreads, 0, stream_>>>(dst, src, n);
      cuda::CheckLaunch("RNN AddKernel");
    } else if (dst != src) {
      Check(cudaMemcpyAsync(dst, src, sizeof(DT) * n, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync");
    }
  }
  template <typename DT>
  void Pack(const ParamRuns& runs, const DT* flat, DT* space) const {
    int64_t widest = 1;
    for (int i = 0; i < runs.count; ++i) widest = std::max(widest, runs.run[i].n);
    dim3 grid(std::min<unsigned>(cuda::GridFor(widest), 1024), static_cast<unsigned>(runs.count));
    PackParamsKernel<DT><<<grid, cuda::kBlockThreads, 0, stream_>>>(runs, flat, space);
    cuda::CheckLaunch("RNN PackParamsKernel");
  }
  template <typename DT>
  void Unpack(const ParamRuns& runs, const DT* space, DT* flat, OpReq req) const {
    if (req == OpReq::kNullOp) return;
    int64_t widest = 1;
    for (int i = 0; i < runs.count; ++i) widest = std::max(widest, runs.run[i].n);
    dim3 grid(std::min<unsigned>(cuda::GridFor(widest), 1024), static_cast<unsigned>(runs.count));
    UnpackGradKernel<DT><<<grid, cuda::kBlockThreads, 0, stream_>>>(runs, space, flat, req == OpReq::kAddTo);
    cuda::CheckLaunch("RNN UnpackGradKernel");
  }

 private:
  Context dev_;
  cudaStream_t stream_;
};

void CheckSupported(const RNNParam& p, const RnnDims& d, const char* op) {
  WEFT_CHECK(!p.use_sequence_length, kUnsupported, "Operator '", op,
             "': use_sequence_length=True is not supported on the GPU (cuDNN needs the lengths on the host)");
  WEFT_CHECK(!p.lstm_state_clip_nan, kUnsupported, "Operator '", op,
             "': lstm_state_clip_nan=True is not supported on the GPU (cuDNN's clipping has no NaN option)");
  WEFT_CHECK(!d.proj || d.Hout < d.H, kUnsupported, "Operator '", op,
             "': on the GPU projection_size must be less than state_size (cuDNN), got projection_size=", d.Hout,
             " and state_size=", d.H);
  WEFT_CHECK(d.T >= 1 && d.N >= 1, kUnsupported, "Operator '", op,
             "': an empty sequence or batch (T or N = 0) is not supported on the GPU, got T = ", d.T, ", N = ", d.N);
  constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
  WEFT_CHECK(d.T <= kIntMax && d.N <= kIntMax && d.I <= kIntMax && d.D * d.Hout <= kIntMax && d.H <= kIntMax,
             kUnsupported, "Operator '", op, "': sizes beyond 2^31 - 1 are not supported by cuDNN");
}

// The no-dropout descriptor every one-layer RNN takes (dropout 0 needs no states).
void SetNoDropout(const DropoutDescr& dd, cudnnHandle_t handle, const char* op) {
  cuda::CheckCudnn(cudnnSetDropoutDescriptor(dd.get(), handle, 0.0f, nullptr, 0, 0), "cudnnSetDropoutDescriptor", op);
}

template <typename DT>
std::vector<CudnnLayer<DT>> MakeLayers(cudnnHandle_t handle, const RNNParam& p, const RnnDims& d,
                                       const DropoutDescr& dd, const int* lens, const char* op) {
  std::vector<CudnnLayer<DT>> layers;
  layers.reserve(static_cast<size_t>(d.L));
  for (int64_t l = 0; l < d.L; ++l) layers.emplace_back(handle, p, d, l, dd, lens, op);
  return layers;
}

// ------------------------------------------------------------------ forward
template <typename DT>
void ForwardGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<RNNParam>();
  const char* op = attrs.op->name.c_str();
  RnnDims d = MakeRnnDims(attrs, in[0].shape[0], in[0].shape[1], in[0].shape[2]);
  CheckSupported(p, d, op);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  GpuRun g(ctx);
  cudnnHandle_t handle = cuda::CudnnHandle(ctx.run_ctx, op);
  const int64_t TN = d.T * d.N, DHo = d.D * d.Hout;

  // The reserve holds nothing a backward could use (see the top of the file).
  const TBlob& reserve = out.back();
  if (req.back() != OpReq::kNullOp) g.Fill(reserve.ptr<DT>() + reserve.Size() - 1, DT(0), 1);
  const bool dropout = HasMask(p) && ctx.is_train && d.L > 1;
  DT* mask = nullptr;
  if (HasMask(p)) {
    const TBlob& m = out[out.size() - 2];
    mask = m.ptr<DT>();
    const int64_t n = m.Size();
    if (dropout) {
      WEFT_CHECK(!ctx.requested.empty() && ctx.requested[0].random != nullptr, kInternal, "Operator '", op,
                 "': expected a random resource, got none (FResourceRequest not honoured)");
      RandomState* state = ctx.requested[0].random;
      const int64_t blocks = (n + 3) / 4;
      const uint64_t first = state->Reserve(static_cast<uint64_t>(blocks));
      const DT keep = p.p >= 1 ? DT(0) : static_cast<DT>(1.0 / (1.0 - p.p));
      if (blocks > 0) {
        DrawMaskKernel<DT><<<cuda::GridFor(blocks), cuda::kBlockThreads, 0, g.stream()>>>(
            mask, n, Philox4x32(state->seed), first, static_cast<float>(p.p), keep);
        cuda::CheckLaunch("RNN DrawMaskKernel");
      }
    } else {
      // The record the backward replays: ones when nothing is dropped.
      g.Fill(mask, DT(1), n);
    }
  }

  std::vector<int> lens(static_cast<size_t>(d.N), static_cast<int>(d.T));
  DropoutDescr dd(op);
  SetNoDropout(dd, handle, op);
  std::vector<CudnnLayer<DT>> layers = MakeLayers<DT>(handle, p, d, dd, lens.data(), op);
  size_t wbytes = 0, work = 0;
  for (const auto& ly : layers) {
    size_t ws = 0, rs = 0;
    ly.TempSizes(CUDNN_FWD_MODE_INFERENCE, &ws, &rs);
    work = std::max(work, ws);
    wbytes = std::max(wbytes, ly.weight_bytes());
  }
  Carve c;
  const size_t o_seq = c.Take(sizeof(int32_t) * d.N);
  const size_t o_w = c.Take(wbytes);
  const size_t o_work = c.Take(work);
  const size_t o_y0 = c.Take(sizeof(DT) * TN * DHo);  // layer outputs, ping-pong
  const size_t o_y1 = c.Take(sizeof(DT) * TN * DHo);
  const size_t o_hy = c.Take(sizeof(DT) * d.L * d.D * d.N * d.Hout);
  const size_t o_cy = c.Take(sizeof(DT) * d.L * d.D * d.N * d.H);
  char* base = static_cast<char*>(TempOf(ctx, op)->Get(c.total()));
  int32_t* seq = reinterpret_cast<int32_t*>(base + o_seq);
  DT* wspace = reinterpret_cast<DT*>(base + o_w);
  DT* ybuf[2] = {reinterpret_cast<DT*>(base + o_y0), reinterpret_cast<DT*>(base + o_y1)};
  DT* hy = reinterpret_cast<DT*>(base + o_hy);
  DT* cy = reinterpret_cast<DT*>(base + o_cy);
  g.Fill(seq, static_cast<int32_t>(d.T), d.N);

  const DT* params = in[1].ptr<DT>();
  const DT* hx = in[2].ptr<DT>();
  const DT* cx = CellInput(p) >= 0 ? in[CellInput(p)].ptr<DT>() : nullptr;
  const bool lstm = d.mode == RnnMode::kLstm;
  const DT* x = in[0].ptr<DT>();
  for (int64_t l = 0; l < d.L; ++l) {
    const CudnnLayer<DT>& ly = layers[static_cast<size_t>(l)];
    g.Pack(ly.Runs(wspace), params, wspace);
    DT* y = ybuf[l % 2];
    const int64_t hoff = l * d.D * d.N * d.Hout, coff = l * d.D * d.N * d.H;
    cuda::CheckCudnn(cudnnRNNForward(handle, ly.rnn(), CUDNN_FWD_MODE_INFERENCE, seq, ly.x(), x, ly.y(), y, ly.h(),
                                     hx + hoff, hy + hoff, ly.c(), lstm ? cx + coff : nullptr,
                                     lstm ? cy + coff : nullptr, ly.weight_bytes(), wspace, work,
                                     base + o_work, 0, nullptr),
                     "cudnnRNNForward", op, &ctx.run_ctx.ctx);
    if (dropout && l + 1 < d.L) g.Mul(y, y, mask + l * TN * DHo, TN * DHo);
    x = y;
  }
  g.Store(out[0].ptr<DT>(), x, TN * DHo, req[0]);
  if (p.state_outputs) {
    g.Store(out[1].ptr<DT>(), hy, d.L * d.D * d.N * d.Hout, req[1]);
    if (lstm) g.Store(out[2].ptr<DT>(), cy, d.L * d.D * d.N * d.H, req[2]);
  }
}

// ------------------------------------------------------------------ backward
// Inputs: the forward inputs, the dropout mask (p > 0), the reserve (unused here), the
// gradients of the visible outputs. Outputs: gradients of data, parameters, state (and
// state_cell).
template <typename DT>
void BackwardGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<RNNParam>();
  const char* op = attrs.op->name.c_str();
  RnnDims d = MakeRnnDims(attrs, in[0].shape[0], in[0].shape[1], in[0].shape[2]);
  CheckSupported(p, d, op);
  int k = NumForwardInputs(p);
  const TBlob* mask_blob = HasMask(p) ? &in[k++] : nullptr;
  ++k;  // the reserve
  const TBlob& dy_blob = in[k++];
  const TBlob* dhy_blob = p.state_outputs ? &in[k++] : nullptr;
  const TBlob* dcy_blob = p.state_outputs && IsLstm(p) ? &in[k++] : nullptr;
  const bool dropout = mask_blob != nullptr && d.L > 1;
  const DT* mask = dropout ? mask_blob->ptr<DT>() : nullptr;
  const bool lstm = d.mode == RnnMode::kLstm;

  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  GpuRun g(ctx);
  cudnnHandle_t handle = cuda::CudnnHandle(ctx.run_ctx, op);
  const int64_t TN = d.T * d.N, DHo = d.D * d.Hout;
  const int64_t LDNHo = d.L * d.D * d.N * d.Hout, LDNH = d.L * d.D * d.N * d.H;

  std::vector<int> lens(static_cast<size_t>(d.N), static_cast<int>(d.T));
  DropoutDescr dd(op);
  SetNoDropout(dd, handle, op);
  std::vector<CudnnLayer<DT>> layers = MakeLayers<DT>(handle, p, d, dd, lens.data(), op);
  size_t work = 0;
  std::vector<size_t> rbytes(static_cast<size_t>(d.L));
  for (int64_t l = 0; l < d.L; ++l) {
    size_t ws = 0;
    layers[static_cast<size_t>(l)].TempSizes(CUDNN_FWD_MODE_TRAINING, &ws, &rbytes[static_cast<size_t>(l)]);
    work = std::max(work, ws);
  }
  // Per layer: weight space, its gradient, cuDNN's reserve, the output and (dropout, l > 0)
  // the masked input; then two gradient buffers as wide as any layer's input or output.
  Carve c;
  const size_t o_seq = c.Take(sizeof(int32_t) * d.N);
  const size_t o_work = c.Take(work);
  std::vector<size_t> o_w, o_dw, o_res, o_y, o_xin;
  for (int64_t l = 0; l < d.L; ++l) {
    const auto& ly = layers[static_cast<size_t>(l)];
    o_w.push_back(c.Take(ly.weight_bytes()));
    o_dw.push_back(c.Take(ly.weight_bytes()));
    o_res.push_back(c.Take(rbytes[static_cast<size_t>(l)]));
    o_y.push_back(c.Take(sizeof(DT) * TN * DHo));
    o_xin.push_back(dropout && l > 0 ? c.Take(sizeof(DT) * TN * DHo) : 0);
  }
  const int64_t widest = std::max(d.I, DHo);
  const size_t o_g0 = c.Take(sizeof(DT) * TN * widest);
  const size_t o_g1 = c.Take(sizeof(DT) * TN * widest);
  const size_t o_dh = c.Take(sizeof(DT) * LDNHo);
  const size_t o_dc = c.Take(sizeof(DT) * LDNH);
  char* base = static_cast<char*>(TempOf(ctx, op)->Get(c.total()));
  auto at = [base](size_t off) { return reinterpret_cast<DT*>(base + off); };
  int32_t* seq = reinterpret_cast<int32_t*>(base + o_seq);
  void* workspace = base + o_work;
  g.Fill(seq, static_cast<int32_t>(d.T), d.N);

  const DT* params = in[1].ptr<DT>();
  const DT* hx = in[2].ptr<DT>();
  const DT* cx = CellInput(p) >= 0 ? in[CellInput(p)].ptr<DT>() : nullptr;
  std::vector<ParamRuns> runs;
  std::vector<const DT*> xs;  // each layer's input
  // The forward again, in training mode, keeping what the backward needs.
  const DT* x = in[0].ptr<DT>();
  for (int64_t l = 0; l < d.L; ++l) {
    const size_t li = static_cast<size_t>(l);
    const CudnnLayer<DT>& ly = layers[li];
    runs.push_back(ly.Runs(at(o_w[li])));
    g.Pack(runs[li], params, at(o_w[li]));
    g.Check(cudaMemsetAsync(at(o_dw[li]), 0, ly.weight_bytes(), g.stream()), "cudaMemsetAsync");
    xs.push_back(x);
    DT* y = at(o_y[li]);
    const int64_t hoff = l * d.D * d.N * d.Hout, coff = l * d.D * d.N * d.H;
    cuda::CheckCudnn(cudnnRNNForward(handle, ly.rnn(), CUDNN_FWD_MODE_TRAINING, seq, ly.x(), x, ly.y(), y, ly.h(),
                                     hx + hoff, nullptr, ly.c(), lstm ? cx + coff : nullptr, nullptr,
                                     ly.weight_bytes(), at(o_w[li]), work, workspace, rbytes[li], at(o_res[li])),
                     "cudnnRNNForward", op, &ctx.run_ctx.ctx);
    if (dropout && l + 1 < d.L) {
      DT* xin = at(o_xin[li + 1]);
      g.Mul(xin, y, mask + l * TN * DHo, TN * DHo);
      x = xin;
    } else {
      x = y;
    }
  }

  const DT* dhy = dhy_blob ? dhy_blob->ptr<DT>() : nullptr;
  const DT* dcy = dcy_blob ? dcy_blob->ptr<DT>() : nullptr;
  DT* dh = at(o_dh);
  DT* dc = at(o_dc);
  const DT* dcur = dy_blob.ptr<DT>();  // gradient of the current layer's output
  DT* gbuf[2] = {at(o_g0), at(o_g1)};
  DT* dnext = nullptr;  // gradient of its input
  for (int64_t l = d.L - 1; l >= 0; --l) {
    const size_t li = static_cast<size_t>(l);
    const CudnnLayer<DT>& ly = layers[li];
    const int64_t hoff = l * d.D * d.N * d.Hout, coff = l * d.D * d.N * d.H;
    dnext = gbuf[l % 2];
    cuda::CheckCudnn(
        cudnnRNNBackwardData_v8(handle, ly.rnn(), seq, ly.y(), at(o_y[li]), dcur, ly.x(), dnext, ly.h(), hx + hoff,
                                dhy ? dhy + hoff : nullptr, dh + hoff, ly.c(), lstm ? cx + coff : nullptr,
                                lstm && dcy ? dcy + coff : nullptr, lstm ? dc + coff : nullptr, ly.weight_bytes(),
                                at(o_w[li]), work, workspace, rbytes[li], at(o_res[li])),
        "cudnnRNNBackwardData_v8", op, &ctx.run_ctx.ctx);
    // After the data gradient, as cuDNN requires; the space was zeroed, so ADD writes it.
    cuda::CheckCudnn(cudnnRNNBackwardWeights_v8(handle, ly.rnn(), CUDNN_WGRAD_MODE_ADD, seq, ly.x(), xs[li], ly.h(),
                                                hx + hoff, ly.y(), at(o_y[li]), ly.weight_bytes(), at(o_dw[li]), work,
                                                workspace, rbytes[li], at(o_res[li])),
                     "cudnnRNNBackwardWeights_v8", op, &ctx.run_ctx.ctx);
    g.Unpack(runs[li], at(o_dw[li]), out[1].ptr<DT>(), req[1]);
    if (l > 0 && dropout) g.Mul(dnext, dnext, mask + (l - 1) * TN * DHo, TN * DHo);
    dcur = dnext;
  }
  g.Store(out[0].ptr<DT>(), dnext, TN * d.I, req[0]);
  g.Store(out[2].ptr<DT>(), dh, LDNHo, req[2]);
  if (lstm) g.Store(out[3].ptr<DT>(), dc, LDNH, req[3]);
}

template <template <typename> class F>
void Dispatch(const char* op, const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
              const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (in[0].dtype == DType::kFloat32) F<float>::Run(attrs, ctx, in, req, out);
  else if (in[0].dtype == DType::kFloat64) F<double>::Run(attrs, ctx, in, req, out);
  else Throw(ErrorKind::kType, "Operator '", op, "': input 'data' must be float32 or float64, got ",
             DTypeName(in[0].dtype));
}
template <typename DT>
struct Fwd {
  static void Run(const NodeAttrs& a, const OpContext& c, const std::vector<TBlob>& i, const std::vector<OpReq>& r,
                  const std::vector<TBlob>& o) {
    ForwardGpu<DT>(a, c, i, r, o);
  }
};
template <typename DT>
struct Bwd {
  static void Run(const NodeAttrs& a, const OpContext& c, const std::vector<TBlob>& i, const std::vector<OpReq>& r,
                  const std::vector<TBlob>& o) {
    BackwardGpu<DT>(a, c, i, r, o);
  }
};

void RnnForwardGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  Dispatch<Fwd>("RNN", attrs, ctx, in, req, out);
}
void RnnBackwardGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  Dispatch<Bwd>("_backward_RNN", attrs, ctx, in, req, out);
}

}  // namespace

WEFT_REGISTER_OP(RNN).SetAttr<FCompute>("FCompute<gpu>", RnnForwardGpu);
WEFT_REGISTER_OP(_backward_RNN).SetAttr<FCompute>("FCompute<gpu>", RnnBackwardGpu);

}  // namespace op
}  // namespace weft

#endif  // WEFT_USE_CUDNN
