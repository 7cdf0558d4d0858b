// The prediction API (weft/c_predict_api.h): a symbol bound without gradients, its
// parameters copied in from .params bytes, inputs and outputs exchanged as float32 host
// buffers. It only needs the graph, the executor, the forward operators and the NDArray
// list reader, so that the predict-only library (WEFT_PREDICT_ONLY) can carry it alone.
#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "c_api/src/c_api_common.h"
#include "core/executor/executor.h"
#include "core/graph/json.h"
#include "core/graph/symbol.h"
#include "core/ndarray/serialize.h"
#include "weft/c_predict_api.h"

namespace weft {
namespace capi {
namespace {

struct Predictor {
  graph::Symbol symbol;
  std::shared_ptr<executor::Executor> executor;
  // Input name -> its index among the arguments.
  std::unordered_map<std::string, size_t> inputs;
  // The dims weft_pred_get_output_shape hands out.
  std::vector<int64_t> shape_buf;
};

struct NDList {
  std::vector<std::string> names;
  std::vector<std::vector<float>> data;
  std::vector<std::vector<int64_t>> shapes;
};

using PredictorTable = HandleTable<Predictor, HandleKind::kPredictor>;
using NDListTable = HandleTable<NDList, HandleKind::kNDList>;

Predictor& Pred(const weft_predictor_t* h, const char* arg, const char* fn) {
  return PredictorTable::Get().Ref(h, arg, fn);
}

// The (name, shape) pairs of num_inputs inputs in the CSR form of MXNet's predict API.
std::vector<std::pair<std::string, Shape>> ReadInputShapes(int num_inputs, const char* const* keys,
                                                           const int64_t* indptr, const int64_t* dims,
                                                           const char* fn) {
  std::vector<std::string> names = ReadStrings(num_inputs, keys, "input_keys", "num_inputs", fn);
  WEFT_CHECK(indptr != nullptr, kValue, fn, ": 'input_shape_indptr' is NULL (expected num_inputs + 1 offsets)");
  WEFT_CHECK(indptr[0] == 0, kValue, fn, ": input_shape_indptr[0] must be 0, got ", indptr[0]);
  std::vector<std::pair<std::string, Shape>> result;
  for (int i = 0; i < num_inputs; ++i) {
    const int64_t begin = indptr[i], end = indptr[i + 1];
    WEFT_CHECK(end >= begin && end - begin <= WEFT_MAX_NDIM, kValue, fn, ": input '", names[i],
               "' has ", end - begin, " dims (input_shape_indptr[", i, "] = ", begin, ", [", i + 1, "] = ", end,
               "); expected 0 to ", WEFT_MAX_NDIM);
    WEFT_CHECK(end == begin || dims != nullptr, kValue, fn, ": 'input_shape_data' is NULL");
    for (int64_t d = begin; d < end; ++d)
      WEFT_CHECK(dims[d] > 0, kShape, fn, ": input '", names[i], "' has dim ", dims[d], " (expected > 0)");
    for (const auto& r : result)
      WEFT_CHECK(r.first != names[i], kValue, fn, ": input '", names[i], "' is given twice");
    result.emplace_back(names[i], Shape(dims + begin, dims + end));
  }
  return result;
}

// The outputs named by `keys` among the internal outputs of `sym`: a node name means its
// first output, as MXNet's partial-output predictor reads it.
graph::Symbol PickOutputs(const graph::Symbol& sym, int num_outputs, const char* const* keys, const char* fn) {
  std::vector<std::string> wanted = ReadStrings(num_outputs, keys, "output_keys", "num_outputs", fn);
  WEFT_CHECK(num_outputs > 0, kValue, fn, ": 'num_outputs' must be positive, got ", num_outputs);
  graph::Symbol internals = sym.GetInternals();
  std::vector<std::string> names = internals.ListOutputs();
  std::vector<graph::Symbol> picked;
  for (const std::string& key : wanted) {
    auto it = std::find(names.begin(), names.end(), key);
    if (it == names.end()) it = std::find(names.begin(), names.end(), key + "_output");
    WEFT_CHECK(it != names.end(), kNotFound, fn, ": the graph has no output or node named '", key, "'");
    picked.push_back(internals[static_cast<size_t>(it - names.begin())]);
  }
  return graph::Symbol::Group(picked);
}

// The .params entries by argument or auxiliary name ("arg:w", "aux:m" or bare "w").
void ReadParams(const void* data, size_t size, std::unordered_map<std::string, NDArray>* args,
                std::unordered_map<std::string, NDArray>* aux, const char* fn) {
  CheckBuffer(data, size, "params", "params_size", fn);
  if (size == 0) return;
  NDArrayFile file = LoadNDArrayList(data, size, "params");
  WEFT_CHECK(file.names.size() == file.arrays.size(), kValue, fn,
             ": the params hold an unnamed list of ", file.arrays.size(), " arrays (expected names)");
  for (size_t i = 0; i < file.arrays.size(); ++i) {
    const std::string& name = file.names[i];
    if (name.rfind("aux:", 0) == 0) {
      (*aux)[name.substr(4)] = file.arrays[i];
    } else if (name.rfind("arg:", 0) == 0) {
      (*args)[name.substr(4)] = file.arrays[i];
    } else {
      (*args)[name] = file.arrays[i];
      (*aux)[name] = file.arrays[i];
    }
  }
}

// Copies the parameters into the bound arrays of one kind; every one must be found.
void FillParams(const std::vector<std::string>& names, const std::vector<NDArray>& bound,
                const std::unordered_map<std::string, NDArray>& params,
                const std::unordered_map<std::string, size_t>& inputs, const char* what, const char* fn) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (inputs.count(names[i])) continue;
    auto it = params.find(names[i]);
    WEFT_CHECK(it != params.end(), kNotFound, fn, ": ", what, " '", names[i],
               "' is neither an input nor in the params");
    WEFT_CHECK(it->second.shape() == bound[i].shape(), kShape, fn, ": ", what, " '", names[i], "' has shape ",
               it->second.shape().ToString(), " in the params, but the graph needs ", bound[i].shape().ToString());
    WEFT_CHECK(it->second.dtype() == bound[i].dtype(), kType, fn, ": ", what, " '", names[i], "' is ",
               DTypeName(it->second.dtype()), " in the params, but the graph needs ", DTypeName(bound[i].dtype()));
    CopyFromTo(it->second, bound[i]);
  }
}

weft_predictor_t* NewPredictor(Predictor p) {
  return reinterpret_cast<weft_predictor_t*>(PredictorTable::Get().Create(std::move(p)));
}

weft_status_t Create(const char* symbol_json, const void* params, size_t params_size, weft_context_t ctx,
                     int num_inputs, const char* const* input_keys, const int64_t* input_shape_indptr,
                     const int64_t* input_shape_data, int num_outputs, const char* const* output_keys,
                     weft_predictor_t** out, const char* fn) {
  WEFT_API_BEGIN
  CheckOut(out, "out", fn);
  WEFT_CHECK(symbol_json != nullptr, kValue, fn, ": 'symbol_json' is NULL");
  Context context = ToContext(ctx, fn);
  auto inputs = ReadInputShapes(num_inputs, input_keys, input_shape_indptr, input_shape_data, fn);
  graph::Symbol sym = graph::LoadJSON(symbol_json, "symbol_json");
  if (output_keys != nullptr || num_outputs != 0) sym = PickOutputs(sym, num_outputs, output_keys, fn);
  std::unordered_map<std::string, NDArray> arg_params, aux_params;
  ReadParams(params, params_size, &arg_params, &aux_params, fn);

  Predictor p;
  const std::vector<std::string> arg_names = sym.ListArguments();
  const std::vector<std::string> aux_names = sym.ListAuxiliaryStates();
  std::unordered_map<std::string, Shape> shapes;
  std::unordered_map<std::string, DType> dtypes;
  for (const auto& in : inputs) {
    auto it = std::find(arg_names.begin(), arg_names.end(), in.first);
    WEFT_CHECK(it != arg_names.end(), kNotFound, fn, ": input '", in.first, "' is not an argument of the graph");
    p.inputs[in.first] = static_cast<size_t>(it - arg_names.begin());
    shapes[in.first] = in.second;
  }
  // Parameters fix their own shapes and dtypes (a float16 model stays float16).
  for (const auto& names_params : {std::make_pair(&arg_names, &arg_params), std::make_pair(&aux_names, &aux_params)})
    for (const std::string& name : *names_params.first) {
      auto it = names_params.second->find(name);
      if (p.inputs.count(name) || it == names_params.second->end()) continue;
      shapes[name] = it->second.shape();
      dtypes[name] = it->second.dtype();
    }
  p.executor = executor::Executor::SimpleBind(sym, context, {}, shapes, dtypes, {OpReq::kNullOp});
  FillParams(arg_names, p.executor->arg_arrays(), arg_params, p.inputs, "argument", fn);
  FillParams(aux_names, p.executor->aux_arrays(), aux_params, p.inputs, "auxiliary state", fn);
  p.symbol = std::move(sym);
  *out = NewPredictor(std::move(p));
  WEFT_API_END
}

// Host copies in and out convert between float32 and the array's dtype.
void CopyIn(const NDArray& arr, const float* data, size_t n) {
  if (arr.dtype() == DType::kFloat32) {
    arr.SyncCopyFromCPU(data, n * sizeof(float));
    return;
  }
  WEFT_TYPE_SWITCH(arr.dtype(), DT, {
    // Not a std::vector: vector<bool> has no data().
    std::unique_ptr<DT[]> host(new DT[n]);
    for (size_t i = 0; i < n; ++i) host[i] = static_cast<DT>(data[i]);
    arr.SyncCopyFromCPU(host.get(), n * sizeof(DT));
  })
}

void CopyOut(const NDArray& arr, float* data, size_t n) {
  if (arr.dtype() == DType::kFloat32) {
    arr.SyncCopyToCPU(data, n * sizeof(float));
    return;
  }
  WEFT_TYPE_SWITCH(arr.dtype(), DT, {
    std::unique_ptr<DT[]> host(new DT[n]);
    arr.SyncCopyToCPU(host.get(), n * sizeof(DT));
    for (size_t i = 0; i < n; ++i) data[i] = static_cast<float>(host[i]);
  })
}

const NDArray& Output(const Predictor& p, int index, const char* fn) {
  const auto& outs = p.executor->outputs();
  WEFT_CHECK(index >= 0 && static_cast<size_t>(index) < outs.size(), kIndex, fn, ": output index ", index,
             " is out of range (the predictor has ", outs.size(), " outputs)");
  return outs[static_cast<size_t>(index)];
}

}  // namespace
}  // namespace capi
}  // namespace weft

using namespace weft;        // NOLINT
using namespace weft::capi;  // NOLINT

weft_status_t weft_pred_create(const char* symbol_json, const void* params, size_t params_size, weft_context_t ctx,
                               int num_inputs, const char* const* input_keys, const int64_t* input_shape_indptr,
                               const int64_t* input_shape_data, weft_predictor_t** out) {
  return Create(symbol_json, params, params_size, ctx, num_inputs, input_keys, input_shape_indptr, input_shape_data,
                0, nullptr, out, __func__);
}

weft_status_t weft_pred_create_partial_out(const char* symbol_json, const void* params, size_t params_size,
                                           weft_context_t ctx, int num_inputs, const char* const* input_keys,
                                           const int64_t* input_shape_indptr, const int64_t* input_shape_data,
                                           int num_outputs, const char* const* output_keys, weft_predictor_t** out) {
  if (output_keys == nullptr && num_outputs == 0)
    return SetLastError(WEFT_ERR_VALUE, "weft_pred_create_partial_out: no output_keys given (num_outputs is 0)");
  return Create(symbol_json, params, params_size, ctx, num_inputs, input_keys, input_shape_indptr, input_shape_data,
                num_outputs, output_keys, out, __func__);
}

weft_status_t weft_pred_set_input(weft_predictor_t* pred, const char* key, const float* data, size_t size) {
  WEFT_API_BEGIN
  Predictor& p = Pred(pred, "pred", __func__);
  WEFT_CHECK(key != nullptr, kValue, __func__, ": 'key' is NULL");
  auto it = p.inputs.find(key);
  WEFT_CHECK(it != p.inputs.end(), kNotFound, __func__, ": '", key, "' is not an input of the predictor");
  CheckBuffer(data, size, "data", "size", __func__);
  const NDArray& arr = p.executor->arg_arrays()[it->second];
  WEFT_CHECK(static_cast<int64_t>(size) == arr.shape().Size(), kShape, __func__, ": input '", key, "' has shape ",
             arr.shape().ToString(), " (", arr.shape().Size(), " values), got ", size, " values");
  CopyIn(arr, data, size);
  WEFT_API_END
}

weft_status_t weft_pred_forward(weft_predictor_t* pred) {
  WEFT_API_BEGIN
  Predictor& p = Pred(pred, "pred", __func__);
  p.executor->Forward(false);
  // Errors of the pass surface here rather than in a later read.
  for (const NDArray& o : p.executor->outputs()) o.WaitToRead();
  WEFT_API_END
}

weft_status_t weft_pred_get_num_outputs(weft_predictor_t* pred, int* out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = static_cast<int>(Pred(pred, "pred", __func__).executor->outputs().size());
  WEFT_API_END
}

weft_status_t weft_pred_get_output_shape(weft_predictor_t* pred, int index, const int64_t** shape, int* ndim) {
  WEFT_API_BEGIN
  WEFT_OUT(shape);
  WEFT_OUT(ndim);
  Predictor& p = Pred(pred, "pred", __func__);
  const Shape& s = Output(p, index, __func__).shape();
  p.shape_buf.assign(s.begin(), s.end());
  *shape = p.shape_buf.data();
  *ndim = s.ndim();
  WEFT_API_END
}

weft_status_t weft_pred_get_output(weft_predictor_t* pred, int index, float* data, size_t size) {
  WEFT_API_BEGIN
  Predictor& p = Pred(pred, "pred", __func__);
  const NDArray& o = Output(p, index, __func__);
  CheckBuffer(data, size, "data", "size", __func__);
  WEFT_CHECK(static_cast<int64_t>(size) == o.shape().Size(), kShape, __func__, ": output ", index, " has shape ",
             o.shape().ToString(), " (", o.shape().Size(), " values), got room for ", size);
  CopyOut(o, data, size);
  WEFT_API_END
}

weft_status_t weft_pred_reshape(weft_predictor_t* pred, int num_inputs, const char* const* input_keys,
                                const int64_t* input_shape_indptr, const int64_t* input_shape_data,
                                weft_predictor_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  Predictor& p = Pred(pred, "pred", __func__);
  auto inputs = ReadInputShapes(num_inputs, input_keys, input_shape_indptr, input_shape_data, __func__);
  std::unordered_map<std::string, Shape> shapes;
  for (const auto& in : inputs) {
    WEFT_CHECK(p.inputs.count(in.first), kNotFound, __func__, ": '", in.first, "' is not an input of the predictor");
    shapes[in.first] = in.second;
  }
  Predictor q;
  q.symbol = p.symbol;
  q.inputs = p.inputs;
  // Parameters keep their shapes and are shared; inputs may grow. The internal values get
  // memory of their own: the two predictors may be run in any order, each keeping its outputs.
  q.executor = p.executor->Reshape(shapes, false, true, false);
  *out = NewPredictor(std::move(q));
  WEFT_API_END
}

weft_status_t weft_pred_free(weft_predictor_t* pred) {
  WEFT_API_BEGIN
  PredictorTable::Get().Free(pred, "pred", __func__);
  WEFT_API_END
}

weft_status_t weft_ndlist_create(const void* data, size_t size, weft_ndlist_t** out, int* length) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  WEFT_OUT(length);
  CheckBuffer(data, size, "data", "size", __func__);
  NDArrayFile file = LoadNDArrayList(data, size, "buffer");
  NDList list;
  for (size_t i = 0; i < file.arrays.size(); ++i) {
    const NDArray& a = file.arrays[i];
    list.names.push_back(file.names.empty() ? std::string() : file.names[i]);
    list.shapes.emplace_back(a.shape().begin(), a.shape().end());
    list.data.emplace_back(static_cast<size_t>(a.shape().Size()));
    CopyOut(a, list.data.back().data(), list.data.back().size());
  }
  *length = static_cast<int>(file.arrays.size());
  *out = reinterpret_cast<weft_ndlist_t*>(NDListTable::Get().Create(std::move(list)));
  WEFT_API_END
}

weft_status_t weft_ndlist_get(weft_ndlist_t* list, int index, const char** key, const float** data,
                              const int64_t** shape, int* ndim) {
  WEFT_API_BEGIN
  NDList& l = NDListTable::Get().Ref(list, "list", __func__);
  WEFT_CHECK(index >= 0 && static_cast<size_t>(index) < l.data.size(), kIndex, __func__, ": index ", index,
             " is out of range (the list has ", l.data.size(), " arrays)");
  const size_t i = static_cast<size_t>(index);
  if (key) *key = l.names[i].c_str();
  if (data) *data = l.data[i].data();
  if (shape) *shape = l.shapes[i].data();
  if (ndim) *ndim = static_cast<int>(l.shapes[i].size());
  WEFT_API_END
}

weft_status_t weft_ndlist_free(weft_ndlist_t* list) {
  WEFT_API_BEGIN
  NDListTable::Get().Free(list, "list", __func__);
  WEFT_API_END
}
