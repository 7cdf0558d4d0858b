#include "core/op/linalg/la_kernels.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/op/linalg/gemm.h"

namespace weft {
namespace op {
namespace la {

void MatMul(const double* a, bool ta, const double* b, bool tb, double* c, int64_t m, int64_t n, int64_t k,
            bool accumulate) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate) std::fill(c, c + m * n, 0.0);
    return;
  }
  GemmOperand ga{a, ta ? m : k, 0, ta};
  GemmOperand gb{b, tb ? k : n, 0, tb};
  Gemm(DType::kFloat64, m, n, k, ga, gb, accumulate ? 1.0 : 0.0, c, n, 0, 1, "linalg");
}

std::vector<double> Transposed(const double* a, int64_t rows, int64_t cols) {
  std::vector<double> t(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t[j * rows + i] = a[i * cols + j];
  return t;
}

void KeepTriangle(double* a, int64_t n, bool keep_lower) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      if (keep_lower ? j > i : j < i) a[i * n + j] = 0.0;
}

void SymmetrizeFrom(double* a, int64_t n, bool from_lower) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j) {
      if (from_lower) a[i * n + j] = a[j * n + i];
      else a[j * n + i] = a[i * n + j];
    }
}

int64_t CholeskyLower(double* a, int64_t n) {
  // Row j of L needs rows < j only; each entry is a dot product of two row prefixes, which
  // lie contiguously in row-major order.
  for (int64_t j = 0; j < n; ++j) {
    double* rj = a + j * n;
    double d = rj[j];
    for (int64_t k = 0; k < j; ++k) d -= rj[k] * rj[k];
    if (!(d > 0.0)) return j + 1;
    d = std::sqrt(d);
    rj[j] = d;
    for (int64_t i = j + 1; i < n; ++i) {
      double* ri = a + i * n;
      double s = ri[j];
      for (int64_t k = 0; k < j; ++k) s -= ri[k] * rj[k];
      ri[j] = s / d;
    }
  }
  KeepTriangle(a, n, true);
  return 0;
}

void SolveTriangular(const double* t, bool lower, double* b, int64_t n, int64_t m) {
  // Row operations on b, so the inner loop runs along contiguous rows.
  for (int64_t s = 0; s < n; ++s) {
    int64_t i = lower ? s : n - 1 - s;
    double* bi = b + i * m;
    int64_t k0 = lower ? 0 : i + 1, k1 = lower ? i : n;
    for (int64_t k = k0; k < k1; ++k) {
      double f = t[i * n + k];
      if (f == 0.0) continue;
      const double* bk = b + k * m;
      for (int64_t j = 0; j < m; ++j) bi[j] -= f * bk[j];
    }
    double d = t[i * n + i];
    for (int64_t j = 0; j < m; ++j) bi[j] /= d;
  }
}

int64_t LuFactor(double* a, int64_t n, int32_t* piv) {
  int64_t info = 0;
  for (int64_t j = 0; j < n; ++j) {
    int64_t p = j;
    double best = std::fabs(a[j * n + j]);
    for (int64_t i = j + 1; i < n; ++i) {
      double v = std::fabs(a[i * n + j]);
      if (v > best) {
        best = v;
        p = i;
      }
    }
    piv[j] = static_cast<int32_t>(p + 1);
    if (p != j) std::swap_ranges(a + j * n, a + (j + 1) * n, a + p * n);
    double d = a[j * n + j];
    if (d == 0.0) {
      if (info == 0) info = j + 1;
      continue;
    }
    for (int64_t i = j + 1; i < n; ++i) {
      double* ri = a + i * n;
      double f = ri[j] /= d;
      if (f == 0.0) continue;
      const double* rj = a + j * n;
      for (int64_t k = j + 1; k < n; ++k) ri[k] -= f * rj[k];
    }
  }
  return info;
}

void LuInverse(const double* lu, const int32_t* piv, int64_t n, double* inv) {
  // a = p^T l u, so a^-1 = u^-1 l^-1 p: apply the row swaps to the identity, then solve with
  // the unit lower and the upper factor.
  std::fill(inv, inv + n * n, 0.0);
  for (int64_t i = 0; i < n; ++i) inv[i * n + i] = 1.0;
  for (int64_t j = 0; j < n; ++j) {
    int64_t p = piv[j] - 1;
    if (p != j) std::swap_ranges(inv + j * n, inv + (j + 1) * n, inv + p * n);
  }
  for (int64_t i = 0; i < n; ++i) {
    double* bi = inv + i * n;
    for (int64_t k = 0; k < i; ++k) {
      double f = lu[i * n + k];
      if (f == 0.0) continue;
      const double* bk = inv + k * n;
      for (int64_t j = 0; j < n; ++j) bi[j] -= f * bk[j];
    }
  }
  SolveTriangular(lu, false, inv, n, n);
}

void LqFactor(const double* a, int64_t m, int64_t n, double* l, double* q) {
  std::vector<double> w(a, a + m * n);
  std::vector<double> tau(static_cast<size_t>(m), 0.0);
  // Reflection i maps row i's tail w[i][i:] onto (beta, 0, ..., 0); its vector (1, v) is kept
  // in w[i][i+1:] and applied from the right to the rows below.
  for (int64_t i = 0; i < m; ++i) {
    double* ri = w.data() + i * n;
    double alpha = ri[i];
    double xnorm = 0.0;
    for (int64_t j = i + 1; j < n; ++j) xnorm = std::hypot(xnorm, ri[j]);
    if (xnorm == 0.0) continue;
    double beta = -std::copysign(std::hypot(alpha, xnorm), alpha);
    tau[i] = (beta - alpha) / beta;
    double scale = 1.0 / (alpha - beta);
    for (int64_t j = i + 1; j < n; ++j) ri[j] *= scale;
    ri[i] = beta;
    for (int64_t r = i + 1; r < m; ++r) {
      double* rr = w.data() + r * n;
      double dot = rr[i];
      for (int64_t j = i + 1; j < n; ++j) dot += rr[j] * ri[j];
      dot *= tau[i];
      rr[i] -= dot;
      for (int64_t j = i + 1; j < n; ++j) rr[j] -= dot * ri[j];
    }
  }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < m; ++j) l[i * m + j] = j <= i ? w[i * n + j] : 0.0;
  // q = [I 0] H_{m-1} ... H_0, each H_i = I - tau_i v_i v_i^T acting on columns i..n-1.
  std::fill(q, q + m * n, 0.0);
  for (int64_t i = 0; i < m; ++i) q[i * n + i] = 1.0;
  for (int64_t i = m - 1; i >= 0; --i) {
    if (tau[i] == 0.0) continue;
    const double* v = w.data() + i * n;
    for (int64_t r = 0; r < m; ++r) {
      double* qr = q + r * n;
      double dot = qr[i];
      for (int64_t j = i + 1; j < n; ++j) dot += qr[j] * v[j];
      dot *= tau[i];
      qr[i] -= dot;
      for (int64_t j = i + 1; j < n; ++j) qr[j] -= dot * v[j];
    }
  }
}

void SymmetricEigen(const double* a, int64_t n, double* u, double* w) {
  std::vector<double> s(a, a + n * n);
  std::vector<double> v(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) v[i * n + i] = 1.0;
  double total = 0.0;
  for (double x : s) total += x * x;
  // Each sweep rotates every off-diagonal pair (p, q) to zero; the off-diagonal mass falls
  // quadratically once small, so a few sweeps reach double precision.
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0.0;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) off += s[p * n + q] * s[p * n + q];
    if (off <= 1e-32 * total || off == 0.0) break;
    for (int64_t p = 0; p < n; ++p) {
      for (int64_t q = p + 1; q < n; ++q) {
        double apq = s[p * n + q];
        if (std::fabs(apq) < 1e-300) continue;
        double theta = (s[q * n + q] - s[p * n + p]) / (2.0 * apq);
        double t = std::fabs(theta) > 1e150 ? 0.5 / theta
                                             : std::copysign(1.0, theta) / (std::fabs(theta) + std::hypot(theta, 1.0));
        double c = 1.0 / std::sqrt(t * t + 1.0), sn = t * c;
        for (int64_t k = 0; k < n; ++k) {
          double kp = s[k * n + p], kq = s[k * n + q];
          s[k * n + p] = c * kp - sn * kq;
          s[k * n + q] = sn * kp + c * kq;
        }
        for (int64_t k = 0; k < n; ++k) {
          double pk = s[p * n + k], qk = s[q * n + k];
          s[p * n + k] = c * pk - sn * qk;
          s[q * n + k] = sn * pk + c * qk;
        }
        for (int64_t k = 0; k < n; ++k) {
          double kp = v[k * n + p], kq = v[k * n + q];
          v[k * n + p] = c * kp - sn * kq;
          v[k * n + q] = sn * kp + c * kq;
        }
      }
    }
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return s[x * n + x] < s[y * n + y]; });
  for (int64_t i = 0; i < n; ++i) {
    int64_t src = order[i];
    w[i] = s[src * n + src];
    double* row = u + i * n;
    int64_t big = 0;
    for (int64_t k = 0; k < n; ++k) {
      row[k] = v[k * n + src];
      if (std::fabs(row[k]) > std::fabs(row[big])) big = k;
    }
    if (row[big] < 0.0)
      for (int64_t k = 0; k < n; ++k) row[k] = -row[k];
  }
}

}  // namespace la
}  // namespace op
}  // namespace weft
