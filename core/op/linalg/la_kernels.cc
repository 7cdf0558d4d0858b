#include "core/op/linalg/la_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
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

namespace {

// Reduces the symmetric a (n x n, destroyed) to tridiagonal form t = h a h^T by Householder
// reflections: diagonal d, off-diagonal e (e[i] couples i and i + 1, e[n-1] = 0), and
// h (n x n, row-major) the product of the reflections, so that a = h^T t h.
void Tridiagonalize(double* a, int64_t n, double* d, double* e, double* h) {
  std::fill(h, h + n * n, 0.0);
  for (int64_t i = 0; i < n; ++i) h[i * n + i] = 1.0;
  std::vector<double> v(static_cast<size_t>(n)), p(static_cast<size_t>(n));
  for (int64_t k = 0; k + 2 < n; ++k) {
    // Column k below the diagonal is row k right of it, by symmetry.
    const double* x = a + k * n + k + 1;
    int64_t len = n - k - 1;
    double tail = 0.0;
    for (int64_t j = 1; j < len; ++j) tail = std::hypot(tail, x[j]);
    if (tail == 0.0) continue;
    double alpha = -std::copysign(std::hypot(x[0], tail), x[0]);
    for (int64_t j = 0; j < len; ++j) v[j] = x[j];
    v[0] -= alpha;
    double vv = 0.0;
    for (int64_t j = 0; j < len; ++j) vv += v[j] * v[j];
    double beta = 2.0 / vv;
    // The trailing block s becomes s - v w^T - w v^T with p = beta s v and
    // w = p - (beta v^T p / 2) v: the two-sided reflection in one symmetric rank-2 update.
    double* s = a + (k + 1) * n + k + 1;
    for (int64_t r = 0; r < len; ++r) {
      double acc = 0.0;
      const double* sr = s + r * n;
      for (int64_t j = 0; j < len; ++j) acc += sr[j] * v[j];
      p[r] = beta * acc;
    }
    double vp = 0.0;
    for (int64_t j = 0; j < len; ++j) vp += v[j] * p[j];
    double kf = 0.5 * beta * vp;
    for (int64_t j = 0; j < len; ++j) p[j] -= kf * v[j];
    for (int64_t r = 0; r < len; ++r) {
      double* sr = s + r * n;
      for (int64_t j = 0; j < len; ++j) sr[j] -= v[r] * p[j] + p[r] * v[j];
    }
    a[(k + 1) * n + k] = a[k * n + k + 1] = alpha;
    // h <- (I - beta v v^T) h on rows k+1.., so that h ends as H_last ... H_0.
    double* hb = h + (k + 1) * n;
    std::fill(p.begin(), p.end(), 0.0);
    for (int64_t r = 0; r < len; ++r)
      for (int64_t c = 0; c < n; ++c) p[c] += v[r] * hb[r * n + c];
    for (int64_t r = 0; r < len; ++r) {
      double f = beta * v[r];
      for (int64_t c = 0; c < n; ++c) hb[r * n + c] -= f * p[c];
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    d[i] = a[i * n + i];
    e[i] = i + 1 < n ? a[(i + 1) * n + i] : 0.0;
  }
}

// Eigenvalues of the tridiagonal (d, e) into d by implicit QL steps, applying every rotation
// to the rows of z as well (rows i and i + 1 for a rotation in the plane (i, i + 1)).
bool TridiagonalQl(double* d, double* e, int64_t n, double* z) {
  const double eps = std::numeric_limits<double>::epsilon();
  for (int64_t l = 0; l < n; ++l) {
    for (int iter = 0;; ++iter) {
      int64_t m = l;
      for (; m + 1 < n; ++m)
        if (std::fabs(e[m]) <= eps * (std::fabs(d[m]) + std::fabs(d[m + 1]))) break;
      if (m == l) break;
      if (iter == 60) return false;
      // Wilkinson shift from the leading 2 x 2 block, folded into the first rotation.
      double g = (d[l + 1] - d[l]) / (2.0 * e[l]);
      double r = std::hypot(g, 1.0);
      g = d[m] - d[l] + e[l] / (g + std::copysign(r, g));
      double s = 1.0, c = 1.0, shift = 0.0;
      bool deflated = false;
      for (int64_t i = m - 1; i >= l; --i) {
        double f = s * e[i], b = c * e[i];
        r = std::hypot(f, g);
        e[i + 1] = r;
        if (r == 0.0) {
          // An off-diagonal entry underflowed: the matrix splits here; restart the sweep.
          d[i + 1] -= shift;
          e[m] = 0.0;
          deflated = true;
          break;
        }
        s = f / r;
        c = g / r;
        g = d[i + 1] - shift;
        r = (d[i] - g) * s + 2.0 * c * b;
        shift = s * r;
        d[i + 1] = g + shift;
        g = c * r - b;
        double* zi = z + i * n;
        double* zj = z + (i + 1) * n;
        for (int64_t k = 0; k < n; ++k) {
          double t = zj[k];
          zj[k] = s * zi[k] + c * t;
          zi[k] = c * zi[k] - s * t;
        }
      }
      if (deflated) continue;
      d[l] -= shift;
      e[l] = g;
      e[m] = 0.0;
    }
  }
  return true;
}

}  // namespace

bool SymmetricEigen(const double* a, int64_t n, double* u, double* w) {
  std::vector<double> s(a, a + n * n), d(static_cast<size_t>(n)), e(static_cast<size_t>(n));
  std::vector<double> z(static_cast<size_t>(n * n));
  Tridiagonalize(s.data(), n, d.data(), e.data(), z.data());
  // z's rows are h's: the eigenvectors of a are h^T times those of t, so rotating h's rows
  // as the QL steps rotate t's eigenvector basis leaves a's eigenvectors in z's rows.
  if (!TridiagonalQl(d.data(), e.data(), n, z.data())) return false;
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return d[x] < d[y]; });
  for (int64_t i = 0; i < n; ++i) {
    int64_t src = order[i];
    w[i] = d[src];
    double* row = u + i * n;
    std::copy(z.begin() + src * n, z.begin() + (src + 1) * n, row);
    int64_t big = 0;
    for (int64_t k = 1; k < n; ++k)
      if (std::fabs(row[k]) > std::fabs(row[big])) big = k;
    if (row[big] < 0.0)
      for (int64_t k = 0; k < n; ++k) row[k] = -row[k];
  }
  return true;
}

}  // namespace la
}  // namespace op
}  // namespace weft
