#include "core/op/sparse/sparse_compute.h"

#include <cstdlib>
#include <cstring>

#include "core/base/error.h"
#include "core/ndarray/sparse.h"

namespace weft {
namespace sparse {

std::vector<int64_t> HostInt64(const NDArray& a) {
  std::vector<int64_t> v(static_cast<size_t>(a.Size()));
  if (!v.empty()) a.SyncCopyToCPU(v.data(), v.size() * sizeof(int64_t));
  return v;
}

NDArray Int64Array(const std::vector<int64_t>& v, Context ctx) {
  NDArray a(Shape{static_cast<int64_t>(v.size())}, ctx, DType::kInt64);
  if (!v.empty()) a.SyncCopyFromCPU(v.data(), v.size() * sizeof(int64_t));
  return a;
}

const char* HostRead(const NDArray& a) {
  a.WaitToRead();
  return static_cast<const char*>(a.data().dptr);
}

char* HostWrite(const NDArray& a) {
  a.WaitToWrite();
  return static_cast<char*>(a.data().dptr);
}

NDArray Csr(const Shape& shape, NDArray values, const std::vector<int64_t>& indptr, const std::vector<int64_t>& idx) {
  Context ctx = values.ctx();
  return NDArray::FromSparseParts(StorageType::kCSR, shape, std::move(values),
                                  {Int64Array(indptr, ctx), Int64Array(idx, ctx)});
}

NDArray RowSparse(const Shape& shape, NDArray values, const std::vector<int64_t>& rows) {
  Context ctx = values.ctx();
  return NDArray::FromSparseParts(StorageType::kRowSparse, shape, std::move(values), {Int64Array(rows, ctx)});
}

NDArray DenseZeros(const Shape& shape, DType dtype, Context ctx) {
  NDArray a(shape, ctx, dtype);
  size_t bytes = static_cast<size_t>(shape.Size()) * DTypeSize(dtype);
  if (bytes > 0) std::memset(HostWrite(a), 0, bytes);
  return a;
}

bool AllOnCpu(const std::vector<NDArray>& arrays) {
  for (const auto& a : arrays)
    if (!a.is_none() && a.ctx().is_gpu()) return false;
  return true;
}

bool RunDense(const std::string& op_name, const KwArgs& params, const std::vector<NDArray>& inputs,
              std::vector<NDArray>* outputs) {
  const Op* op = Op::Get(op_name);
  static const auto& fcompute = Op::GetAttr<FCompute>("FCompute<cpu>");
  static const auto& resources = Op::GetAttr<FResourceRequest>("FResourceRequest");
  static const auto& shape_fns = Op::GetAttr<FInferShape>("FInferShape");
  static const auto& type_fns = Op::GetAttr<FInferType>("FInferType");
  if (!fcompute.Contains(op) || resources.Contains(op)) return false;
  NodeAttrs attrs = MakeAttrs(op, params);
  int num_out = op->NumOutputs(attrs);
  std::vector<Shape> in_shapes, out_shapes(num_out);
  std::vector<DType> in_types, out_types(num_out, DType::kUnknown);
  for (const auto& a : inputs) {
    WEFT_CHECK(!a.is_sparse(), kInternal, op_name, ": a sparse kernel passed a sparse array to the dense kernel");
    in_shapes.push_back(a.shape());
    in_types.push_back(a.dtype());
  }
  if (!shape_fns[op](attrs, &in_shapes, &out_shapes)) return false;
  bool types = type_fns.Contains(op) ? type_fns[op](attrs, &in_types, &out_types)
                                     : SameTypeEverywhere(attrs, &in_types, &out_types);
  if (!types) return false;
  Context ctx = inputs.empty() ? Context::CPU() : inputs[0].ctx();
  outputs->resize(num_out);
  std::vector<TBlob> in_blobs, out_blobs;
  for (const auto& a : inputs) {
    a.WaitToRead();
    in_blobs.push_back(a.data());
  }
  for (int i = 0; i < num_out; ++i) {
    NDArray& o = (*outputs)[i];
    if (o.is_none()) o = NDArray(out_shapes[i], ctx, out_types[i]);
    o.WaitToWrite();
    out_blobs.push_back(o.data());
  }
  OpContext octx;
  octx.run_ctx.ctx = ctx;
  fcompute[op](attrs, octx, in_blobs, std::vector<OpReq>(num_out, OpReq::kWriteTo), out_blobs);
  return true;
}

std::vector<std::optional<int64_t>> ParseIntTuple(const std::string& text, const std::string& what) {
  std::vector<std::optional<int64_t>> r;
  std::string s;
  for (char c : text)
    if (c != ' ' && c != '(' && c != ')' && c != '[' && c != ']') s += c;
  size_t at = 0;
  while (at < s.size()) {
    size_t comma = s.find(',', at);
    std::string item = s.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    at = comma == std::string::npos ? s.size() : comma + 1;
    if (item.empty()) continue;
    if (item == "None") {
      r.push_back(std::nullopt);
      continue;
    }
    char* end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    WEFT_CHECK(end != nullptr && *end == '\0', kValue, what, ": expected a tuple of integers or None, got '", text,
               "'");
    r.push_back(static_cast<int64_t>(v));
  }
  return r;
}

}  // namespace sparse
}  // namespace weft
