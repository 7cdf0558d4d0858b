#include "core/op/linalg/gemm.h"

#include <algorithm>
#include <vector>

#include "core/base/error.h"
#include "core/op/op_util.h"
#include "core/op/serial_scope.h"

#if defined(WEFT_USE_ONEDNN)
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#endif

namespace weft {
namespace op {
namespace {

// Integers accumulate unsigned: a product or sum past int64 wraps modulo 2^64, as numpy's
// integer matmul does, where signed arithmetic would be undefined (fuzz_c_api found dot of
// int64 arrays overflowing).
template <typename T> struct GemmAcc { using type = uint64_t; };
template <> struct GemmAcc<float> { using type = float; };
template <> struct GemmAcc<double> { using type = double; };
template <> struct GemmAcc<float16> { using type = float; };
template <> struct GemmAcc<bfloat16> { using type = float; };

// Register tile MR x NR: NR spans two 64-byte vectors so that the 2 * MR accumulators stay
// in registers; cache blocks MC x KC of op(A) and KC x NC of op(B) are packed so that the
// tile reads both operands sequentially.
template <typename A>
struct Blocking {
  static constexpr int MR = 6;
  static constexpr int NR = 128 / sizeof(A);
  static constexpr int64_t MC = 16 * MR;
  static constexpr int64_t NC = 8 * NR;
  static constexpr int64_t KC = 256;
};

template <typename A, int MR, int NR>
inline void MicroKernel(int64_t kc, const A* __restrict ap, const A* __restrict bp, A* __restrict c, int64_t ldc) {
  A acc[MR][NR] = {};
  for (int64_t p = 0; p < kc; ++p) {
    const A* av = ap + p * MR;
    const A* bv = bp + p * NR;
    for (int r = 0; r < MR; ++r) {
      A ar = av[r];
      for (int j = 0; j < NR; ++j) acc[r][j] += ar * bv[j];
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j) c[r * ldc + j] += acc[r][j];
}

// One cache block of C: rows [i0, i0+mc), columns [j0, j0+nc) of one product.
template <typename T>
void GemmBlock(int64_t i0, int64_t mc, int64_t j0, int64_t nc, int64_t k, const T* a, int64_t lda, bool ta,
               const T* b, int64_t ldb, bool tb, bool accumulate, T* c, int64_t ldc, std::vector<typename GemmAcc<T>::type>* buf) {
  using A = typename GemmAcc<T>::type;
  using B = Blocking<A>;
  constexpr int MR = B::MR, NR = B::NR;
  int64_t mp = (mc + MR - 1) / MR * MR, np = (nc + NR - 1) / NR * NR;
  size_t need = static_cast<size_t>(mp * np + mp * B::KC + B::KC * np);
  if (buf->size() < need) buf->resize(need);
  A* acc = buf->data();
  A* ap = acc + mp * np;
  A* bp = ap + mp * B::KC;
  std::fill(acc, acc + mp * np, A(0));
  for (int64_t k0 = 0; k0 < k; k0 += B::KC) {
    int64_t kc = std::min(B::KC, k - k0);
    // Pack op(A)[i0.., k0..] as MR-row panels, each kc x MR, zero-padded.
    for (int64_t ip = 0; ip < mp; ip += MR) {
      A* dst = ap + ip * kc;
      for (int64_t p = 0; p < kc; ++p)
        for (int r = 0; r < MR; ++r) {
          int64_t i = i0 + ip + r;
          dst[p * MR + r] = ip + r < mc ? static_cast<A>(ta ? a[(k0 + p) * lda + i] : a[i * lda + k0 + p]) : A(0);
        }
    }
    // Pack op(B)[k0.., j0..] as NR-column panels, each kc x NR, zero-padded.
    for (int64_t jp = 0; jp < np; jp += NR) {
      A* dst = bp + jp * kc;
      for (int64_t p = 0; p < kc; ++p)
        for (int j = 0; j < NR; ++j) {
          int64_t jj = j0 + jp + j;
          dst[p * NR + j] = jp + j < nc ? static_cast<A>(tb ? b[jj * ldb + k0 + p] : b[(k0 + p) * ldb + jj]) : A(0);
        }
    }
    for (int64_t ip = 0; ip < mp; ip += MR)
      for (int64_t jp = 0; jp < np; jp += NR)
        MicroKernel<A, MR, NR>(kc, ap + ip * kc, bp + jp * kc, acc + ip * np + jp, np);
  }
  for (int64_t i = 0; i < mc; ++i) {
    T* crow = c + (i0 + i) * ldc + j0;
    const A* arow = acc + i * np;
    for (int64_t j = 0; j < nc; ++j)
      crow[j] = static_cast<T>(accumulate ? static_cast<A>(crow[j]) + arow[j] : arow[j]);
  }
}

template <typename T>
void BlockedGemm(int64_t m, int64_t n, int64_t k, const GemmOperand& ga, const GemmOperand& gb, bool accumulate,
                 T* c, int64_t ldc, int64_t c_stride, int64_t batch) {
  using B = Blocking<typename GemmAcc<T>::type>;
  int64_t mb = (m + B::MC - 1) / B::MC, nb = (n + B::NC - 1) / B::NC;
  int64_t tasks = batch * mb * nb;
  ParallelFor(tasks, 1, [&](int64_t begin, int64_t end) {
    std::vector<typename GemmAcc<T>::type> buf;
    for (int64_t t = begin; t < end; ++t) {
      int64_t bi = t / (mb * nb), rest = t % (mb * nb);
      int64_t i0 = rest / nb * B::MC, j0 = rest % nb * B::NC;
      const T* a = static_cast<const T*>(ga.data) + bi * ga.batch_stride;
      const T* b = static_cast<const T*>(gb.data) + bi * gb.batch_stride;
      GemmBlock<T>(i0, std::min(B::MC, m - i0), j0, std::min(B::NC, n - j0), k, a, ga.ld, ga.transpose, b, gb.ld,
                   gb.transpose, accumulate, c + bi * c_stride, ldc, &buf);
    }
  });
}

#if defined(WEFT_USE_ONEDNN)
// Multiply-adds under which one float32 product runs on the calling thread: 15-25 us of
// work on one core (Zen 5, oneDNN 2.6). A split saves half of that, but where the second
// thread sleeps between parallel regions it must be woken to start and again at the
// closing barrier, which costs about as much.
constexpr double kSerialGemmMacs = 1 << 20;

void SgemmOne(int64_t m, int64_t n, int64_t k, const float* a, const GemmOperand& ga, const float* b,
              const GemmOperand& gb, float beta, float* c, int64_t ldc, const char* op_name) {
  dnnl_status_t st = dnnl_sgemm(ga.transpose ? 'T' : 'N', gb.transpose ? 'T' : 'N', m, n, k, 1.0f, a, ga.ld, b, gb.ld,
                                beta, c, ldc);
  if (st != dnnl_success)
    Throw(ErrorKind::kRuntime, "Operator '", op_name, "': oneDNN sgemm failed with status ", static_cast<int>(st),
          " for a ", m, "x", k, " by ", k, "x", n, " product");
}

// One product split into bands here, each run by oneDNN on one thread (inside the parallel
// region): bands of C's columns, 16 (a vector) wide, so that each thread reads only its
// rows of B^T or columns of B; with too few columns for a band per thread, bands of rows.
void BandedSgemm(int64_t m, int64_t n, int64_t k, const float* a, const GemmOperand& ga, const float* b,
                 const GemmOperand& gb, float beta, float* c, int64_t ldc, const char* op_name) {
  constexpr int64_t kBand = 16;
  const int64_t threads = omp_get_max_threads();
  if (n >= kBand * threads) {
    ParallelFor((n + kBand - 1) / kBand, 1, [&](int64_t begin, int64_t end) {
      const int64_t j0 = begin * kBand, j1 = std::min(n, end * kBand);
      SgemmOne(m, j1 - j0, k, a, ga, gb.transpose ? b + j0 * gb.ld : b + j0, gb, beta, c + j0, ldc, op_name);
    });
  } else {
    ParallelFor(m, 1, [&](int64_t begin, int64_t end) {
      SgemmOne(end - begin, n, k, ga.transpose ? a + begin : a + begin * ga.ld, ga, b, gb, beta, c + begin * ldc, ldc,
               op_name);
    });
  }
}

// Below AVX-512, oneDNN 2.6's sgemm runs a product with a short side on its no-copy kernels,
// which read the operands where they lie; those run at about 60 % of its speed when an
// operand read across its rows (B untransposed, A transposed) has rows a multiple of 512
// floats apart, all on the same few cache sets (256 apart cost nothing measurable: an LSTM
// step's 32x256x1024 took 0.15 ms either way). On Zen 5 capped at AVX2, one thread:
// FullyConnected's data gradient at batch 64, 64x1024x1024 with B = the 1024x1024 weight,
// took 1.9 ms, and 1.07 ms with B's rows 16 floats further apart; an LSTM layer's weight
// gradient (1024x256x1120, A^T) 7.2 ms against 4.7; an MLP's 512x512x128 (A^T and B) 0.81
// against 0.53. Such an operand is first copied into rows padded by 16 floats, where the
// product has at least 32 rows (or columns) to spread the copy over. oneDNN takes
// the no-copy kernels where 1/m + 1/n >= 0.0038 (its threshold for AVX2), so only there: a
// larger product runs on its copying kernels, which pack the operands anyway (1024x1024x1024
// took the same either way), and its AVX-512 kernels avoid such strides themselves.
constexpr int64_t kBadLdMultiple = 512, kLdPad = 16, kPadMinOther = 32;
constexpr double kNoCopyThreshold = 0.0038;

bool PadsStridedOperands() {
  static const bool pads = [] {
    auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    auto core = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
    return (isa & core) != core;
  }();
  return pads;
}

// `rows` rows of `cols` floats, `ld` apart, copied into *buf with rows cols + kLdPad apart.
const float* PaddedCopy(const float* src, int64_t rows, int64_t cols, int64_t ld, std::vector<float>* buf) {
  const int64_t pld = cols + kLdPad;
  if (buf->size() < static_cast<size_t>(rows * pld)) buf->resize(static_cast<size_t>(rows * pld));
  float* dst = buf->data();
  ParallelFor(rows, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(cols, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) std::copy(src + r * ld, src + r * ld + cols, dst + r * pld);
  });
  return dst;
}

// SgemmOne, with an operand the no-copy kernels read badly copied first (see above).
void SgemmPadded(int64_t m, int64_t n, int64_t k, const float* a, const GemmOperand& ga, const float* b,
                 const GemmOperand& gb, float beta, float* c, int64_t ldc, const char* op_name) {
  const bool short_side = 1.0 / static_cast<double>(m) + 1.0 / static_cast<double>(n) >= kNoCopyThreshold;
  const bool pad_a = short_side && n >= kPadMinOther && ga.transpose && ga.ld % kBadLdMultiple == 0;
  const bool pad_b = short_side && m >= kPadMinOther && !gb.transpose && gb.ld % kBadLdMultiple == 0;
  if (!PadsStridedOperands() || (!pad_a && !pad_b)) {
    SgemmOne(m, n, k, a, ga, b, gb, beta, c, ldc, op_name);
    return;
  }
  // Kept per thread between calls: a product's operands are copied at every call (weights
  // change between steps), the allocation is not repeated.
  thread_local std::vector<float> abuf, bbuf;
  GemmOperand pa = ga, pb = gb;
  if (pad_a) {  // A^T: k rows of m
    a = PaddedCopy(a, k, m, ga.ld, &abuf);
    pa.ld = m + kLdPad;
  }
  if (pad_b) {  // B: k rows of n
    b = PaddedCopy(b, k, n, gb.ld, &bbuf);
    pb.ld = n + kLdPad;
  }
  SgemmOne(m, n, k, a, pa, b, pb, beta, c, ldc, op_name);
}

void OneDnnSgemm(int64_t m, int64_t n, int64_t k, const GemmOperand& ga, const GemmOperand& gb, float beta, float* c,
                 int64_t ldc, int64_t c_stride, int64_t batch, const char* op_name) {
  const float* a = static_cast<const float*>(ga.data);
  const float* b = static_cast<const float*>(gb.data);
  // Many small products run one per thread (oneDNN runs single-threaded inside a parallel
  // region); large ones run one after another, each on every thread, and a single product
  // too small to gain from being split (FullyConnected's skinny ones: 64x10x1024 is 13 us
  // on one Zen 5 core) runs on this thread alone.
  const double macs = static_cast<double>(m) * n * k;
  bool small = macs < 64.0 * 64 * 64;
  SerialScope serial(batch == 1 && macs < kSerialGemmMacs);
  if (batch > 1 && small) {
    ParallelFor(batch, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        SgemmOne(m, n, k, a + i * ga.batch_stride, ga, b + i * gb.batch_stride, gb, beta, c + i * c_stride, ldc,
                 op_name);
    });
    return;
  }
  // A product with op(B) = B^T (FullyConnected's forward, whose weight is n x k) costs
  // oneDNN 2.6 1.3 to 2.5 times the CPU time on two threads that it costs on one (Zen 5:
  // 64x1024x1024 takes 1.9 ms of CPU split by oneDNN, 0.78 ms on one thread), so it is
  // split into bands here instead, at the CPU time of one thread.
  const bool banded = gb.transpose && macs >= kSerialGemmMacs && !omp_in_parallel() && omp_get_max_threads() > 1;
  for (int64_t i = 0; i < batch; ++i) {
    const float* ai = a + i * ga.batch_stride;
    const float* bi = b + i * gb.batch_stride;
    if (banded)
      BandedSgemm(m, n, k, ai, ga, bi, gb, beta, c + i * c_stride, ldc, op_name);
    else
      SgemmPadded(m, n, k, ai, ga, bi, gb, beta, c + i * c_stride, ldc, op_name);
  }
}
#endif

}  // namespace

#if defined(WEFT_USE_ONEDNN)
namespace {

// bfloat16 products run on oneDNN's matmul (AVX512-BF16/AMX instructions where the CPU has
// them) with bf16 operands and a float32 result, which beta and the rounding to bf16 then
// meet once. Primitives are cached by geometry; a geometry oneDNN refuses (a CPU without
// bf16 support) is remembered as null and runs on the blocked kernel.
struct Bf16Plan {
  dnnl::matmul prim;
  dnnl::memory::desc a, b, c;
};

dnnl::engine& Bf16Engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

std::shared_ptr<Bf16Plan> Bf16Matmul(int64_t m, int64_t n, int64_t k, const GemmOperand& a, const GemmOperand& b) {
  using dnnl::memory;
  static std::mutex mu;
  static std::unordered_map<std::string, std::shared_ptr<Bf16Plan>> cache;
  std::string key;
  for (int64_t v : {m, n, k, a.ld, int64_t(a.transpose), b.ld, int64_t(b.transpose)}) key += std::to_string(v) + ',';
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  std::shared_ptr<Bf16Plan> prim;
  try {
    memory::desc ad({m, k}, memory::data_type::bf16, a.transpose ? memory::dims{1, a.ld} : memory::dims{a.ld, 1});
    memory::desc bd({k, n}, memory::data_type::bf16, b.transpose ? memory::dims{1, b.ld} : memory::dims{b.ld, 1});
    memory::desc cd({m, n}, memory::data_type::f32, memory::dims{n, 1});
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(ad, bd, cd), Bf16Engine());
    prim = std::make_shared<Bf16Plan>(Bf16Plan{dnnl::matmul(pd), ad, bd, cd});
  } catch (const dnnl::error&) {
    prim = nullptr;
  }
  cache.emplace(key, prim);
  return prim;
}

bool OneDnnBf16Gemm(int64_t m, int64_t n, int64_t k, const GemmOperand& ga, const GemmOperand& gb, double beta,
                    bfloat16* c, int64_t ldc, int64_t c_stride, int64_t batch) {
  auto prim = Bf16Matmul(m, n, k, ga, gb);
  if (!prim) return false;
  using dnnl::memory;
  dnnl::engine& eng = Bf16Engine();
  thread_local dnnl::stream strm(eng);
  std::vector<float> out(static_cast<size_t>(m * n));
  for (int64_t bi = 0; bi < batch; ++bi) {
    memory am(prim->a, eng, const_cast<bfloat16*>(static_cast<const bfloat16*>(ga.data) + bi * ga.batch_stride));
    memory bm(prim->b, eng, const_cast<bfloat16*>(static_cast<const bfloat16*>(gb.data) + bi * gb.batch_stride));
    memory cm(prim->c, eng, out.data());
    prim->prim.execute(strm, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    strm.wait();
    bfloat16* cb = c + bi * c_stride;
    const float bf = static_cast<float>(beta);
    ParallelFor(m, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        for (int64_t j = 0; j < n; ++j) {
          float v = out[i * n + j];
          cb[i * ldc + j] = bfloat16(bf != 0.0f ? v + bf * static_cast<float>(cb[i * ldc + j]) : v);
        }
    });
  }
  return true;
}

}  // namespace
#endif

void Gemm(DType dtype, int64_t m, int64_t n, int64_t k, const GemmOperand& a, const GemmOperand& b, double beta,
          void* c, int64_t ldc, int64_t c_stride, int64_t batch, const char* op_name) {
  if (dtype == DType::kBool)
    Throw(ErrorKind::kType, "Operator '", op_name, "': matrix products of bool arrays are not supported");
  if (m <= 0 || n <= 0 || batch <= 0) return;
  bool accumulate = beta != 0.0;
  if (k == 0) {
    if (accumulate) return;
    WEFT_TYPE_SWITCH(dtype, T, {
      for (int64_t bi = 0; bi < batch; ++bi)
        for (int64_t i = 0; i < m; ++i) std::fill_n(static_cast<T*>(c) + bi * c_stride + i * ldc, n, T(0));
    });
    return;
  }
#if defined(WEFT_USE_ONEDNN)
  if (dtype == DType::kFloat32) {
    OneDnnSgemm(m, n, k, a, b, static_cast<float>(beta), static_cast<float*>(c), ldc, c_stride, batch, op_name);
    return;
  }
  if (dtype == DType::kBfloat16 && OneDnnBf16Gemm(m, n, k, a, b, beta, static_cast<bfloat16*>(c), ldc, c_stride, batch))
    return;
#endif
  WEFT_TYPE_SWITCH(dtype, T, {
    if constexpr (!std::is_same_v<T, bool>)
      BlockedGemm<T>(m, n, k, a, b, accumulate, static_cast<T*>(c), ldc, c_stride, batch);
  });
}

}  // namespace op
}  // namespace weft
