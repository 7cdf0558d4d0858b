// The `Custom` operator and its backward, over the implementations registered by op_type
// (custom.h), and the pool of threads their callbacks run on.
//
// A node or call of `Custom` owns a State: the Prop made for its parameters, what the Prop
// said about names and backward dependencies, and the Operator instance, made at the first
// forward for the shapes and dtypes it sees. The backward must reach the same instance (a
// forward may keep what its backward reads): the gradient passes the State's number as the
// hidden parameter __custom_state__, and `_backward_Custom` finds the State by it.
#include "core/op/custom/custom.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <thread>
#include <unordered_map>

#include "core/base/error.h"
#include "core/engine/engine.h"
#include "core/engine/fork.h"
#include "core/engine/worker_pool.h"
#include "core/profiler/custom_scope.h"
#include "core/profiler/profiler.h"

#ifdef WEFT_USE_CUDA
#include "core/base/cuda_utils.h"
#endif

namespace weft {
namespace custom {
namespace {

struct Registry {
  std::mutex mu;
  std::unordered_map<std::string, PropCreator> creators;
};

Registry& Reg() {
  static Registry* r = new Registry();  // leaked: used until the very end of the process
  return *r;
}

struct OpTypeParam {
  std::string op_type;
};

WEFT_PARAM_SCHEMA(OpTypeParam, s) {
  s.Field("op_type", &OpTypeParam::op_type)
      .Describe("Name of the custom operator: the op_type it was registered with (mx.operator.register).");
}

struct State {
  int64_t id = 0;
  std::string op_type;
  std::shared_ptr<Prop> prop;
  std::vector<std::string> args, outs, aux;
  bool need_top_grad = true;
  std::vector<bool> dep_out_grad, dep_in_data, dep_out_data;

  // Guards the operator instance, held while a callback runs it (and so while the callback
  // waits for a lock such as Python's GIL).
  std::mutex mu;
  // Guards shapes and types only, never held across a callback: inference, on a thread that
  // may hold the lock a running callback waits for, must not wait for that callback.
  std::mutex info_mu;
  // The shapes and dtypes (arguments, outputs, auxiliary states) the last inference gave,
  // which the backward's own inference checks its inputs against.
  std::vector<Shape> shapes;
  std::vector<DType> types;
  std::unique_ptr<Operator> op;
  std::vector<Shape> op_shapes;
  std::vector<DType> op_types;
  Context op_ctx;

  ~State();
};

struct StateTable {
  std::mutex mu;
  int64_t next = 1;
  std::unordered_map<int64_t, std::weak_ptr<State>> live;
};

StateTable& States() {
  static StateTable* t = new StateTable();
  return *t;
}

State::~State() {
  std::lock_guard<std::mutex> lock(States().mu);
  States().live.erase(id);
}

struct CustomParsed {
  std::shared_ptr<State> state;
};

bool IsHidden(const std::string& k) {
  return k.size() > 4 && k.compare(0, 2, "__") == 0 && k.compare(k.size() - 2, 2, "__") == 0;
}

const State& StateOf(const NodeAttrs& attrs) { return *attrs.Params<CustomParsed>().state; }
State& MutableStateOf(const NodeAttrs& attrs) { return *attrs.Params<CustomParsed>().state; }

void ParseCustom(NodeAttrs* attrs) {
  std::string op_type;
  KwArgs kwargs;
  for (const auto& kv : attrs->dict) {
    if (kv.first == "op_type") op_type = kv.second;
    else if (!IsHidden(kv.first)) kwargs.push_back(kv);
  }
  WEFT_CHECK(!op_type.empty(), kValue, "Operator 'Custom': the parameter 'op_type' is required");
  PropCreator creator;
  {
    std::lock_guard<std::mutex> lock(Reg().mu);
    auto it = Reg().creators.find(op_type);
    WEFT_CHECK(it != Reg().creators.end(), kNotFound, "Operator 'Custom': no custom operator is registered as '",
               op_type, "' (register it with mx.operator.register first)");
    creator = it->second;
  }
  auto st = std::make_shared<State>();
  st->op_type = op_type;
  st->prop = creator(op_type, kwargs);
  WEFT_CHECK(st->prop != nullptr, kInternal, "Custom '", op_type, "': its creator returned no property");
  st->args = st->prop->ListArguments();
  st->outs = st->prop->ListOutputs();
  st->aux = st->prop->ListAuxiliaryStates();
  WEFT_CHECK(!st->outs.empty(), kValue, "Custom '", op_type, "': list_outputs() must name at least one output");
  st->need_top_grad = st->prop->NeedTopGrad();
  st->dep_out_grad.assign(st->outs.size(), false);
  st->dep_in_data.assign(st->args.size(), false);
  st->dep_out_data.assign(st->outs.size(), false);
  st->prop->DeclareBackwardDependency(&st->dep_out_grad, &st->dep_in_data, &st->dep_out_data);
  {
    std::lock_guard<std::mutex> lock(States().mu);
    st->id = States().next++;
    States().live[st->id] = st;
  }
  auto parsed = std::make_shared<CustomParsed>();
  parsed->state = std::move(st);
  attrs->parsed = std::move(parsed);
}

void ParseBackwardCustom(NodeAttrs* attrs) {
  std::string id;
  for (const auto& kv : attrs->dict) {
    if (kv.first == "__custom_state__") id = kv.second;
    else if (!IsHidden(kv.first))
      Throw(ErrorKind::kValue, "Operator '_backward_Custom': unknown parameter '", kv.first, "'");
  }
  WEFT_CHECK(!id.empty(), kValue,
             "Operator '_backward_Custom': made only by the gradient of a Custom operator (it needs the forward's "
             "state, __custom_state__)");
  std::shared_ptr<State> st;
  {
    std::lock_guard<std::mutex> lock(States().mu);
    auto it = States().live.find(std::strtoll(id.c_str(), nullptr, 10));
    if (it != States().live.end()) st = it->second.lock();
  }
  WEFT_CHECK(st != nullptr, kValue, "Operator '_backward_Custom': the forward state ", id,
             " is gone (the Custom call or node it belongs to was freed)");
  auto parsed = std::make_shared<CustomParsed>();
  parsed->state = std::move(st);
  attrs->parsed = std::move(parsed);
}

// Checks `got` (the shape an array has, or one inference already decided) against `want`.
// Dims still unknown in `got` (a deferred Gluon parameter's (5, -1)) take `want`'s.
void MergeShape(const State& st, const char* what, const std::string& name, Shape* got, const Shape& want) {
  if (!got->known_ndim()) {
    *got = want;
    return;
  }
  bool fits = got->ndim() == want.ndim();
  for (int i = 0; fits && i < got->ndim(); ++i) fits = (*got)[i] < 0 || want[i] < 0 || (*got)[i] == want[i];
  if (fits) {
    for (int i = 0; i < got->ndim(); ++i)
      if ((*got)[i] < 0) (*got)[i] = want[i];
    return;
  }
  WEFT_CHECK(false, kShape, "Custom '", st.op_type, "': ", what, " '", name, "' has shape ", got->ToString(),
             " but infer_shape says ", want.ToString());
}

bool CustomInferShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  State& st = MutableStateOf(attrs);
  size_t na = st.args.size(), no = st.outs.size(), nx = st.aux.size();
  std::vector<Shape> shapes(na + no + nx);
  bool any_known = na == 0, all_known = true;
  for (size_t i = 0; i < na; ++i) {
    shapes[i] = (*in)[i];
    any_known = any_known || (*in)[i].is_known();
    all_known = all_known && (*in)[i].is_known();
  }
  if (!any_known) return false;
  try {
    if (!st.prop->InferShape(&shapes)) return false;
  } catch (const Error&) {
    // A front end's infer_shape usually reads every argument's shape: with some unknown it
    // may fail now and succeed once graph inference has found them.
    if (!all_known) return false;
    throw;
  }
  for (size_t i = 0; i < na; ++i) MergeShape(st, "argument", st.args[i], &(*in)[i], shapes[i]);
  for (size_t i = 0; i < no; ++i) MergeShape(st, "output", st.outs[i], &(*out)[i], shapes[na + i]);
  for (size_t i = 0; i < nx; ++i) MergeShape(st, "auxiliary state", st.aux[i], &(*in)[na + i], shapes[na + no + i]);
  std::lock_guard<std::mutex> lock(st.info_mu);
  st.shapes = shapes;
  for (const auto& s : shapes)
    if (!s.is_known()) return false;
  return true;
}

bool CustomInferType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  State& st = MutableStateOf(attrs);
  size_t na = st.args.size(), no = st.outs.size(), nx = st.aux.size();
  std::vector<DType> types(na + no + nx, DType::kUnknown);
  bool any_known = na == 0, all_known = true;
  for (size_t i = 0; i < na; ++i) {
    types[i] = (*in)[i];
    any_known = any_known || types[i] != DType::kUnknown;
    all_known = all_known && types[i] != DType::kUnknown;
  }
  // As in MXNet, the front end is asked once one argument's dtype is known: its infer_type
  // may give the others (parameters typed like the data, which nothing else types).
  if (!any_known) return false;
  try {
    if (!st.prop->InferType(&types)) return false;
  } catch (const Error&) {
    // One that reads every argument's dtype may fail now and succeed once graph inference
    // has found them.
    if (!all_known) return false;
    throw;
  }
  auto merge = [&](const char* what, const std::string& name, DType* got, DType want) {
    if (want == DType::kUnknown) return;
    if (*got == DType::kUnknown) *got = want;
    WEFT_CHECK(*got == want, kType, "Custom '", st.op_type, "': ", what, " '", name, "' has dtype ", DTypeName(*got),
               " but infer_type says ", DTypeName(want));
  };
  for (size_t i = 0; i < na; ++i) merge("argument", st.args[i], &(*in)[i], types[i]);
  for (size_t i = 0; i < no; ++i) merge("output", st.outs[i], &(*out)[i], types[na + i]);
  for (size_t i = 0; i < nx; ++i) merge("auxiliary state", st.aux[i], &(*in)[na + i], types[na + no + i]);
  std::lock_guard<std::mutex> lock(st.info_mu);
  st.types = types;
  for (DType t : types)
    if (t == DType::kUnknown) return false;
  return true;
}

// A handle on the same memory as `a` with an engine variable of its own, for a callback:
// what it pushes on the alias runs while the call's own operation holds `a`'s variable. The
// alias keeps the memory alive as long as the callback keeps it.
NDArray Alias(const NDArray& a) {
  if (a.is_none()) return a;
  TBlob b = a.data();
  return NDArray::FromExternal(b.dptr, a.shape(), a.dtype(), a.ctx(), [keep = a.chunk()] {});
}

// Runs a callback of the call off the engine's threads, then completes the call once the
// work the callback pushed on the aliases is done (or failed).
// `backward` names the callback for the profiler ("_backward_<op_type>::pure_python").
void RunCallback(std::shared_ptr<State> st, bool is_train, bool backward, std::vector<TaggedArray> arrays,
                 std::function<void(Operator*, bool, const std::vector<TaggedArray>&)> body,
                 engine::CallbackOnComplete done, std::function<void(State*)> prepare) {
  auto task = [st, is_train, backward, arrays = std::move(arrays), body = std::move(body), done,
               prepare = std::move(prepare)]() mutable {
    std::exception_ptr error;
    try {
      std::lock_guard<std::mutex> lock(st->mu);
      prepare(st.get());
      WEFT_CHECK(st->op != nullptr, kRuntime, "Custom '", st->op_type,
                 "': backward called before any forward of this operator");
      profiler::CustomOpScope scope(st->op_type);
      const bool timed = profiler::Active(profiler::kSymbolic | profiler::kImperative);
      const int64_t start = timed ? profiler::NowNs() : 0;
      body(st->op.get(), is_train, arrays);
      if (timed)
        profiler::RecordCustomOperator((backward ? "_backward_" : "") + st->op_type + "::pure_python",
                                       arrays.empty() ? Context::CPU() : arrays[0].array.ctx(), start,
                                       profiler::NowNs());
    } catch (...) {
      error = std::current_exception();
    }
    for (const auto& t : arrays) {
      if (t.array.is_none()) continue;
      try {
        // On a GPU the callback's reads of an input may still run after the engine saw them
        // complete; a write-wait on the alias waits for those too (the writes the outputs
        // got cover the rest), so that nothing still reads the call's arrays afterwards.
        if (t.array.ctx().is_gpu()) {
          t.array.WaitToWrite();
        } else {
          t.array.WaitToRead();
        }
      } catch (...) {
        if (!error) error = std::current_exception();
      }
    }
    // What the task holds goes before the call completes: the last reference to the state
    // releases the front end's objects, which must happen while a wait for the call (the
    // one at interpreter exit, say) still waits, not after.
    arrays.clear();
    st.reset();
    done(error);
  };
  // Outside the engine's workers (the naive engine runs a push on the pushing thread) the
  // callback runs here: that thread already holds whatever the callback needs.
  if (engine::CurrentWorkerOwner() == nullptr) {
    task();
  } else {
    RunOnCallbackThread(std::move(task));
  }
}

// The callback's own pushes read and write the call's arrays through aliases, with variables
// of their own that carry none of the GPU completion events the engine made this call's
// stream wait for (threaded_engine.cc). So the work those events stand for, and so every
// input's producer and every earlier reader of an output, must be over before the
// callback runs: waiting for this call's stream, which waited for them, ensures it.
void WaitForCallStream(const OpContext& octx) {
#ifdef WEFT_USE_CUDA
  if (octx.run_ctx.stream != nullptr)
    WEFT_CUDA_CALL_ON(octx.run_ctx.ctx, cudaStreamSynchronize(static_cast<cudaStream_t>(octx.run_ctx.stream)));
#else
  (void)octx;
#endif
}

void CustomForward(const NodeAttrs& attrs, const OpContext& octx, const std::vector<NDArray>& in,
                   const std::vector<OpReq>& req, const std::vector<NDArray>& out, engine::CallbackOnComplete done) {
  WaitForCallStream(octx);
  std::shared_ptr<State> st = attrs.Params<CustomParsed>().state;
  size_t na = st->args.size();
  std::vector<TaggedArray> arrays;
  std::vector<Shape> shapes;
  std::vector<DType> types;
  for (size_t i = 0; i < na; ++i) arrays.push_back({Alias(in[i]), Tag::kInData, OpReq::kNullOp});
  for (size_t i = 0; i < out.size(); ++i) arrays.push_back({Alias(out[i]), Tag::kOutData, req[i]});
  for (size_t i = na; i < in.size(); ++i) arrays.push_back({Alias(in[i]), Tag::kAux, OpReq::kNullOp});
  for (const auto& t : arrays) {
    shapes.push_back(t.array.shape());
    types.push_back(t.array.dtype());
  }
  Context ctx = out[0].ctx();
  RunCallback(
      st, octx.is_train, false, std::move(arrays),
      [](Operator* op, bool is_train, const std::vector<TaggedArray>& a) { op->Forward(is_train, a); }, done,
      [shapes, types, ctx](State* s) {
        // A new instance when the shapes, dtypes or device changed (an executor reshaped).
        if (s->op && s->op_shapes == shapes && s->op_types == types && s->op_ctx == ctx) return;
        s->op.reset();
        s->op = s->prop->CreateOperator(ctx, shapes, types);
        WEFT_CHECK(s->op != nullptr, kRuntime, "Custom '", s->op_type, "': create_operator returned no operator");
        s->op_shapes = shapes;
        s->op_types = types;
        s->op_ctx = ctx;
      });
}

// The backward's inputs: the declared out_grads, in_data and out_data, then every
// auxiliary state; its outputs: one gradient per argument.
struct BackwardLayout {
  std::vector<std::pair<Tag, size_t>> inputs;
};

BackwardLayout LayoutOf(const State& st) {
  BackwardLayout l;
  for (size_t i = 0; i < st.outs.size(); ++i)
    if (st.dep_out_grad[i]) l.inputs.push_back({Tag::kOutGrad, i});
  for (size_t i = 0; i < st.args.size(); ++i)
    if (st.dep_in_data[i]) l.inputs.push_back({Tag::kInData, i});
  for (size_t i = 0; i < st.outs.size(); ++i)
    if (st.dep_out_data[i]) l.inputs.push_back({Tag::kOutData, i});
  for (size_t i = 0; i < st.aux.size(); ++i) l.inputs.push_back({Tag::kAux, i});
  return l;
}

std::vector<std::string> BackwardInputNames(const State& st) {
  std::vector<std::string> names;
  for (const auto& p : LayoutOf(st).inputs) {
    switch (p.first) {
      case Tag::kOutGrad: names.push_back("out_grad_" + st.outs[p.second]); break;
      case Tag::kInData: names.push_back(st.args[p.second]); break;
      case Tag::kOutData: names.push_back(st.outs[p.second]); break;
      default: names.push_back(st.aux[p.second]); break;
    }
  }
  return names;
}

// The shape (or dtype) that each backward input must have, from the forward's inference.
template <typename T>
T Expected(const State& st, const std::vector<T>& all, Tag tag, size_t i) {
  size_t na = st.args.size(), no = st.outs.size();
  switch (tag) {
    case Tag::kInData: return all[i];
    case Tag::kOutData:
    case Tag::kOutGrad: return all[na + i];
    default: return all[na + no + i];
  }
}

bool BackwardInferShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  State& st = MutableStateOf(attrs);
  std::vector<Shape> shapes;
  {
    std::lock_guard<std::mutex> lock(st.info_mu);
    shapes = st.shapes;
  }
  WEFT_CHECK(!shapes.empty(), kShape, "Operator '_backward_Custom' (", st.op_type,
             "): the forward's shapes are not known yet");
  std::vector<std::string> names = BackwardInputNames(st);
  BackwardLayout l = LayoutOf(st);
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    Shape want = Expected(st, shapes, l.inputs[k].first, l.inputs[k].second);
    if (!(*in)[k].known_ndim()) (*in)[k] = want;
    WEFT_CHECK((*in)[k] == want, kShape, "Operator '_backward_Custom' (", st.op_type, "): input '", names[k],
               "' has shape ", (*in)[k].ToString(), ", expected ", want.ToString());
  }
  for (size_t i = 0; i < st.args.size(); ++i) {
    if (!(*out)[i].known_ndim()) (*out)[i] = shapes[i];
    WEFT_CHECK((*out)[i] == shapes[i], kShape, "Operator '_backward_Custom' (", st.op_type, "): gradient of '",
               st.args[i], "' has shape ", (*out)[i].ToString(), ", expected ", shapes[i].ToString());
  }
  return true;
}

bool BackwardInferType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  State& st = MutableStateOf(attrs);
  std::vector<DType> types;
  {
    std::lock_guard<std::mutex> lock(st.info_mu);
    types = st.types;
  }
  if (types.empty()) return false;
  BackwardLayout l = LayoutOf(st);
  std::vector<std::string> names = BackwardInputNames(st);
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    DType want = Expected(st, types, l.inputs[k].first, l.inputs[k].second);
    if ((*in)[k] == DType::kUnknown) (*in)[k] = want;
    WEFT_CHECK((*in)[k] == want, kType, "Operator '_backward_Custom' (", st.op_type, "): input '", names[k],
               "' has dtype ", DTypeName((*in)[k]), ", expected ", DTypeName(want));
  }
  for (size_t i = 0; i < st.args.size(); ++i) {
    if ((*out)[i] == DType::kUnknown) (*out)[i] = types[i];
    WEFT_CHECK((*out)[i] == types[i], kType, "Operator '_backward_Custom' (", st.op_type, "): gradient of '",
               st.args[i], "' has dtype ", DTypeName((*out)[i]), ", expected ", DTypeName(types[i]));
  }
  return true;
}

void CustomBackward(const NodeAttrs& attrs, const OpContext& octx, const std::vector<NDArray>& in,
                    const std::vector<OpReq>& req, const std::vector<NDArray>& out, engine::CallbackOnComplete done) {
  WaitForCallStream(octx);
  std::shared_ptr<State> st = attrs.Params<CustomParsed>().state;
  size_t na = st->args.size(), no = st->outs.size(), nx = st->aux.size();
  std::vector<NDArray> og(no), id(na), od(no), aux(nx);
  BackwardLayout l = LayoutOf(*st);
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    size_t i = l.inputs[k].second;
    switch (l.inputs[k].first) {
      case Tag::kOutGrad: og[i] = in[k]; break;
      case Tag::kInData: id[i] = in[k]; break;
      case Tag::kOutData: od[i] = in[k]; break;
      default: aux[i] = in[k]; break;
    }
  }
  std::vector<TaggedArray> arrays;
  for (size_t i = 0; i < na; ++i) arrays.push_back({Alias(id[i]), Tag::kInData, OpReq::kNullOp});
  for (size_t i = 0; i < no; ++i) arrays.push_back({Alias(od[i]), Tag::kOutData, OpReq::kNullOp});
  for (size_t i = 0; i < na; ++i) arrays.push_back({Alias(out[i]), Tag::kInGrad, req[i]});
  for (size_t i = 0; i < no; ++i) arrays.push_back({Alias(og[i]), Tag::kOutGrad, OpReq::kNullOp});
  for (size_t i = 0; i < nx; ++i) arrays.push_back({Alias(aux[i]), Tag::kAux, OpReq::kNullOp});
  RunCallback(
      st, octx.is_train, true, std::move(arrays),
      [](Operator* op, bool is_train, const std::vector<TaggedArray>& a) { op->Backward(is_train, a); }, done,
      [](State*) {});
}

std::vector<GradValue> CustomGradient(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
  const State& st = StateOf(attrs);
  std::vector<GradValue> ins;
  for (const auto& p : LayoutOf(st).inputs) {
    switch (p.first) {
      case Tag::kOutGrad: ins.push_back(a.out_grads[p.second]); break;
      case Tag::kInData: ins.push_back(a.inputs[p.second]); break;
      case Tag::kOutData: ins.push_back(a.outputs[p.second]); break;
      default: ins.push_back(a.inputs[st.args.size() + p.second]); break;
    }
  }
  std::vector<GradValue> grads = b.Call("_backward_Custom", ins, {{"__custom_state__", std::to_string(st.id)}});
  grads.resize(st.args.size() + st.aux.size());  // auxiliary states get no gradient
  return grads;
}

// ---------------------------------------------------------------- the callback threads
class CallbackPool {
 public:
  void Run(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
    if (idle_ > 0) {
      cv_.notify_one();
    } else {
      ++threads_;
      std::thread([this] { Loop(); }).detach();
    }
  }

  int Stop() {
    std::unique_lock<std::mutex> lock(mu_);
    stop_ = true;
    cv_.notify_all();
    done_cv_.wait(lock, [&] { return threads_ == 0; });
    int stopped = stopped_;
    stopped_ = 0;
    stop_ = false;
    return stopped;
  }

 private:
  void Loop() {
    // Each task serves an operation that is running on the engine and waits for the task.
    engine::SetPushesServeRunningWork(true);
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      while (queue_.empty() && !stop_) {
        ++idle_;
        cv_.wait(lock);
        --idle_;
      }
      if (queue_.empty()) break;
      std::function<void()> task = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      task();
      task = nullptr;
      lock.lock();
    }
    --threads_;
    ++stopped_;
    done_cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::deque<std::function<void()>> queue_;
  int idle_ = 0;
  int threads_ = 0;
  int stopped_ = 0;
  bool stop_ = false;
};

CallbackPool& Pool() {
  static CallbackPool* p = new CallbackPool();  // leaked: its threads may outlive statics
  return *p;
}

}  // namespace

void Register(const std::string& op_type, PropCreator creator) {
  WEFT_CHECK(!op_type.empty(), kValue, "custom operator: expected a non-empty op_type");
  WEFT_CHECK(creator != nullptr, kValue, "custom operator '", op_type, "': expected a creator, got none");
  std::lock_guard<std::mutex> lock(Reg().mu);
  Reg().creators[op_type] = std::move(creator);
}

bool IsRegistered(const std::string& op_type) {
  std::lock_guard<std::mutex> lock(Reg().mu);
  return Reg().creators.count(op_type) > 0;
}

void RunOnCallbackThread(std::function<void()> task) { Pool().Run(std::move(task)); }

int StopCallbackThreads() { return Pool().Stop(); }

namespace {

int NumInputs(const NodeAttrs& attrs) {
  const State& st = StateOf(attrs);
  return static_cast<int>(st.args.size() + st.aux.size());
}

std::vector<std::string> InputNames(const NodeAttrs& attrs) {
  const State& st = StateOf(attrs);
  std::vector<std::string> names = st.args;
  names.insert(names.end(), st.aux.begin(), st.aux.end());
  return names;
}

// Around a fork the callback threads stop with the engine's (the child would have none).
const bool fork_handlers = [] {
  engine::AddForkHandlers([] { StopCallbackThreads(); }, [](bool) {});
  return true;
}();

const bool registered = [] {
  Op& op = OpRegistry::Get()->Register("Custom")
      .Describe("Applies a custom operator implemented outside the core: in a front end (a CustomOp subclass "
                "registered with mx.operator.register) or in a library loaded with mx.library.load. Its inputs are "
                "the operator's arguments followed by its auxiliary states; any further keyword argument goes, as "
                "a string, to the operator's property.")
      .AddArgument("data", "NDArray-or-Symbol[]", "The arguments, then the auxiliary states, of the custom operator")
      .SetNumInputs(NumInputs)
      .SetNumOutputs([](const NodeAttrs& attrs) { return static_cast<int>(StateOf(attrs).outs.size()); })
      .SetParams<OpTypeParam>()
      .SetAttr<FListNames>("FListInputNames", InputNames)
      .SetAttr<FListNames>("FListOutputNames", [](const NodeAttrs& attrs) { return StateOf(attrs).outs; })
      .SetAttr<FInferShape>("FInferShape", CustomInferShape)
      .SetAttr<FInferType>("FInferType", CustomInferType)
      // Auxiliary states are written; listing them (even none) also keeps a custom operator,
      // which may draw random numbers or keep state, out of constant folding.
      .SetAttr<FMutateInputs>("FMutateInputs",
                              [](const NodeAttrs& attrs) {
                                const State& st = StateOf(attrs);
                                std::vector<int> r;
                                for (size_t i = 0; i < st.aux.size(); ++i) r.push_back(static_cast<int>(st.args.size() + i));
                                return r;
                              })
      .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
      .SetAttr<FComputeAsync>("FComputeAsync<cpu>", CustomForward)
      .SetAttr<FComputeAsync>("FComputeAsync<gpu>", CustomForward)
      .SetAttr<FGradient>("FGradient", CustomGradient);
  op.attr_parser = ParseCustom;

  Op& bwd = OpRegistry::Get()->Register("_backward_Custom")
      .Describe("The gradient of a Custom operator; made only by the gradient pass (it needs the forward's state).")
      .AddArgument("data", "NDArray-or-Symbol[]", "The declared out_grads, in_data and out_data, then the auxiliary states")
      .SetNumInputs([](const NodeAttrs& attrs) { return static_cast<int>(LayoutOf(StateOf(attrs)).inputs.size()); })
      .SetNumOutputs([](const NodeAttrs& attrs) { return static_cast<int>(StateOf(attrs).args.size()); })
      .SetAttr<FListNames>("FListInputNames", [](const NodeAttrs& attrs) { return BackwardInputNames(StateOf(attrs)); })
      .SetAttr<FInferShape>("FInferShape", BackwardInferShape)
      .SetAttr<FInferType>("FInferType", BackwardInferType)
      .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs&) { return std::vector<int>(); })
      .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
      .SetAttr<FComputeAsync>("FComputeAsync<cpu>", CustomBackward)
      .SetAttr<FComputeAsync>("FComputeAsync<gpu>", CustomBackward);
  bwd.attr_parser = ParseBackwardCustom;
  return true;
}();

}  // namespace
}  // namespace custom
}  // namespace weft
