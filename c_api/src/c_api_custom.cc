// Custom operators through C callbacks: weft_custom_op_register wraps a creator and the
// tables of functions it fills as the core's custom::Prop and custom::Operator.
#include <atomic>
#include <cstring>

#include "c_api/src/c_api_common.h"
#include "core/imperative/imperative.h"
#include "core/op/custom/custom.h"

namespace weft {
namespace capi {
namespace {

// A callback's failure: its message (weft_set_last_error on the callback's thread), or the
// status when it left none.
[[noreturn]] void ThrowCallbackError(const std::string& op_type, const char* what, int rc) {
  std::string msg = LastErrorMessage();
  if (msg.empty()) msg = "failed with status " + std::to_string(rc);
  Throw(ErrorKind::kRuntime, "Custom operator '", op_type, "' ", what, ": ", msg);
}

#define WEFT_CALLBACK(op_type, what, call)            \
  do {                                                \
    SetLastError(WEFT_OK, "");                        \
    int rc_ = (call);                                 \
    if (rc_ != 0) ThrowCallbackError(op_type, what, rc_); \
  } while (0)

// Set by weft_custom_op_stop_releases: the front end's release callbacks can no longer run.
std::atomic<bool> g_releases_stopped{false};

void CallRelease(weft_custom_release_fn release, void* self) {
  if (release && !g_releases_stopped.load(std::memory_order_acquire)) release(self);
}

class CallbackOperator final : public custom::Operator {
 public:
  CallbackOperator(std::string op_type, weft_custom_op_fns_t fns) : op_type_(std::move(op_type)), fns_(fns) {
    WEFT_CHECK(fns_.forward != nullptr && fns_.backward != nullptr, kValue, "Custom operator '", op_type_,
               "': create_operator must set forward and backward");
  }
  ~CallbackOperator() override {
    CallRelease(fns_.release, fns_.self);
  }

  void Forward(bool is_train, const std::vector<custom::TaggedArray>& arrays) override {
    Run(fns_.forward, "forward", is_train, arrays);
  }
  void Backward(bool is_train, const std::vector<custom::TaggedArray>& arrays) override {
    Run(fns_.backward, "backward", is_train, arrays);
  }

 private:
  void Run(weft_custom_run_fn fn, const char* what, bool is_train, const std::vector<custom::TaggedArray>& arrays) {
    std::vector<weft_ndarray_t*> handles;
    std::vector<int> tags, reqs;
    for (const auto& t : arrays) {
      handles.push_back(t.array.is_none() ? nullptr : NewArrHandle(t.array));
      tags.push_back(static_cast<int>(t.tag));
      reqs.push_back(static_cast<int>(t.req));
    }
    // The front end's code reads the training mode (a Dropout inside, say) as the call had it.
    bool prev = imperative::SetIsTraining(is_train);
    int rc = fn(fns_.self, is_train ? 1 : 0, static_cast<int>(handles.size()), handles.data(), tags.data(),
                reqs.data());
    imperative::SetIsTraining(prev);
    if (rc != 0) ThrowCallbackError(op_type_, what, rc);
  }

  std::string op_type_;
  weft_custom_op_fns_t fns_;
};

class CallbackProp final : public custom::Prop {
 public:
  CallbackProp(std::string op_type, weft_custom_prop_fns_t fns) : op_type_(std::move(op_type)), fns_(fns) {
    WEFT_CHECK(fns_.list_arguments && fns_.list_outputs && fns_.list_auxiliary_states && fns_.infer_shape &&
                   fns_.infer_type && fns_.declare_backward_dependency && fns_.create_operator,
               kValue, "Custom operator '", op_type_, "': its creator left a callback of the property unset");
  }
  ~CallbackProp() override {
    CallRelease(fns_.release, fns_.self);
  }

  std::vector<std::string> ListArguments() override { return List(fns_.list_arguments, "list_arguments"); }
  std::vector<std::string> ListOutputs() override { return List(fns_.list_outputs, "list_outputs"); }
  std::vector<std::string> ListAuxiliaryStates() override {
    return List(fns_.list_auxiliary_states, "list_auxiliary_states");
  }

  bool InferShape(std::vector<Shape>* shapes) override {
    int n = static_cast<int>(shapes->size());
    std::vector<int> ndims(n, -1);
    std::vector<const int64_t*> dims(n, nullptr);
    for (int i = 0; i < n; ++i) {
      ndims[i] = (*shapes)[i].ndim();
      dims[i] = (*shapes)[i].begin();
    }
    WEFT_CALLBACK(op_type_, "infer_shape", fns_.infer_shape(fns_.self, n, ndims.data(), dims.data()));
    for (int i = 0; i < n; ++i) {
      WEFT_CHECK(ndims[i] >= 0 && ndims[i] <= WEFT_MAX_NDIM && (ndims[i] == 0 || dims[i] != nullptr), kValue,
                 "Custom operator '", op_type_, "': infer_shape gave entry ", i, " a rank of ", ndims[i]);
      (*shapes)[i] = Shape(dims[i], dims[i] + ndims[i]);
    }
    return true;
  }

  bool InferType(std::vector<DType>* types) override {
    std::vector<int> t;
    for (DType d : *types) t.push_back(d == DType::kUnknown ? -1 : static_cast<int>(d));
    WEFT_CALLBACK(op_type_, "infer_type", fns_.infer_type(fns_.self, static_cast<int>(t.size()), t.data()));
    for (size_t i = 0; i < t.size(); ++i) {
      // -1 leaves the entry unknown (MXNet's None), for graph inference to find.
      WEFT_CHECK(t[i] >= -1, kType, "Custom operator '", op_type_, "': infer_type gave entry ", i, " the dtype code ",
                 t[i]);
      (*types)[i] = t[i] < 0 ? DType::kUnknown : static_cast<DType>(t[i]);
      if (t[i] >= 0) DTypeSize((*types)[i]);  // rejects a number that is no dtype
    }
    return true;
  }

  void DeclareBackwardDependency(std::vector<bool>* out_grad, std::vector<bool>* in_data,
                                 std::vector<bool>* out_data) override {
    std::vector<int> og(out_grad->size(), 0), id(in_data->size(), 0), od(out_data->size(), 0);
    WEFT_CALLBACK(op_type_, "declare_backward_dependency",
                  fns_.declare_backward_dependency(fns_.self, og.data(), id.data(), od.data()));
    for (size_t i = 0; i < og.size(); ++i) (*out_grad)[i] = og[i] != 0;
    for (size_t i = 0; i < id.size(); ++i) (*in_data)[i] = id[i] != 0;
    for (size_t i = 0; i < od.size(); ++i) (*out_data)[i] = od[i] != 0;
  }

  bool NeedTopGrad() override { return fns_.need_top_grad != 0; }

  std::unique_ptr<custom::Operator> CreateOperator(Context ctx, const std::vector<Shape>& shapes,
                                                   const std::vector<DType>& types) override {
    int n = static_cast<int>(shapes.size());
    std::vector<int> ndims, dtypes;
    std::vector<const int64_t*> dims;
    for (int i = 0; i < n; ++i) {
      ndims.push_back(shapes[i].ndim());
      dims.push_back(shapes[i].begin());
      dtypes.push_back(static_cast<int>(types[i]));
    }
    weft_custom_op_fns_t fns{};
    WEFT_CALLBACK(op_type_, "create_operator",
                  fns_.create_operator(fns_.self, FromContext(ctx), n, ndims.data(), dims.data(), dtypes.data(), &fns));
    return std::make_unique<CallbackOperator>(op_type_, fns);
  }

 private:
  std::vector<std::string> List(weft_custom_list_fn fn, const char* what) {
    int n = 0;
    const char* const* names = nullptr;
    WEFT_CALLBACK(op_type_, what, fn(fns_.self, &n, &names));
    WEFT_CHECK(n >= 0 && n <= WEFT_MAX_COUNT && (n == 0 || names != nullptr), kValue, "Custom operator '", op_type_,
               "': ", what, " gave ", n, " names");
    std::vector<std::string> r;
    for (int i = 0; i < n; ++i) {
      WEFT_CHECK(names[i] != nullptr, kValue, "Custom operator '", op_type_, "': ", what, " gave a NULL name");
      r.emplace_back(names[i]);
    }
    return r;
  }

  std::string op_type_;
  weft_custom_prop_fns_t fns_;
};

}  // namespace
}  // namespace capi
}  // namespace weft

using namespace weft;
using namespace weft::capi;

extern "C" {

weft_status_t weft_set_last_error(const char* message) { return SetLastError(WEFT_OK, message); }

weft_status_t weft_custom_op_stop_releases(void) {
  WEFT_API_BEGIN
  g_releases_stopped.store(true, std::memory_order_release);
  WEFT_API_END
}

weft_status_t weft_custom_op_register(const char* op_type, weft_custom_creator_fn creator, void* user_data) {
  WEFT_API_BEGIN
  WEFT_CHECK(op_type != nullptr && *op_type != '\0', kValue, __func__, ": 'op_type' is NULL or empty");
  WEFT_CHECK(creator != nullptr, kValue, __func__, ": 'creator' is NULL");
  custom::Register(op_type, [creator, user_data](const std::string& type, const KwArgs& kwargs) {
    std::vector<const char*> keys, vals;
    for (const auto& kv : kwargs) {
      keys.push_back(kv.first.c_str());
      vals.push_back(kv.second.c_str());
    }
    weft_custom_prop_fns_t fns{};
    WEFT_CALLBACK(type, "creator",
                  creator(type.c_str(), static_cast<int>(keys.size()), keys.data(), vals.data(), &fns, user_data));
    return std::make_shared<CallbackProp>(type, fns);
  });
  WEFT_API_END
}

}  // extern "C"
