// Reducers: how the reduction operators combine elements. Plain C++ with WEFT_XINLINE so
// that GPU kernels can use them unchanged. A reducer works in an accumulation type A:
//
//   Init<A>()          the identity
//   Reduce(acc, x)     folds one input element into an accumulator
//   Combine(a, b)      merges two partial accumulators (blocked and parallel reductions)
//   Finalize(acc, n)   the result from the accumulator of n elements
//
// On the CPU, floating types accumulate in double and integers in int64 (ReduceAcc), so
// that float32 sums of millions of elements keep their precision.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/base/half.h"
#include "core/base/macros.h"
#include "core/op/elemwise/math.h"

namespace weft {
namespace op {

template <typename T> struct ReduceAcc { using type = int64_t; };
template <> struct ReduceAcc<float> { using type = double; };
template <> struct ReduceAcc<double> { using type = double; };
template <> struct ReduceAcc<float16> { using type = double; };
template <> struct ReduceAcc<bfloat16> { using type = double; };

template <typename A>
WEFT_XINLINE bool IsNaN(A x) { return x != x; }

// Integer sums and products wrap (WrapAdd, WrapMul of elemwise/math.h), as numpy's do,
// where signed arithmetic past int64 would be undefined (fuzz_c_api found prod of int32
// values overflowing).
struct SumReducer {
  template <typename A> static WEFT_XINLINE A Init() { return A(0); }
  template <typename A> static WEFT_XINLINE A Reduce(A acc, A x) { return WrapAdd(acc, x); }
  template <typename A> static WEFT_XINLINE A Combine(A a, A b) { return WrapAdd(a, b); }
  template <typename A> static WEFT_XINLINE A Finalize(A acc, int64_t) { return acc; }
};

// The mean of no elements is NaN for floating types (0 / 0), as in numpy.
struct MeanReducer {
  template <typename A> static WEFT_XINLINE A Init() { return A(0); }
  template <typename A> static WEFT_XINLINE A Reduce(A acc, A x) { return WrapAdd(acc, x); }
  template <typename A> static WEFT_XINLINE A Combine(A a, A b) { return WrapAdd(a, b); }
  template <typename A> static WEFT_XINLINE A Finalize(A acc, int64_t n) {
    return n == 0 ? (std::numeric_limits<A>::has_quiet_NaN ? std::numeric_limits<A>::quiet_NaN() : A(0))
                  : acc / static_cast<A>(n);
  }
};

struct ProdReducer {
  template <typename A> static WEFT_XINLINE A Init() { return A(1); }
  template <typename A> static WEFT_XINLINE A Reduce(A acc, A x) { return WrapMul(acc, x); }
  template <typename A> static WEFT_XINLINE A Combine(A a, A b) { return WrapMul(a, b); }
  template <typename A> static WEFT_XINLINE A Finalize(A acc, int64_t) { return acc; }
};

// NaNs count as zero.
struct NanSumReducer {
  template <typename A> static WEFT_XINLINE A Init() { return A(0); }
  template <typename A> static WEFT_XINLINE A Reduce(A acc, A x) { return IsNaN(x) ? acc : WrapAdd(acc, x); }
  template <typename A> static WEFT_XINLINE A Combine(A a, A b) { return WrapAdd(a, b); }
  template <typename A> static WEFT_XINLINE A Finalize(A acc, int64_t) { return acc; }
};

// NaNs count as one.
struct NanProdReducer {
  template <typename A> static WEFT_XINLINE A Init() { return A(1); }
  template <typename A> static WEFT_XINLINE A Reduce(A acc, A x) { return IsNaN(x) ? acc : WrapMul(acc, x); }
  template <typename A> static WEFT_XINLINE A Combine(A a, A b) { return WrapMul(a, b); }
  template <typename A> static WEFT_XINLINE A Finalize(A acc, int64_t) { return acc; }
};

// Max and min propagate NaN, as numpy's do.
struct MaxReducer {
  template <typename A> static WEFT_XINLINE A Init() {
    return std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::lowest();
  }
  template <typename A> static WEFT_XINLINE A Reduce(A acc, A x) { return (IsNaN(x) || x > acc) ? x : acc; }
  template <typename A> static WEFT_XINLINE A Combine(A a, A b) { return Reduce(a, b); }
  template <typename A> static WEFT_XINLINE A Finalize(A acc, int64_t) { return acc; }
};

struct MinReducer {
  template <typename A> static WEFT_XINLINE A Init() {
    return std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity() : std::numeric_limits<A>::max();
  }
  template <typename A> static WEFT_XINLINE A Reduce(A acc, A x) { return (IsNaN(x) || x < acc) ? x : acc; }
  template <typename A> static WEFT_XINLINE A Combine(A a, A b) { return Reduce(a, b); }
  template <typename A> static WEFT_XINLINE A Finalize(A acc, int64_t) { return acc; }
};

// The L1 norm: the sum of absolute values.
struct Norm1Reducer {
  template <typename A> static WEFT_XINLINE A Init() { return A(0); }
  template <typename A> static WEFT_XINLINE A Reduce(A acc, A x) { return acc + (x < A(0) ? -x : x); }
  template <typename A> static WEFT_XINLINE A Combine(A a, A b) { return a + b; }
  template <typename A> static WEFT_XINLINE A Finalize(A acc, int64_t) { return acc; }
};

// The L2 norm: the square root of the sum of squares.
struct Norm2Reducer {
  template <typename A> static WEFT_XINLINE A Init() { return A(0); }
  template <typename A> static WEFT_XINLINE A Reduce(A acc, A x) { return acc + x * x; }
  template <typename A> static WEFT_XINLINE A Combine(A a, A b) { return a + b; }
  template <typename A> static WEFT_XINLINE A Finalize(A acc, int64_t) {
    return static_cast<A>(::sqrt(static_cast<double>(acc)));
  }
};

}  // namespace op
}  // namespace weft
