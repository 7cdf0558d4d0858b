#include "core/storage/shared_memory.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "core/base/error.h"

namespace weft {
namespace shm {
namespace {

// The memfd name: /proc/<pid>/fd/<fd> of a segment reads "/memfd:weft_cpu_shared (deleted)",
// which is how Import tells a segment from any other descriptor.
constexpr char kName[] = "weft_cpu_shared";
constexpr char kLinkPrefix[] = "/memfd:weft_cpu_shared";

struct Segment {
  int fd;
  size_t size;
  bool exported;
};

// Live segments by start address, so that any byte of one finds it (views at an offset).
struct Registry {
  std::mutex mu;
  std::map<uintptr_t, Segment> by_base;
};

Registry& Segments();

// Around fork(): the registry's lock is held so that the child gets a consistent copy, and
// the child marks every segment it inherits as exported. Those are MAP_SHARED mappings, so
// the parent (and every sibling forked from it) still uses the same memory: the child must
// never hand one of them to a new array, whether it sat in the pool or held an array the
// child frees.
void PrepareFork() { Segments().mu.lock(); }
void ParentAfterFork() { Segments().mu.unlock(); }
void ChildAfterFork() {
  Registry& r = Segments();
  for (auto& kv : r.by_base) kv.second.exported = true;
  r.mu.unlock();
}

Registry& Segments() {
  // Never destroyed: arrays may be freed by static destructors or at interpreter exit.
  static Registry* r = [] {
    auto* reg = new Registry();
    pthread_atfork(PrepareFork, ParentAfterFork, ChildAfterFork);
    return reg;
  }();
  return *r;
}

thread_local std::string last_failure;

// The out-of-resource errors the pool answers by releasing its cache and trying again.
bool Exhausted(int err) { return err == ENOMEM || err == EMFILE || err == ENFILE || err == ENOSPC || err == EFBIG; }

void* Failed(const char* what, int err, size_t bytes) {
  std::string msg = std::string(what) + " failed for a cpu_shared segment of " + std::to_string(bytes) +
                    " bytes: " + std::strerror(err);
  if (err == EMFILE || err == ENFILE)
    msg += " (each live cpu_shared block holds one file descriptor; raise the limit with ulimit -n)";
  if (!Exhausted(err)) Throw(ErrorKind::kRuntime, msg);
  last_failure = msg;
  return nullptr;
}

std::string Describe(int pid, int id) {
  return "shared id " + std::to_string(id) + " of process " + std::to_string(pid);
}

}  // namespace

void* AllocSegment(size_t bytes) {
  last_failure.clear();
  int fd = memfd_create(kName, MFD_CLOEXEC);
  if (fd < 0) return Failed("memfd_create", errno, bytes);
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int err = errno;
    close(fd);
    return Failed("ftruncate", err, bytes);
  }
  // Populated at once: a block is written whole (a batch being stacked), and one call that
  // maps every page costs less than a fault per page.
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    close(fd);
    return Failed("mmap", err, bytes);
  }
  Registry& r = Segments();
  std::lock_guard<std::mutex> lock(r.mu);
  r.by_base[reinterpret_cast<uintptr_t>(p)] = Segment{fd, bytes, false};
  return p;
}

void FreeSegment(void* base, size_t bytes) {
  Registry& r = Segments();
  int fd = -1;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.by_base.find(reinterpret_cast<uintptr_t>(base));
    WEFT_CHECK(it != r.by_base.end() && it->second.size == bytes, kInternal, "cpu_shared: freeing a block of ",
               bytes, " bytes that is not a live segment");
    fd = it->second.fd;
    r.by_base.erase(it);
  }
  munmap(base, bytes);
  close(fd);
}

const char* LastAllocFailure() { return last_failure.c_str(); }

bool Find(const void* ptr, Location* out) {
  Registry& r = Segments();
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_base.upper_bound(p);
  if (it == r.by_base.begin()) return false;
  --it;
  if (p - it->first >= it->second.size) return false;
  out->fd = it->second.fd;
  out->base = reinterpret_cast<void*>(it->first);
  out->size = it->second.size;
  out->offset = p - it->first;
  return true;
}

Location Export(const void* ptr) {
  Location loc;
  WEFT_CHECK(Find(ptr, &loc), kValue, "cpu_shared: the array's memory is not a shared-memory segment of this process");
  Registry& r = Segments();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_base.find(reinterpret_cast<uintptr_t>(loc.base));
  if (it != r.by_base.end()) it->second.exported = true;
  return loc;
}

bool Reusable(const void* base) {
  Registry& r = Segments();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_base.find(reinterpret_cast<uintptr_t>(base));
  return it != r.by_base.end() && !it->second.exported;
}

Imported Import(int pid, int id, int64_t byte_offset, size_t bytes) {
  WEFT_CHECK(pid > 0, kValue, "cpu_shared: expected a process id > 0, got ", pid);
  WEFT_CHECK(id >= 0, kValue, "cpu_shared: expected a shared id (a descriptor number) >= 0, got ", id);
  WEFT_CHECK(byte_offset >= 0, kValue, "cpu_shared: expected a byte offset >= 0, got ", byte_offset);
  int fd = -1;
  if (pid == getpid()) {
    fd = fcntl(id, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) {
      int err = errno;
      WEFT_CHECK(err != EBADF, kNotFound, "cpu_shared: ", Describe(pid, id),
                 " is unknown: this process has no open descriptor ", id);
      Throw(ErrorKind::kRuntime, "cpu_shared: cannot duplicate ", Describe(pid, id), ": ", std::strerror(err));
    }
  } else {
    const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(id);
    fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      if (err == ENOENT) {
        const std::string proc = "/proc/" + std::to_string(pid);
        WEFT_CHECK(access(proc.c_str(), F_OK) == 0, kNotFound, "cpu_shared: ", Describe(pid, id),
                   " is unknown: no process ", pid, " is running");
        Throw(ErrorKind::kNotFound, "cpu_shared: ", Describe(pid, id), " is unknown: process ", pid,
              " has no open descriptor ", id, " (the array was freed there, or the id is not one it handed out)");
      }
      Throw(ErrorKind::kRuntime, "cpu_shared: cannot open ", Describe(pid, id), " through ", path, ": ",
            std::strerror(err));
    }
  }
  char link[256] = {};
  const std::string self = "/proc/self/fd/" + std::to_string(fd);
  ssize_t n = readlink(self.c_str(), link, sizeof(link) - 1);
  std::string target = n > 0 ? std::string(link, static_cast<size_t>(n)) : std::string("(unreadable)");
  if (target.compare(0, sizeof(kLinkPrefix) - 1, kLinkPrefix) != 0) {
    close(fd);
    Throw(ErrorKind::kValue, "cpu_shared: ", Describe(pid, id), " is not a shared-memory segment of Weft: expected ",
          kLinkPrefix, ", got ", target);
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    Throw(ErrorKind::kRuntime, "cpu_shared: cannot stat ", Describe(pid, id), ": ", std::strerror(err));
  }
  const auto size = static_cast<size_t>(st.st_size);
  const auto offset = static_cast<uint64_t>(byte_offset);
  if (size == 0 || offset > size || bytes > size - offset) {
    close(fd);
    Throw(ErrorKind::kValue, "cpu_shared: ", Describe(pid, id), " holds ", size, " bytes, but an array of ", bytes,
          " bytes at byte offset ", byte_offset, " was asked for (it needs ", offset + bytes, ")");
  }
  // Populated at once, as in AllocSegment: the receiver of a batch reads it whole.
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (base == MAP_FAILED) {
    int err = errno;
    close(fd);
    Throw(ErrorKind::kRuntime, "cpu_shared: cannot map ", Describe(pid, id), " (", size, " bytes): ",
          std::strerror(err));
  }
  {
    Registry& r = Segments();
    std::lock_guard<std::mutex> lock(r.mu);
    // Imported memory belongs to the array that wraps it, never to the pool.
    r.by_base[reinterpret_cast<uintptr_t>(base)] = Segment{fd, size, true};
  }
  Imported out;
  out.data = static_cast<char*>(base) + offset;
  out.segment_size = size;
  out.release = [base, size] { FreeSegment(base, size); };
  return out;
}

size_t NumLiveSegments() {
  Registry& r = Segments();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.by_base.size();
}

}  // namespace shm
}  // namespace weft
