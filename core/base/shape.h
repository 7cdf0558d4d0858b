// Shape: int64 dimensions with small inline storage (most arrays have few axes, and
// shapes are built on every imperative call, so they should not touch the heap).
// ndim == -1 means unknown, a dim of -1 means that dim is unknown, ndim == 0 is a scalar.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/base/error.h"

namespace weft {

class Shape {
 public:
  static constexpr int kInline = 6;

  Shape() : ndim_(-1) {}  // unknown
  explicit Shape(int ndim, int64_t fill = -1) { Resize(ndim, fill); }
  Shape(std::initializer_list<int64_t> dims) { Assign(dims.begin(), dims.end()); }
  explicit Shape(const std::vector<int64_t>& dims) { Assign(dims.begin(), dims.end()); }
  template <typename It>
  Shape(It begin, It end) { Assign(begin, end); }

  // Copies are on every operator call's path (inference, arrays, blobs): a shape that fits
  // inline is one fixed-size copy, without touching the heap part.
  Shape(const Shape& o) { CopyFrom(o); }
  Shape& operator=(const Shape& o) {
    if (this != &o) CopyFrom(o);
    return *this;
  }
  // A move copies: callers may read a shape they moved from (it keeps its value).
  Shape(Shape&& o) noexcept { CopyFrom(o); }
  Shape& operator=(Shape&& o) noexcept {
    if (this != &o) CopyFrom(o);
    return *this;
  }

  static Shape Unknown() { return Shape(); }
  static Shape Scalar() { return Shape(0); }

  int ndim() const { return ndim_; }
  bool known_ndim() const { return ndim_ >= 0; }
  // True when the rank and every dim are known.
  bool is_known() const {
    if (ndim_ < 0) return false;
    for (int i = 0; i < ndim_; ++i) if (data()[i] < 0) return false;
    return true;
  }
  // Number of elements; only meaningful when is_known().
  int64_t Size() const {
    int64_t s = 1;
    for (int i = 0; i < ndim_; ++i) s *= data()[i];
    return s;
  }
  // Product of dims in [begin, end).
  int64_t ProdRange(int begin, int end) const {
    int64_t s = 1;
    for (int i = begin; i < end; ++i) s *= data()[i];
    return s;
  }

  int64_t& operator[](int i) { return data()[i]; }
  int64_t operator[](int i) const { return data()[i]; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + std::max(ndim_, 0); }
  int64_t* begin() { return data(); }
  int64_t* end() { return data() + std::max(ndim_, 0); }
  std::vector<int64_t> ToVector() const { return std::vector<int64_t>(begin(), end()); }

  void Resize(int ndim, int64_t fill = -1) {
    ndim_ = ndim;
    if (ndim > kInline) heap_.assign(ndim, fill); else heap_.clear();
    for (int i = 0; i < std::max(ndim, 0); ++i) data()[i] = fill;
  }

  bool operator==(const Shape& o) const {
    return ndim_ == o.ndim_ && std::equal(begin(), end(), o.begin());
  }
  bool operator!=(const Shape& o) const { return !(*this == o); }

  // "(2,3)", "()" for a scalar, "None" when unknown; unknown dims print as -1.
  std::string ToString() const;
  // "[2,3]", as MXNet prints shapes: messages that keep MXNet's wording use it.
  std::string ToMXNetString() const;
  // Parses "(2,3)", "[2, 3]", "2", "()" and "None"; errors name `what`.
  static Shape Parse(const std::string& text, const std::string& what = "shape");

 private:
  template <typename It>
  void Assign(It b, It e) {
    int n = static_cast<int>(e - b);
    Resize(n);
    std::copy(b, e, data());
  }
  // heap_ holds the dims only while ndim_ > kInline; otherwise its content is ignored.
  void CopyFrom(const Shape& o) {
    if (o.ndim_ > kInline) heap_ = o.heap_;
    else std::memcpy(inline_, o.inline_, sizeof(inline_));
    ndim_ = o.ndim_;
  }
  int64_t* data() { return ndim_ > kInline ? heap_.data() : inline_; }
  const int64_t* data() const { return ndim_ > kInline ? heap_.data() : inline_; }

  int ndim_ = -1;
  int64_t inline_[kInline] = {0, 0, 0, 0, 0, 0};
  std::vector<int64_t> heap_;
};

// Row-major strides, in elements.
std::vector<int64_t> ContiguousStrides(const Shape& s);

// Normalises a possibly negative axis against ndim; throws kIndex naming `what`.
int NormalizeAxis(int axis, int ndim, const char* what);

}  // namespace weft
