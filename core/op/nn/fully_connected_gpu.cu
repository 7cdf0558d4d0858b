// GPU version of FullyConnected and _backward_FullyConnected: the three products run on
// cuBLAS (core/op/cuda/gemm.h, row-major like the CPU code), the bias is added by a kernel
// over the output and the bias gradient is a column sum of the output gradient.
#include "core/op/cuda/gemm.h"
#include "core/op/elemwise/elemwise_kernels.cuh"
#include "core/op/nn/fully_connected.h"

namespace weft {
namespace op {
namespace {

// The data as a matrix rows x cols, as fully_connected.cc sees it.
struct FCMatrix {
  int64_t rows = 0, cols = 0;
};

FCMatrix MatrixOf(const NodeAttrs& attrs, const Shape& data) {
  FCMatrix v;
  if (attrs.Params<FullyConnectedParam>().flatten) {
    v.rows = data[0];
    v.cols = data.ProdRange(1, data.ndim());
  } else {
    v.rows = data.ProdRange(0, data.ndim() - 1);
    v.cols = data[data.ndim() - 1];
  }
  return v;
}

double Beta(OpReq req) { return req == OpReq::kAddTo ? 1.0 : 0.0; }

// y[r, j] += bias[j] over a rows x cols output.
template <typename T>
struct AddBiasKernel {
  T* y;
  const T* bias;
  int64_t cols;
  __device__ void operator()(int64_t e) const {
    using A = cuda::ComputeT<T>;
    y[e] = static_cast<T>(static_cast<A>(y[e]) + static_cast<A>(bias[e % cols]));
  }
};

// db[j] (op)= sum over rows of g[r, j]. A block covers kColTile columns: its threads along x
// read consecutive columns of a row (coalesced), its kRowLanes rows of threads split the rows,
// and a shared-memory reduction adds the lanes in a fixed order, so the result is
// deterministic.
constexpr int kColTile = 32;
constexpr int kRowLanes = 16;

template <typename T>
__global__ void ColumnSumKernel(const T* g, int64_t rows, int64_t cols, T* db, OpReq req) {
  using A = cuda::ComputeT<T>;
  __shared__ A part[kRowLanes][kColTile];
  for (int64_t c0 = static_cast<int64_t>(blockIdx.x) * kColTile; c0 < cols;
       c0 += static_cast<int64_t>(gridDim.x) * kColTile) {
    const int64_t c = c0 + threadIdx.x;
    A acc = A(0);
    if (c < cols)
      for (int64_t r = threadIdx.y; r < rows; r += kRowLanes) acc += static_cast<A>(g[r * cols + c]);
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    for (int step = kRowLanes / 2; step > 0; step >>= 1) {
      if (threadIdx.y < step) part[threadIdx.y][threadIdx.x] += part[threadIdx.y + step][threadIdx.x];
      __syncthreads();
    }
    if (threadIdx.y == 0 && c < cols) cuda::Store(db, c, part[0][threadIdx.x], req);
    // The next tile reuses `part`: wait until row 0 has read it.
    __syncthreads();
  }
}

void FCComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<FullyConnectedParam>();
  const char* name = attrs.op->name.c_str();
  const FCMatrix v = MatrixOf(attrs, in[0].shape);
  const int64_t n = p.num_hidden;
  GemmOperand x{in[0].dptr, v.cols, 0, false};
  GemmOperand w{in[1].dptr, v.cols, 0, true};
  cuda::Gemm(ctx.run_ctx, in[0].dtype, v.rows, n, v.cols, 1.0, x, w, Beta(req[0]), out[0].dptr, n, 0, 1, name);
  if (p.no_bias) return;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_TYPE_SWITCH(out[0].dtype, T, name, {
    cuda::ForEach(v.rows * n, s, AddBiasKernel<T>{out[0].ptr<T>(), in[2].ptr<T>(), n}, name);
  });
}

// Inputs: ograd, data, weight. Outputs: dData, dWeight and, unless no_bias, dBias.
void FCBackwardGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<FullyConnectedParam>();
  const char* name = attrs.op->name.c_str();
  const FCMatrix v = MatrixOf(attrs, in[1].shape);
  const int64_t n = p.num_hidden;
  const DType dt = in[0].dtype;
  if (req[0] != OpReq::kNullOp) {
    // dData (rows x cols) = G (rows x n) * W (n x cols)
    GemmOperand g{in[0].dptr, n, 0, false};
    GemmOperand w{in[2].dptr, v.cols, 0, false};
    cuda::Gemm(ctx.run_ctx, dt, v.rows, v.cols, n, 1.0, g, w, Beta(req[0]), out[0].dptr, v.cols, 0, 1, name);
  }
  if (req[1] != OpReq::kNullOp) {
    // dWeight (n x cols) = G^T (n x rows) * X (rows x cols)
    GemmOperand gt{in[0].dptr, n, 0, true};
    GemmOperand x{in[1].dptr, v.cols, 0, false};
    cuda::Gemm(ctx.run_ctx, dt, n, v.cols, v.rows, 1.0, gt, x, Beta(req[1]), out[1].dptr, v.cols, 0, 1, name);
  }
  if (!p.no_bias && req[2] != OpReq::kNullOp) {
    cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
    cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
    const unsigned blocks =
        static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>((n + kColTile - 1) / kColTile, 65535)));
    WEFT_GPU_TYPE_SWITCH(dt, T, name, {
      ColumnSumKernel<T><<<blocks, dim3(kColTile, kRowLanes), 0, s>>>(in[0].ptr<T>(), v.rows, n, out[2].ptr<T>(),
                                                                     req[2]);
      cuda::CheckLaunch(name);
    });
  }
}

}  // namespace

WEFT_REGISTER_OP(FullyConnected).SetAttr<FCompute>("FCompute<gpu>", FCComputeGPU);
WEFT_REGISTER_OP(_backward_FullyConnected).SetAttr<FCompute>("FCompute<gpu>", FCBackwardGPU);

}  // namespace op
}  // namespace weft
