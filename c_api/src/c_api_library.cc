// Libraries of operators (weft/op_library.h): dlopen, the version check, and each operator
// of the table registered as a custom operator whose forward and backward call the
// library's functions on the arrays' CPU buffers.
#include <dlfcn.h>
#include <sys/stat.h>

#include <map>
#include <mutex>

#include "c_api/src/c_api_common.h"
#include "core/op/custom/custom.h"
#include "weft/op_library.h"

namespace weft {
namespace capi {
namespace {

constexpr size_t kErrLen = 1024;

// The parameters of one call, as the library reads them.
struct Params {
  KwArgs kwargs;
  std::vector<const char*> keys, values;
  weft_lib_params_t view{};

  explicit Params(KwArgs kv) : kwargs(std::move(kv)) {
    for (const auto& p : kwargs) {
      keys.push_back(p.first.c_str());
      values.push_back(p.second.c_str());
    }
    view.num = static_cast<int>(kwargs.size());
    view.keys = keys.data();
    view.values = values.data();
  }
};

void Check(int rc, const char* err, const weft_lib_op_t& op, const char* what) {
  if (rc == 0) return;
  Throw(ErrorKind::kRuntime, "Operator '", op.name, "' (library) ", what, " failed: ",
        err[0] ? std::string(err, strnlen(err, kErrLen)) : "status " + std::to_string(rc));
}

// The tensors of arrays that are ready (the custom call holds their engine variables).
std::vector<weft_lib_tensor_t> Tensors(const std::vector<const NDArray*>& arrays, const weft_lib_op_t& op,
                                       const char* what) {
  std::vector<weft_lib_tensor_t> r;
  for (const NDArray* a : arrays) {
    WEFT_CHECK(a != nullptr && !a->is_none(), kInternal, "Operator '", op.name, "' (library): ", what,
               " is missing");
    WEFT_CHECK(!a->ctx().is_gpu(), kUnsupported, "Operator '", op.name,
               "' (library): runs on CPU buffers only, got an array on ", a->ctx().ToString());
    TBlob b = a->data();
    r.push_back({b.dptr, a->shape().begin(), a->shape().ndim(), static_cast<int>(a->dtype())});
  }
  return r;
}

class LibOperator final : public custom::Operator {
 public:
  LibOperator(const weft_lib_op_t* op, std::shared_ptr<Params> params) : op_(op), params_(std::move(params)) {}

  void Forward(bool, const std::vector<custom::TaggedArray>& arrays) override {
    std::vector<const NDArray*> in, out;
    std::vector<int> req;
    for (const auto& t : arrays) {
      if (t.tag == custom::Tag::kInData) in.push_back(&t.array);
      if (t.tag == custom::Tag::kOutData) {
        out.push_back(&t.array);
        req.push_back(static_cast<int>(t.req));
      }
    }
    std::vector<weft_lib_tensor_t> ti = Tensors(in, *op_, "an input"), to = Tensors(out, *op_, "an output");
    char err[kErrLen] = {0};
    Check(op_->forward(&params_->view, static_cast<int>(ti.size()), ti.data(), static_cast<int>(to.size()), to.data(),
                       req.data(), err, kErrLen),
          err, *op_, "forward");
  }

  void Backward(bool, const std::vector<custom::TaggedArray>& arrays) override {
    WEFT_CHECK(op_->backward != nullptr, kUnsupported, "Operator '", op_->name,
               "' (library) has no backward: it is not differentiable");
    std::vector<const NDArray*> og, in, out, ig;
    std::vector<int> req;
    for (const auto& t : arrays) {
      switch (t.tag) {
        case custom::Tag::kOutGrad: og.push_back(&t.array); break;
        case custom::Tag::kInData: in.push_back(&t.array); break;
        case custom::Tag::kOutData: out.push_back(&t.array); break;
        case custom::Tag::kInGrad:
          ig.push_back(&t.array);
          req.push_back(static_cast<int>(t.req));
          break;
        default: break;
      }
    }
    std::vector<weft_lib_tensor_t> tog = Tensors(og, *op_, "an output gradient"), ti = Tensors(in, *op_, "an input"),
                                   to = Tensors(out, *op_, "an output"), tig = Tensors(ig, *op_, "an input gradient");
    char err[kErrLen] = {0};
    Check(op_->backward(&params_->view, static_cast<int>(tog.size()), tog.data(), static_cast<int>(ti.size()),
                        ti.data(), to.data(), tig.data(), req.data(), err, kErrLen),
          err, *op_, "backward");
  }

 private:
  const weft_lib_op_t* op_;
  std::shared_ptr<Params> params_;
};

std::vector<std::string> Names(const char* const* given, int n, const char* base) {
  std::vector<std::string> r;
  for (int i = 0; i < n; ++i) {
    if (given != nullptr && given[i] != nullptr) r.emplace_back(given[i]);
    else r.push_back(n == 1 ? std::string(base) : base + std::to_string(i));
  }
  return r;
}

class LibProp final : public custom::Prop {
 public:
  LibProp(const weft_lib_op_t* op, KwArgs kwargs) : op_(op), params_(std::make_shared<Params>(std::move(kwargs))) {}

  std::vector<std::string> ListArguments() override { return Names(op_->input_names, op_->num_inputs, "data"); }
  std::vector<std::string> ListOutputs() override { return Names(op_->output_names, op_->num_outputs, "output"); }
  std::vector<std::string> ListAuxiliaryStates() override { return {}; }

  bool InferShape(std::vector<Shape>* shapes) override {
    int ni = op_->num_inputs, no = op_->num_outputs;
    std::vector<int> in_ndims(ni), out_ndims(no, -1);
    std::vector<const int64_t*> in_dims(ni);
    for (int i = 0; i < ni; ++i) {
      if (!(*shapes)[i].is_known()) return false;
      in_ndims[i] = (*shapes)[i].ndim();
      in_dims[i] = (*shapes)[i].begin();
    }
    std::vector<int64_t> out(static_cast<size_t>(no) * WEFT_OP_LIBRARY_MAX_NDIM, -1);
    char err[kErrLen] = {0};
    Check(op_->infer_shape(&params_->view, ni, in_ndims.data(), in_dims.data(), no, out_ndims.data(), out.data(), err,
                           kErrLen),
          err, *op_, "infer_shape");
    for (int i = 0; i < no; ++i) {
      WEFT_CHECK(out_ndims[i] >= 0 && out_ndims[i] <= WEFT_OP_LIBRARY_MAX_NDIM, kValue, "Operator '", op_->name,
                 "' (library): infer_shape gave output ", i, " a rank of ", out_ndims[i]);
      const int64_t* d = out.data() + static_cast<size_t>(i) * WEFT_OP_LIBRARY_MAX_NDIM;
      (*shapes)[ni + i] = Shape(d, d + out_ndims[i]);
    }
    return true;
  }

  bool InferType(std::vector<DType>* types) override {
    int ni = op_->num_inputs, no = op_->num_outputs;
    std::vector<int> in(ni), out(no, -1);
    // A library's infer_type is given known input dtypes only.
    for (int i = 0; i < ni; ++i)
      if ((*types)[i] == DType::kUnknown) return false;
    for (int i = 0; i < ni; ++i) in[i] = static_cast<int>((*types)[i]);
    if (op_->infer_type == nullptr) {
      WEFT_CHECK(ni > 0, kType, "Operator '", op_->name, "' (library): without inputs it must infer its dtypes");
      for (int i = 0; i < no; ++i) out[i] = in[0];
    } else {
      char err[kErrLen] = {0};
      Check(op_->infer_type(&params_->view, ni, in.data(), no, out.data(), err, kErrLen), err, *op_, "infer_type");
    }
    for (int i = 0; i < no; ++i) {
      DType t = static_cast<DType>(out[i]);
      DTypeSize(t);  // rejects a number that is no dtype
      (*types)[ni + i] = t;
    }
    return true;
  }

  void DeclareBackwardDependency(std::vector<bool>* out_grad, std::vector<bool>* in_data,
                                 std::vector<bool>* out_data) override {
    out_grad->assign(out_grad->size(), true);
    in_data->assign(in_data->size(), true);
    out_data->assign(out_data->size(), true);
  }
  bool NeedTopGrad() override { return true; }

  std::unique_ptr<custom::Operator> CreateOperator(Context, const std::vector<Shape>&,
                                                   const std::vector<DType>&) override {
    return std::make_unique<LibOperator>(op_, params_);
  }

 private:
  const weft_lib_op_t* op_;
  std::shared_ptr<Params> params_;
};

struct Library {
  std::vector<const weft_lib_op_t*> ops;
};

struct Libraries {
  std::mutex mu;
  std::map<std::string, Library> by_path;
};

Libraries& Libs() {
  static Libraries* l = new Libraries();  // leaked with the libraries it holds open
  return *l;
}

const Library& Load(const char* path) {
  WEFT_CHECK(path != nullptr && *path != '\0', kValue, "weft_library_load: 'path' is NULL or empty");
  std::lock_guard<std::mutex> lock(Libs().mu);
  auto it = Libs().by_path.find(path);
  if (it != Libs().by_path.end()) return it->second;
  struct stat st;
  WEFT_CHECK(::stat(path, &st) == 0, kNotFound, "library of operators '", path, "': no such file");
  void* h = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
  WEFT_CHECK(h != nullptr, kValue, "library of operators '", path, "': cannot load it: ", ::dlerror());
  using InitFn = int (*)(int, int*, int*, const weft_lib_op_t**);
  auto init = reinterpret_cast<InitFn>(::dlsym(h, "weft_op_library_init"));
  if (init == nullptr) {
    ::dlclose(h);
    Throw(ErrorKind::kValue, "library of operators '", path,
          "': it defines no weft_op_library_init (build it against weft/op_library.h)");
  }
  int version = 0, n = 0;
  const weft_lib_op_t* table = nullptr;
  int rc = init(WEFT_OP_LIBRARY_VERSION, &version, &n, &table);
  WEFT_CHECK(rc == 0, kValue, "library of operators '", path, "': weft_op_library_init refused to load (status ", rc,
             ")");
  WEFT_CHECK(version >= 1 && version <= WEFT_OP_LIBRARY_VERSION, kValue, "library of operators '", path,
             "': built for op_library.h version ", version, ", this Weft supports 1 to ", WEFT_OP_LIBRARY_VERSION);
  WEFT_CHECK(n >= 0 && n <= WEFT_MAX_COUNT && (n == 0 || table != nullptr), kValue, "library of operators '", path,
             "': weft_op_library_init gave ", n, " operators");
  Library lib;
  for (int i = 0; i < n; ++i) {
    const weft_lib_op_t* op = &table[i];
    WEFT_CHECK(op->name != nullptr && *op->name != '\0', kValue, "library of operators '", path, "': operator ", i,
               " has no name");
    WEFT_CHECK(op->num_inputs >= 0 && op->num_outputs >= 1 && op->infer_shape != nullptr && op->forward != nullptr,
               kValue, "library of operators '", path, "': operator '", op->name,
               "' needs at least one output, infer_shape and forward");
    lib.ops.push_back(op);
  }
  for (const weft_lib_op_t* op : lib.ops)
    custom::Register(op->name, [op](const std::string&, const KwArgs& kwargs) {
      return std::make_shared<LibProp>(op, kwargs);
    });
  return Libs().by_path.emplace(path, std::move(lib)).first->second;
}

}  // namespace
}  // namespace capi
}  // namespace weft

using namespace weft;
using namespace weft::capi;

extern "C" {

weft_status_t weft_library_load(const char* path, int* num_ops) {
  WEFT_API_BEGIN
  WEFT_CHECK(num_ops != nullptr, kValue, __func__, ": 'num_ops' is NULL");
  *num_ops = static_cast<int>(Load(path).ops.size());
  WEFT_API_END
}

weft_status_t weft_library_op_name(const char* path, int i, const char** out) {
  WEFT_API_BEGIN
  WEFT_CHECK(out != nullptr, kValue, __func__, ": 'out' is NULL");
  const Library& lib = Load(path);
  WEFT_CHECK(i >= 0 && i < static_cast<int>(lib.ops.size()), kIndex, __func__, ": index i = ", i, " is out of [0, ",
             lib.ops.size(), ")");
  *out = lib.ops[i]->name;
  WEFT_API_END
}

}  // extern "C"
