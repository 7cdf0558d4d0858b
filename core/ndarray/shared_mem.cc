#include "core/ndarray/shared_mem.h"

#include <unistd.h>

#include "core/base/checked_size.h"
#include "core/base/error.h"
#include "core/storage/shared_memory.h"

namespace weft {

SharedMemHandle GetSharedMemHandle(const NDArray& arr) {
  WEFT_CHECK(!arr.is_none(), kValue, "shared memory: the array is empty (none)");
  WEFT_CHECK(!arr.is_sparse(), kUnsupported, "shared memory: expected a dense array, got a ",
             arr.stype() == StorageType::kCSR ? "csr" : "row_sparse", " one");
  WEFT_CHECK(arr.ctx().dev_type == DeviceType::kCPUShared, kValue,
             "shared memory: expected an array on cpu_shared, got one on ", arr.ctx().ToString(),
             " (copy it to cpu_shared first)");
  WEFT_CHECK(arr.Size() > 0, kValue, "shared memory: an array of shape ", arr.shape().ToString(),
             " holds no bytes, so it has no segment to share");
  arr.WaitToRead();
  shm::Location loc = shm::Export(arr.data().dptr);
  SharedMemHandle h;
  h.pid = static_cast<int>(getpid());
  h.id = loc.fd;
  h.byte_offset = static_cast<int64_t>(loc.offset);
  return h;
}

NDArray NDArrayFromSharedMem(int pid, int id, int64_t byte_offset, const Shape& shape, DType dtype) {
  const size_t bytes = CheckedBytes(shape, dtype, "shared memory");
  const auto item = static_cast<int64_t>(DTypeSize(dtype));
  WEFT_CHECK(byte_offset % item == 0, kValue, "shared memory: expected a byte offset that is a multiple of ", item,
             " (the size of ", DTypeName(dtype), "), got ", byte_offset);
  shm::Imported seg = shm::Import(pid, id, byte_offset, bytes);
  try {
    return NDArray::FromExternal(seg.data, shape, dtype, Context::CPUShared(0), seg.release);
  } catch (...) {
    seg.release();
    throw;
  }
}

}  // namespace weft
