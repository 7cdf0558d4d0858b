#include "core/base/error.h"

namespace weft {

const char* ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kValue: return "ValueError";
    case ErrorKind::kType: return "TypeError";
    case ErrorKind::kIndex: return "IndexError";
    case ErrorKind::kShape: return "ShapeError";
    case ErrorKind::kIO: return "IOError";
    case ErrorKind::kNotFound: return "NotFoundError";
    case ErrorKind::kUnsupported: return "UnsupportedError";
    case ErrorKind::kRuntime: return "RuntimeError";
    case ErrorKind::kInternal: return "InternalError";
  }
  return "Error";
}

}  // namespace weft
