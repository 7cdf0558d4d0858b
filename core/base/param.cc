#include "core/base/param.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace weft {
namespace param_parse {
namespace {

std::string Trim(const std::string& v) {
  size_t b = v.find_first_not_of(" \t\n");
  size_t e = v.find_last_not_of(" \t\n");
  return b == std::string::npos ? std::string() : v.substr(b, e - b + 1);
}

[[noreturn]] void Bad(const std::string& where, const char* expected, const std::string& v) {
  Throw(ErrorKind::kValue, where, ": expected ", expected, ", got '", v, "'");
}

long long ParseInteger(const std::string& raw, const std::string& where, const char* expected) {
  std::string v = Trim(raw);
  if (v == "True" || v == "true") return 1;
  if (v == "False" || v == "false") return 0;
  errno = 0;
  char* end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || errno == ERANGE || (end && *end != '\0' && !(*end == 'L' && end[1] == '\0'))) Bad(where, expected, raw);
  return x;
}

double ParseReal(const std::string& raw, const std::string& where) {
  std::string v = Trim(raw);
  if (v == "inf" || v == "Inf" || v == "infinity") return std::numeric_limits<double>::infinity();
  if (v == "-inf" || v == "-Inf" || v == "-infinity") return -std::numeric_limits<double>::infinity();
  if (v == "nan" || v == "NaN") return std::numeric_limits<double>::quiet_NaN();
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || (end && *end != '\0')) Bad(where, "a number", raw);
  return x;
}

}  // namespace

void Parse(const std::string& v, const std::string& where, int* out) {
  long long x = ParseInteger(v, where, "an integer");
  if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max()) Bad(where, "a 32-bit integer", v);
  *out = static_cast<int>(x);
}
void Parse(const std::string& v, const std::string& where, int64_t* out) { *out = ParseInteger(v, where, "an integer"); }
void Parse(const std::string& v, const std::string& where, float* out) { *out = static_cast<float>(ParseReal(v, where)); }
void Parse(const std::string& v, const std::string& where, double* out) { *out = ParseReal(v, where); }
void Parse(const std::string& raw, const std::string& where, bool* out) {
  std::string v = Trim(raw);
  if (v == "True" || v == "true" || v == "1") *out = true;
  else if (v == "False" || v == "false" || v == "0") *out = false;
  else Bad(where, "a boolean (True, False, true, false, 1 or 0)", raw);
}
void Parse(const std::string& v, const std::string& where, std::string* out) {
  std::string t = Trim(v);
  // Python's str() of a string value arrives bare, but repr()-style quotes are accepted too.
  if (t.size() >= 2 && ((t.front() == '\'' && t.back() == '\'') || (t.front() == '"' && t.back() == '"')))
    t = t.substr(1, t.size() - 2);
  *out = t;
}
void Parse(const std::string& v, const std::string& where, Shape* out) { *out = Shape::Parse(v, where); }
void Parse(const std::string& v, const std::string& where, DType* out) { *out = ParseDType(Trim(v), where); }
void Parse(const std::string& raw, const std::string& where, std::vector<double>* out) {
  std::string v = Trim(raw);
  out->clear();
  if (!v.empty() && (v.front() == '(' || v.front() == '[')) v = v.substr(1, v.size() - 2);
  size_t pos = 0;
  while (pos < v.size()) {
    size_t comma = v.find(',', pos);
    std::string item = Trim(v.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    if (!item.empty()) out->push_back(ParseReal(item, where));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
}

std::string Format(int v) { return std::to_string(v); }
std::string Format(int64_t v) { return std::to_string(v); }
// Whole numbers print as plain integers ("100", not the shortest "%g" form "1e+02"),
// so that ranges and defaults in messages read the way a user would type them. Beyond
// 1e15 the exponent form is shorter and a double no longer holds every integer anyway.
static bool FormatAsInteger(double v, std::string* out) {
  if (!(std::fabs(v) <= 1e15) || v != std::trunc(v)) return false;
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f", v);
  *out = buf;
  return true;
}

std::string Format(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string whole;
  if (FormatAsInteger(v, &whole)) return whole;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  // Prefer the shortest form that reads back exactly.
  for (int prec = 1; prec < 17; ++prec) {
    char b2[64];
    std::snprintf(b2, sizeof(b2), "%.*g", prec, v);
    if (std::strtod(b2, nullptr) == v) return b2;
  }
  return buf;
}
std::string Format(float v) {
  std::string whole;
  if (FormatAsInteger(static_cast<double>(v), &whole)) return whole;
  for (int prec = 1; prec < 10; ++prec) {
    char b2[64];
    std::snprintf(b2, sizeof(b2), "%.*g", prec, static_cast<double>(v));
    if (std::strtof(b2, nullptr) == v) return b2;
  }
  return Format(static_cast<double>(v));
}
std::string Format(bool v) { return v ? "True" : "False"; }
std::string Format(const std::string& v) { return v; }
std::string Format(const Shape& v) { return v.ToString(); }
std::string Format(DType v) { return DTypeName(v); }
std::string Format(const std::vector<double>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + Format(v[i]);
  return s + ")";
}

template <> const char* TypeName<int>() { return "int"; }
template <> const char* TypeName<int64_t>() { return "long"; }
template <> const char* TypeName<float>() { return "float"; }
template <> const char* TypeName<double>() { return "double"; }
template <> const char* TypeName<bool>() { return "boolean"; }
template <> const char* TypeName<std::string>() { return "string"; }
template <> const char* TypeName<Shape>() { return "Shape(tuple)"; }
template <> const char* TypeName<DType>() { return "{'float32', 'float64', 'float16', 'bfloat16', 'uint8', 'int8', 'int32', 'int64', 'bool'}"; }
template <> const char* TypeName<std::vector<double>>() { return "tuple of float"; }
template <> const char* TypeName<std::optional<int>>() { return "int or None"; }
template <> const char* TypeName<std::optional<double>>() { return "double or None"; }
template <> const char* TypeName<std::optional<Shape>>() { return "Shape or None"; }
template <> const char* TypeName<std::optional<DType>>() { return "dtype or None"; }

}  // namespace param_parse

std::shared_ptr<void> ParamSchemaBase::ParseAny(const std::string& op, const KwArgs& kwargs) const {
  std::shared_ptr<void> obj = Make();
  std::vector<bool> seen(fields_.size(), false);
  for (const auto& f : fields_) f->SetDefault(obj.get());
  for (const auto& kv : kwargs) {
    const std::string& key = kv.first;
    if (key.size() > 4 && key.compare(0, 2, "__") == 0 && key.compare(key.size() - 2, 2, "__") == 0) continue;
    size_t i = 0;
    for (; i < fields_.size(); ++i) if (fields_[i]->name() == key) break;
    if (i == fields_.size()) {
      std::string known;
      for (const auto& f : fields_) known += (known.empty() ? "" : ", ") + f->name();
      Throw(ErrorKind::kValue, "Operator '", op, "': unknown parameter '", key, "' (expected one of: ",
            known.empty() ? std::string("no parameters") : known, ")");
    }
    fields_[i]->ParseInto(obj.get(), kv.second, "Operator '" + op + "': parameter '" + key + "'");
    seen[i] = true;
  }
  for (size_t i = 0; i < fields_.size(); ++i)
    if (fields_[i]->required() && !seen[i])
      Throw(ErrorKind::kValue, "Operator '", op, "': required parameter '", fields_[i]->name(), "' is missing");
  return obj;
}

}  // namespace weft
