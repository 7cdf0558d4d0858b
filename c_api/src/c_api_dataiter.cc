// The data iterator functions of the C API (c_api.h, "data iterators").
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "c_api/src/c_api_common.h"
#include "core/io/data_iter.h"

using namespace weft;        // NOLINT
using namespace weft::capi;  // NOLINT
using weft::io::DataIter;
using weft::io::DataIterReg;
using weft::io::DataIterRegistry;

namespace {

// The iterator, the descriptions whose names the C API hands out (kept for the handle's
// life), and whether a batch is current (so asking for one before Next() is an error, not
// an empty answer).
struct DataIterObj {
  std::unique_ptr<DataIter> iter;
  std::vector<io::DataDesc> data_desc, label_desc;
  bool has_batch = false;
};

using DataIterTable = HandleTable<DataIterObj, HandleKind::kDataIter>;

DataIterObj& It(const weft_dataiter_t* h, const char* arg, const char* fn) { return DataIterTable::Get().Ref(h, arg, fn); }
#define WEFT_ITER(h) It((h), #h, __func__)

const DataIterReg& Reg(const char* name, const char* fn) {
  WEFT_CHECK(name != nullptr, kValue, fn, ": iterator name is NULL");
  const DataIterReg* reg = DataIterRegistry::Get()->Find(name);
  if (reg == nullptr) {
    std::string all;
    for (const auto& n : DataIterRegistry::Get()->ListNames()) all += (all.empty() ? "" : ", ") + n;
    Throw(ErrorKind::kNotFound, fn, ": unknown data iterator '", name, "' (registered: ", all, ")");
  }
  return *reg;
}

const io::DataBatch& Batch(const DataIterObj& o, const char* fn) {
  WEFT_CHECK(o.has_batch, kValue, fn, ": the iterator has no current batch (call weft_dataiter_next first, and "
             "only use the batch while it returned 1)");
  return o.iter->Value();
}

weft_ndarray_t* ArrayAt(const std::vector<NDArray>& arrays, int i, const char* what, const char* fn) {
  WEFT_CHECK(i >= 0 && i < static_cast<int>(arrays.size()), kIndex, fn, ": the batch has ", arrays.size(), " ",
             what, " arrays, got index ", i);
  return NewArrHandle(arrays[i]);
}

}  // namespace

weft_status_t weft_dataiter_type_count(int* out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = static_cast<int>(DataIterRegistry::Get()->ListNames().size());
  WEFT_API_END
}

weft_status_t weft_dataiter_type_name(int i, const char** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  auto names = DataIterRegistry::Get()->ListNames();
  WEFT_CHECK(i >= 0 && i < static_cast<int>(names.size()), kIndex, __func__, ": there are ", names.size(),
             " data iterator types, got index ", i);
  // The registry's own copy of the name, which lives as long as the library.
  *out = DataIterRegistry::Get()->Find(names[i])->name.c_str();
  WEFT_API_END
}

weft_status_t weft_dataiter_type_doc(const char* name, const char** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = Reg(name, __func__).description.c_str();
  WEFT_API_END
}

weft_status_t weft_dataiter_type_num_params(const char* name, int* out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = static_cast<int>(Reg(name, __func__).params.size());
  WEFT_API_END
}

weft_status_t weft_dataiter_type_param(const char* iter, int i, const char** name, const char** type,
                                       const char** default_value, const char** doc, int* required) {
  WEFT_API_BEGIN
  const DataIterReg& reg = Reg(iter, __func__);
  WEFT_CHECK(i >= 0 && i < static_cast<int>(reg.params.size()), kIndex, __func__, ": data iterator '", reg.name,
             "' has ", reg.params.size(), " parameters, got index ", i);
  const ParamFieldInfo& p = reg.params[i];
  if (name) *name = p.name.c_str();
  if (type) *type = p.type.c_str();
  if (default_value) *default_value = p.default_value.c_str();
  if (doc) *doc = p.doc.c_str();
  if (required) *required = p.required ? 1 : 0;
  WEFT_API_END
}

weft_status_t weft_dataiter_create(const char* name, int num_params, const char* const* keys, const char* const* vals,
                                   weft_dataiter_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  const DataIterReg& reg = Reg(name, __func__);
  std::vector<std::string> ks = ReadStrings(num_params, keys, "keys", "num_params", __func__);
  std::vector<std::string> vs = ReadStrings(num_params, vals, "vals", "num_params", __func__);
  KwArgs kwargs;
  for (int i = 0; i < num_params; ++i) kwargs.emplace_back(std::move(ks[i]), std::move(vs[i]));
  DataIterObj obj;
  obj.iter = io::CreateDataIter(reg.name, kwargs);
  obj.data_desc = obj.iter->ProvideData();
  obj.label_desc = obj.iter->ProvideLabel();
  *out = reinterpret_cast<weft_dataiter_t*>(DataIterTable::Get().Create(std::move(obj)));
  WEFT_API_END
}

weft_status_t weft_dataiter_free(weft_dataiter_t* it) {
  WEFT_API_BEGIN
  DataIterTable::Get().Free(it, "it", __func__);
  WEFT_API_END
}

weft_status_t weft_dataiter_reset(weft_dataiter_t* it) {
  WEFT_API_BEGIN
  DataIterObj& o = WEFT_ITER(it);
  o.has_batch = false;
  o.iter->Reset();
  WEFT_API_END
}

weft_status_t weft_dataiter_rewind(weft_dataiter_t* it) {
  WEFT_API_BEGIN
  DataIterObj& o = WEFT_ITER(it);
  o.has_batch = false;
  o.iter->Rewind();
  WEFT_API_END
}

weft_status_t weft_dataiter_next(weft_dataiter_t* it, int* out) {
  WEFT_API_BEGIN
  DataIterObj& o = WEFT_ITER(it);
  WEFT_OUT(out);
  o.has_batch = false;
  o.has_batch = o.iter->Next();
  *out = o.has_batch ? 1 : 0;
  WEFT_API_END
}

weft_status_t weft_dataiter_get_num_data(const weft_dataiter_t* it, int* out) {
  WEFT_API_BEGIN
  const DataIterObj& o = WEFT_ITER(it);
  WEFT_OUT(out);
  *out = static_cast<int>(Batch(o, __func__).data.size());
  WEFT_API_END
}

weft_status_t weft_dataiter_get_data(const weft_dataiter_t* it, int i, weft_ndarray_t** out) {
  WEFT_API_BEGIN
  const DataIterObj& o = WEFT_ITER(it);
  WEFT_OUT(out);
  *out = ArrayAt(Batch(o, __func__).data, i, "data", __func__);
  WEFT_API_END
}

weft_status_t weft_dataiter_get_num_label(const weft_dataiter_t* it, int* out) {
  WEFT_API_BEGIN
  const DataIterObj& o = WEFT_ITER(it);
  WEFT_OUT(out);
  *out = static_cast<int>(Batch(o, __func__).label.size());
  WEFT_API_END
}

weft_status_t weft_dataiter_get_label(const weft_dataiter_t* it, int i, weft_ndarray_t** out) {
  WEFT_API_BEGIN
  const DataIterObj& o = WEFT_ITER(it);
  WEFT_OUT(out);
  *out = ArrayAt(Batch(o, __func__).label, i, "label", __func__);
  WEFT_API_END
}

weft_status_t weft_dataiter_get_pad(const weft_dataiter_t* it, int* out) {
  WEFT_API_BEGIN
  const DataIterObj& o = WEFT_ITER(it);
  WEFT_OUT(out);
  *out = Batch(o, __func__).pad;
  WEFT_API_END
}

weft_status_t weft_dataiter_get_index_size(const weft_dataiter_t* it, int* out) {
  WEFT_API_BEGIN
  const DataIterObj& o = WEFT_ITER(it);
  WEFT_OUT(out);
  *out = static_cast<int>(Batch(o, __func__).index.size());
  WEFT_API_END
}

weft_status_t weft_dataiter_get_index(const weft_dataiter_t* it, void* data, size_t nbytes) {
  WEFT_API_BEGIN
  const DataIterObj& o = WEFT_ITER(it);
  const auto& index = Batch(o, __func__).index;
  const size_t want = index.size() * sizeof(uint64_t);
  WEFT_CHECK(nbytes == want, kValue, __func__, ": expected nbytes = ", want, " (", index.size(),
             " uint64 indices), got ", nbytes);
  WEFT_CHECK(want == 0 || data != nullptr, kValue, __func__, ": 'data' is NULL");
  if (want) std::memcpy(data, index.data(), want);
  WEFT_API_END
}

weft_status_t weft_dataiter_get_num_descs(const weft_dataiter_t* it, int is_label, int* out) {
  WEFT_API_BEGIN
  const DataIterObj& o = WEFT_ITER(it);
  WEFT_OUT(out);
  *out = static_cast<int>((is_label ? o.label_desc : o.data_desc).size());
  WEFT_API_END
}

weft_status_t weft_dataiter_get_desc(const weft_dataiter_t* it, int is_label, int i, const char** name,
                                     int64_t* dims, int capacity, int* ndim, int* out) {
  WEFT_API_BEGIN
  const DataIterObj& o = WEFT_ITER(it);
  const auto& descs = is_label ? o.label_desc : o.data_desc;
  WEFT_CHECK(i >= 0 && i < static_cast<int>(descs.size()), kIndex, __func__, ": the iterator has ", descs.size(), " ",
             is_label ? "label" : "data", " arrays, got index ", i);
  WEFT_CHECK(capacity >= 0, kValue, __func__, ": expected capacity >= 0, got ", capacity);
  WEFT_CHECK(capacity == 0 || dims != nullptr, kValue, __func__, ": 'dims' is NULL but capacity is ", capacity);
  const io::DataDesc& d = descs[i];
  if (name) *name = d.name.c_str();
  const int n = d.shape.ndim();
  for (int k = 0; k < std::min(n, capacity); ++k) dims[k] = d.shape[k];
  if (ndim) *ndim = n;
  if (out) *out = static_cast<int>(d.dtype);
  WEFT_API_END
}
