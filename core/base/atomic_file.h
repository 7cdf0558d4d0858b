// Files a user keeps (parameters, symbol JSON, checkpoints) are written atomically
// (DESIGN.md idea 10): the bytes go to a temporary file in the same folder, are flushed to
// the disk, and the temporary file is then renamed over the target. A crash, a kill or a
// full disk midway leaves the previous file intact, never a truncated one.
#pragma once

#include <cstddef>
#include <string>

namespace weft {

// Writes `size` bytes to `path` atomically; an error (kIO, or kNotFound for a missing
// folder) names the path and the system's reason, and leaves no temporary file behind.
// A symbolic link stays a link: the file it points to is replaced. A path that names no
// regular file (a device such as /dev/null, a pipe) is written in place, as it cannot be
// replaced.
void WriteFileAtomically(const std::string& path, const void* data, size_t size);

}  // namespace weft
