#include "core/base/shape.h"

#include <cctype>
#include <cstdlib>

namespace weft {

std::string Shape::ToString() const {
  if (ndim_ < 0) return "None";
  std::string s = "(";
  for (int i = 0; i < ndim_; ++i) {
    if (i) s += ",";
    s += std::to_string(data()[i]);
  }
  if (ndim_ == 1) s += ",";
  s += ")";
  return s;
}

std::string Shape::ToMXNetString() const {
  if (ndim_ < 0) return "None";
  std::string s = "[";
  for (int i = 0; i < ndim_; ++i) {
    if (i) s += ",";
    s += std::to_string(data()[i]);
  }
  return s + "]";
}

Shape Shape::Parse(const std::string& text, const std::string& what) {
  size_t i = 0, n = text.size();
  auto skip = [&] { while (i < n && std::isspace(static_cast<unsigned char>(text[i]))) ++i; };
  skip();
  if (text.compare(i, 4, "None") == 0) return Shape();
  bool bracketed = i < n && (text[i] == '(' || text[i] == '[');
  char close = 0;
  if (bracketed) { close = text[i] == '(' ? ')' : ']'; ++i; }
  std::vector<int64_t> dims;
  for (;;) {
    skip();
    if (i >= n) break;
    if (bracketed && text[i] == close) { ++i; break; }
    if (text.compare(i, 4, "None") == 0) { dims.push_back(-1); i += 4; }
    else {
      const char* start = text.c_str() + i;
      char* stop = nullptr;
      long long v = std::strtoll(start, &stop, 10);
      if (stop == start) Throw(ErrorKind::kValue, what, ": expected a tuple of integers such as (2, 3), got '", text, "'");
      // MXNet writes long dims as "3L" in some old files.
      i += stop - start;
      if (i < n && (text[i] == 'L' || text[i] == 'l')) ++i;
      dims.push_back(v);
    }
    skip();
    if (i < n && text[i] == ',') { ++i; continue; }
    skip();
    if (bracketed && i < n && text[i] == close) { ++i; break; }
    if (!bracketed && i >= n) break;
    Throw(ErrorKind::kValue, what, ": expected a tuple of integers such as (2, 3), got '", text, "'");
  }
  skip();
  if (i != n) Throw(ErrorKind::kValue, what, ": expected a tuple of integers such as (2, 3), got '", text, "'");
  return Shape(dims);
}

std::vector<int64_t> ContiguousStrides(const Shape& s) {
  std::vector<int64_t> st(std::max(s.ndim(), 0));
  int64_t acc = 1;
  for (int i = s.ndim() - 1; i >= 0; --i) { st[i] = acc; acc *= s[i]; }
  return st;
}

int NormalizeAxis(int axis, int ndim, const char* what) {
  int a = axis < 0 ? axis + ndim : axis;
  if (a < 0 || a >= ndim)
    Throw(ErrorKind::kIndex, what, ": axis ", axis, " is out of range for an array with ", ndim, " dimensions");
  return a;
}

}  // namespace weft
