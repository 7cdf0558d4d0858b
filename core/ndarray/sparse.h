// Sparse arrays (MXNet's csr and row_sparse storage): checked construction, conversion
// between storage types, and empty sparse arrays. A sparse NDArray holds its stored values
// and int64 auxiliary arrays (ndarray.h). These functions run synchronously on host copies:
// sparse arrays are built and converted at the edges of a computation (data loading,
// gradients of embeddings), where correctness matters more than overlap with the engine.
#pragma once

#include <string>
#include <vector>

#include "core/ndarray/ndarray.h"

namespace weft {

// "default", "row_sparse", "csr" (and "undefined").
const char* StorageTypeName(StorageType stype);
// Parses a name as above; kValue naming the accepted names for anything else.
StorageType ParseStorageType(const std::string& name);
// Checks a storage type code from outside (C API, files): -1..2.
StorageType ToStorageType(int code, const char* what);

// A sparse array from its parts, after checking them against each other and `shape`:
//   csr (2-D shape (m, n)): aux = {indptr (m+1,), indices (nnz,)}, values (nnz,);
//     indptr starts at 0, never decreases and ends at nnz; each row's column indices are
//     strictly increasing and in [0, n).
//   row_sparse (shape (m, ...)): aux = {indices (k,)}, values (k, ...shape[1:]); indices
//     strictly increasing and in [0, m).
// Aux arrays must be int64; all parts on one context. kShape/kValue/kType/kIndex errors say
// which part is wrong and how.
NDArray MakeSparse(StorageType stype, const Shape& shape, const NDArray& values, const std::vector<NDArray>& aux);

// The same array without refusing parts that break those rules, as MXNet makes them: their
// types, dimensions, context and the shape are still checked, and the fault is kept with the
// array (NDArray::sparse_fault). Reading such an array's parts (every operator, copy,
// conversion and file writer does) raises the fault; CheckSparseFormat reports it.
NDArray MakeSparseUnchecked(StorageType stype, const Shape& shape, const NDArray& values,
                            const std::vector<NDArray>& aux);

// MXNet's check_format: raises the fault of a sparse array made by MakeSparseUnchecked, with
// MakeSparse's error. Without full_check only part lengths that do not fit the shape are
// reported (MXNet's O(1) check); with it also indptr and index values. Dense arrays pass.
void CheckSparseFormat(const NDArray& a, bool full_check);

// An array of `stype` with no stored values.
NDArray SparseZeros(StorageType stype, const Shape& shape, DType dtype, Context ctx);

// The same values in another storage type (a new array; a dense source is read after its
// pending writes). Dense -> csr needs a 2-D array, dense -> row_sparse at least 1-D; zero
// elements (rows, for row_sparse) are not stored. csr <-> row_sparse go through the values.
NDArray CastStorage(const NDArray& src, StorageType to);

// The dense equivalent of any array: itself when dense, else CastStorage(.., kDefault).
inline NDArray DenseOf(const NDArray& a) { return a.is_sparse() ? CastStorage(a, StorageType::kDefault) : a; }

}  // namespace weft
