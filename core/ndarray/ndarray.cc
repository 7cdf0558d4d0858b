#include "core/ndarray/ndarray.h"

#include <cstring>

#include "core/base/checked_size.h"
#include "core/base/error.h"
#include "core/ndarray/copy.h"

#ifdef WEFT_USE_CUDA
#include "core/storage/gpu_event.h"
#endif

namespace weft {

NDArray::Chunk::Chunk(size_t nbytes, Context c, bool delay_alloc) : ctx(c), bytes(nbytes) {
  var = engine::Engine::Get()->NewVariable();
  if (delay_alloc) return;
  try {
    Allocate();
  } catch (...) {
    // No destructor runs for a constructor that throws: the variable goes here. Nothing is
    // pending on it, and its context may be the very one that failed, so the host's.
    engine::Engine::Get()->DeleteVariable({}, Context::CPU(), var);
    throw;
  }
}

void NDArray::Chunk::Allocate() {
  if (allocated) return;
  handle = Storage::Get()->Alloc(bytes, ctx);
  allocated = true;
}

NDArray::Chunk::~Chunk() {
  // The usual end of an array: nothing pending, memory from the pool, freed right here.
  if (!external_release && engine::Engine::Get()->DeleteVariableIfIdle(ctx, var)) {
    if (allocated) Storage::Get()->Free(handle);
    return;
  }
  StorageHandle h = handle;
  bool owns = allocated && !external_release;
  std::function<void()> release = std::move(external_release);
  engine::Engine::Get()->DeleteVariable(
      [h, owns, release, gpu_mem = ctx.is_gpu()](engine::RunContext) {
        if (owns) Storage::Get()->Free(h);
#ifdef WEFT_USE_CUDA
        // Memory owned outside Weft cannot be parked in the pool until the GPU work on it
        // is done (gpu_event.h), so its owner gets it back only after that work.
        if (release && gpu_mem)
          if (const auto* fence = gpu::CurrentFreeFence())
            for (gpu::Event* ev : *fence) gpu::HostWait(ev);
#endif
        if (release) release();
      },
      ctx, var);
}

NDArray::NDArray(const Shape& shape, Context ctx, DType dtype, bool delay_alloc)
    : shape_(shape), dtype_(dtype) {
  chunk_ = std::make_shared<Chunk>(CheckedBytes(shape, dtype, "NDArray"), ctx, delay_alloc);
}

NDArray NDArray::FromExternal(void* dptr, const Shape& shape, DType dtype, Context ctx, std::function<void()> release) {
  size_t bytes = CheckedBytes(shape, dtype, "NDArray::FromExternal");
  NDArray r;
  r.shape_ = shape;
  r.dtype_ = dtype;
  r.chunk_ = std::make_shared<Chunk>(bytes, ctx, true);
  r.chunk_->handle.dptr = dptr;
  r.chunk_->handle.size = r.chunk_->bytes;
  r.chunk_->handle.ctx = ctx;
  r.chunk_->allocated = true;
  r.chunk_->external_release = std::move(release);
  return r;
}

StorageType NDArray::stype() const {
  if (sparse_) return sparse_->stype;
  return chunk_ ? StorageType::kDefault : StorageType::kUndefined;
}

namespace {

void RefuseFaulty(const SparseParts& p) {
  if (p.fault.level == SparseFault::kNone) return;
  Throw(static_cast<ErrorKind>(p.fault.error_kind), "the ", p.stype == StorageType::kCSR ? "csr" : "row_sparse",
        " array is not valid (", p.fault.message, "), so it cannot be read; check_format(full_check=True) reports "
        "the same; build it again from valid parts");
}

}  // namespace

const NDArray& NDArray::sparse_part_unchecked(int i) const {
  WEFT_CHECK(sparse_ != nullptr, kValue, "NDArray: expected a sparse (csr or row_sparse) array, got a dense one");
  WEFT_CHECK(i >= -1 && i < static_cast<int>(sparse_->aux.size()), kIndex, "NDArray: auxiliary array index ", i,
             " is out of range (the array has ", sparse_->aux.size(), ")");
  return i < 0 ? sparse_->values : sparse_->aux[i];
}

const NDArray& NDArray::sparse_values() const {
  const NDArray& v = sparse_part_unchecked(-1);
  RefuseFaulty(*sparse_);
  return v;
}

const NDArray& NDArray::aux(int i) const {
  WEFT_CHECK(i >= 0, kIndex, "NDArray: auxiliary array index ", i, " is out of range");
  const NDArray& a = sparse_part_unchecked(i);
  RefuseFaulty(*sparse_);
  return a;
}

const SparseFault& NDArray::sparse_fault() const {
  static const SparseFault kValid;
  return sparse_ ? sparse_->fault : kValid;
}

int NDArray::num_aux() const { return sparse_ ? static_cast<int>(sparse_->aux.size()) : 0; }

NDArray NDArray::FromSparseParts(StorageType stype, const Shape& shape, NDArray values, std::vector<NDArray> aux) {
  return FromFaultySparseParts(stype, shape, std::move(values), std::move(aux), SparseFault{});
}

NDArray NDArray::FromFaultySparseParts(StorageType stype, const Shape& shape, NDArray values, std::vector<NDArray> aux,
                                       SparseFault fault) {
  NDArray r;
  r.shape_ = shape;
  r.dtype_ = values.dtype();
  r.chunk_ = values.chunk_;
  r.sparse_ = std::make_shared<const SparseParts>(SparseParts{stype, std::move(values), std::move(aux), std::move(fault)});
  return r;
}

TBlob NDArray::data() const {
  WEFT_CHECK(chunk_ != nullptr, kValue, "NDArray: the array is empty (none)");
  WEFT_CHECK(sparse_ == nullptr, kUnsupported, "NDArray: a ", stype() == StorageType::kCSR ? "csr" : "row_sparse",
             " array has no dense memory; convert it with cast_storage/tostype('default') first");
  if (!chunk_->allocated) chunk_->Allocate();
  return TBlob(static_cast<char*>(chunk_->handle.dptr) + byte_offset_, shape_, dtype_, chunk_->ctx);
}

NDArray NDArray::Slice(int64_t begin, int64_t end) const {
  WEFT_CHECK(sparse_ == nullptr, kUnsupported, "NDArray::Slice: not defined for a sparse array");
  WEFT_CHECK(chunk_ != nullptr, kValue, "NDArray::Slice: the array is empty (none)");
  WEFT_CHECK(shape_.ndim() >= 1, kShape, "NDArray::Slice: expected at least 1 dimension, got a scalar");
  WEFT_CHECK(begin >= 0 && begin <= end && end <= shape_[0], kIndex, "NDArray::Slice: expected 0 <= begin <= end <= ",
             shape_[0], ", got begin=", begin, " end=", end);
  NDArray r = *this;
  r.set_ag(nullptr, 0);  // a view is another value: autograd records it separately
  int64_t row = shape_.ProdRange(1, shape_.ndim());
  r.shape_[0] = end - begin;
  r.byte_offset_ += static_cast<size_t>(begin * row) * DTypeSize(dtype_);
  return r;
}

NDArray NDArray::At(int64_t index) const {
  WEFT_CHECK(shape_.ndim() >= 1, kShape, "NDArray::At: expected at least 1 dimension, got a scalar");
  int64_t i = index < 0 ? index + shape_[0] : index;
  WEFT_CHECK(i >= 0 && i < shape_[0], kIndex, "NDArray::At: index ", index, " is out of range for axis 0 of size ",
             shape_[0]);
  NDArray r = Slice(i, i + 1);
  r.shape_ = Shape(shape_.begin() + 1, shape_.end());
  return r;
}

NDArray NDArray::Reshape(const Shape& shape) const {
  WEFT_CHECK(sparse_ == nullptr, kUnsupported, "NDArray::Reshape: not defined for a sparse array");
  WEFT_CHECK(shape.is_known() && CheckedNumElements(shape, "NDArray::Reshape") == shape_.Size(), kShape,
             "NDArray.Reshape: target shape must have the same size as current shape: cannot reshape an array of "
             "shape ", shape_.ToString(), " (", shape_.Size(),
             " elements) into ", shape.ToString());
  NDArray r = *this;
  r.set_ag(nullptr, 0);
  r.shape_ = shape;
  return r;
}

NDArray NDArray::View(const Shape& shape, DType dtype) const {
  WEFT_CHECK(sparse_ == nullptr, kUnsupported, "NDArray::View: not defined for a sparse array");
  WEFT_CHECK(shape.is_known(), kShape, "NDArray::View: the shape ", shape.ToString(), " is not fully known");
  size_t need = CheckedBytes(shape, dtype, "NDArray::View");
  size_t have = static_cast<size_t>(shape_.Size()) * DTypeSize(dtype_);
  WEFT_CHECK(need <= have, kShape, "NDArray::View: ", shape.ToString(), " of ", DTypeName(dtype), " needs ", need,
             " bytes but the array has ", have);
  NDArray r = *this;
  r.set_ag(nullptr, 0);
  r.shape_ = shape;
  r.dtype_ = dtype;
  return r;
}

NDArray NDArray::AsType(DType dtype) const {
  WEFT_CHECK(sparse_ == nullptr, kUnsupported, "NDArray::AsType: not defined for a sparse array");
  WEFT_CHECK(DTypeSize(dtype) == DTypeSize(dtype_), kType, "NDArray::AsType: element sizes differ (", DTypeName(dtype_),
             " vs ", DTypeName(dtype), ")");
  NDArray r = *this;
  r.set_ag(nullptr, 0);
  r.dtype_ = dtype;
  return r;
}

void NDArray::WaitToRead() const {
  if (chunk_) engine::Engine::Get()->WaitForVar(chunk_->var);
  if (sparse_)
    for (const auto& a : sparse_->aux) a.WaitToRead();
}

void NDArray::WaitToWrite() const {
  if (!chunk_) return;
  // A write must also wait for pending reads: push a no-op that writes the variable. It
  // reads the variable too, so that an error left by a failed write flows through it
  // instead of being cleared by the no-op's success.
  engine::Engine::Get()->PushSync([](engine::RunContext) {}, ctx(), {chunk_->var}, {chunk_->var},
                                  engine::FnProperty::kNormal, 0, "WaitToWrite");
  engine::Engine::Get()->WaitForVar(chunk_->var);
}

void NDArray::SyncCopyFromCPU(const void* src, size_t bytes) const {
  WEFT_CHECK(chunk_ != nullptr, kValue, "NDArray: copying into an empty (none) array");
  size_t need = static_cast<size_t>(Size()) * DTypeSize(dtype_);
  WEFT_CHECK(bytes == need, kValue, "NDArray::SyncCopyFromCPU: expected ", need, " bytes for shape ", shape_.ToString(),
             " ", DTypeName(dtype_), ", got ", bytes);
  if (bytes == 0) return;
  // A bool is one byte that holds 0 or 1, and kernels may rely on it: other bytes from
  // outside (a file, a caller's buffer) become 1 on the way in.
  std::vector<uint8_t> bools;
  if (dtype_ == DType::kBool) {
    const auto* p = static_cast<const uint8_t*>(src);
    bools.resize(bytes);
    for (size_t i = 0; i < bytes; ++i) bools[i] = p[i] != 0;
    src = bools.data();
  }
  TBlob dst = data();
  TBlob host(const_cast<void*>(src), shape_, dtype_, Context::CPU());
  engine::Engine* eng = engine::Engine::Get();
  eng->PushSync([host, dst](engine::RunContext rctx) { CopyBlob(host, dst, rctx); }, ctx(), {}, {chunk_->var},
                ctx().is_gpu() ? engine::FnProperty::kCopyToGPU : engine::FnProperty::kNormal, 0, "SyncCopyFromCPU");
  eng->WaitForVar(chunk_->var);
}

void NDArray::SyncCopyToCPU(void* dst_ptr, size_t bytes) const {
  WEFT_CHECK(chunk_ != nullptr, kValue, "NDArray: copying from an empty (none) array");
  size_t need = static_cast<size_t>(Size()) * DTypeSize(dtype_);
  WEFT_CHECK(bytes == need, kValue, "NDArray::SyncCopyToCPU: expected ", need, " bytes for shape ", shape_.ToString(),
             " ", DTypeName(dtype_), ", got ", bytes);
  if (bytes == 0) {
    WaitToRead();
    return;
  }
  TBlob src = data();
  TBlob host(dst_ptr, shape_, dtype_, Context::CPU());
  engine::Engine* eng = engine::Engine::Get();
  if (!ctx().is_gpu()) {
    // Reading only needs the writers to finish; no engine round trip for host memory.
    eng->WaitForVar(chunk_->var);
    std::memcpy(dst_ptr, src.dptr, bytes);
    return;
  }
  // The copy reads the array and writes caller memory: a private variable orders it.
  engine::VarHandle done = eng->NewVariable();
  eng->PushSync([src, host](engine::RunContext rctx) { CopyBlob(src, host, rctx); }, ctx(), {chunk_->var}, {done},
                engine::FnProperty::kCopyFromGPU, 0, "SyncCopyToCPU");
  try {
    eng->WaitForVar(done);
  } catch (...) {
    eng->DeleteVariable(nullptr, ctx(), done);
    throw;
  }
  eng->DeleteVariable(nullptr, ctx(), done);
}

NDArray NDArray::Copy(Context c) const {
  WEFT_CHECK(chunk_ != nullptr, kValue, "NDArray::Copy: the array is empty (none)");
  if (sparse_) {
    RefuseFaulty(*sparse_);
    std::vector<NDArray> aux;
    for (const auto& a : sparse_->aux) aux.push_back(a.Copy(c));
    return FromSparseParts(sparse_->stype, shape_, sparse_->values.Copy(c), std::move(aux));
  }
  NDArray r(shape_, c, dtype_);
  CopyFromTo(*this, r);
  return r;
}

void CopyFromTo(const NDArray& from, const NDArray& to, int priority) {
  WEFT_CHECK(!from.is_none() && !to.is_none(), kValue, "CopyFromTo: empty (none) array");
  WEFT_CHECK(from.shape().Size() == to.shape().Size(), kShape, "CopyFromTo: expected arrays of equal size, got ",
             from.shape().ToString(), " and ", to.shape().ToString());
  if (from.SameChunk(to) && from.byte_offset() == to.byte_offset() && from.dtype() == to.dtype()) return;
  TBlob src = from.data(), dst = to.data();
  Context run_ctx = to.ctx().is_gpu() ? to.ctx() : from.ctx();
  engine::FnProperty prop = engine::FnProperty::kNormal;
  if (from.ctx().is_gpu() && !to.ctx().is_gpu()) prop = engine::FnProperty::kCopyFromGPU;
  if (!from.ctx().is_gpu() && to.ctx().is_gpu()) prop = engine::FnProperty::kCopyToGPU;
  std::vector<engine::VarHandle> reads;
  if (!from.SameChunk(to)) reads.push_back(from.var());
  engine::Engine::Get()->PushSync([src, dst](engine::RunContext rctx) { CopyBlob(src, dst, rctx); }, run_ctx, reads,
                                  {to.var()}, prop, priority, "CopyFromTo", static_cast<int64_t>(dst.Bytes()));
}

}  // namespace weft
