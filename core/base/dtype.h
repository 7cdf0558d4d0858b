// Element types, numbered as MXNet's type flags so that files and front ends agree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/base/error.h"
#include "core/base/half.h"

namespace weft {

enum class DType : int {
  kUnknown = -1,
  kFloat32 = 0,
  kFloat64 = 1,
  kFloat16 = 2,
  kUint8 = 3,
  kInt32 = 4,
  kInt8 = 5,
  kInt64 = 6,
  kBool = 7,
  kBfloat16 = 12,
};

size_t DTypeSize(DType t);
const char* DTypeName(DType t);
// Accepts numpy-style names ("float32", "int64", "bool", "bfloat16", "float16"/"half")
// and MXNet's integer codes as strings ("0"). Errors name `what`.
DType ParseDType(const std::string& s, const std::string& what = "dtype");
bool IsValidDType(int code);
bool IsFloatDType(DType t);
bool IsIntegralDType(DType t);  // bool counts as integral

template <typename T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kFloat32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kFloat64; };
template <> struct DTypeOf<float16> { static constexpr DType value = DType::kFloat16; };
template <> struct DTypeOf<bfloat16> { static constexpr DType value = DType::kBfloat16; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kUint8; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::kInt8; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kInt32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kInt64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::kBool; };

// Accumulation type for reductions and the compute type of elementwise math:
// half types compute in float, integers in themselves.
template <typename T> struct AccType { using type = T; };
template <> struct AccType<float16> { using type = float; };
template <> struct AccType<bfloat16> { using type = float; };

}  // namespace weft

// WEFT_TYPE_SWITCH(dtype, DT, { body using DT }) over every dtype.
#define WEFT_TYPE_SWITCH(dtype, DT, ...)                                  \
  switch (dtype) {                                                        \
    case ::weft::DType::kFloat32: { using DT = float; __VA_ARGS__ } break;  \
    case ::weft::DType::kFloat64: { using DT = double; __VA_ARGS__ } break; \
    case ::weft::DType::kFloat16: { using DT = ::weft::float16; __VA_ARGS__ } break; \
    case ::weft::DType::kBfloat16: { using DT = ::weft::bfloat16; __VA_ARGS__ } break; \
    case ::weft::DType::kUint8: { using DT = uint8_t; __VA_ARGS__ } break;  \
    case ::weft::DType::kInt8: { using DT = int8_t; __VA_ARGS__ } break;    \
    case ::weft::DType::kInt32: { using DT = int32_t; __VA_ARGS__ } break;  \
    case ::weft::DType::kInt64: { using DT = int64_t; __VA_ARGS__ } break;  \
    case ::weft::DType::kBool: { using DT = bool; __VA_ARGS__ } break;      \
    default: ::weft::Throw(::weft::ErrorKind::kType, "unsupported dtype code ", static_cast<int>(dtype)); \
  }

// Floating types only.
#define WEFT_FLOAT_TYPE_SWITCH(dtype, DT, what, ...)                       \
  switch (dtype) {                                                        \
    case ::weft::DType::kFloat32: { using DT = float; __VA_ARGS__ } break;  \
    case ::weft::DType::kFloat64: { using DT = double; __VA_ARGS__ } break; \
    case ::weft::DType::kFloat16: { using DT = ::weft::float16; __VA_ARGS__ } break; \
    case ::weft::DType::kBfloat16: { using DT = ::weft::bfloat16; __VA_ARGS__ } break; \
    default: ::weft::Throw(::weft::ErrorKind::kType, what, ": expected a floating-point dtype, got ", ::weft::DTypeName(dtype)); \
  }
