// The operator registry: one entry per operator, read by the imperative path, the graph
// passes, autograd and (through the C API) every front end.
//
// An operator is a chain of calls on its entry:
//
//   WEFT_REGISTER_OP(clip)
//       .Describe("Clips values to [a_min, a_max].")
//       .SetNumInputs(1)
//       .AddArgument("data", "NDArray-or-Symbol", "Input array")
//       .SetParams<ClipParam>()
//       .Include("ElemwiseUnary")                      // shared attribute set
//       .SetAttr<FCompute>("FCompute<cpu>", ClipCompute)
//       .SetAttr<FGradient>("FGradient", ClipGrad);
//
// Attributes are looked up by name through OpMap<T>, an array indexed by operator, so a
// pass or the imperative path pays one vector index per lookup.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <typeindex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/base/error.h"
#include "core/base/param.h"
#include "core/engine/engine.h"
#include "core/base/tblob.h"
#include "core/resource/resource.h"

namespace weft {

class Op;

// What an operator is asked to do with each output.
enum class OpReq : int {
  kNullOp = 0,        // skip this output
  kWriteTo = 1,       // overwrite
  kWriteInplace = 2,  // overwrite; the output shares memory with an input
  kAddTo = 3,         // add to what is there (gradient accumulation)
};

// An operator applied with concrete parameters: the raw strings (kept for JSON and the
// graph) and the parsed struct.
struct NodeAttrs {
  const Op* op = nullptr;
  std::string name;
  KwArgs dict;
  std::shared_ptr<const void> parsed;

  template <typename P>
  const P& Params() const { return *static_cast<const P*>(parsed.get()); }
};

struct OpContext {
  bool is_train = false;
  engine::RunContext run_ctx;
  std::vector<Resource> requested;  // in the order of FResourceRequest
};

// Fusion and planning passes reason over these kinds instead of operator names.
enum class OpPattern : int { kElemwise = 0, kBroadcast = 1, kInjective = 2, kReduce = 3, kOpaque = 4 };

// ---------------------------------------------------------------- attribute types
using FCompute = std::function<void(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& inputs,
                                    const std::vector<OpReq>& req, const std::vector<TBlob>& outputs)>;
// Fills unknown shapes from known ones, in both directions. Returns true when every shape
// is known afterwards; throws kShape naming the operator, the input and both shapes on a
// mismatch.
using FInferShape = std::function<bool(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out)>;
using FInferType = std::function<bool(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out)>;
// Pairs (input index, output index) that may share memory.
using FInplaceOption = std::function<std::vector<std::pair<int, int>>(const NodeAttrs& attrs)>;
using FResourceRequest = std::function<std::vector<ResourceRequest>(const NodeAttrs& attrs)>;
using FListNames = std::function<std::vector<std::string>(const NodeAttrs& attrs)>;
// Inputs the operator writes (auxiliary states such as BatchNorm's moving mean).
using FMutateInputs = std::function<std::vector<int>(const NodeAttrs& attrs)>;
using FNumVisibleOutputs = std::function<int(const NodeAttrs& attrs)>;
using TOpPattern = OpPattern;
// What a pointwise operator computes on contiguous runs of float32 or float64 values, for
// the fusion pass, which runs a chain of them tile by tile in one loop: out[k] = f(a[k]),
// f(a[k], b[k]) or f(a[k], s) (b is null when unused; s is the scalar parameter).
struct PointwiseFn {
  void (*f32)(const float* a, const float* b, double s, float* out, int64_t n) = nullptr;
  void (*f64)(const double* a, const double* b, double s, double* out, int64_t n) = nullptr;
  // The scalar `s` of a node of this operator (null for operators without one).
  double (*scalar)(const NodeAttrs& attrs) = nullptr;
};

// ---------------------------------------------------------------- gradients as more graph
// A gradient is written once, as calls to registered operators on opaque values. The
// graph pass runs it with values that are graph entries; autograd runs it with values
// that are arrays. Which inputs and outputs a gradient touches is found by running it on
// a recording builder, so nothing else has to declare backward dependencies.
struct GradValue {
  int64_t id = -1;
  bool defined() const { return id >= 0; }
};

class GradBuilder {
 public:
  virtual ~GradBuilder() = default;
  // Applies operator `op` to `inputs` with string parameters; returns every output.
  virtual std::vector<GradValue> Call(const std::string& op, const std::vector<GradValue>& inputs,
                                      const KwArgs& params = {}) = 0;
  // Convenience for single-output operators.
  GradValue Op(const std::string& op, const std::vector<GradValue>& inputs, const KwArgs& params = {}) {
    return Call(op, inputs, params)[0];
  }
};

struct GradArgs {
  std::vector<GradValue> inputs;     // the forward inputs
  std::vector<GradValue> outputs;    // the forward outputs
  std::vector<GradValue> out_grads;  // gradients flowing into each forward output
};

// Returns one value per forward input; an undefined value means "no gradient" (an
// integer input, an index, a label).
using FGradient = std::function<std::vector<GradValue>(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& args)>;

// ---------------------------------------------------------------- OpMap
class OpMapBase {
 public:
  virtual ~OpMapBase() = default;
};

template <typename T>
class OpMap : public OpMapBase {
 public:
  bool Contains(const Op* op) const;
  const T& operator[](const Op* op) const;
  // The value for op, or `def` when op has none.
  const T& Get(const Op* op, const T& def) const;

 private:
  friend class Op;
  std::string attr_name_;
  std::vector<std::pair<T, int>> data_;  // (value, priority); priority 0 = unset
};

struct ArgumentInfo {
  std::string name;
  std::string type;  // "NDArray-or-Symbol", "NDArray-or-Symbol[]" for variadic
  std::string doc;
};

class Op {
 public:
  std::string name;
  std::string description;
  uint32_t index = 0;
  std::vector<ArgumentInfo> arguments;
  std::vector<std::string> aliases;
  const ParamSchemaBase* param_schema = nullptr;
  std::string key_var_num_args;
  // Parses attrs->dict into attrs->parsed.
  std::function<void(NodeAttrs* attrs)> attr_parser;

  Op& Describe(const std::string& doc) { description = doc; return *this; }
  Op& SetNumInputs(int n) { num_inputs_ = n; get_num_inputs_ = nullptr; return *this; }
  Op& SetNumInputs(std::function<int(const NodeAttrs&)> fn) { get_num_inputs_ = std::move(fn); return *this; }
  Op& SetNumOutputs(int n) { num_outputs_ = n; get_num_outputs_ = nullptr; return *this; }
  Op& SetNumOutputs(std::function<int(const NodeAttrs&)> fn) { get_num_outputs_ = std::move(fn); return *this; }
  Op& AddArgument(const std::string& arg, const std::string& type, const std::string& doc) {
    arguments.push_back({arg, type, doc});
    return *this;
  }
  Op& AddAlias(const std::string& alias);
  // For operators with a variable number of inputs: the parameter that counts them.
  Op& SetKeyVarNumArgs(const std::string& key) { key_var_num_args = key; return *this; }
  template <typename P>
  Op& SetParams() {
    const ParamSchema<P>& schema = SchemaOf<P>();
    param_schema = &schema;
    std::string op_name = name;
    attr_parser = [&schema, op_name](NodeAttrs* attrs) { attrs->parsed = schema.Parse(op_name, attrs->dict); };
    return *this;
  }
  // Applies a shared attribute set registered with WEFT_REGISTER_OP_GROUP. Attributes the
  // operator sets itself take precedence over the group's, whatever the order.
  Op& Include(const std::string& group);

  template <typename T>
  Op& SetAttr(const std::string& attr, const T& value, int priority = 10);

  int NumInputs(const NodeAttrs& attrs) const { return get_num_inputs_ ? get_num_inputs_(attrs) : num_inputs_; }
  int NumOutputs(const NodeAttrs& attrs) const { return get_num_outputs_ ? get_num_outputs_(attrs) : num_outputs_; }
  bool variadic_inputs() const { return static_cast<bool>(get_num_inputs_); }

  // Looks an operator up by name or alias; throws kNotFound naming it when unknown.
  static const Op* Get(const std::string& name);
  // nullptr when unknown.
  static const Op* Find(const std::string& name);
  static std::vector<std::string> ListNames();  // primary names, sorted
  template <typename T>
  static const OpMap<T>& GetAttr(const std::string& attr);

 private:
  friend class OpRegistry;
  int num_inputs_ = 1;
  int num_outputs_ = 1;
  std::function<int(const NodeAttrs&)> get_num_inputs_;
  std::function<int(const NodeAttrs&)> get_num_outputs_;
  std::vector<std::string> groups_;
};

// A named set of attributes that many operators share ("ElemwiseUnary", "Broadcast").
class OpGroup {
 public:
  std::string name;
  template <typename T>
  OpGroup& SetAttr(const std::string& attr, const T& value) {
    setters_.push_back([attr, value](Op& op) { op.SetAttr<T>(attr, value, 1); });
    return *this;
  }
  void ApplyTo(Op& op) const { for (const auto& s : setters_) s(op); }

 private:
  std::vector<std::function<void(Op&)>> setters_;
};

class OpRegistry {
 public:
  static OpRegistry* Get();
  // Returns the entry of `name`, creating it on first use, so that a backend file (a .cu
  // adding FCompute<gpu>, say) can add attributes to an operator defined elsewhere.
  Op& Register(const std::string& name);
  OpGroup& RegisterGroup(const std::string& name);
  const Op* Find(const std::string& name);
  std::vector<std::string> ListNames();
  void AddAlias(Op* op, const std::string& alias);
  uint32_t NumOps();

  // Attribute storage, shared by every OpMap.
  OpMapBase* GetOrCreateMap(const std::string& attr, std::type_index type, const std::function<OpMapBase*()>& make);

 private:
  void Finalize();

  std::recursive_mutex mu_;
  std::vector<std::unique_ptr<Op>> ops_;
  std::unordered_map<std::string, Op*> by_name_;
  std::unordered_map<std::string, std::unique_ptr<OpGroup>> groups_;
  std::unordered_map<std::string, std::pair<std::type_index, std::unique_ptr<OpMapBase>>> maps_;
  bool finalized_ = false;
};

// Builds the parsed attributes of a call of `op` from string parameters (its parameter
// struct's parser; an operator without parameters keeps the keys unread, as MXNet does).
// Every layer that makes nodes or calls (graphs, JSON, gradients, the imperative path)
// goes through it.
NodeAttrs MakeAttrs(const Op* op, KwArgs kwargs);

// The type rule of operators without FInferType: every input and output shares one dtype.
bool SameTypeEverywhere(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out);

// ---------------------------------------------------------------- templates
template <typename T>
bool OpMap<T>::Contains(const Op* op) const {
  return op != nullptr && op->index < data_.size() && data_[op->index].second > 0;
}

template <typename T>
const T& OpMap<T>::operator[](const Op* op) const {
  if (!Contains(op))
    Throw(ErrorKind::kNotFound, "Operator '", op ? op->name : std::string("(null)"), "' has no attribute '",
          attr_name_, "'");
  return data_[op->index].first;
}

template <typename T>
const T& OpMap<T>::Get(const Op* op, const T& def) const {
  return Contains(op) ? data_[op->index].first : def;
}

template <typename T>
const OpMap<T>& Op::GetAttr(const std::string& attr) {
  OpMapBase* base = OpRegistry::Get()->GetOrCreateMap(attr, std::type_index(typeid(T)), [attr] {
    auto* m = new OpMap<T>();
    m->attr_name_ = attr;
    return m;
  });
  return *static_cast<OpMap<T>*>(base);
}

template <typename T>
Op& Op::SetAttr(const std::string& attr, const T& value, int priority) {
  auto& map = const_cast<OpMap<T>&>(GetAttr<T>(attr));
  if (map.data_.size() <= index) map.data_.resize(index + 1, std::make_pair(T(), 0));
  auto& slot = map.data_[index];
  if (priority >= slot.second) slot = std::make_pair(value, priority);
  return *this;
}

}  // namespace weft

#define WEFT_REGISTRY_CONCAT_(a, b) a##b
#define WEFT_REGISTRY_CONCAT(a, b) WEFT_REGISTRY_CONCAT_(a, b)

// WEFT_REGISTER_OP(name) starts (or continues, from another file) the attribute chain of
// an operator.
#define WEFT_REGISTER_OP(opname)                                                               \
  static ::weft::Op& WEFT_REGISTRY_CONCAT(__weft_op_, WEFT_REGISTRY_CONCAT(opname, __COUNTER__)) \
      __attribute__((unused)) = ::weft::OpRegistry::Get()->Register(#opname)

#define WEFT_REGISTER_OP_GROUP(gname)                                                                   \
  static ::weft::OpGroup& WEFT_REGISTRY_CONCAT(__weft_group_, WEFT_REGISTRY_CONCAT(gname, __COUNTER__)) \
      __attribute__((unused)) = ::weft::OpRegistry::Get()->RegisterGroup(#gname)
