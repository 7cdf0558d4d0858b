// The autograd functions of the C API (c_api.h, "autograd").
#include <memory>
#include <string>
#include <vector>

#include "c_api/src/c_api_common.h"
#include "core/imperative/autograd.h"

using namespace weft;        // NOLINT
using namespace weft::capi;  // NOLINT

namespace {

// Owns the user data of a recorded function: released with the recorded call.
struct UserData {
  void* data;
  weft_autograd_release_fn release;
  ~UserData() {
    if (release) release(data);
  }
};

}  // namespace

extern "C" {

weft_status_t weft_autograd_set_is_recording(int is_recording, int* out) {
  WEFT_API_BEGIN
  bool prev = autograd::SetIsRecording(is_recording != 0);
  if (out) *out = prev ? 1 : 0;
  WEFT_API_END
}

weft_status_t weft_autograd_is_recording(int* out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = autograd::IsRecording() ? 1 : 0;
  WEFT_API_END
}

weft_status_t weft_autograd_mark_variables(int num, weft_ndarray_t* const* vars, const char* const* grad_reqs,
                                           weft_ndarray_t* const* grads) {
  WEFT_API_BEGIN
  ReadArrayList(num, "num", vars, false, "vars", __func__);
  WEFT_CHECK(num == 0 || grad_reqs != nullptr, kValue, __func__, ": 'grad_reqs' is NULL but num is ", num);
  std::vector<NDArray*> targets;
  std::vector<OpReq> reqs;
  for (int i = 0; i < num; ++i) {
    std::string arg = "vars[" + std::to_string(i) + "]";
    targets.push_back(&Arr(vars[i], arg.c_str(), __func__));
    reqs.push_back(ParseGradReq(grad_reqs[i], "grad_reqs", i, __func__));
  }
  if (grads == nullptr) {
    // Allowed only where no gradient is asked for; say so here, naming the argument.
    for (int i = 0; i < num; ++i)
      WEFT_CHECK(reqs[i] == OpReq::kNullOp, kValue, __func__, ": 'grads' is NULL but grad_reqs[", i, "] is '",
                 grad_reqs[i], "' (only \"null\" needs no gradient array)");
  }
  std::vector<NDArray> g =
      grads ? ReadArrayList(num, "num", grads, true, "grads", __func__) : std::vector<NDArray>(num);
  autograd::MarkVariables(targets, g, reqs);
  WEFT_API_END
}

weft_status_t weft_autograd_backward(int num_heads, weft_ndarray_t* const* heads, weft_ndarray_t* const* head_grads,
                                     int num_variables, weft_ndarray_t* const* variables, int retain_graph,
                                     int create_graph, int is_train, int* num_outputs,
                                     weft_ndarray_t* const** outputs) {
  WEFT_API_BEGIN
  WEFT_OUT(num_outputs);
  WEFT_OUT(outputs);
  std::vector<NDArray> h = ReadArrayList(num_heads, "num_heads", heads, false, "heads", __func__);
  std::vector<NDArray> hg = head_grads ? ReadArrayList(num_heads, "num_heads", head_grads, true, "head_grads", __func__)
                                       : std::vector<NDArray>(h.size());
  std::vector<NDArray> v = ReadArrayList(num_variables, "num_variables", variables, false, "variables", __func__);
  std::vector<NDArray> grads =
      autograd::Backward(h, hg, v, retain_graph != 0, create_graph != 0, is_train != 0);
  thread_local std::vector<weft_ndarray_t*> result;
  result.clear();
  for (auto& g : grads) result.push_back(NewArrHandle(std::move(g)));
  *num_outputs = static_cast<int>(result.size());
  *outputs = result.data();
  WEFT_API_END
}

weft_status_t weft_ndarray_get_grad(const weft_ndarray_t* arr, weft_ndarray_t** out) {
  WEFT_API_BEGIN
  const NDArray& a = WEFT_ARR(arr);
  WEFT_OUT(out);
  const auto& node = a.ag_node();
  bool has = node && node->is_variable() && node->grad_req != OpReq::kNullOp && !node->grad.is_none();
  *out = has ? NewArrHandle(node->grad) : nullptr;
  WEFT_API_END
}

weft_status_t weft_ndarray_get_grad_state(const weft_ndarray_t* arr, int* out) {
  WEFT_API_BEGIN
  const NDArray& a = WEFT_ARR(arr);
  WEFT_OUT(out);
  const auto& node = a.ag_node();
  *out = node && node->is_variable() && node->fresh_grad.load() ? 1 : 0;
  WEFT_API_END
}

weft_status_t weft_ndarray_set_grad_state(weft_ndarray_t* arr, int state) {
  WEFT_API_BEGIN
  const NDArray& a = WEFT_ARR(arr);
  const auto& node = a.ag_node();
  WEFT_CHECK(node && node->is_variable(), kValue,
             "weft_ndarray_set_grad_state: expected an array marked for gradients (attach_grad or "
             "mark_variables), got one that is not a variable");
  node->fresh_grad = state != 0;
  WEFT_API_END
}

weft_status_t weft_ndarray_has_history(const weft_ndarray_t* arr, int* out) {
  WEFT_API_BEGIN
  const NDArray& a = WEFT_ARR(arr);
  WEFT_OUT(out);
  *out = a.ag_node() ? 1 : 0;
  WEFT_API_END
}

weft_status_t weft_ndarray_detach(const weft_ndarray_t* arr, weft_ndarray_t** out) {
  WEFT_API_BEGIN
  NDArray a = WEFT_ARR(arr);
  WEFT_OUT(out);
  a.set_ag(nullptr, 0);
  *out = NewArrHandle(std::move(a));
  WEFT_API_END
}

weft_status_t weft_autograd_record_function(const char* name, int num_inputs, weft_ndarray_t* const* inputs,
                                            int num_outputs, weft_ndarray_t* const* outputs,
                                            weft_autograd_backward_fn backward, weft_autograd_release_fn release,
                                            void* user_data) {
  std::shared_ptr<UserData> user(new UserData{user_data, release});
  WEFT_API_BEGIN
  WEFT_CHECK(name != nullptr, kValue, __func__, ": 'name' is NULL");
  WEFT_CHECK(backward != nullptr, kValue, __func__, ": 'backward' is NULL");
  std::vector<NDArray> ins = ReadArrayList(num_inputs, "num_inputs", inputs, false, "inputs", __func__);
  std::vector<NDArray> outs = ReadArrayList(num_outputs, "num_outputs", outputs, false, "outputs", __func__);
  bool any = false;
  for (const auto& a : ins) any = any || a.ag_node() != nullptr;
  if (!autograd::IsRecording() || !any) return WEFT_OK;
  std::string fn_name = name;
  autograd::RecordCustom(
      fn_name, ins, &outs,
      [backward, user, fn_name, num_inputs](const std::vector<NDArray>& out_grads) {
        // Runs inside the backward pass, perhaps on another thread than any C API call: the
        // handles it looks up are unpinned when it returns.
        PinScope pins;
        std::vector<weft_ndarray_t*> og;
        for (const auto& g : out_grads) og.push_back(NewArrHandle(g));
        std::vector<weft_ndarray_t*> ig(num_inputs, nullptr);
        int rc = backward(static_cast<int>(og.size()), og.data(), num_inputs, ig.data(), user->data);
        for (auto* h : og) NDArrayTable::Get().Free(h, "out_grads", "autograd backward");
        std::vector<NDArray> r(num_inputs);
        for (int i = 0; i < num_inputs; ++i) {
          if (ig[i] == nullptr) continue;
          if (rc == 0) r[i] = Arr(ig[i], "in_grads", "autograd backward");
          NDArrayTable::Get().Free(ig[i], "in_grads", "autograd backward");
        }
        WEFT_CHECK(rc == 0, kRuntime, "the backward of autograd.Function '", fn_name, "' failed (status ", rc, ")");
        return r;
      });
  for (int i = 0; i < num_outputs; ++i) Arr(outputs[i], "outputs", __func__).set_ag(outs[i].ag_node(), outs[i].ag_index());
  WEFT_API_END
}

}  // extern "C"
