// Saving and loading arrays in MXNet's NDArray binary format (what `.params` files hold):
// a list container (magic 0x112, records, optional names) around per-array records. Weft
// writes V2 records, or V3 records in MXNet's numpy-shape mode; it reads V2, the legacy V1
// and V0 records, and V3 records, each only in the mode MXNet reads it in. Errors name the
// source, the byte offset and what was expected there.
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

// MXNet's numpy-shape mode (Imperative::is_np_shape), as the loader sees it.
struct NDArrayLoadOptions {
  // As MXNet: off reads V2/V1/V0 records and refuses V3 ones; on reads V3 records, dense
  // only, where a shape with an unknown (-1) dimension is an uninitialised array, and
  // refuses the classic records unless the mode is on for the whole process
  // (np_shape_global, MXNet's GlobalOn, which it treats as never switched off).
  bool np_shape = false;
  bool np_shape_global = false;
};

struct NDArraySaveOptions {
  // On: every record is V3 (0-d arrays allowed, sparse and uninitialised arrays refused).
  bool np_shape = false;
};

// The list format. `names` is empty or holds one name per array. Waits for the arrays'
// pending writes. Without np_shape a 0-d array cannot be saved (V2 records have no 0-d
// shapes).
std::string SaveNDArrayList(const std::vector<NDArray>& arrays, const std::vector<std::string>& names,
                            const NDArraySaveOptions& opts = {});
// `source` names the data in errors ("file 'a.params'", "buffer").
NDArrayFile LoadNDArrayList(const void* data, size_t size, const std::string& source,
                            const NDArrayLoadOptions& opts = {});

// One record without the list header (MXNet's raw-bytes form, used for pickling).
std::string SaveNDArrayRaw(const NDArray& array, const NDArraySaveOptions& opts = {});
NDArray LoadNDArrayRaw(const void* data, size_t size, const std::string& source, const NDArrayLoadOptions& opts = {});

// Files: kNotFound when the file cannot be opened for reading, kIO for other failures.
void SaveNDArrayListFile(const std::string& fname, const std::vector<NDArray>& arrays,
                         const std::vector<std::string>& names, const NDArraySaveOptions& opts = {});
NDArrayFile LoadNDArrayListFile(const std::string& fname, const NDArrayLoadOptions& opts = {});

}  // namespace weft
