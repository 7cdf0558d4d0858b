// TBlob: what a compute function sees of an array — a typed pointer, a shape and the
// device. Contiguous, row-major; views with offsets arrive already offset.
#pragma once

#include "core/base/context.h"
#include "core/base/dtype.h"
#include "core/base/shape.h"

namespace weft {

struct TBlob {
  void* dptr = nullptr;
  Shape shape;
  DType dtype = DType::kFloat32;
  Context ctx;

  TBlob() = default;
  TBlob(void* p, const Shape& s, DType t, Context c) : dptr(p), shape(s), dtype(t), ctx(c) {}

  template <typename T>
  T* ptr() const { return static_cast<T*>(dptr); }
  int64_t Size() const { return shape.Size(); }
  int ndim() const { return shape.ndim(); }
  size_t Bytes() const { return static_cast<size_t>(Size()) * DTypeSize(dtype); }
  // The same memory seen with another shape of equal size.
  TBlob Reshaped(const Shape& s) const { return TBlob(dptr, s, dtype, ctx); }
};

}  // namespace weft
