// Host memory another process can map: the blocks of MXNet's cpu_shared context (device
// type 5), which DataLoader workers fill and hand to their parent without copying.
//
// Each block is its own anonymous segment (memfd_create, mapped MAP_SHARED). A segment has
// no name in any file system, so nothing can be left behind in /dev/shm: the kernel frees it
// once the last descriptor and the last mapping are gone, whatever way the processes end.
// The descriptor a block keeps open is how another process reaches it: (pid, fd) names the
// segment, and a process opens it through /proc/<pid>/fd/<fd> (its own fds through dup), as
// long as the block is alive in `pid`, or receives a duplicate of the descriptor over a Unix
// socket (what Python's multiprocessing does when it pickles an NDArray).
//
// Blocks go through the kCPUShared pool like any other memory, with one rule: a block that
// was exported (its id handed out) is never reused, since another process may still read it;
// it goes back to the system when freed. Blocks never exported are reused as usual, so
// operators computing on cpu_shared arrays cost what they cost on the CPU. A forked child
// counts every segment it inherits as exported: the mappings are shared with its parent and
// siblings, so a block cached before the fork must not become a new array in the child.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace weft {
namespace shm {

// The pool's raw allocator: a new segment of `bytes` bytes mapped read-write, or nullptr when
// the system is out of memory or descriptors (the pool then releases what it caches and
// tries again; LastAllocFailure() says what failed). Throws for any other failure.
void* AllocSegment(size_t bytes);
// Unmaps and closes a segment AllocSegment returned.
void FreeSegment(void* base, size_t bytes);
// Why the last AllocSegment on this thread returned nullptr ("" if it did not).
const char* LastAllocFailure();

// Where a byte of a live segment of this process is: the segment's descriptor, its start and
// its size. False when `ptr` is in no segment (allocated or imported) of this process.
struct Location {
  int fd = -1;
  void* base = nullptr;
  size_t size = 0;
  size_t offset = 0;  // of ptr from base
};
bool Find(const void* ptr, Location* out);

// Marks the segment holding `ptr` as seen by other processes: freeing it will unmap it rather
// than keep it for reuse. Returns its location; throws kValue when ptr is in no segment.
Location Export(const void* ptr);
// Whether the block starting at `base` may go back to the pool (it was never exported).
bool Reusable(const void* base);

// Maps segment `id` of process `pid` (this process's own fd when pid is getpid()). Checks
// that the descriptor is a cpu_shared segment and that [byte_offset, byte_offset + bytes)
// lies inside it; errors name what was expected and what was found. The mapping holds its
// own descriptor; `release` (set on return) unmaps and closes it, and must run exactly once.
struct Imported {
  void* data = nullptr;  // base + byte_offset
  size_t segment_size = 0;
  std::function<void()> release;
};
Imported Import(int pid, int id, int64_t byte_offset, size_t bytes);

// Live segments of this process (allocated, pooled or imported): for tests and leak checks.
size_t NumLiveSegments();

}  // namespace shm
}  // namespace weft
