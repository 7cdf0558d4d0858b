// Typed operator parameters parsed from string key/value pairs.
//
// A parameter struct declares its fields once, with type, default, range or choices and a
// doc line; the schema parses string pairs (what the C API, JSON and front ends carry),
// fills defaults, rejects unknown keys and bad values with messages that name the op,
// the key, what was expected and what came, and describes itself for documentation.
//
//   struct ClipParam { double a_min, a_max; };
//   WEFT_PARAM_SCHEMA(ClipParam, s) {   // in ClipParam's namespace
//     s.Field("a_min", &ClipParam::a_min).Describe("Minimum value");
//     s.Field("a_max", &ClipParam::a_max).Describe("Maximum value");
//   }
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/dtype.h"
#include "core/base/error.h"
#include "core/base/shape.h"

namespace weft {

using KwArgs = std::vector<std::pair<std::string, std::string>>;

// What documentation and the C API show about one field.
struct ParamFieldInfo {
  std::string name;
  std::string type;           // e.g. "int", "float, in [0, 1]", "{'max', 'avg'}", "Shape"
  std::string default_value;  // printable default; empty when required
  std::string doc;
  bool required = false;
};

// Parsers for the value types fields may have. Each throws kValue with a message that
// starts with `where` ("Op 'clip': parameter 'a_min'").
namespace param_parse {
void Parse(const std::string& v, const std::string& where, int* out);
void Parse(const std::string& v, const std::string& where, int64_t* out);
void Parse(const std::string& v, const std::string& where, float* out);
void Parse(const std::string& v, const std::string& where, double* out);
void Parse(const std::string& v, const std::string& where, bool* out);
void Parse(const std::string& v, const std::string& where, std::string* out);
void Parse(const std::string& v, const std::string& where, Shape* out);
void Parse(const std::string& v, const std::string& where, DType* out);
void Parse(const std::string& v, const std::string& where, std::vector<double>* out);
template <typename T>
void Parse(const std::string& v, const std::string& where, std::optional<T>* out) {
  if (v == "None" || v == "none" || v.empty()) { out->reset(); return; }
  T x{};
  Parse(v, where, &x);
  *out = x;
}
std::string Format(int v);
std::string Format(int64_t v);
std::string Format(float v);
std::string Format(double v);
std::string Format(bool v);
std::string Format(const std::string& v);
std::string Format(const Shape& v);
std::string Format(DType v);
std::string Format(const std::vector<double>& v);
template <typename T>
std::string Format(const std::optional<T>& v) { return v ? Format(*v) : "None"; }

template <typename T> const char* TypeName();
template <> const char* TypeName<int>();
template <> const char* TypeName<int64_t>();
template <> const char* TypeName<float>();
template <> const char* TypeName<double>();
template <> const char* TypeName<bool>();
template <> const char* TypeName<std::string>();
template <> const char* TypeName<Shape>();
template <> const char* TypeName<DType>();
template <> const char* TypeName<std::vector<double>>();
template <> const char* TypeName<std::optional<int>>();
template <> const char* TypeName<std::optional<double>>();
template <> const char* TypeName<std::optional<Shape>>();
template <> const char* TypeName<std::optional<DType>>();
}  // namespace param_parse

class FieldBase {
 public:
  virtual ~FieldBase() = default;
  virtual void ParseInto(void* obj, const std::string& value, const std::string& where) const = 0;
  virtual void SetDefault(void* obj) const = 0;
  virtual ParamFieldInfo Info() const = 0;
  const std::string& name() const { return name_; }
  bool required() const { return required_; }

 protected:
  std::string name_;
  std::string doc_;
  bool required_ = true;
};

template <typename P, typename T>
class Field : public FieldBase {
 public:
  Field(const char* name, T P::*member) : member_(member) { name_ = name; }

  Field& Describe(const std::string& doc) { doc_ = doc; return *this; }
  Field& Default(const T& v) { default_ = v; required_ = false; return *this; }
  // Inclusive numeric bounds, checked after parsing.
  Field& Range(double lo, double hi) { lo_ = lo; hi_ = hi; has_range_ = true; return *this; }
  Field& Min(double lo) { return Range(lo, 1e300); }
  // For string-valued enumerations.
  Field& Choices(std::vector<std::string> choices) { choices_ = std::move(choices); return *this; }

  void ParseInto(void* obj, const std::string& value, const std::string& where) const override {
    T v{};
    param_parse::Parse(value, where, &v);
    Check(v, value, where);
    static_cast<P*>(obj)->*member_ = v;
  }
  void SetDefault(void* obj) const override {
    if (!required_) static_cast<P*>(obj)->*member_ = default_;
  }
  ParamFieldInfo Info() const override {
    ParamFieldInfo info;
    info.name = name_;
    info.doc = doc_;
    info.required = required_;
    info.type = param_parse::TypeName<T>();
    if (!choices_.empty()) {
      info.type = "{";
      for (size_t i = 0; i < choices_.size(); ++i) info.type += (i ? ", '" : "'") + choices_[i] + "'";
      info.type += "}";
    }
    if (has_range_) {
      info.type += ", in [" + param_parse::Format(lo_) + ", " + (hi_ >= 1e300 ? std::string("inf") : param_parse::Format(hi_)) + "]";
    }
    if (!required_) info.default_value = param_parse::Format(default_);
    return info;
  }

 private:
  template <typename V>
  void Check(const V& v, const std::string& raw, const std::string& where) const {
    if constexpr (std::is_arithmetic_v<V> && !std::is_same_v<V, bool>) {
      if (has_range_ && (static_cast<double>(v) < lo_ || static_cast<double>(v) > hi_))
        Throw(ErrorKind::kValue, where, ": expected a value in [", param_parse::Format(lo_), ", ",
              hi_ >= 1e300 ? std::string("inf") : param_parse::Format(hi_), "], got ", raw);
    }
    if constexpr (std::is_same_v<V, std::string>) {
      if (!choices_.empty()) {
        for (const auto& c : choices_) if (c == v) return;
        std::string all;
        for (const auto& c : choices_) all += (all.empty() ? "'" : ", '") + c + "'";
        Throw(ErrorKind::kValue, where, ": expected one of {", all, "}, got '", raw, "'");
      }
    }
    if constexpr (std::is_same_v<V, std::optional<int>> || std::is_same_v<V, std::optional<double>>) {
      if (v) Check(*v, raw, where);
    }
  }

  T P::*member_;
  T default_{};
  double lo_ = 0, hi_ = 0;
  bool has_range_ = false;
  std::vector<std::string> choices_;
};

// The schema of one parameter struct.
class ParamSchemaBase {
 public:
  virtual ~ParamSchemaBase() = default;
  const std::vector<std::unique_ptr<FieldBase>>& fields() const { return fields_; }
  std::vector<ParamFieldInfo> Info() const {
    std::vector<ParamFieldInfo> out;
    for (const auto& f : fields_) out.push_back(f->Info());
    return out;
  }
  // Parses `kwargs` into a fresh object. `op` names the operator in errors. Keys that
  // start and end with "__" are user attributes (graph annotations) and are ignored.
  std::shared_ptr<void> ParseAny(const std::string& op, const KwArgs& kwargs) const;

 protected:
  virtual std::shared_ptr<void> Make() const = 0;
  std::vector<std::unique_ptr<FieldBase>> fields_;
};

template <typename P>
class ParamSchema : public ParamSchemaBase {
 public:
  // Qualified: inside the class, nvcc would take `Field` for this member function.
  template <typename T>
  weft::Field<P, T>& Field(const char* name, T P::*member) {
    auto* f = new weft::Field<P, T>(name, member);
    fields_.emplace_back(f);
    return *f;
  }
  std::shared_ptr<const P> Parse(const std::string& op, const KwArgs& kwargs) const {
    return std::static_pointer_cast<const P>(ParseAny(op, kwargs));
  }

 protected:
  std::shared_ptr<void> Make() const override { return std::make_shared<P>(); }
};

// The schema of P, found by argument-dependent lookup of the ParamSchemaFor overload
// that WEFT_PARAM_SCHEMA declares beside P.
template <typename P>
const ParamSchema<P>& SchemaOf() {
  return ParamSchemaFor(static_cast<const P*>(nullptr));
}

}  // namespace weft

// Declares the schema of struct P, in P's namespace; the body fills `s`.
#define WEFT_PARAM_SCHEMA(P, s)                                                  \
  void DeclareParamSchema(::weft::ParamSchema<P>& s);                            \
  inline const ::weft::ParamSchema<P>& ParamSchemaFor(const P*) {                \
    static const ::weft::ParamSchema<P>* schema = [] {                           \
      auto* sc = new ::weft::ParamSchema<P>();                                   \
      DeclareParamSchema(*sc);                                                   \
      return sc;                                                                 \
    }();                                                                         \
    return *schema;                                                              \
  }                                                                              \
  inline void DeclareParamSchema(::weft::ParamSchema<P>& s)
