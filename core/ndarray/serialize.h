// Saving and loading arrays in MXNet's NDArray binary format (what `.params` files hold):
// a list container (magic 0x112, records, optional names) around per-array records. Weft
// writes V2 records; it reads V2, the legacy V1 and V0 records, and V3 (numpy-shape)
// records only when asked to. Errors name the source, the byte offset and what was
// expected there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/ndarray/ndarray.h"

namespace weft {

constexpr uint64_t kNDArrayListMagic = 0x112;
constexpr uint32_t kNDArrayV1Magic = 0xF993FAC8u;
constexpr uint32_t kNDArrayV2Magic = 0xF993FAC9u;
constexpr uint32_t kNDArrayV3Magic = 0xF993FACAu;

struct NDArrayFile {
  std::vector<NDArray> arrays;
  std::vector<std::string> names;  // empty for an unnamed list, else one per array
};

struct NDArrayLoadOptions {
  // MXNet's numpy-shape mode: V3 records (with 0-d arrays) are accepted only when it is on.
  bool np_shape = false;
};

// The list format. `names` is empty or holds one name per array. Waits for the arrays'
// pending writes. A 0-d array cannot be saved (V2 records have no 0-d shapes).
std::string SaveNDArrayList(const std::vector<NDArray>& arrays, const std::vector<std::string>& names);
// `source` names the data in errors ("file 'a.params'", "buffer").
NDArrayFile LoadNDArrayList(const void* data, size_t size, const std::string& source,
                            const NDArrayLoadOptions& opts = {});

// One record without the list header (MXNet's raw-bytes form, used for pickling).
std::string SaveNDArrayRaw(const NDArray& array);
NDArray LoadNDArrayRaw(const void* data, size_t size, const std::string& source, const NDArrayLoadOptions& opts = {});

// Files: kNotFound when the file cannot be opened for reading, kIO for other failures.
void SaveNDArrayListFile(const std::string& fname, const std::vector<NDArray>& arrays,
                         const std::vector<std::string>& names);
NDArrayFile LoadNDArrayListFile(const std::string& fname, const NDArrayLoadOptions& opts = {});

}  // namespace weft
