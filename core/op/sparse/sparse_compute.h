// Operators on sparse arrays (csr, row_sparse) computed on their stored parts: the
// operator attribute the imperative path asks before its dense fallback, and the helpers
// the sparse kernels share. See docs/design/sparse.md ("Sparse operators").
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/ndarray/ndarray.h"
#include "core/op/registry.h"

namespace weft {

// "FComputeSparse": MXNet's storage-type inference and FComputeEx in one function. Called by
// imperative::Invoke when some input (or a given output) is sparse, or, for operators that
// also set "TSparseOnDense" (cast_storage), on every call. It either makes every output
// itself (new arrays of the storage type MXNet's rules give, in `*outputs`, resized to the
// operator's output count) and returns true, or returns false having touched nothing, and
// the dense fallback runs (every sparse input replaced by its dense copy). `req` holds one
// request per output: a kNullOp output may be left none. Shapes are checked by the caller's
// shape inference first (the operator's FInferShape on the logical shapes).
using FComputeSparse = std::function<bool(const NodeAttrs& attrs, const std::vector<NDArray>& inputs,
                                          const std::vector<OpReq>& req, std::vector<NDArray>* outputs)>;

namespace sparse {

// The int64 contents of a 1-D array (synchronous).
std::vector<int64_t> HostInt64(const NDArray& a);
// A new int64 array holding `v` on `ctx`.
NDArray Int64Array(const std::vector<int64_t>& v, Context ctx);
// Host pointers to a dense CPU array, after its pending writes (Read) or reads and writes
// (Write). Sparse kernels run synchronously on the caller's thread.
const char* HostRead(const NDArray& a);
char* HostWrite(const NDArray& a);
// Wraps parts the kernel built itself (already sorted and in range): no checking pass.
NDArray Csr(const Shape& shape, NDArray values, const std::vector<int64_t>& indptr, const std::vector<int64_t>& idx);
NDArray RowSparse(const Shape& shape, NDArray values, const std::vector<int64_t>& rows);
// A zero-filled dense array.
NDArray DenseZeros(const Shape& shape, DType dtype, Context ctx);
// Whether every array given is on the CPU (the kernels read host memory).
bool AllOnCpu(const std::vector<NDArray>& arrays);
// Runs registered operator `op_name` with `params` on dense CPU arrays, synchronously, into
// `outputs` (allocated from shape inference when none). Returns false, running nothing, when
// the operator needs resources (temporary space) or has no CPU kernel.
bool RunDense(const std::string& op_name, const KwArgs& params, const std::vector<NDArray>& inputs,
              std::vector<NDArray>* outputs);

// Parses a tuple parameter such as "(1, None, -2)", "[0,3]", "2" or "()" into values
// (nullopt for None); kValue naming `what` on anything else.
std::vector<std::optional<int64_t>> ParseIntTuple(const std::string& text, const std::string& what);

}  // namespace sparse
}  // namespace weft
