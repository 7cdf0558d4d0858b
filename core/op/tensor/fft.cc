// _contrib_fft and _contrib_ifft: MXNet's 1-D discrete Fourier transforms over the last
// axis, with complex numbers interleaved as [re0, im0, re1, im1, ...].
//   fft:  real (..., d)      -> complex (..., 2d), X_k = sum_j x_j exp(-2 pi i jk / d)
//   ifft: complex (..., 2d)  -> real (..., d),     y_j = Re sum_k X_k exp(+2 pi i jk / d)
// Neither normalises (as MXNet, whose GPU code calls cuFFT unscaled). Each is the other's
// exact gradient: d(fft)/dx applied to G is Re(unscaled inverse of G) = ifft(G), and
// d(ifft)/dX applied to g is the transform of g = fft(g).
//
// The transform is Weft's own: iterative radix-2 for powers of two, Bluestein's chirp-z
// (a convolution done with power-of-two transforms) for other lengths, in double.
#include <cmath>
#include <complex>

#include "core/op/op_util.h"

namespace weft {
namespace op {

struct FFTParam {
  int compute_size = 128;
};

WEFT_PARAM_SCHEMA(FFTParam, s) {
  s.Field("compute_size", &FFTParam::compute_size)
      .Default(128)
      .Min(1)
      .Describe("Maximum size of sub-batch to be forwarded at one time (MXNet's GPU batching; the result does "
                "not depend on it)");
}

namespace {

using Complex = std::complex<double>;

// In place; a.size() must be a power of two. sign -1: forward, +1: unscaled inverse.
void Radix2(std::vector<Complex>* data, int sign) {
  std::vector<Complex>& a = *data;
  size_t n = a.size();
  for (size_t i = 1, j = 0; i < n; ++i) {
    size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (size_t len = 2; len <= n; len <<= 1) {
    double ang = sign * 2.0 * M_PI / static_cast<double>(len);
    for (size_t i = 0; i < n; i += len)
      for (size_t k = 0; k < len / 2; ++k) {
        // Twiddles from the angle each time rather than by repeated multiplication, so the
        // error does not grow with the length.
        Complex w = std::polar(1.0, ang * static_cast<double>(k));
        Complex u = a[i + k], v = a[i + k + len / 2] * w;
        a[i + k] = u + v;
        a[i + k + len / 2] = u - v;
      }
  }
}

bool IsPowerOfTwo(size_t n) { return n != 0 && (n & (n - 1)) == 0; }

// X_k = sum_j a_j exp(sign 2 pi i jk / n) for any n.
void Transform(std::vector<Complex>* data, int sign) {
  std::vector<Complex>& a = *data;
  size_t n = a.size();
  if (n <= 1) return;
  if (IsPowerOfTwo(n)) {
    Radix2(data, sign);
    return;
  }
  // jk = (j^2 + k^2 - (k - j)^2) / 2 turns the sum into a convolution with the chirp
  // c_m = exp(sign pi i m^2 / n): X_k = c_k sum_j (a_j c_j) conj(c_{k-j}).
  std::vector<Complex> chirp(n);
  for (size_t m = 0; m < n; ++m) {
    // m^2 mod 2n keeps the angle small, so large m lose no precision.
    uint64_t sq = (static_cast<uint64_t>(m) * m) % (2 * n);
    chirp[m] = std::polar(1.0, sign * M_PI * static_cast<double>(sq) / static_cast<double>(n));
  }
  size_t len = 1;
  while (len < 2 * n - 1) len <<= 1;
  std::vector<Complex> u(len), v(len);
  for (size_t j = 0; j < n; ++j) u[j] = a[j] * chirp[j];
  v[0] = std::conj(chirp[0]);
  for (size_t m = 1; m < n; ++m) v[m] = v[len - m] = std::conj(chirp[m]);
  Radix2(&u, -1);
  Radix2(&v, -1);
  for (size_t i = 0; i < len; ++i) u[i] *= v[i];
  Radix2(&u, +1);
  for (size_t k = 0; k < n; ++k) a[k] = chirp[k] * u[k] / static_cast<double>(len);
}

bool FFTShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out, bool inverse) {
  const Shape& x = (*in)[0];
  if (!x.is_known()) return false;
  if (x.ndim() < 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected data with at least one axis, got ",
          x.ToString());
  int64_t last = x[x.ndim() - 1];
  if (inverse && last % 2 != 0)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name,
          "': the last axis holds interleaved (real, imaginary) pairs and must be even, got shape ", x.ToString());
  Shape y = x;
  y[y.ndim() - 1] = inverse ? last / 2 : last * 2;
  AssignShape(attrs, out, 0, y, "output");
  return true;
}

void FFTCompute(const NodeAttrs& attrs, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                const std::vector<TBlob>& out, bool inverse) {
  if (req[0] == OpReq::kNullOp) return;
  const Shape& x = in[0].shape;
  std::vector<Shape> ins{x}, outs{Shape()};
  FFTShape(attrs, &ins, &outs, inverse);
  if (out[0].shape != outs[0])
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': the output must have shape ", outs[0].ToString(),
          ", got ", out[0].shape.ToString());
  int64_t n = inverse ? x[x.ndim() - 1] / 2 : x[x.ndim() - 1];
  int64_t rows = n == 0 ? 0 : x.Size() / (inverse ? 2 * n : n);
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, attrs.op->name.c_str(), {
    const T* src = in[0].ptr<T>();
    T* dst = out[0].ptr<T>();
    ParallelFor(rows, 1, [&](int64_t rb, int64_t re) {
      std::vector<Complex> buf(n);
      for (int64_t r = rb; r < re; ++r) {
        if (inverse) {
          const T* row = src + r * 2 * n;
          for (int64_t j = 0; j < n; ++j)
            buf[j] = Complex(static_cast<double>(row[2 * j]), static_cast<double>(row[2 * j + 1]));
          Transform(&buf, +1);
          for (int64_t j = 0; j < n; ++j) Store(dst + r * n + j, req[0], buf[j].real());
        } else {
          const T* row = src + r * n;
          for (int64_t j = 0; j < n; ++j) buf[j] = Complex(static_cast<double>(row[j]), 0.0);
          Transform(&buf, -1);
          for (int64_t k = 0; k < n; ++k) {
            Store(dst + r * 2 * n + 2 * k, req[0], buf[k].real());
            Store(dst + r * 2 * n + 2 * k + 1, req[0], buf[k].imag());
          }
        }
      }
    });
  });
}

}  // namespace

WEFT_REGISTER_OP(_contrib_fft)
    .Describe(
        "1-D discrete Fourier transform of real data over its last axis: for data (..., d) the output (..., 2d) "
        "holds the d complex coefficients X_k = sum_j x_j exp(-2 pi i jk/d) as [re0, im0, re1, im1, ...], "
        "unnormalised. MXNet runs it on GPUs only; Weft computes it on the CPU for any d.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Input data to the FFTOp.")
    .SetParams<FFTParam>()
    .SetAttr<FInferShape>("FInferShape",
                          [](const NodeAttrs& a, std::vector<Shape>* in, std::vector<Shape>* out) {
                            return FFTShape(a, in, out, false);
                          })
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>",
                       [](const NodeAttrs& a, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
                         FFTCompute(a, in, req, out, false);
                       })
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_contrib_ifft", {a.out_grads[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_contrib_ifft)
    .Describe(
        "1-D inverse discrete Fourier transform over the last axis: for interleaved complex data (..., 2d) "
        "([re0, im0, re1, im1, ...]) the output (..., d) is the real part of sum_k X_k exp(+2 pi i jk/d), not "
        "divided by d (as MXNet). MXNet runs it on GPUs only; Weft computes it on the CPU for any d.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Input data to the IFFTOp.")
    .SetParams<FFTParam>()
    .SetAttr<FInferShape>("FInferShape",
                          [](const NodeAttrs& a, std::vector<Shape>* in, std::vector<Shape>* out) {
                            return FFTShape(a, in, out, true);
                          })
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>",
                       [](const NodeAttrs& a, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
                         FFTCompute(a, in, req, out, true);
                       })
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_contrib_fft", {a.out_grads[0]}, attrs.dict)};
    });

}  // namespace op
}  // namespace weft
