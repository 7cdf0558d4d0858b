// Dense linear-algebra routines on one matrix at a time, in double precision and row-major
// order, for the linalg operators (la_*.cc). The operators load each matrix of a batch into
// doubles, call these and store the result in the caller's dtype, so float32 inputs get
// double-precision factorizations. Matrices are contiguous: rows `cols` elements apart.
#pragma once

#include <cstdint>
#include <vector>

namespace weft {
namespace op {
namespace la {

// c (m x n) = op(a) * op(b) (+ c when `accumulate`), op(a) m x k, op(b) k x n; a is stored
// m x k (k x m when ta), b k x n (n x k when tb).
void MatMul(const double* a, bool ta, const double* b, bool tb, double* c, int64_t m, int64_t n, int64_t k,
            bool accumulate = false);

// The transpose of a (rows x cols) as a (cols x rows) matrix.
std::vector<double> Transposed(const double* a, int64_t rows, int64_t cols);

// Zeroes the strict upper triangle of the n x n matrix a when `keep_lower`, the strict lower
// one otherwise.
void KeepTriangle(double* a, int64_t n, bool keep_lower);

// Makes the n x n matrix a symmetric from its lower triangle (`from_lower`) or upper one.
void SymmetrizeFrom(double* a, int64_t n, bool from_lower);

// Cholesky factorization in place: a's lower triangle (the upper one is not read) becomes L
// with a = L L^T and the strict upper triangle zero. Returns 0, or k > 0 when the leading
// minor of order k is not positive (the matrix is not positive definite).
int64_t CholeskyLower(double* a, int64_t n);

// Solves t x = b for x in place of b (n x m), t an n x n triangular matrix (lower or upper)
// whose other triangle is not read. A zero on the diagonal gives infinities, as BLAS trsm.
void SolveTriangular(const double* t, bool lower, double* b, int64_t n, int64_t m);

// LU factorization with partial pivoting in place, as LAPACK getrf: p a = l u with l unit
// lower triangular below the diagonal and u on and above it; piv[j] (1-based) is the row
// swapped with row j at step j. Returns 0, or j + 1 for the first zero pivot u[j][j].
int64_t LuFactor(double* a, int64_t n, int32_t* piv);

// The inverse of the matrix whose LU factorization (LuFactor) is lu, piv, into inv (n x n).
// The factorization must have no zero pivot.
void LuInverse(const double* lu, const int32_t* piv, int64_t n, double* inv);

// LQ factorization of a (m x n, m <= n) by Householder reflections with LAPACK's sign
// convention (gelqf then orglq): a = l q with l (m x m) lower triangular and q (m x n)
// having orthonormal rows.
void LqFactor(const double* a, int64_t m, int64_t n, double* l, double* q);

// Eigendecomposition of the symmetric n x n matrix a (cyclic Jacobi rotations): eigenvalues
// in ascending order into w, the matching unit eigenvectors as the rows of u, each signed so
// that its entry of largest magnitude (the first such) is positive.
void SymmetricEigen(const double* a, int64_t n, double* u, double* w);

}  // namespace la
}  // namespace op
}  // namespace weft
