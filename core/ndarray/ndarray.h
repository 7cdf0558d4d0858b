// NDArray: an asynchronous handle on a chunk of memory, seen through a shape, a dtype and a
// byte offset. Creating, slicing, reshaping and assigning return at once; only reading the
// data (SyncCopyToCPU, WaitToRead) waits for the engine. Views share the chunk.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/base/context.h"
#include "core/base/dtype.h"
#include "core/base/shape.h"
#include "core/engine/engine.h"
#include "core/base/tblob.h"
#include "core/storage/storage.h"

namespace weft {

namespace autograd {
struct Node;
}

// MXNet's storage types (the numbers are its file format's and C API's).
enum class StorageType : int32_t { kUndefined = -1, kDefault = 0, kRowSparse = 1, kCSR = 2 };

struct SparseParts;

// Why a sparse array's parts break its storage type's rules. MXNet's check_format tells two
// levels apart: kShape faults (parts of lengths that do not fit the shape) are found by
// every check, kContent faults (indptr or index values) only by the full check.
struct SparseFault {
  enum Level { kNone = 0, kContent = 1, kShape = 2 } level = kNone;
  int error_kind = 0;  // the ErrorKind that MakeSparse raises for it
  std::string message;
};

class NDArray {
 public:
  // The memory and the engine variable that guards it. The variable is deleted, and the
  // memory returned to the pool, only after every pending operation on it has finished.
  struct Chunk {
    StorageHandle handle;
    engine::VarHandle var = nullptr;
    Context ctx;
    size_t bytes = 0;
    bool allocated = false;
    // Set for memory owned outside Weft (DLPack import): runs instead of Storage::Free.
    std::function<void()> external_release;

    Chunk(size_t nbytes, Context c, bool delay_alloc);
    ~Chunk();
    void Allocate();
  };

  NDArray() = default;  // "none": no chunk
  NDArray(const Shape& shape, Context ctx, DType dtype = DType::kFloat32, bool delay_alloc = false);
  // Wraps contiguous memory owned elsewhere (DLPack import) without copying; `release` runs
  // once no view and no pending operation uses it.
  static NDArray FromExternal(void* dptr, const Shape& shape, DType dtype, Context ctx, std::function<void()> release);

  bool is_none() const { return chunk_ == nullptr; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  Context ctx() const { return chunk_ ? chunk_->ctx : Context(); }
  int64_t Size() const { return shape_.Size(); }
  size_t byte_offset() const { return byte_offset_; }
  engine::VarHandle var() const { return chunk_->var; }
  const std::shared_ptr<Chunk>& chunk() const { return chunk_; }
  bool SameChunk(const NDArray& o) const { return chunk_ && chunk_ == o.chunk_; }

  // The data as a TBlob (allocating delayed memory first). Only for use inside engine
  // operations, or after a wait.
  TBlob data() const;

  // Sparse storage (core/ndarray/sparse.h builds, converts and checks such arrays). A
  // sparse array's shape is the logical (dense) shape and its chunk is that of its stored
  // values, so ctx() and is_none() work; it has no dense memory: data(), views and host
  // copies refuse it, and operators without a sparse kernel see a dense copy (imperative).
  StorageType stype() const;
  bool is_sparse() const { return sparse_ != nullptr; }
  // The stored values (csr: (nnz,), row_sparse: (rows stored, ...)) and the int64 auxiliary
  // arrays (csr: 0 indptr, 1 column indices; row_sparse: 0 row indices). Both refuse (kValue,
  // naming the fault) an array whose parts break its format: every kernel, copy and file
  // writer reads the parts through them, so none reads such an array out of bounds.
  const NDArray& sparse_values() const;
  const NDArray& aux(int i) const;
  int num_aux() const;
  // Wraps already checked parts (sparse.h's MakeSparse validates them first).
  static NDArray FromSparseParts(StorageType stype, const Shape& shape, NDArray values, std::vector<NDArray> aux);
  // Wraps parts that break the format, as MXNet lets a user make them and reports the fault
  // only in check_format (sparse.h's MakeSparseUnchecked finds `fault`).
  static NDArray FromFaultySparseParts(StorageType stype, const Shape& shape, NDArray values, std::vector<NDArray> aux,
                                       SparseFault fault);
  // What breaks the format (kind kNone for a valid or dense array).
  const SparseFault& sparse_fault() const;
  // The parts without the validity test (-1: the values, i >= 0: aux i), for check_format and
  // for handing the parts themselves out (.data, .indices, .indptr), as MXNet allows.
  const NDArray& sparse_part_unchecked(int i) const;

  // Views sharing memory. Slice and At index the first axis; Reshape keeps the size.
  NDArray Slice(int64_t begin, int64_t end) const;
  NDArray At(int64_t index) const;
  NDArray Reshape(const Shape& shape) const;
  // Same memory seen as another dtype of the same element size (used by serialisation).
  NDArray AsType(DType dtype) const;
  // The first bytes of this array's memory seen with any shape and dtype that fit (the
  // executor's planned storage, shared by values that are never live together).
  NDArray View(const Shape& shape, DType dtype) const;

  void WaitToRead() const;
  void WaitToWrite() const;

  // Blocking copies between host memory and this array; `bytes` must equal the array's
  // size in bytes.
  void SyncCopyFromCPU(const void* data, size_t bytes) const;
  void SyncCopyToCPU(void* data, size_t bytes) const;

  // An asynchronous deep copy on `ctx`.
  NDArray Copy(Context ctx) const;

  // Autograd's record of where this value came from (core/imperative/autograd.h): the
  // recorded operation, or the variable node of an array marked for gradients, and which of
  // its outputs this array is. Copies of the handle share it; it never affects the data.
  const std::shared_ptr<autograd::Node>& ag_node() const { return ag_node_; }
  uint32_t ag_index() const { return ag_index_; }
  void set_ag(std::shared_ptr<autograd::Node> node, uint32_t index) {
    ag_node_ = std::move(node);
    ag_index_ = index;
  }

 private:
  std::shared_ptr<Chunk> chunk_;
  Shape shape_ = Shape::Scalar();
  DType dtype_ = DType::kFloat32;
  size_t byte_offset_ = 0;
  std::shared_ptr<autograd::Node> ag_node_;
  uint32_t ag_index_ = 0;
  std::shared_ptr<const SparseParts> sparse_;
};

struct SparseParts {
  StorageType stype;
  NDArray values;
  std::vector<NDArray> aux;
  SparseFault fault;
};

// Pushes an asynchronous copy of `from` into `to` (same shape; dtypes may differ, values are
// converted). Works across contexts.
void CopyFromTo(const NDArray& from, const NDArray& to, int priority = engine::kDefaultPriority);

// Copies and converts between two blobs of equal size; the backends register how to move
// memory between their devices (cuda: cudaMemcpyAsync on the run context's stream).
void CopyBlob(const TBlob& from, const TBlob& to, engine::RunContext rctx);

}  // namespace weft
