// The CUDA backend's memory and copies. Every test that needs a GPU skips when none is
// visible (a build without CUDA, or a machine without a GPU); the error paths for that case
// run everywhere else.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/ndarray/copy.h"
#include "core/ndarray/ndarray.h"
#include "core/storage/storage.h"

#ifdef WEFT_USE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace weft {
namespace {

#define REQUIRE_GPU() \
  if (NumGPUs() == 0) GTEST_SKIP() << "no GPU is visible"

// Bytes of n elements of `dtype` with varied, exactly representable values: integers in
// [0, 97), which every dtype but bool holds unchanged (bool keeps whether they are zero).
std::vector<unsigned char> Pattern(DType dtype, int64_t n, int salt) {
  std::vector<unsigned char> bytes(static_cast<size_t>(n) * DTypeSize(dtype));
  WEFT_TYPE_SWITCH(dtype, T, {
    T* p = reinterpret_cast<T*>(bytes.data());
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(static_cast<float>((i * 31 + salt) % 97));
  });
  return bytes;
}

// The host conversion of `src` (n elements of `from`) to `to`: what a GPU cast must match.
std::vector<unsigned char> HostConvert(const std::vector<unsigned char>& src, DType from, DType to, int64_t n) {
  std::vector<unsigned char> out(static_cast<size_t>(n) * DTypeSize(to));
  Shape s{n};
  CopyBlobHost(TBlob(const_cast<unsigned char*>(src.data()), s, from, Context::CPU()),
               TBlob(out.data(), s, to, Context::CPU()));
  return out;
}

std::vector<unsigned char> ReadBack(const NDArray& a) {
  std::vector<unsigned char> out(static_cast<size_t>(a.Size()) * DTypeSize(a.dtype()));
  a.SyncCopyToCPU(out.data(), out.size());
  return out;
}

const DType kDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBfloat16, DType::kUint8,
                         DType::kInt8,    DType::kInt32,   DType::kInt64,   DType::kBool};
const int64_t kSizes[] = {1, 7, 1000, (1 << 20) + 3};

TEST(CudaWithoutGpu, AllocatingOnAGpuIsAClearError) {
  if (NumGPUs() > 0) GTEST_SKIP() << "a GPU is visible";
  try {
    Storage::Get()->Alloc(1024, Context::GPU(0));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("gpu(0)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(NDArray(Shape{4}, Context::GPU(0)), Error);
}

TEST(CudaMemory, AllocFreeAndReuseOnEveryGpu) {
  REQUIRE_GPU();
  Storage* s = Storage::Get();
  for (int d = 0; d < NumGPUs(); ++d) {
    Context ctx = Context::GPU(d);
    StorageHandle a = s->Alloc(3 << 20, ctx);
    ASSERT_NE(a.dptr, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.dptr) % kStorageAlignment, 0u);
#ifdef WEFT_USE_CUDA
    cudaPointerAttributes attr{};
    ASSERT_EQ(cudaPointerGetAttributes(&attr, a.dptr), cudaSuccess);
    EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
    EXPECT_EQ(attr.device, d);
#endif
    StorageStats before = s->Stats(ctx);
    s->Free(a);
    StorageHandle b = s->Alloc(3 << 20, ctx);
    EXPECT_EQ(b.dptr, a.dptr);
    EXPECT_EQ(s->Stats(ctx).num_os_allocs, before.num_os_allocs);
    s->Free(b);
    s->ReleaseAll(ctx);
    EXPECT_EQ(s->Stats(ctx).bytes_pooled, 0);
  }
}

TEST(CudaMemory, MissingDeviceIsAClearError) {
  REQUIRE_GPU();
  Context ctx = Context::GPU(NumGPUs());
  try {
    Storage::Get()->Alloc(16, ctx);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kValue);
    EXPECT_NE(std::string(e.what()).find(ctx.ToString()), std::string::npos) << e.what();
  }
}

TEST(CudaMemory, OutOfMemoryIsAnErrorNotACrash) {
  REQUIRE_GPU();
  // 2^50 bytes exceeds any GPU.
  try {
    Storage::Get()->Alloc(size_t{1} << 50, Context::GPU(0));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kRuntime);
    EXPECT_NE(std::string(e.what()).find("out of memory on gpu(0)"), std::string::npos) << e.what();
  }
  // The device still works afterwards.
  StorageHandle h = Storage::Get()->Alloc(1024, Context::GPU(0));
  EXPECT_NE(h.dptr, nullptr);
  Storage::Get()->Free(h);
}

TEST(CudaMemory, PinnedMemoryIsPageLocked) {
  REQUIRE_GPU();
  Context ctx = Context::CPUPinned(0);
  StorageHandle h = Storage::Get()->Alloc(1 << 20, ctx);
  ASSERT_NE(h.dptr, nullptr);
#ifdef WEFT_USE_CUDA
  cudaPointerAttributes attr{};
  ASSERT_EQ(cudaPointerGetAttributes(&attr, h.dptr), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeHost);
#endif
  std::memset(h.dptr, 3, h.size);
  Storage::Get()->Free(h);
}

TEST(CudaCopy, HostDeviceRoundTripsForEveryDTypeAndSize) {
  REQUIRE_GPU();
  for (DType t : kDTypes)
    for (int64_t n : kSizes) {
      std::vector<unsigned char> src = Pattern(t, n, 5);
      NDArray g(Shape{n}, Context::GPU(0), t);
      g.SyncCopyFromCPU(src.data(), src.size());
      EXPECT_EQ(ReadBack(g), src) << DTypeName(t) << " n=" << n;
    }
}

TEST(CudaCopy, DeviceToDeviceAndThroughPinnedMemory) {
  REQUIRE_GPU();
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kInt64})
    for (int64_t n : kSizes) {
      std::vector<unsigned char> src = Pattern(t, n, 11);
      NDArray pinned(Shape{n}, Context::CPUPinned(0), t);
      pinned.SyncCopyFromCPU(src.data(), src.size());
      NDArray g = pinned.Copy(Context::GPU(0));  // pinned -> gpu
      NDArray g2 = g.Copy(Context::GPU(0));      // gpu -> gpu, same device
      NDArray back = g2.Copy(Context::CPUPinned(0));
      EXPECT_EQ(ReadBack(back), src) << DTypeName(t) << " n=" << n;
      // A slice lands at a byte offset inside the chunk.
      if (n > 3) {
        NDArray part = g2.Slice(2, n).Copy(Context::CPU());
        std::vector<unsigned char> want(src.begin() + 2 * static_cast<int64_t>(DTypeSize(t)), src.end());
        EXPECT_EQ(ReadBack(part), want) << DTypeName(t) << " n=" << n;
      }
    }
}

TEST(CudaCopy, PeerCopiesBetweenGpus) {
  REQUIRE_GPU();
  if (NumGPUs() < 2) GTEST_SKIP() << "needs two GPUs";
  for (int64_t n : kSizes) {
    std::vector<unsigned char> src = Pattern(DType::kFloat32, n, 3);
    NDArray a(Shape{n}, Context::GPU(0), DType::kFloat32);
    a.SyncCopyFromCPU(src.data(), src.size());
    NDArray b = a.Copy(Context::GPU(1));
    EXPECT_EQ(ReadBack(b), src) << "n=" << n;
    NDArray c(Shape{n}, Context::GPU(1), DType::kFloat16);
    CopyFromTo(a, c);
    EXPECT_EQ(ReadBack(c), HostConvert(src, DType::kFloat32, DType::kFloat16, n)) << "n=" << n;
  }
}

// Every kind of copy with a dtype change gives exactly what the host conversion gives.
TEST(CudaCopy, ConversionsMatchTheHost) {
  REQUIRE_GPU();
  const int64_t n = 4099;
  for (DType from : kDTypes)
    for (DType to : kDTypes) {
      if (from == to) continue;
      std::vector<unsigned char> src = Pattern(from, n, 17);
      std::vector<unsigned char> want = HostConvert(src, from, to, n);
      std::string what = std::string(DTypeName(from)) + " -> " + DTypeName(to);

      NDArray host_src(Shape{n}, Context::CPU(), from);
      host_src.SyncCopyFromCPU(src.data(), src.size());
      NDArray g_from(Shape{n}, Context::GPU(0), from);
      CopyFromTo(host_src, g_from);  // plain upload

      NDArray h2d(Shape{n}, Context::GPU(0), to);
      CopyFromTo(host_src, h2d);
      EXPECT_EQ(ReadBack(h2d), want) << what << " (host to gpu)";

      NDArray d2d(Shape{n}, Context::GPU(0), to);
      CopyFromTo(g_from, d2d);
      EXPECT_EQ(ReadBack(d2d), want) << what << " (gpu to gpu)";

      NDArray d2h(Shape{n}, Context::CPU(), to);
      CopyFromTo(g_from, d2h);
      EXPECT_EQ(ReadBack(d2h), want) << what << " (gpu to host)";
    }
}

TEST(CudaCopy, EmptyArraysCopyWithoutTouchingTheDevice) {
  REQUIRE_GPU();
  NDArray g(Shape{0, 3}, Context::GPU(0));
  NDArray h = g.Copy(Context::CPU());
  EXPECT_EQ(h.Size(), 0);
  h.WaitToRead();
}

}  // namespace
}  // namespace weft
