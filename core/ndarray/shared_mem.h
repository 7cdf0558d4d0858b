// NDArrays in shared memory (MXNet's cpu_shared context, device type 5): what another process
// needs to map an array (MXNet's MXNDArrayGetSharedMemHandle), and an array over a segment
// that another process made (MXNDArrayCreateFromSharedMem). The segments themselves are
// core/storage/shared_memory.h's.
#pragma once

#include <cstdint>

#include "core/ndarray/ndarray.h"

namespace weft {

struct SharedMemHandle {
  int pid = 0;              // the process whose descriptor `id` is
  int id = -1;              // the segment's descriptor in that process
  int64_t byte_offset = 0;  // of the array's first byte in the segment (views)
};

// Waits for the array's pending writes (another process will read it), then names its
// segment. From then on its memory is never reused by this process's pool. The array must
// be dense, non-empty and on cpu_shared; anything else is a clear error.
SharedMemHandle GetSharedMemHandle(const NDArray& arr);

// An array of `shape` and `dtype` on cpu_shared(0) over segment (pid, id) from `byte_offset`,
// sharing its memory (no copy): writes on either side are seen by the other. The segment is
// checked (a Weft segment, big enough, an offset aligned to the dtype); it stays mapped until
// the last view of the array is gone.
NDArray NDArrayFromSharedMem(int pid, int id, int64_t byte_offset, const Shape& shape, DType dtype);

}  // namespace weft
