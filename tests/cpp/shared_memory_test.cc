// cpu_shared: shared-memory segments as a storage pool, arrays another process maps (a
// forked child reads and writes one), and the errors of a wrong process, descriptor, size,
// offset or dtype, through the core and through the C API.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/ndarray/ndarray.h"
#include "core/ndarray/shared_mem.h"
#include "core/storage/shared_memory.h"
#include "core/storage/storage.h"
#include "weft/c_api.h"

namespace weft {
namespace {

bool PoolingOff() {
  const char* env = std::getenv("WEFT_STORAGE_POOL");
  return env && std::strcmp(env, "0") == 0;
}

// The descriptors of this process that are cpu_shared segments, as /proc lists them.
int CountSegmentDescriptors() {
  int n = 0;
  for (int fd = 0; fd < 4096; ++fd) {
    char link[256] = {};
    std::string path = "/proc/self/fd/" + std::to_string(fd);
    ssize_t len = readlink(path.c_str(), link, sizeof(link) - 1);
    if (len > 0 && std::strncmp(link, "/memfd:weft_cpu_shared", 22) == 0) ++n;
  }
  return n;
}

template <typename F>
void ExpectError(F&& f, ErrorKind kind, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

// Runs `child` in a forked process and returns its exit status (0: every check passed).
template <typename F>
int InChild(F&& child) {
  pid_t pid = fork();
  if (pid == 0) _exit(child());
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(CPUShared, ContextNamesAndIsHost) {
  EXPECT_EQ(Context::CPUShared(0).ToString(), "cpu_shared(0)");
  EXPECT_EQ(Context::CPUShared(2).ToString(), "cpu_shared(2)");
  EXPECT_TRUE(Context::CPUShared().is_host());
  EXPECT_FALSE(Context::CPUShared().is_gpu());
}

TEST(CPUShared, BlocksAreSegmentsThatGoAwayWhenFreed) {
  Context ctx = Context::CPUShared(7);
  Storage::Get()->ReleaseAll(ctx);
  const size_t live = shm::NumLiveSegments();
  const int fds = CountSegmentDescriptors();
  StorageHandle h = Storage::Get()->Alloc(1000, ctx);
  ASSERT_NE(h.dptr, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(h.dptr) % kStorageAlignment, 0u);
  std::memset(h.dptr, 0x5a, 1000);
  shm::Location loc;
  ASSERT_TRUE(shm::Find(static_cast<char*>(h.dptr) + 999, &loc));
  EXPECT_EQ(loc.base, h.dptr);
  EXPECT_EQ(loc.offset, 999u);
  EXPECT_GE(loc.size, 1000u);
  EXPECT_EQ(shm::NumLiveSegments(), live + 1);
  EXPECT_EQ(CountSegmentDescriptors(), fds + 1);
  EXPECT_EQ(Storage::Get()->Stats(ctx).bytes_in_use, 1000);

  // Never exported: the pool keeps it for the next block of its size.
  Storage::Get()->Free(h);
  if (!PoolingOff()) {
    StorageHandle again = Storage::Get()->Alloc(1000, ctx);
    EXPECT_EQ(again.dptr, h.dptr);
    Storage::Get()->Free(again);
  }
  Storage::Get()->ReleaseAll(ctx);
  EXPECT_EQ(shm::NumLiveSegments(), live);
  EXPECT_EQ(CountSegmentDescriptors(), fds);
}

TEST(CPUShared, ExportedBlocksAreNeverReused) {
  Context ctx = Context::CPUShared(8);
  const size_t live = shm::NumLiveSegments();
  StorageHandle h = Storage::Get()->Alloc(4096, ctx);
  EXPECT_TRUE(shm::Reusable(h.dptr));
  shm::Export(h.dptr);
  EXPECT_FALSE(shm::Reusable(h.dptr));
  Storage::Get()->Free(h);
  // Unmapped and closed at once, not pooled.
  EXPECT_EQ(shm::NumLiveSegments(), live);
  EXPECT_EQ(Storage::Get()->Stats(ctx).bytes_pooled, 0);
  ExpectError([&] { shm::Export(&live); }, ErrorKind::kValue, "not a shared-memory segment");
}

TEST(CPUShared, AForkedChildNeverReusesTheBlocksItInherits) {
  if (PoolingOff()) GTEST_SKIP() << "WEFT_STORAGE_POOL=0 disables reuse";
  Context ctx = Context::CPUShared(9);
  StorageHandle pooled = Storage::Get()->Alloc(8192, ctx);
  StorageHandle live = Storage::Get()->Alloc(8192, ctx);
  std::memset(pooled.dptr, 'A', 8192);
  std::memset(live.dptr, 'L', 8192);
  Storage::Get()->Free(pooled);
  // The child frees the live block it inherited and asks for two blocks of that size: it
  // must get new segments, not the ones it shares with this process.
  int status = InChild([&] {
    Storage::Get()->Free(live);
    StorageHandle a = Storage::Get()->Alloc(8192, ctx);
    StorageHandle b = Storage::Get()->Alloc(8192, ctx);
    std::memset(a.dptr, 'B', 8192);
    std::memset(b.dptr, 'B', 8192);
    return 0;
  });
  ASSERT_EQ(status, 0);
  EXPECT_EQ(static_cast<char*>(live.dptr)[100], 'L');
  StorageHandle again = Storage::Get()->Alloc(8192, ctx);
  EXPECT_EQ(again.dptr, pooled.dptr);
  EXPECT_EQ(static_cast<char*>(again.dptr)[100], 'A');
  Storage::Get()->Free(again);
  Storage::Get()->Free(live);
  Storage::Get()->ReleaseAll(ctx);
}

TEST(CPUShared, AForkedChildReadsAndWritesAnArray) {
  const int64_t n = 1000;
  NDArray a(Shape{n}, Context::CPUShared(0), DType::kFloat32);
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>(i) * 0.5f;
  a.SyncCopyFromCPU(values.data(), values.size() * sizeof(float));
  SharedMemHandle h = GetSharedMemHandle(a);
  EXPECT_EQ(h.pid, getpid());
  EXPECT_EQ(h.byte_offset, 0);

  // The child knows only (pid, id): it opens the segment through /proc, as an unrelated
  // process would, checks every value and doubles it.
  int status = InChild([&] {
    try {
      shm::Imported seg = shm::Import(h.pid, h.id, 0, n * sizeof(float));
      auto* p = static_cast<float*>(seg.data);
      for (int64_t i = 0; i < n; ++i) {
        if (p[i] != static_cast<float>(i) * 0.5f) return 2;
        p[i] *= 2;
      }
      seg.release();
      return 0;
    } catch (const Error&) {
      return 4;
    }
  });
  ASSERT_EQ(status, 0);
  std::vector<float> back(n);
  a.SyncCopyToCPU(back.data(), back.size() * sizeof(float));
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(back[i], static_cast<float>(i)) << "at " << i;
}

TEST(CPUShared, ArraysFromASegmentShareItsMemory) {
  NDArray a(Shape{4, 3}, Context::CPUShared(0), DType::kInt32);
  std::vector<int32_t> values(12);
  for (int i = 0; i < 12; ++i) values[i] = i * 7;
  a.SyncCopyFromCPU(values.data(), values.size() * sizeof(int32_t));
  const size_t live = shm::NumLiveSegments();
  {
    // Row 2 onwards, through the view's own handle (a byte offset into the segment).
    NDArray view = a.Slice(2, 4);
    SharedMemHandle h = GetSharedMemHandle(view);
    EXPECT_EQ(h.byte_offset, 2 * 3 * 4);
    NDArray b = NDArrayFromSharedMem(h.pid, h.id, h.byte_offset, Shape{6}, DType::kInt32);
    EXPECT_EQ(b.ctx(), Context::CPUShared(0));
    EXPECT_EQ(shm::NumLiveSegments(), live + 1);  // its own mapping and descriptor
    std::vector<int32_t> got(6);
    b.SyncCopyToCPU(got.data(), got.size() * sizeof(int32_t));
    for (int i = 0; i < 6; ++i) EXPECT_EQ(got[i], (i + 6) * 7);
    std::vector<int32_t> ones(6, 1);
    b.SyncCopyFromCPU(ones.data(), ones.size() * sizeof(int32_t));
    a.SyncCopyToCPU(values.data(), values.size() * sizeof(int32_t));
    EXPECT_EQ(values[5], 35);
    EXPECT_EQ(values[6], 1);
    EXPECT_EQ(values[11], 1);
  }
  engine::Engine::Get()->WaitForAll();
  EXPECT_EQ(shm::NumLiveSegments(), live);
}

TEST(CPUShared, WrongSegmentsAreClearErrors) {
  NDArray a(Shape{2, 3}, Context::CPUShared(0), DType::kFloat32);
  SharedMemHandle h = GetSharedMemHandle(a);
  const size_t seg = 64;  // the pool's bucket for 24 bytes
  ExpectError([&] { NDArrayFromSharedMem(h.pid, 4000, 0, Shape{2}, DType::kFloat32); }, ErrorKind::kNotFound,
              "no open descriptor 4000");
  ExpectError([&] { NDArrayFromSharedMem(h.pid, -1, 0, Shape{2}, DType::kFloat32); }, ErrorKind::kValue,
              "got -1");
  ExpectError([&] { NDArrayFromSharedMem(0, h.id, 0, Shape{2}, DType::kFloat32); }, ErrorKind::kValue,
              "expected a process id > 0, got 0");
  // A process that does not exist (pids stop well below 2^30 on Linux).
  ExpectError([&] { NDArrayFromSharedMem(1 << 30, h.id, 0, Shape{2}, DType::kFloat32); }, ErrorKind::kNotFound,
              "no process 1073741824");
  // A descriptor that is not a segment: standard input of this process, or a pipe.
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ExpectError([&] { NDArrayFromSharedMem(h.pid, fds[0], 0, Shape{2}, DType::kFloat32); }, ErrorKind::kValue,
              "expected /memfd:weft_cpu_shared, got pipe:");
  close(fds[0]);
  close(fds[1]);
  ExpectError([&] { NDArrayFromSharedMem(h.pid, h.id, 0, Shape{17}, DType::kFloat32); }, ErrorKind::kValue,
              "holds " + std::to_string(seg) + " bytes, but an array of 68 bytes");
  ExpectError([&] { NDArrayFromSharedMem(h.pid, h.id, 8, Shape{2, 8}, DType::kFloat64); }, ErrorKind::kValue,
              "at byte offset 8 was asked for (it needs 136)");
  ExpectError([&] { NDArrayFromSharedMem(h.pid, h.id, 2, Shape{2}, DType::kFloat32); }, ErrorKind::kValue,
              "multiple of 4 (the size of float32), got 2");
  ExpectError([&] { NDArrayFromSharedMem(h.pid, h.id, -4, Shape{2}, DType::kFloat32); }, ErrorKind::kValue,
              "byte offset >= 0, got -4");

  NDArray cpu(Shape{2}, Context::CPU(0), DType::kFloat32);
  ExpectError([&] { GetSharedMemHandle(cpu); }, ErrorKind::kValue, "expected an array on cpu_shared, got one on cpu(0)");
  NDArray empty(Shape{0, 3}, Context::CPUShared(0), DType::kFloat32);
  ExpectError([&] { GetSharedMemHandle(empty); }, ErrorKind::kValue, "(0,3) holds no bytes");
}

TEST(CPUShared, TheCApiRoundTripsAndNamesBadArguments) {
  const int64_t shape[] = {2, 2};
  weft_ndarray_t* a = nullptr;
  ASSERT_EQ(weft_ndarray_create(shape, 2, WEFT_DTYPE_FLOAT64, weft_context_t{WEFT_DEVICE_CPU_SHARED, 0}, &a), WEFT_OK)
      << weft_get_last_error();
  weft_context_t ctx{};
  ASSERT_EQ(weft_ndarray_get_context(a, &ctx), WEFT_OK);
  EXPECT_EQ(ctx.device_type, WEFT_DEVICE_CPU_SHARED);
  const double vals[] = {1.5, -2, 3, 4.25};
  ASSERT_EQ(weft_ndarray_copy_from_host(a, vals, sizeof(vals)), WEFT_OK);
  int pid = 0, id = -1;
  int64_t offset = -1;
  ASSERT_EQ(weft_ndarray_get_shared_mem(a, &pid, &id, &offset), WEFT_OK) << weft_get_last_error();
  EXPECT_EQ(pid, getpid());
  EXPECT_EQ(offset, 0);

  // In a child, through the C API only: read, then write.
  int status = InChild([&] {
    weft_ndarray_t* b = nullptr;
    if (weft_ndarray_create_from_shared_mem(pid, id, 0, shape, 2, WEFT_DTYPE_FLOAT64, &b) != WEFT_OK) return 2;
    double got[4] = {};
    if (weft_ndarray_copy_to_host(b, got, sizeof(got)) != WEFT_OK) return 3;
    if (std::memcmp(got, vals, sizeof(vals)) != 0) return 4;
    const double twos[] = {2, 2, 2, 2};
    if (weft_ndarray_copy_from_host(b, twos, sizeof(twos)) != WEFT_OK) return 5;
    return weft_ndarray_free(b) == WEFT_OK ? 0 : 6;
  });
  ASSERT_EQ(status, 0);
  double back[4] = {};
  ASSERT_EQ(weft_ndarray_copy_to_host(a, back, sizeof(back)), WEFT_OK);
  for (double v : back) EXPECT_EQ(v, 2.0);

  weft_ndarray_t* b = nullptr;
  EXPECT_EQ(weft_ndarray_create_from_shared_mem(pid, id, 0, shape, 2, 999, &b), WEFT_ERR_TYPE);
  EXPECT_NE(std::string(weft_get_last_error()).find("expected a dtype code (0-7 or 12), got 999"), std::string::npos)
      << weft_get_last_error();
  const int64_t big[] = {100, 100};
  EXPECT_EQ(weft_ndarray_create_from_shared_mem(pid, id, 0, big, 2, WEFT_DTYPE_FLOAT64, &b), WEFT_ERR_VALUE);
  EXPECT_NE(std::string(weft_get_last_error()).find("weft_ndarray_create_from_shared_mem: cpu_shared: shared id"),
            std::string::npos)
      << weft_get_last_error();
  EXPECT_EQ(weft_ndarray_create_from_shared_mem(pid, 4000, 0, shape, 2, WEFT_DTYPE_FLOAT64, &b), WEFT_ERR_NOT_FOUND);
  weft_ndarray_t* cpu = nullptr;
  ASSERT_EQ(weft_ndarray_create(shape, 2, WEFT_DTYPE_FLOAT32, weft_context_t{WEFT_DEVICE_CPU, 0}, &cpu), WEFT_OK);
  EXPECT_EQ(weft_ndarray_get_shared_mem(cpu, &pid, &id, &offset), WEFT_ERR_VALUE);
  EXPECT_EQ(weft_ndarray_free(cpu), WEFT_OK);
  EXPECT_EQ(weft_ndarray_free(a), WEFT_OK);
  EXPECT_EQ(weft_ndarray_create(shape, 2, WEFT_DTYPE_FLOAT32, weft_context_t{4, 0}, &cpu), WEFT_ERR_VALUE);
  EXPECT_NE(std::string(weft_get_last_error()).find("5 (cpu_shared), got 4"), std::string::npos)
      << weft_get_last_error();
}

TEST(CPUShared, OperatorsMixHostContexts) {
  // A batch on cpu_shared meets parameters on the CPU, as in MXNet; the result is on the
  // first input's context.
  const float xs[] = {1, 2, 3}, ws[] = {10, 20, 30};
  weft_ndarray_t* hx = nullptr;
  weft_ndarray_t* hw = nullptr;
  const int64_t shape[] = {3};
  ASSERT_EQ(weft_ndarray_create(shape, 1, WEFT_DTYPE_FLOAT32, weft_context_t{WEFT_DEVICE_CPU_SHARED, 0}, &hx), WEFT_OK);
  ASSERT_EQ(weft_ndarray_create(shape, 1, WEFT_DTYPE_FLOAT32, weft_context_t{WEFT_DEVICE_CPU, 0}, &hw), WEFT_OK);
  ASSERT_EQ(weft_ndarray_copy_from_host(hx, xs, sizeof(xs)), WEFT_OK);
  ASSERT_EQ(weft_ndarray_copy_from_host(hw, ws, sizeof(ws)), WEFT_OK);
  const weft_op_t* op = nullptr;
  ASSERT_EQ(weft_op_get("elemwise_mul", &op), WEFT_OK);
  weft_ndarray_t* ins[] = {hx, hw};
  int nout = 0;
  weft_ndarray_t* const* outs = nullptr;
  ASSERT_EQ(weft_imperative_invoke(op, 2, ins, 0, nullptr, nullptr, 0, nullptr, &nout, &outs), WEFT_OK)
      << weft_get_last_error();
  ASSERT_EQ(nout, 1);
  weft_ndarray_t* y = outs[0];
  weft_context_t ctx{};
  ASSERT_EQ(weft_ndarray_get_context(y, &ctx), WEFT_OK);
  EXPECT_EQ(ctx.device_type, WEFT_DEVICE_CPU_SHARED);
  float got[3] = {};
  ASSERT_EQ(weft_ndarray_copy_to_host(y, got, sizeof(got)), WEFT_OK);
  EXPECT_EQ(got[0], 10);
  EXPECT_EQ(got[1], 40);
  EXPECT_EQ(got[2], 90);
  // Two CPUs stay apart.
  weft_ndarray_t* other = nullptr;
  ASSERT_EQ(weft_ndarray_create(shape, 1, WEFT_DTYPE_FLOAT32, weft_context_t{WEFT_DEVICE_CPU, 1}, &other), WEFT_OK);
  weft_ndarray_t* mixed[] = {hw, other};
  EXPECT_EQ(weft_imperative_invoke(op, 2, mixed, 0, nullptr, nullptr, 0, nullptr, &nout, &outs), WEFT_ERR_VALUE);
  EXPECT_NE(std::string(weft_get_last_error()).find("all inputs must be on one context"), std::string::npos);
  for (weft_ndarray_t* h : {hx, hw, y, other}) EXPECT_EQ(weft_ndarray_free(h), WEFT_OK);
}

}  // namespace
}  // namespace weft
