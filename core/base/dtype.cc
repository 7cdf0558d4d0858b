#include "core/base/dtype.h"

#include <cstdlib>

namespace weft {

size_t DTypeSize(DType t) {
  switch (t) {
    case DType::kFloat32: return 4;
    case DType::kFloat64: return 8;
    case DType::kFloat16: return 2;
    case DType::kBfloat16: return 2;
    case DType::kUint8: return 1;
    case DType::kInt8: return 1;
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
    case DType::kBool: return 1;
    default: Throw(ErrorKind::kType, "unsupported dtype code ", static_cast<int>(t));
  }
}

const char* DTypeName(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kFloat16: return "float16";
    case DType::kBfloat16: return "bfloat16";
    case DType::kUint8: return "uint8";
    case DType::kInt8: return "int8";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kBool: return "bool";
    case DType::kUnknown: return "unknown";
  }
  return "invalid";
}

bool IsValidDType(int code) {
  return (code >= 0 && code <= 7) || code == 12;
}

DType ParseDType(const std::string& s, const std::string& what) {
  static const struct { const char* name; DType t; } kNames[] = {
      {"float32", DType::kFloat32}, {"float", DType::kFloat32}, {"float64", DType::kFloat64},
      {"double", DType::kFloat64}, {"float16", DType::kFloat16}, {"half", DType::kFloat16},
      {"bfloat16", DType::kBfloat16}, {"uint8", DType::kUint8}, {"int8", DType::kInt8},
      {"int32", DType::kInt32}, {"int64", DType::kInt64}, {"bool", DType::kBool},
      {"bool_", DType::kBool}};
  for (const auto& n : kNames) if (s == n.name) return n.t;
  // numpy's repr: "<class 'numpy.float32'>" as str(np.float32)
  auto dot = s.rfind('.');
  if (s.rfind("<class 'numpy.", 0) == 0 && dot != std::string::npos) {
    std::string inner = s.substr(dot + 1);
    if (!inner.empty() && inner.back() == '>') inner.pop_back();
    if (!inner.empty() && inner.back() == '\'') inner.pop_back();
    return ParseDType(inner, what);
  }
  char* end = nullptr;
  long code = std::strtol(s.c_str(), &end, 10);
  if (!s.empty() && end && *end == '\0' && IsValidDType(static_cast<int>(code))) return static_cast<DType>(code);
  Throw(ErrorKind::kType, what, ": expected one of float32, float64, float16, bfloat16, uint8, int8, int32, int64, bool, got '", s, "'");
}

bool IsFloatDType(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 || t == DType::kBfloat16;
}

bool IsIntegralDType(DType t) { return IsValidDType(static_cast<int>(t)) && !IsFloatDType(t); }

}  // namespace weft
