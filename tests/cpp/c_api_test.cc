// The C API seen as a C caller sees it: statuses, handle checks, host copies, invoking an
// operator by name, save/load through bytes, and DLPack export and import.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "weft/c_api.h"
#include "weft/dlpack.h"

namespace {

const weft_context_t kCPU = {WEFT_DEVICE_CPU, 0};

std::string LastError() { return weft_get_last_error(); }

#define ASSERT_OK(call) ASSERT_EQ((call), WEFT_OK) << weft_get_last_error()
#define EXPECT_OK(call) EXPECT_EQ((call), WEFT_OK) << weft_get_last_error()

// A float32 array holding `values`.
weft_ndarray_t* MakeFloat(const std::vector<int64_t>& shape, const std::vector<float>& values) {
  weft_ndarray_t* a = nullptr;
  EXPECT_EQ(weft_ndarray_create(shape.data(), static_cast<int>(shape.size()), WEFT_DTYPE_FLOAT32, kCPU, &a), WEFT_OK)
      << weft_get_last_error();
  EXPECT_EQ(weft_ndarray_copy_from_host(a, values.data(), values.size() * sizeof(float)), WEFT_OK)
      << weft_get_last_error();
  return a;
}

template <typename T>
std::vector<T> ToHost(const weft_ndarray_t* a) {
  int64_t n = 0;
  EXPECT_EQ(weft_ndarray_get_size(a, &n), WEFT_OK) << weft_get_last_error();
  std::vector<T> out(static_cast<size_t>(n));
  EXPECT_EQ(weft_ndarray_copy_to_host(a, out.data(), out.size() * sizeof(T)), WEFT_OK) << weft_get_last_error();
  return out;
}

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ------------------------------------------------------------------ arrays

TEST(CApiTest, VersionMatchesHeader) {
  int major = -1, minor = -1, patch = -1, abi = -1;
  ASSERT_OK(weft_get_version(&major, &minor, &patch, &abi));
  EXPECT_EQ(major, WEFT_VERSION_MAJOR);
  EXPECT_EQ(minor, WEFT_VERSION_MINOR);
  EXPECT_EQ(patch, WEFT_VERSION_PATCH);
  EXPECT_EQ(abi, WEFT_ABI_VERSION);
}

TEST(CApiTest, CreateAndCopyToAndFromHost) {
  std::vector<float> values = {1.5f, -2.f, 3.25f, 0.f, 1e-3f, 7.f};
  weft_ndarray_t* a = MakeFloat({2, 3}, values);
  int ndim = 0;
  int64_t dims[4] = {0};
  ASSERT_OK(weft_ndarray_get_shape(a, dims, 4, &ndim));
  EXPECT_EQ(ndim, 2);
  EXPECT_EQ(dims[0], 2);
  EXPECT_EQ(dims[1], 3);
  int dtype = -1;
  ASSERT_OK(weft_ndarray_get_dtype(a, &dtype));
  EXPECT_EQ(dtype, WEFT_DTYPE_FLOAT32);
  weft_context_t ctx = {0, -1};
  ASSERT_OK(weft_ndarray_get_context(a, &ctx));
  EXPECT_EQ(ctx.device_type, WEFT_DEVICE_CPU);
  EXPECT_EQ(ctx.device_id, 0);
  EXPECT_EQ(ToHost<float>(a), values);

  // A byte count that does not match the array is refused, naming both numbers.
  std::vector<float> small(5);
  EXPECT_EQ(weft_ndarray_copy_to_host(a, small.data(), small.size() * sizeof(float)), WEFT_ERR_VALUE);
  EXPECT_TRUE(Contains(LastError(), "expected nbytes = 24")) << LastError();
  EXPECT_TRUE(Contains(LastError(), "got 20")) << LastError();
  ASSERT_OK(weft_ndarray_free(a));
}

TEST(CApiTest, BadCreateArgumentsAreErrors) {
  weft_ndarray_t* a = nullptr;
  int64_t neg[] = {2, -3};
  EXPECT_EQ(weft_ndarray_create(neg, 2, WEFT_DTYPE_FLOAT32, kCPU, &a), WEFT_ERR_SHAPE);
  EXPECT_TRUE(Contains(LastError(), "dim 1 = -3")) << LastError();
  int64_t ok[] = {2};
  EXPECT_EQ(weft_ndarray_create(ok, 1, 42, kCPU, &a), WEFT_ERR_TYPE);
  EXPECT_TRUE(Contains(LastError(), "got 42")) << LastError();
  EXPECT_EQ(weft_ndarray_create(ok, 1, WEFT_DTYPE_FLOAT32, weft_context_t{9, 0}, &a), WEFT_ERR_VALUE);
  EXPECT_EQ(weft_ndarray_create(ok, 1, WEFT_DTYPE_FLOAT32, kCPU, nullptr), WEFT_ERR_VALUE);
  EXPECT_TRUE(Contains(LastError(), "'out'")) << LastError();
  EXPECT_EQ(a, nullptr);
}

// ------------------------------------------------------------------ handle checks

TEST(CApiTest, NullFreedAndWrongKindHandlesAreErrors) {
  int ndim = 0;
  EXPECT_EQ(weft_ndarray_get_ndim(nullptr, &ndim), WEFT_ERR_HANDLE);
  EXPECT_TRUE(Contains(LastError(), "weft_ndarray_get_ndim: argument 'arr' is NULL")) << LastError();

  weft_ndarray_t* a = MakeFloat({2}, {1.f, 2.f});
  ASSERT_OK(weft_ndarray_free(a));
  EXPECT_EQ(weft_ndarray_get_ndim(a, &ndim), WEFT_ERR_HANDLE);
  EXPECT_TRUE(Contains(LastError(), "already freed")) << LastError();
  EXPECT_EQ(weft_ndarray_free(a), WEFT_ERR_HANDLE) << "a double free must be caught";
  // The freed slot is reused by the next array; the stale handle must still be refused.
  weft_ndarray_t* b = MakeFloat({1}, {3.f});
  EXPECT_EQ(weft_ndarray_get_ndim(a, &ndim), WEFT_ERR_HANDLE);
  EXPECT_OK(weft_ndarray_get_ndim(b, &ndim));

  weft_bytes_t* bytes = nullptr;
  ASSERT_OK(weft_ndarray_save_raw_bytes(b, &bytes));
  auto* wrong = reinterpret_cast<weft_ndarray_t*>(bytes);
  EXPECT_EQ(weft_ndarray_get_ndim(wrong, &ndim), WEFT_ERR_HANDLE);
  EXPECT_TRUE(Contains(LastError(), "got a weft_bytes_t")) << LastError();
  auto* forged = reinterpret_cast<weft_ndarray_t*>(uintptr_t{0x1234});
  EXPECT_EQ(weft_ndarray_get_ndim(forged, &ndim), WEFT_ERR_HANDLE);
  DLManagedTensor* t = nullptr;
  EXPECT_EQ(weft_ndarray_to_dlpack(a, &t), WEFT_ERR_HANDLE);
  EXPECT_EQ(weft_ndarray_to_dlpack(wrong, &t), WEFT_ERR_HANDLE);
  EXPECT_EQ(t, nullptr);

  EXPECT_OK(weft_ndarray_free(nullptr));
  EXPECT_OK(weft_bytes_free(bytes));
  EXPECT_OK(weft_ndarray_free(b));
}

TEST(CApiTest, LastErrorIsPerThreadAndKeptUntilTheNextFailure) {
  int64_t bad[] = {-1};
  weft_ndarray_t* a = nullptr;
  EXPECT_EQ(weft_ndarray_create(bad, 1, WEFT_DTYPE_FLOAT32, kCPU, &a), WEFT_ERR_SHAPE);
  std::string msg = LastError();
  EXPECT_EQ(msg, "weft_ndarray_create: expected dimensions >= 0, got dim 0 = -1");
  int major = 0;
  EXPECT_OK(weft_get_version(&major, nullptr, nullptr, nullptr));
  EXPECT_EQ(LastError(), msg);
  std::string other_thread = "unset";
  std::thread([&] { other_thread = weft_get_last_error(); }).join();
  EXPECT_EQ(other_thread, "");
}

// ------------------------------------------------------------------ operators

TEST(CApiTest, InvokePlusScalarByName) {
  const weft_op_t* op = nullptr;
  ASSERT_OK(weft_op_get("_plus_scalar", &op));
  const char* name = nullptr;
  ASSERT_OK(weft_op_get_name(op, &name));
  EXPECT_STREQ(name, "_plus_scalar");

  weft_ndarray_t* x = MakeFloat({2, 2}, {1.f, -2.f, 0.5f, 10.f});
  const char* keys[] = {"scalar"};
  const char* vals[] = {"2.5"};
  int nout = 0;
  weft_ndarray_t* const* outs = nullptr;
  ASSERT_OK(weft_imperative_invoke(op, 1, &x, 1, keys, vals, 0, nullptr, &nout, &outs));
  ASSERT_EQ(nout, 1);
  weft_ndarray_t* y = outs[0];
  EXPECT_EQ(ToHost<float>(y), (std::vector<float>{3.5f, 0.5f, 3.f, 12.5f}));

  // Into a preallocated output.
  weft_ndarray_t* z = MakeFloat({2, 2}, {0.f, 0.f, 0.f, 0.f});
  const char* vals2[] = {"-1"};
  ASSERT_OK(weft_imperative_invoke(op, 1, &y, 1, keys, vals2, 1, &z, &nout, &outs));
  EXPECT_EQ(nout, 1);
  EXPECT_EQ(outs[0], z);
  EXPECT_EQ(ToHost<float>(z), (std::vector<float>{2.5f, -0.5f, 2.f, 11.5f}));

  // A bad parameter value names the operator and the key.
  const char* bad[] = {"two"};
  EXPECT_NE(weft_imperative_invoke(op, 1, &x, 1, keys, bad, 0, nullptr, &nout, &outs), WEFT_OK);
  EXPECT_TRUE(Contains(LastError(), "_plus_scalar")) << LastError();
  EXPECT_TRUE(Contains(LastError(), "scalar")) << LastError();
  EXPECT_TRUE(Contains(LastError(), "two")) << LastError();

  EXPECT_EQ(weft_op_get("_no_such_op", &op), WEFT_ERR_NOT_FOUND);
  EXPECT_TRUE(Contains(LastError(), "_no_such_op")) << LastError();
  for (weft_ndarray_t* h : {x, y, z}) EXPECT_OK(weft_ndarray_free(h));
}

// An operator that fails while running (not at inference): the invoke call succeeds, and
// the error comes out of the next blocking call on what it wrote.
TEST(CApiTest, AsynchronousErrorIsReportedAtTheNextWait) {
  ASSERT_OK(weft_wait_all());
  const weft_op_t* op = nullptr;
  ASSERT_OK(weft_op_get("_sample_multinomial", &op));
  weft_ndarray_t* probs = MakeFloat({1, 2}, {0.5f, 1.7f});
  int nout = 0;
  weft_ndarray_t* const* outs = nullptr;
  ASSERT_OK(weft_imperative_invoke(op, 1, &probs, 0, nullptr, nullptr, 0, nullptr, &nout, &outs));
  ASSERT_GE(nout, 1);
  weft_ndarray_t* out = outs[0];
  EXPECT_EQ(weft_ndarray_wait_to_read(out), WEFT_ERR_VALUE);
  EXPECT_TRUE(Contains(LastError(), "in [0, 1]")) << LastError();
  // Reported once, as MXNet does: later waits, reads and wait_all do not report it again.
  EXPECT_OK(weft_ndarray_wait_to_write(out));
  EXPECT_OK(weft_ndarray_wait_to_read(out));
  int64_t size = 0;
  int dtype = 0;
  size_t elem = 0;
  ASSERT_OK(weft_ndarray_get_size(out, &size));
  ASSERT_OK(weft_ndarray_get_dtype(out, &dtype));
  ASSERT_OK(weft_dtype_size(dtype, &elem));
  std::vector<char> host(static_cast<size_t>(size) * elem);
  EXPECT_OK(weft_ndarray_copy_to_host(out, host.data(), host.size()));
  EXPECT_OK(weft_wait_all());
  // The first wait may be for writing: it reports the failed write, not hides it.
  ASSERT_OK(weft_imperative_invoke(op, 1, &probs, 0, nullptr, nullptr, 0, nullptr, &nout, &outs));
  ASSERT_GE(nout, 1);
  weft_ndarray_t* again = outs[0];
  EXPECT_EQ(weft_ndarray_wait_to_write(again), WEFT_ERR_VALUE);
  EXPECT_TRUE(Contains(LastError(), "in [0, 1]")) << LastError();
  // The input was only read: it is fine.
  EXPECT_OK(weft_ndarray_wait_to_read(probs));
  for (int i = 0; i < nout; ++i) EXPECT_OK(weft_ndarray_free(outs[i]));
  EXPECT_OK(weft_ndarray_free(out));
  EXPECT_OK(weft_ndarray_free(probs));
}

// ------------------------------------------------------------------ save and load

TEST(CApiTest, SaveAndLoadThroughBytesRoundTrip) {
  weft_ndarray_t* f = MakeFloat({3}, {0.1f, -0.f, 3.4028235e38f});
  int64_t ishape[] = {2, 2};
  weft_ndarray_t* i = nullptr;
  ASSERT_OK(weft_ndarray_create(ishape, 2, WEFT_DTYPE_INT64, kCPU, &i));
  std::vector<int64_t> ivals = {INT64_MIN, -1, 0, INT64_MAX};
  ASSERT_OK(weft_ndarray_copy_from_host(i, ivals.data(), ivals.size() * sizeof(int64_t)));

  weft_ndarray_t* arrays[] = {f, i};
  const char* names[] = {"arg:weight", "aux:count"};
  weft_bytes_t* bytes = nullptr;
  ASSERT_OK(weft_ndarray_save_to_bytes(2, arrays, names, &bytes));
  const void* data = nullptr;
  size_t size = 0;
  ASSERT_OK(weft_bytes_get(bytes, &data, &size));
  ASSERT_GT(size, 0u);

  weft_ndarray_list_t* list = nullptr;
  ASSERT_OK(weft_ndarray_load_from_bytes(data, size, &list));
  int n = 0, has_names = 0;
  ASSERT_OK(weft_ndarray_list_size(list, &n));
  ASSERT_OK(weft_ndarray_list_has_names(list, &has_names));
  ASSERT_EQ(n, 2);
  EXPECT_EQ(has_names, 1);
  const char* name = nullptr;
  ASSERT_OK(weft_ndarray_list_name(list, 0, &name));
  EXPECT_STREQ(name, "arg:weight");
  ASSERT_OK(weft_ndarray_list_name(list, 1, &name));
  EXPECT_STREQ(name, "aux:count");
  weft_ndarray_t* f2 = nullptr;
  weft_ndarray_t* i2 = nullptr;
  ASSERT_OK(weft_ndarray_list_get(list, 0, &f2));
  ASSERT_OK(weft_ndarray_list_get(list, 1, &i2));
  std::vector<float> fv = ToHost<float>(f2), fexpect = ToHost<float>(f);
  EXPECT_EQ(std::memcmp(fv.data(), fexpect.data(), fv.size() * sizeof(float)), 0) << "float32 not bit-exact";
  EXPECT_EQ(ToHost<int64_t>(i2), ivals);
  int dtype = -1;
  ASSERT_OK(weft_ndarray_get_dtype(i2, &dtype));
  EXPECT_EQ(dtype, WEFT_DTYPE_INT64);

  // Saving what was loaded gives the same bytes.
  weft_ndarray_t* again[] = {f2, i2};
  weft_bytes_t* bytes2 = nullptr;
  ASSERT_OK(weft_ndarray_save_to_bytes(2, again, names, &bytes2));
  const void* data2 = nullptr;
  size_t size2 = 0;
  ASSERT_OK(weft_bytes_get(bytes2, &data2, &size2));
  ASSERT_EQ(size2, size);
  EXPECT_EQ(std::memcmp(data, data2, size), 0);

  // A truncated buffer is an I/O error, not a crash.
  weft_ndarray_list_t* broken = nullptr;
  EXPECT_EQ(weft_ndarray_load_from_bytes(data, size - 5, &broken), WEFT_ERR_IO);
  EXPECT_FALSE(LastError().empty());
  EXPECT_EQ(broken, nullptr);

  EXPECT_OK(weft_bytes_free(bytes));
  EXPECT_OK(weft_bytes_free(bytes2));
  EXPECT_OK(weft_ndarray_list_free(list));
  for (weft_ndarray_t* h : {f, i, f2, i2}) EXPECT_OK(weft_ndarray_free(h));
}

// ------------------------------------------------------------------ DLPack

TEST(CApiDLPackTest, ExportDescribesTheArray) {
  std::vector<float> values = {1.f, 2.f, 3.f, 4.f, 5.f, 6.f};
  weft_ndarray_t* a = MakeFloat({2, 3}, values);
  DLManagedTensor* t = nullptr;
  ASSERT_OK(weft_ndarray_to_dlpack(a, &t));
  ASSERT_NE(t, nullptr);
  const DLTensor& dl = t->dl_tensor;
  EXPECT_EQ(dl.ndim, 2);
  EXPECT_EQ(dl.shape[0], 2);
  EXPECT_EQ(dl.shape[1], 3);
  ASSERT_NE(dl.strides, nullptr);
  EXPECT_EQ(dl.strides[0], 3);
  EXPECT_EQ(dl.strides[1], 1);
  EXPECT_EQ(dl.dtype.code, kDLFloat);
  EXPECT_EQ(dl.dtype.bits, 32);
  EXPECT_EQ(dl.dtype.lanes, 1);
  EXPECT_EQ(dl.device.device_type, kDLCPU);
  EXPECT_EQ(dl.byte_offset, 0u);
  const float* p = static_cast<const float*>(dl.data);
  EXPECT_EQ(std::vector<float>(p, p + 6), values);

  // A view exports its own window of the memory.
  weft_ndarray_t* row = nullptr;
  ASSERT_OK(weft_ndarray_at(a, 1, &row));
  DLManagedTensor* rt = nullptr;
  ASSERT_OK(weft_ndarray_to_dlpack(row, &rt));
  EXPECT_EQ(rt->dl_tensor.ndim, 1);
  EXPECT_EQ(rt->dl_tensor.shape[0], 3);
  EXPECT_EQ(static_cast<const float*>(rt->dl_tensor.data), p + 3);

  t->deleter(t);
  rt->deleter(rt);
  EXPECT_OK(weft_ndarray_free(row));
  EXPECT_OK(weft_ndarray_free(a));
}

TEST(CApiDLPackTest, ExportDTypes) {
  struct Case {
    int dtype;
    uint8_t code;
    uint8_t bits;
  };
  const Case cases[] = {{WEFT_DTYPE_FLOAT64, kDLFloat, 64}, {WEFT_DTYPE_FLOAT16, kDLFloat, 16},
                        {WEFT_DTYPE_BFLOAT16, kDLBfloat, 16}, {WEFT_DTYPE_UINT8, kDLUInt, 8},
                        {WEFT_DTYPE_INT8, kDLInt, 8},         {WEFT_DTYPE_INT32, kDLInt, 32},
                        {WEFT_DTYPE_INT64, kDLInt, 64},       {WEFT_DTYPE_BOOL, kDLBool, 8}};
  for (const Case& c : cases) {
    int64_t shape[] = {4};
    weft_ndarray_t* a = nullptr;
    ASSERT_OK(weft_ndarray_create(shape, 1, c.dtype, kCPU, &a));
    DLManagedTensor* t = nullptr;
    ASSERT_OK(weft_ndarray_to_dlpack(a, &t));
    EXPECT_EQ(t->dl_tensor.dtype.code, c.code) << "dtype " << c.dtype;
    EXPECT_EQ(t->dl_tensor.dtype.bits, c.bits) << "dtype " << c.dtype;
    // Import maps it back to the same Weft dtype.
    weft_ndarray_t* b = nullptr;
    ASSERT_OK(weft_ndarray_from_dlpack(t, &b));
    int dtype = -1;
    ASSERT_OK(weft_ndarray_get_dtype(b, &dtype));
    EXPECT_EQ(dtype, c.dtype);
    EXPECT_OK(weft_ndarray_free(b));
    EXPECT_OK(weft_ndarray_free(a));
  }
  EXPECT_OK(weft_wait_all());
}

// The exported tensor keeps the memory: freeing the Weft handle and allocating again must
// not reuse (and overwrite) it before the consumer's deleter runs.
TEST(CApiDLPackTest, ExportKeepsStorageAliveUntilTheDeleter) {
  const size_t n = 4096;
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = static_cast<float>(i) * 0.5f;
  // Arrays freed by earlier tests may still be on their way back to the pool.
  ASSERT_OK(weft_wait_all());
  int64_t in_use_before = 0;
  ASSERT_OK(weft_storage_get_stat(kCPU, WEFT_STORAGE_BYTES_IN_USE, &in_use_before));
  weft_ndarray_t* a = MakeFloat({static_cast<int64_t>(n)}, values);
  DLManagedTensor* t = nullptr;
  ASSERT_OK(weft_ndarray_to_dlpack(a, &t));
  ASSERT_OK(weft_ndarray_free(a));
  ASSERT_OK(weft_wait_all());
  std::vector<float> other(n, -7.f);
  weft_ndarray_t* b = MakeFloat({static_cast<int64_t>(n)}, other);
  ASSERT_OK(weft_wait_all());
  const float* p = static_cast<const float*>(t->dl_tensor.data);
  EXPECT_EQ(std::vector<float>(p, p + n), values);
  int64_t in_use = 0;
  ASSERT_OK(weft_storage_get_stat(kCPU, WEFT_STORAGE_BYTES_IN_USE, &in_use));
  EXPECT_EQ(in_use - in_use_before, static_cast<int64_t>(2 * n * sizeof(float)));
  t->deleter(t);
  ASSERT_OK(weft_wait_all());
  ASSERT_OK(weft_storage_get_stat(kCPU, WEFT_STORAGE_BYTES_IN_USE, &in_use));
  EXPECT_EQ(in_use - in_use_before, static_cast<int64_t>(n * sizeof(float)));
  EXPECT_OK(weft_ndarray_free(b));
}

// A tensor made by "another framework": memory and shape owned by the test, with a
// deleter that counts its calls.
struct ForeignTensor {
  DLManagedTensor managed{};
  std::vector<float> data;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  std::atomic<int>* deleted = nullptr;

  static void Delete(DLManagedTensor* self) {
    auto* f = static_cast<ForeignTensor*>(self->manager_ctx);
    f->deleted->fetch_add(1);
    delete f;
  }
  static ForeignTensor* Make(std::vector<int64_t> shape, std::atomic<int>* deleted) {
    auto* f = new ForeignTensor();
    f->shape = std::move(shape);
    int64_t n = 1;
    for (int64_t d : f->shape) n *= d;
    f->data.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) f->data[i] = static_cast<float>(i) + 0.25f;
    f->deleted = deleted;
    DLTensor& dl = f->managed.dl_tensor;
    dl.data = f->data.data();
    dl.device = {kDLCPU, 0};
    dl.ndim = static_cast<int32_t>(f->shape.size());
    dl.dtype = {kDLFloat, 32, 1};
    dl.shape = f->shape.data();
    dl.strides = nullptr;
    dl.byte_offset = 0;
    f->managed.manager_ctx = f;
    f->managed.deleter = &ForeignTensor::Delete;
    return f;
  }
};

TEST(CApiDLPackTest, ImportSharesMemoryAndCallsTheDeleterOnce) {
  std::atomic<int> deleted{0};
  ForeignTensor* f = ForeignTensor::Make({2, 3}, &deleted);
  float* foreign = f->data.data();
  weft_ndarray_t* a = nullptr;
  ASSERT_OK(weft_ndarray_from_dlpack(&f->managed, &a));
  EXPECT_EQ(ToHost<float>(a), (std::vector<float>{0.25f, 1.25f, 2.25f, 3.25f, 4.25f, 5.25f}));

  // Writing through Weft lands in the foreign memory: no copy was made.
  const weft_op_t* plus = nullptr;
  ASSERT_OK(weft_op_get("_plus_scalar", &plus));
  const char* keys[] = {"scalar"};
  const char* vals[] = {"10"};
  int nout = 0;
  weft_ndarray_t* const* outs = nullptr;
  ASSERT_OK(weft_imperative_invoke(plus, 1, &a, 1, keys, vals, 1, &a, &nout, &outs));
  ASSERT_OK(weft_ndarray_wait_to_read(a));
  EXPECT_EQ(foreign[5], 15.25f);

  // A view keeps the memory after the first handle goes.
  weft_ndarray_t* row = nullptr;
  ASSERT_OK(weft_ndarray_at(a, 1, &row));
  ASSERT_OK(weft_ndarray_free(a));
  ASSERT_OK(weft_wait_all());
  EXPECT_EQ(deleted.load(), 0) << "deleter called while a view still uses the memory";
  EXPECT_EQ(ToHost<float>(row), (std::vector<float>{13.25f, 14.25f, 15.25f}));
  ASSERT_OK(weft_ndarray_free(row));
  ASSERT_OK(weft_wait_all());
  EXPECT_EQ(deleted.load(), 1);
}

TEST(CApiDLPackTest, RoundTripWeftToWeft) {
  weft_ndarray_t* a = MakeFloat({3}, {1.f, 2.f, 3.f});
  DLManagedTensor* t = nullptr;
  ASSERT_OK(weft_ndarray_to_dlpack(a, &t));
  weft_ndarray_t* b = nullptr;
  ASSERT_OK(weft_ndarray_from_dlpack(t, &b));
  EXPECT_EQ(ToHost<float>(b), (std::vector<float>{1.f, 2.f, 3.f}));
  // Same memory: a write to b is seen through a.
  std::vector<float> nv = {-1.f, -2.f, -3.f};
  ASSERT_OK(weft_ndarray_copy_from_host(b, nv.data(), nv.size() * sizeof(float)));
  EXPECT_EQ(ToHost<float>(a), nv);
  // Freeing in either order is fine; the imported array releases the exported tensor.
  ASSERT_OK(weft_ndarray_free(a));
  EXPECT_EQ(ToHost<float>(b), nv);
  ASSERT_OK(weft_ndarray_free(b));
  ASSERT_OK(weft_wait_all());
}

TEST(CApiDLPackTest, CompactStridesAndSizeOneDimsAreAccepted) {
  std::atomic<int> deleted{0};
  ForeignTensor* f = ForeignTensor::Make({2, 1, 3}, &deleted);
  // Explicit compact strides, with an arbitrary stride on the size-1 dimension.
  f->strides = {3, 99, 1};
  f->managed.dl_tensor.strides = f->strides.data();
  weft_ndarray_t* a = nullptr;
  ASSERT_OK(weft_ndarray_from_dlpack(&f->managed, &a));
  EXPECT_EQ(ToHost<float>(a), (std::vector<float>{0.25f, 1.25f, 2.25f, 3.25f, 4.25f, 5.25f}));
  ASSERT_OK(weft_ndarray_free(a));
  ASSERT_OK(weft_wait_all());
  EXPECT_EQ(deleted.load(), 1);
}

TEST(CApiDLPackTest, ImportErrorsLeaveTheTensorToTheCaller) {
  std::atomic<int> deleted{0};
  ForeignTensor* f = ForeignTensor::Make({2, 3}, &deleted);
  DLTensor& dl = f->managed.dl_tensor;
  weft_ndarray_t* a = nullptr;

  // Column-major strides: a transposed view.
  f->strides = {1, 2};
  dl.strides = f->strides.data();
  EXPECT_EQ(weft_ndarray_from_dlpack(&f->managed, &a), WEFT_ERR_VALUE);
  EXPECT_TRUE(Contains(LastError(), "expected a contiguous tensor with row-major strides (3, 1)")) << LastError();
  EXPECT_TRUE(Contains(LastError(), "got strides (1, 2)")) << LastError();
  dl.strides = nullptr;

  dl.dtype = {kDLComplex, 64, 1};
  EXPECT_EQ(weft_ndarray_from_dlpack(&f->managed, &a), WEFT_ERR_TYPE);
  EXPECT_TRUE(Contains(LastError(), "got complex64")) << LastError();
  dl.dtype = {kDLFloat, 32, 4};
  EXPECT_EQ(weft_ndarray_from_dlpack(&f->managed, &a), WEFT_ERR_TYPE);
  EXPECT_TRUE(Contains(LastError(), "lanes = 4")) << LastError();
  dl.dtype = {kDLFloat, 32, 1};

  dl.device = {kDLOpenCL, 0};
  EXPECT_EQ(weft_ndarray_from_dlpack(&f->managed, &a), WEFT_ERR_UNSUPPORTED);
  EXPECT_TRUE(Contains(LastError(), "got DLPack device type 4")) << LastError();
  dl.device = {kDLCPU, 0};

  dl.byte_offset = 2;
  EXPECT_EQ(weft_ndarray_from_dlpack(&f->managed, &a), WEFT_ERR_VALUE);
  EXPECT_TRUE(Contains(LastError(), "aligned")) << LastError();
  dl.byte_offset = 0;

  EXPECT_EQ(weft_ndarray_from_dlpack(nullptr, &a), WEFT_ERR_VALUE);
  EXPECT_TRUE(Contains(LastError(), "'tensor' is NULL")) << LastError();
  EXPECT_EQ(weft_ndarray_from_dlpack(&f->managed, nullptr), WEFT_ERR_VALUE);
  EXPECT_EQ(a, nullptr);
  EXPECT_EQ(deleted.load(), 0) << "a failed import must not call the deleter";

  // Still usable after all those refusals.
  ASSERT_OK(weft_ndarray_from_dlpack(&f->managed, &a));
  ASSERT_OK(weft_ndarray_free(a));
  ASSERT_OK(weft_wait_all());
  EXPECT_EQ(deleted.load(), 1);
}

TEST(CApiDLPackTest, EmptyAndPinnedArraysRoundTrip) {
  int64_t shape[] = {0, 3};
  weft_ndarray_t* e = nullptr;
  ASSERT_OK(weft_ndarray_create(shape, 2, WEFT_DTYPE_INT32, kCPU, &e));
  DLManagedTensor* t = nullptr;
  ASSERT_OK(weft_ndarray_to_dlpack(e, &t));
  EXPECT_EQ(t->dl_tensor.shape[0], 0);
  EXPECT_EQ(t->dl_tensor.shape[1], 3);
  weft_ndarray_t* e2 = nullptr;
  ASSERT_OK(weft_ndarray_from_dlpack(t, &e2));
  int64_t dims[2] = {-1, -1};
  int ndim = 0;
  ASSERT_OK(weft_ndarray_get_shape(e2, dims, 2, &ndim));
  EXPECT_EQ(ndim, 2);
  EXPECT_EQ(dims[0], 0);
  EXPECT_EQ(dims[1], 3);
  EXPECT_OK(weft_ndarray_free(e2));
  EXPECT_OK(weft_ndarray_free(e));

  // Pinned host memory is DLPack's cuda_host device, and comes back as cpu_pinned.
  int64_t pshape[] = {2};
  weft_ndarray_t* p = nullptr;
  ASSERT_OK(weft_ndarray_create(pshape, 1, WEFT_DTYPE_FLOAT32, weft_context_t{WEFT_DEVICE_CPU_PINNED, 0}, &p));
  std::vector<float> v = {4.f, -4.f};
  ASSERT_OK(weft_ndarray_copy_from_host(p, v.data(), v.size() * sizeof(float)));
  ASSERT_OK(weft_ndarray_to_dlpack(p, &t));
  EXPECT_EQ(t->dl_tensor.device.device_type, kDLCUDAHost);
  weft_ndarray_t* p2 = nullptr;
  ASSERT_OK(weft_ndarray_from_dlpack(t, &p2));
  weft_context_t ctx = {0, -1};
  ASSERT_OK(weft_ndarray_get_context(p2, &ctx));
  EXPECT_EQ(ctx.device_type, WEFT_DEVICE_CPU_PINNED);
  EXPECT_EQ(ToHost<float>(p2), v);
  EXPECT_OK(weft_ndarray_free(p2));
  EXPECT_OK(weft_ndarray_free(p));
  EXPECT_OK(weft_wait_all());
}

TEST(CApiDLPackTest, GpuTensorWithoutGpuIsUnsupported) {
  int ngpu = 0;
  ASSERT_OK(weft_get_gpu_count(&ngpu));
  if (ngpu > 0) GTEST_SKIP() << "a GPU is present";
  std::atomic<int> deleted{0};
  ForeignTensor* f = ForeignTensor::Make({2}, &deleted);
  f->managed.dl_tensor.device = {kDLCUDA, 0};
  weft_ndarray_t* a = nullptr;
  EXPECT_EQ(weft_ndarray_from_dlpack(&f->managed, &a), WEFT_ERR_UNSUPPORTED);
  EXPECT_TRUE(Contains(LastError(), "cuda:0")) << LastError();
  f->managed.deleter(&f->managed);
  EXPECT_EQ(deleted.load(), 1);
}

}  // namespace
