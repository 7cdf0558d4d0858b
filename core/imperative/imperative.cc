#include "core/imperative/imperative.h"

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "core/base/error.h"
#include "core/base/scratch.h"
#include "core/engine/engine_impl.h"
#include "core/op/input_versions.h"
#include "core/imperative/sparse_dispatch.h"
#include "core/imperative/sparse_update.h"
#include "core/imperative/transformation.h"
#include "core/ndarray/sparse.h"
#include "core/op/compute_async.h"
#include "core/op/serial_scope.h"
#include "core/op/shape_from_data.h"
#include "core/op/work_estimate.h"
#include "core/profiler/profiler.h"

namespace weft {
namespace imperative {
namespace {

std::string ArgList(const Op* op) {
  std::string s;
  for (const auto& a : op->arguments) s += (s.empty() ? "" : ", ") + a.name;
  return s;
}

void AddUnique(std::vector<engine::VarHandle>* v, engine::VarHandle var) {
  if (std::find(v->begin(), v->end(), var) == v->end()) v->push_back(var);
}

}  // namespace

// The buffers of one call, from kInfer to kDispatch, reused by the thread's next call.
struct InvokeScratch {
  std::vector<Shape> in_shapes, out_shapes;
  std::vector<DType> in_types, out_types;
  std::vector<engine::VarHandle> reads, writes;
  // The variables of the outputs kInfer made: no other thread knows them yet.
  std::vector<engine::VarHandle> fresh;
  std::vector<Resource> resources;
  std::vector<TBlob> in_blobs, out_blobs;
  std::vector<OpReq> reqs;
  const FCompute* fn = nullptr;
  const FComputeAsync* async_fn = nullptr;
  // The thread's allocation count when kInfer began: what the call allocated is the
  // difference at dispatch (counted only while the profiler records memory).
  int64_t alloc_mark = 0;

  void Clear() {
    reads.clear();
    writes.clear();
    fresh.clear();
    resources.clear();
    in_blobs.clear();
    out_blobs.clear();
    reqs.clear();
    fn = nullptr;
    async_fn = nullptr;
  }
};

namespace {

// A non-negative integer from the environment variable `name`, or `def` when it is unset.
int64_t EnvLimit(const char* name, int64_t def) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return def;
  char* end = nullptr;
  long long v = std::strtoll(s, &end, 10);
  WEFT_CHECK(*end == '\0' && v >= 0, kValue, name, ": expected a non-negative integer, got '", s, "'");
  return static_cast<int64_t>(v);
}

// Operations touching at most this many bytes (inputs plus outputs) run on the pushing
// thread when their inputs are ready: below it, waking a worker costs more than the work.
// WEFT_ENGINE_INLINE_BYTES changes it; 0 sends everything to the workers.
int64_t InlineMaxBytes() {
  static const int64_t limit = EnvLimit("WEFT_ENGINE_INLINE_BYTES", int64_t{1} << 16);
  return limit;
}

// Eager calls estimated (FEstimateNs) to take at most this many nanoseconds on one core run
// on the calling thread when their inputs are ready. Handing a call to a worker and waiting
// for it costs 10-20 us (waking the worker, then the caller; more on a loaded machine), so
// a softmax of (32, 1000) (about 10 us) or a FullyConnected 1024 -> 10 at batch 64 (about 15
// us forward, 30 backward) took up to twice as long on a worker. WEFT_ENGINE_INLINE_NS
// changes it; 0 sends every call of an operator with an estimate to the workers.
int64_t InlineMaxNs() {
  static const int64_t limit = EnvLimit("WEFT_ENGINE_INLINE_NS", 40000);
  return limit;
}

thread_local bool tls_is_training = false;

}  // namespace

bool IsTraining() { return tls_is_training; }

bool SetIsTraining(bool on) {
  bool prev = tls_is_training;
  tls_is_training = on;
  return prev;
}

void InferShapeType(const NodeAttrs& attrs, std::vector<Shape>* in_shapes, std::vector<DType>* in_types,
                    std::vector<Shape>* out_shapes, std::vector<DType>* out_types) {
  const Op* op = attrs.op;
  static const auto& shape_fns = Op::GetAttr<FInferShape>("FInferShape");
  static const auto& type_fns = Op::GetAttr<FInferType>("FInferType");
  if (!shape_fns.Contains(op)) Throw(ErrorKind::kInternal, "Operator '", op->name, "' has no shape inference");
  bool shapes_known = shape_fns[op](attrs, in_shapes, out_shapes);
  if (shapes_known) {
    for (const auto& s : *out_shapes) if (!s.is_known()) shapes_known = false;
  }
  if (!shapes_known) {
    std::string ins;
    for (const auto& s : *in_shapes) ins += (ins.empty() ? "" : ", ") + s.ToString();
    Throw(ErrorKind::kShape, "Operator '", op->name, "': cannot infer the output shapes from input shapes [", ins, "]");
  }
  bool types_known = type_fns.Contains(op) ? type_fns[op](attrs, in_types, out_types)
                                           : SameTypeEverywhere(attrs, in_types, out_types);
  for (DType t : *out_types) if (t == DType::kUnknown) types_known = false;
  if (!types_known) Throw(ErrorKind::kType, "Operator '", op->name, "': cannot infer the output dtypes");
}

namespace {

// The shapes and dtypes inferred for an operator without parameters, kept per thread for
// the last signature (inputs' shapes and dtypes, given outputs' shapes and dtypes) seen in
// its slot: such an operator's inference depends on nothing else, and a loop calling it on
// the same arrays pays for inference once. Operators with parameters are not kept: their
// attributes may carry parsed state that their dictionary does not show.
struct InferMemo {
  const Op* op = nullptr;
  std::vector<Shape> in_shapes, given_shapes, out_shapes;
  std::vector<DType> in_types, given_types, out_types;

  bool Matches(const Op* o, const std::vector<NDArray>& inputs, const std::vector<NDArray>& outputs) const {
    if (op != o || in_shapes.size() != inputs.size() || given_shapes.size() != outputs.size()) return false;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].dtype() != in_types[i] || inputs[i].shape() != in_shapes[i]) return false;
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i].is_none() != !given_shapes[i].known_ndim()) return false;
      if (!outputs[i].is_none() && (outputs[i].dtype() != given_types[i] || outputs[i].shape() != given_shapes[i]))
        return false;
    }
    return true;
  }

  void Store(const Op* o, const std::vector<NDArray>& inputs, const std::vector<NDArray>& outputs,
             const std::vector<Shape>& inferred_shapes, const std::vector<DType>& inferred_types) {
    op = o;
    in_shapes.resize(inputs.size());
    in_types.resize(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      in_shapes[i] = inputs[i].shape();
      in_types[i] = inputs[i].dtype();
    }
    given_shapes.resize(outputs.size());
    given_types.resize(outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      given_shapes[i] = outputs[i].is_none() ? Shape() : outputs[i].shape();
      given_types[i] = outputs[i].is_none() ? DType::kUnknown : outputs[i].dtype();
    }
    out_shapes = inferred_shapes;
    out_types = inferred_types;
  }
};

// Fills s's shapes and dtypes: those of the arrays, then inferred; throws when the
// operator cannot infer them or expects other input shapes or dtypes.
void InferChecked(const NodeAttrs& attrs, const std::vector<NDArray>& inputs, const std::vector<NDArray>& outputs,
                  InvokeScratch* s) {
  const Op* op = attrs.op;
  const int num_out = static_cast<int>(outputs.size());
  static const auto& data_shape_fns = Op::GetAttr<FInferShapeFromData>("FInferShapeFromData");
  s->in_shapes.resize(inputs.size());
  s->in_types.resize(inputs.size());
  s->out_shapes.assign(num_out, Shape());
  s->out_types.assign(num_out, DType::kUnknown);
  for (size_t i = 0; i < inputs.size(); ++i) {
    s->in_shapes[i] = inputs[i].shape();
    s->in_types[i] = inputs[i].dtype();
  }
  for (int i = 0; i < num_out; ++i) {
    if (!outputs[i].is_none()) {
      s->out_shapes[i] = outputs[i].shape();
      s->out_types[i] = outputs[i].dtype();
    }
  }
  if (data_shape_fns.Contains(op)) {
    // The output shapes depend on the input values: wait for them and read them here.
    std::vector<TBlob> blobs;
    for (const auto& x : inputs) {
      if (x.ctx().is_gpu())
        Throw(ErrorKind::kUnsupported, "Operator '", op->name, "' reads its inputs to size its outputs and "
              "supports CPU arrays only");
      x.WaitToRead();
      blobs.push_back(x.data());
    }
    data_shape_fns[op](attrs, blobs, &s->out_shapes);
  }
  InferShapeType(attrs, &s->in_shapes, &s->in_types, &s->out_shapes, &s->out_types);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (s->in_shapes[i] != inputs[i].shape()) {
      // Named as the operator declares it, unless it is one of a variadic list.
      bool named = i < op->arguments.size() && op->arguments[i].type.find("[]") == std::string::npos;
      Throw(ErrorKind::kShape, "Operator '", op->name, "': Shape inconsistent, Provided = ",
            inputs[i].shape().ToMXNetString(), ", inferred shape=", s->in_shapes[i].ToMXNetString(), ": input ",
            named ? "'" + op->arguments[i].name + "'" : std::to_string(i), " has shape ",
            inputs[i].shape().ToString(), " but the operator expects ", s->in_shapes[i].ToString());
    }
    if (s->in_types[i] != inputs[i].dtype())
      Throw(ErrorKind::kType, "Operator '", op->name, "': Type inconsistent, Provided = ", DTypeName(inputs[i].dtype()),
            ", inferred type = ", DTypeName(s->in_types[i]), ": input ", i, " has dtype ", DTypeName(inputs[i].dtype()),
            " but the operator expects ", DTypeName(s->in_types[i]));
  }
}

// The thread's memo slot for `op`, or null when the call's inference cannot be kept.
InferMemo* MemoFor(const NodeAttrs& attrs) {
  if (attrs.op->attr_parser || !attrs.dict.empty() || attrs.parsed) return nullptr;
  constexpr size_t kSlots = 32;
  // On the heap: the library's thread-local block is small.
  thread_local std::unique_ptr<InferMemo[]> memo;
  if (!memo) memo = std::make_unique<InferMemo[]>(kSlots);
  return &memo[(reinterpret_cast<uintptr_t>(attrs.op) / alignof(Op)) % kSlots];
}

// Whether arrays on `a` and `b` may meet in one call. Host memory of different kinds (cpu,
// cpu_pinned, cpu_shared) mixes, as in MXNet: kernels see plain CPU memory, and results go
// to the first input's context. cpu(i) and cpu(j) stay apart, like two GPUs.
bool SameDevice(Context a, Context b) {
  return a == b || (a.is_host() && b.is_host() && a.dev_type != b.dev_type);
}

// kInfer: resolves the call completely before anything is recorded or run: the counts of
// inputs and outputs, one context for all arrays (SameDevice), shapes and dtypes (inferred,
// then checked against the arrays given), the outputs allocated, and the compute function
// of the device.
class InferStage final : public Transformation {
 public:
  const char* name() const override { return "infer"; }

  void Apply(Call& call, const Next& next) override {
    const NodeAttrs& attrs = *call.attrs;
    const std::vector<NDArray>& inputs = *call.inputs;
    std::vector<NDArray>* outputs = call.outputs;
    const Op* op = attrs.op;
    int num_in = op->NumInputs(attrs);
    int num_out = op->NumOutputs(attrs);
    if (static_cast<int>(inputs.size()) != num_in)
      Throw(ErrorKind::kValue, "Operator '", op->name, "': expected ", num_in, " input", num_in == 1 ? "" : "s",
            op->arguments.empty() ? std::string() : " (" + ArgList(op) + ")", ", got ", inputs.size());
    static const auto& visible_fns = Op::GetAttr<FNumVisibleOutputs>("FNumVisibleOutputs");
    int num_visible = visible_fns.Contains(op) ? visible_fns[op](attrs) : num_out;
    if (outputs->empty()) {
      outputs->resize(num_out);
    } else if (static_cast<int>(outputs->size()) == num_visible && num_visible < num_out) {
      outputs->resize(num_out);  // hidden outputs (a dropout mask, say) are made here
    } else if (static_cast<int>(outputs->size()) != num_out) {
      Throw(ErrorKind::kValue, "Operator '", op->name, "': expected ", num_visible, " output array",
            num_visible == 1 ? "" : "s", ", got ", outputs->size());
    }

    Context ctx = call.ctx_hint ? *call.ctx_hint : Context::CPU();
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].is_none())
        Throw(ErrorKind::kValue, "Operator '", op->name, "': input ", i, " is an empty (none) array");
      if (i == 0) ctx = inputs[0].ctx();
      else if (!SameDevice(inputs[i].ctx(), ctx))
        Throw(ErrorKind::kValue, "Operator '", op->name, "': all inputs must be on one context, but input 0 is on ",
              ctx.ToString(), " and input ", i, " on ", inputs[i].ctx().ToString());
    }
    if (inputs.empty()) {
      for (const auto& o : *outputs) if (!o.is_none()) { ctx = o.ctx(); break; }
    }

    ScratchLease<InvokeScratch> s;
    s->alloc_mark = profiler::ThreadAllocatedBytes();
    static const auto& data_shape_fns = Op::GetAttr<FInferShapeFromData>("FInferShapeFromData");
    InferMemo* memo = data_shape_fns.Contains(op) ? nullptr : MemoFor(attrs);
    // The inferred shapes and dtypes: the memo's own, read in place, on a hit.
    const std::vector<Shape>* out_shapes = &s->out_shapes;
    const std::vector<DType>* out_types = &s->out_types;
    if (memo != nullptr && memo->Matches(op, inputs, *outputs)) {
      out_shapes = &memo->out_shapes;
      out_types = &memo->out_types;
    } else {
      InferChecked(attrs, inputs, *outputs, &*s);
      if (memo != nullptr) memo->Store(op, inputs, *outputs, s->out_shapes, s->out_types);
    }
    for (int i = 0; i < num_out; ++i) {
      NDArray& o = (*outputs)[i];
      if (o.is_none()) {
        o = NDArray((*out_shapes)[i], ctx, (*out_types)[i]);
        s->fresh.push_back(o.var());
      } else if (!SameDevice(o.ctx(), ctx)) {
        Throw(ErrorKind::kValue, "Operator '", op->name, "': output ", i, " is on ", o.ctx().ToString(),
              " but the inputs are on ", ctx.ToString());
      } else if (o.shape() != (*out_shapes)[i]) {
        // Shape inference may replace a given output's shape rather than merge it; the
        // kernel writes (and with kAddTo reads) the inferred size.
        Throw(ErrorKind::kShape, "Operator '", op->name, "': output ", i, " has shape ", o.shape().ToString(),
              " but the operator produces ", (*out_shapes)[i].ToString());
      }
    }

    static const auto& fcompute_cpu = Op::GetAttr<FCompute>("FCompute<cpu>");
    static const auto& fcompute_gpu = Op::GetAttr<FCompute>("FCompute<gpu>");
    static const auto& async_cpu = Op::GetAttr<FComputeAsync>("FComputeAsync<cpu>");
    static const auto& async_gpu = Op::GetAttr<FComputeAsync>("FComputeAsync<gpu>");
    const auto& fcompute = ctx.is_gpu() ? fcompute_gpu : fcompute_cpu;
    const auto& async = ctx.is_gpu() ? async_gpu : async_cpu;
    if (async.Contains(op)) {
      s->async_fn = &async[op];
    } else {
      if (!fcompute.Contains(op))
        Throw(ErrorKind::kUnsupported, "Operator '", op->name, "' has no implementation for ",
              ctx.is_gpu() ? "gpu" : "cpu");
      s->fn = &fcompute[op];
    }
    call.ctx = ctx;
    call.scratch = &*s;
    next(call);
  }
};

// The state of each input as the call runs (every earlier write to them has finished by
// then), for operators with TInputVersions.
std::vector<op::InputVersion> InputVersions(const std::vector<NDArray>& inputs) {
  std::vector<op::InputVersion> v;
  for (const auto& in : inputs) v.push_back({in.chunk(), in.var()->writes.load(std::memory_order_acquire)});
  return v;
}

// Whether a CPU call whose inputs are ready runs on the calling thread rather than on a
// worker. An eager call goes by its operator's estimate of its time where it has one, so
// that a softmax or a small FullyConnected over a few hundred KB runs here while a
// convolution over the same bytes, with far more arithmetic, goes to a worker; other calls
// go by the bytes they touch. Executor steps (profiler::InSymbolic: the executor marks
// the thread that pushes a graph) go by their bytes alone: the executor pushes the graph's
// next step at once, and a step of tens of microseconds run on its thread would hold back
// the pushes behind it while the worker idles (with 256 KiB or 1 MiB for every call, the
// main job's LeNet trained at 11,300-11,900 samples/s against 13,700 with 64 KiB).
bool RunsOnCaller(const NodeAttrs& attrs, const InvokeScratch& s, int64_t bytes) {
  static const auto& estimates = Op::GetAttr<FEstimateNs>("FEstimateNs");
  if (InlineMaxBytes() == 0) return false;
  if (!profiler::InSymbolic() && estimates.Contains(attrs.op))
    return estimates[attrs.op](attrs, s.in_blobs, s.out_blobs) <= static_cast<double>(InlineMaxNs());
  return bytes <= InlineMaxBytes();
}

// kDispatch: requests the operator's resources and hands the work to the engine with the
// variables it reads and writes; small CPU work whose inputs are ready runs here and now.
class DispatchStage final : public Transformation {
 public:
  const char* name() const override { return "dispatch"; }

  void Apply(Call& call, const Next&) override {
    const NodeAttrs& attrs = *call.attrs;
    const std::vector<NDArray>& inputs = *call.inputs;
    const std::vector<NDArray>& outputs = *call.outputs;
    const Op* op = attrs.op;
    const Context ctx = call.ctx;
    const bool is_train = call.is_train;
    InvokeScratch* s = call.scratch;
    int num_out = static_cast<int>(outputs.size());

    static const auto& resource_fns = Op::GetAttr<FResourceRequest>("FResourceRequest");
    static const auto& mutate_fns = Op::GetAttr<FMutateInputs>("FMutateInputs");
    static const auto& versioned_fns = Op::GetAttr<op::TInputVersions>("TInputVersions");
    const bool versioned = versioned_fns.Contains(op) && versioned_fns[op];
    std::vector<engine::VarHandle>& reads = s->reads;
    std::vector<engine::VarHandle>& writes = s->writes;
    if (resource_fns.Contains(op)) {
      for (const auto& r : resource_fns[op](attrs)) {
        s->resources.push_back(ResourceManager::Get()->Request(ctx, r));
        AddUnique(&writes, s->resources.back().var);
      }
    }
    // The outputs kInfer made go last, where RunNowIfIdle takes them as private: no other
    // thread can know their variables yet. One an input shares (a stage after kInfer may
    // have repointed the call) is an ordinary written variable.
    auto is_private = [&](engine::VarHandle v) {
      if (std::find(s->fresh.begin(), s->fresh.end(), v) == s->fresh.end()) return false;
      for (const auto& in : inputs)
        if (in.var() == v) return false;
      return true;
    };
    for (const auto& o : outputs)
      if (!is_private(o.var())) AddUnique(&writes, o.var());
    if (mutate_fns.Contains(op))
      for (int i : mutate_fns[op](attrs)) AddUnique(&writes, inputs.at(i).var());
    for (const auto& in : inputs)
      if (std::find(writes.begin(), writes.end(), in.var()) == writes.end()) AddUnique(&reads, in.var());
    size_t num_private = 0;
    for (const auto& o : outputs) {
      engine::VarHandle v = o.var();
      if (is_private(v) && std::find(writes.begin(), writes.end(), v) == writes.end()) {
        writes.push_back(v);
        ++num_private;
      }
    }

    int64_t in_bytes = 0, out_bytes = 0;
    for (const auto& in : inputs) s->in_blobs.push_back(in.data());
    for (const auto& o : outputs) s->out_blobs.push_back(o.data());
    for (const auto& b : s->in_blobs) in_bytes += static_cast<int64_t>(b.Bytes());
    for (const auto& b : s->out_blobs) out_bytes += static_cast<int64_t>(b.Bytes());
    if (call.req) s->reqs = *call.req;
    if (static_cast<int>(s->reqs.size()) < num_out) s->reqs.resize(num_out, OpReq::kWriteTo);

    // What the profiler records the call as: nothing unless it runs (one branch when off).
    const char* prof_name = nullptr;
    int64_t prof_bytes = 0;
    if (__builtin_expect(profiler::ActiveModes() != 0, 0) &&
        profiler::Active(profiler::InSymbolic() ? profiler::kSymbolic : profiler::kImperative)) {
      prof_name = profiler::OperatorEventName(op->name, attrs.name);
      prof_bytes = profiler::ThreadAllocatedBytes() - s->alloc_mark;
    }

    engine::Engine* engine = engine::Engine::Get();
    if (s->async_fn) {
      engine->PushAsync(
          [fn = *s->async_fn, attrs, inputs, outputs, reqs = s->reqs, resources = s->resources, is_train, versioned](
              engine::RunContext rctx, engine::CallbackOnComplete done) {
            OpContext octx;
            octx.is_train = is_train;
            octx.run_ctx = rctx;
            octx.requested = resources;
            std::vector<op::InputVersion> versions;
            if (versioned) versions = InputVersions(inputs);
            op::InputVersionScope scope(versioned ? &versions : nullptr);
            fn(attrs, octx, inputs, reqs, outputs, done);
          },
          ctx, reads, writes, engine::FnProperty::kNormal, 0, prof_name, prof_bytes, out_bytes);
      return;
    }
    const FCompute& fn = *s->fn;
    bool small = !ctx.is_gpu() && RunsOnCaller(attrs, *s, in_bytes + out_bytes);
    if (small) {
      // Ready small work runs here and now, on the buffers above, with no copies at all.
      OpContext octx;
      octx.is_train = is_train;
      octx.requested.swap(s->resources);
      auto run = [&](engine::RunContext rctx) {
        octx.run_ctx = rctx;
        // Work this small costs more split than whole (a parallel region started here must
        // wake threads of the calling thread's own OpenMP pool): a 2x2 max pooling of (8, 20,
        // 24, 24), 13 us on one thread, took 96 us of CPU time when oneDNN split it. Calls
        // over a few KB only: nothing smaller is split, and `a += b` on 16 floats would pay
        // the two thread-count changes (10 ns of its 280).
        op::SerialScope serial(in_bytes + out_bytes > 4096);
        std::vector<op::InputVersion> versions;
        if (versioned) versions = InputVersions(inputs);
        op::InputVersionScope scope(versioned ? &versions : nullptr);
        fn(attrs, octx, s->in_blobs, s->reqs, s->out_blobs);
      };
      bool ran = engine::RunNowIfIdle(engine, ctx, reads, writes, engine::SyncFnRef(run), prof_name, prof_bytes,
                                       num_private);
      octx.requested.swap(s->resources);
      if (ran) return;
    }
    engine->PushAsync(
        [fn, attrs, in_blobs = s->in_blobs, out_blobs = s->out_blobs, reqs = s->reqs, resources = s->resources,
         is_train, arrays = versioned ? inputs : std::vector<NDArray>()](engine::RunContext rctx,
                                                                          engine::CallbackOnComplete done) {
          OpContext octx;
          octx.is_train = is_train;
          octx.run_ctx = rctx;
          octx.requested = resources;
          std::vector<op::InputVersion> versions;
          if (!arrays.empty()) versions = InputVersions(arrays);
          op::InputVersionScope scope(arrays.empty() ? nullptr : &versions);
          fn(attrs, octx, in_blobs, reqs, out_blobs);
          done();
        },
        ctx, reads, writes, small ? engine::FnProperty::kCPUInline : engine::FnProperty::kNormal, 0, prof_name,
        prof_bytes, out_bytes);
  }
};

}  // namespace

Transformation* InferTransformation() {
  static InferStage stage;
  return &stage;
}

Transformation* DispatchTransformation() {
  static DispatchStage stage;
  return &stage;
}

void Invoke(const NodeAttrs& attrs, const std::vector<NDArray>& inputs, std::vector<NDArray>* outputs,
            const Context* ctx_hint, const std::vector<OpReq>* req, bool is_train) {
  // Sparse arrays (in or out) go to the operator's sparse kernel, or else are replaced by
  // dense copies (MXNet's storage fallback). One pointer test per array keeps the dense
  // path's cost unchanged; operators that make sparse arrays from dense ones say so.
  static const auto& on_dense = Op::GetAttr<bool>("TSparseOnDense");
  bool any_sparse = on_dense.Contains(attrs.op);
  for (const NDArray& a : inputs) any_sparse = any_sparse || a.is_sparse();
  for (const NDArray& a : *outputs) any_sparse = any_sparse || a.is_sparse();
  if (!any_sparse) {
    Call call{&attrs, &inputs, outputs, ctx_hint, req, is_train, Context::CPU()};
    RunStack(call);
    return;
  }
  if (InvokeSparse(attrs, inputs, outputs, req, is_train)) return;
  if (LazyRowSparseUpdate(attrs, inputs, outputs, is_train)) return;
  std::vector<NDArray> dense;
  dense.reserve(inputs.size());
  for (const NDArray& b : inputs) {
    dense.push_back(DenseOf(b));
    // The dense copy stands for the sparse array in autograd's record: its gradient flows
    // to the sparse array's history.
    if (b.is_sparse() && b.ag_node()) dense.back().set_ag(b.ag_node(), b.ag_index());
  }
  std::vector<NDArray> given_sparse(outputs->size());
  for (size_t i = 0; i < outputs->size(); ++i) {
    if (!(*outputs)[i].is_sparse()) continue;
    given_sparse[i] = (*outputs)[i];
    (*outputs)[i] = NDArray();
  }
  Call call{&attrs, &dense, outputs, ctx_hint, req, is_train, Context::CPU()};
  RunStack(call);
  // A sparse array given as an output receives the result in its own storage type.
  for (size_t i = 0; i < given_sparse.size(); ++i)
    if (!given_sparse[i].is_none()) (*outputs)[i] = CastStorage((*outputs)[i], given_sparse[i].stype());
}

namespace {

// Records a gradient expression, then runs only the calls that lead to the gradients
// wanted, telling each operator to skip the outputs nobody needs (the gradient of a
// convolution's data when the data needs none, for instance).
class EagerGradBuilder : public GradBuilder {
 public:
  EagerGradBuilder(Context ctx, bool is_train) : ctx_(ctx), is_train_(is_train) {}

  GradValue Add(const NDArray& a) {
    values_.push_back(a);
    return GradValue{static_cast<int64_t>(values_.size() - 1)};
  }

  std::vector<GradValue> Call(const std::string& op_name, const std::vector<GradValue>& ins,
                              const KwArgs& params) override {
    const weft::Op* op = weft::Op::Get(op_name);
    CallRecord rec{MakeAttrs(op, params), {}, {}};
    for (const auto& v : ins) {
      if (!v.defined()) Throw(ErrorKind::kInternal, "gradient of an operator passes an undefined value to '", op_name, "'");
      rec.inputs.push_back(v.id);
    }
    std::vector<GradValue> r;
    for (int i = 0, n = op->NumOutputs(rec.attrs); i < n; ++i) {
      r.push_back(Add(NDArray()));
      rec.outputs.push_back(r.back().id);
    }
    calls_.push_back(std::move(rec));
    return r;
  }

  // Runs what `wanted` depends on; returns the array of each wanted value (none where
  // undefined or not wanted). A wanted value with an array in `into` that a call produces
  // is written there (see Gradient).
  std::vector<NDArray> Run(const std::vector<GradValue>& grads, const std::vector<bool>& wanted,
                           const std::vector<NDArray>* into) {
    std::vector<bool> need(values_.size(), false);
    for (size_t i = 0; i < grads.size(); ++i)
      if (grads[i].defined() && wanted[i]) need[grads[i].id] = true;
    std::vector<bool> run(calls_.size(), false);
    for (size_t c = calls_.size(); c-- > 0;) {
      for (int64_t o : calls_[c].outputs) run[c] = run[c] || need[o];
      if (run[c])
        for (int64_t i : calls_[c].inputs) need[i] = true;
    }
    // The array each value goes into, for the first input asking for it.
    std::vector<const NDArray*> dest(values_.size(), nullptr);
    if (into != nullptr)
      for (size_t i = 0; i < grads.size() && i < into->size(); ++i)
        if (grads[i].defined() && wanted[i] && !(*into)[i].is_none() && dest[grads[i].id] == nullptr)
          dest[grads[i].id] = &(*into)[i];
    for (size_t c = 0; c < calls_.size(); ++c) {
      if (!run[c]) continue;
      std::vector<NDArray> in_arrays, outs;
      std::vector<OpReq> req;
      for (int64_t i : calls_[c].inputs) in_arrays.push_back(values_[i]);
      for (int64_t o : calls_[c].outputs) req.push_back(need[o] ? OpReq::kWriteTo : OpReq::kNullOp);
      GiveDestinations(c, in_arrays, dest, &outs);
      Invoke(calls_[c].attrs, in_arrays, &outs, &ctx_, &req, is_train_);
      for (size_t k = 0; k < outs.size(); ++k) values_[calls_[c].outputs[k]] = outs[k];
    }
    std::vector<NDArray> r;
    for (size_t i = 0; i < grads.size(); ++i)
      r.push_back(grads[i].defined() && wanted[i] ? values_[grads[i].id] : NDArray());
    return r;
  }

 private:
  // Fills *outs (one entry per output of call c, none where the call makes its own) with
  // the destinations of its outputs, where the call's output there has the destination's
  // shape and dtype (inferred first: a mismatch must not turn into an error).
  void GiveDestinations(size_t c, const std::vector<NDArray>& in_arrays, const std::vector<const NDArray*>& dest,
                        std::vector<NDArray>* outs) {
    const std::vector<int64_t>& out_ids = calls_[c].outputs;
    bool any = false;
    for (int64_t o : out_ids) any = any || dest[o] != nullptr;
    static const auto& data_shape_fns = Op::GetAttr<FInferShapeFromData>("FInferShapeFromData");
    if (!any || data_shape_fns.Contains(calls_[c].attrs.op)) return;
    std::vector<Shape> in_shapes, out_shapes(out_ids.size());
    std::vector<DType> in_types, out_types(out_ids.size(), DType::kUnknown);
    for (const auto& a : in_arrays) {
      if (a.is_none() || a.is_sparse()) return;
      in_shapes.push_back(a.shape());
      in_types.push_back(a.dtype());
    }
    InferShapeType(calls_[c].attrs, &in_shapes, &in_types, &out_shapes, &out_types);
    outs->assign(out_ids.size(), NDArray());
    for (size_t k = 0; k < out_ids.size(); ++k) {
      const NDArray* d = dest[out_ids[k]];
      if (d != nullptr && !d->is_sparse() && d->shape() == out_shapes[k] && d->dtype() == out_types[k] &&
          d->ctx() == ctx_)
        (*outs)[k] = *d;
    }
  }

  struct CallRecord {
    NodeAttrs attrs;
    std::vector<int64_t> inputs, outputs;
  };
  Context ctx_;
  bool is_train_;
  std::vector<NDArray> values_;
  std::vector<CallRecord> calls_;
};

}  // namespace

std::vector<NDArray> Gradient(const NodeAttrs& attrs, const std::vector<NDArray>& inputs,
                              const std::vector<NDArray>& outputs, const std::vector<NDArray>& out_grads,
                              bool is_train, const std::vector<bool>* wanted, const std::vector<NDArray>* into) {
  static const auto& grad_fns = Op::GetAttr<FGradient>("FGradient");
  if (!grad_fns.Contains(attrs.op))
    Throw(ErrorKind::kUnsupported, "Operator '", attrs.op->name, "' is not differentiable (it registers no gradient)");
  EagerGradBuilder b(inputs.empty() ? Context::CPU() : inputs[0].ctx(), is_train);
  GradArgs args;
  for (const auto& a : inputs) args.inputs.push_back(b.Add(a));
  for (const auto& a : outputs) args.outputs.push_back(b.Add(a));
  for (const auto& a : out_grads) args.out_grads.push_back(b.Add(a));
  std::vector<GradValue> grads = grad_fns[attrs.op](b, attrs, args);
  if (grads.size() != inputs.size())
    Throw(ErrorKind::kInternal, "Operator '", attrs.op->name, "': gradient returned ", grads.size(), " values for ",
          inputs.size(), " inputs");
  return b.Run(grads, wanted ? *wanted : std::vector<bool>(inputs.size(), true), into);
}

}  // namespace imperative
}  // namespace weft
