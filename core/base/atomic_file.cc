#include "core/base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "core/base/error.h"

namespace weft {
namespace {

std::string DirName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// A name no other writer of the same target uses: the process id and a counter.
std::string TempName(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
}

[[noreturn]] void Fail(const std::string& path, const std::string& tmp, const char* step, int err) {
  if (!tmp.empty()) ::unlink(tmp.c_str());
  Throw(err == ENOENT ? ErrorKind::kNotFound : ErrorKind::kIO, "cannot write file '", path, "': ", step, " failed: ",
        std::strerror(err));
}

// Writes straight into what `path` names (no temporary, no rename): for targets a rename
// must not replace, such as a device (/dev/null) or a pipe.
void WriteInPlace(const std::string& path, const void* data, size_t size) {
  int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) Fail(path, "", "opening", errno);
  const char* p = static_cast<const char*>(data);
  for (size_t left = size; left > 0;) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      Fail(path, "", "writing", err);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::close(fd) != 0) Fail(path, "", "closing", errno);
}

}  // namespace

void WriteFileAtomically(const std::string& requested, const void* data, size_t size) {
  WEFT_CHECK(!requested.empty(), kValue, "cannot write a file with an empty name");
  // A symbolic link keeps pointing where it did: the file it names is the one replaced.
  std::string path = requested;
  char resolved[PATH_MAX];
  struct stat st;
  if (::lstat(requested.c_str(), &st) == 0 && S_ISLNK(st.st_mode) && ::realpath(requested.c_str(), resolved))
    path = resolved;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return WriteInPlace(path, data, size);
  const std::string tmp = TempName(path);
  // 0666 as fopen would, so the user's umask decides the permissions as for any new file.
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) Fail(path, "", "creating a temporary file beside it", errno);
  const char* p = static_cast<const char*>(data);
  size_t left = size;
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      Fail(path, tmp, "writing", err);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    Fail(path, tmp, "flushing to disk", err);
  }
  if (::close(fd) != 0) Fail(path, tmp, "closing", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) Fail(path, tmp, "renaming the temporary file over it", errno);
  // The rename itself is durable once the folder's entry is flushed; a folder that cannot
  // be opened for that (permissions) still has the complete file in place.
  int dir = ::open(DirName(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace weft
