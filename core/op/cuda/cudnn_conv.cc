// Convolution passes through cuDNN 9's graph (backend) API (core/op/cuda/cudnn_conv.h).
//
// Per problem (ConvPlanKey): tensor and convolution descriptors, one convolution operation
// in an operation graph, engine configurations from the heuristics (mode A, then the
// fallback list), execution plans finalized from them, and either the first plan within
// the workspace limit or, when tuning, the fastest of the candidates timed once on the
// operation's stream. The plan is cached per thread; later calls only build a variant pack
// and execute. This file is also the one that uses the handle attributes cuDNN 9.19 marks
// deprecated (CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_ATTR_EXECUTION_PLAN_HANDLE).
#ifdef WEFT_USE_CUDNN

#include "core/op/cuda/cudnn_conv.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "core/base/cuda_utils.h"
#include "core/op/cuda/cudnn.h"
#include "core/resource/resource.h"

namespace weft {
namespace cuda {

ConvTune ConvTuneOf(const std::string& cudnn_tune) {
  if (cudnn_tune == "off") return ConvTune::kHeuristic;
  if (cudnn_tune == "limited_workspace") return ConvTune::kLimitedWorkspace;
  if (cudnn_tune == "fastest") return ConvTune::kFastest;
  const char* env = std::getenv("MXNET_CUDNN_AUTOTUNE_DEFAULT");
  std::string v = env ? env : "";
  if (v.empty() || v == "0") return ConvTune::kHeuristic;
  if (v == "1") return ConvTune::kLimitedWorkspace;
  if (v == "2") return ConvTune::kFastest;
  Throw(ErrorKind::kValue, "MXNET_CUDNN_AUTOTUNE_DEFAULT is '", v,
        "'; expected 0 (heuristics), 1 (time within the workspace limit) or 2 (time every candidate)");
}

bool CudnnAllowTf32() {
  const char* env = std::getenv("WEFT_CUDNN_ALLOW_TF32");
  return !(env && std::string(env) == "0");
}

namespace {

constexpr int64_t kUidX = 'x', kUidW = 'w', kUidY = 'y';

bool CudnnTypeOf(DType dt, cudnnDataType_t* type) {
  switch (dt) {
    case DType::kFloat32: *type = CUDNN_DATA_FLOAT; return true;
    case DType::kFloat64: *type = CUDNN_DATA_DOUBLE; return true;
    case DType::kFloat16: *type = CUDNN_DATA_HALF; return true;
    case DType::kBfloat16: *type = CUDNN_DATA_BFLOAT16; return true;
    default: return false;
  }
}

// cuDNN derives the output extent from symmetric padding (post = pre) and checks it
// against y: true for every Convolution, and for a Deconvolution unless its adj (or
// target_shape) adds a whole stride or more, which the caller's own kernel then runs.
bool OutputMatchesSymmetricPadding(const op::ConvGeom& g) {
  for (int j = 0; j < 3; ++j) {
    int64_t extent = g.d[j] * (g.k[j] - 1) + 1, padded = g.in[j] + 2 * g.pl[j];
    if (padded < extent || (padded - extent) / g.s[j] + 1 != g.out[j]) return false;
  }
  return true;
}

// Spatial axes cuDNN sees: 2 for 1-D and 2-D convolutions (a 1-D one has height 1), 3
// for 3-D. ConvGeom right-aligns its axes, so these are the last `sd` entries.
int SpatialDims(const op::ConvGeom& g) { return g.nd == 3 ? 3 : 2; }

std::vector<int64_t> Dims(int64_t a, int64_t b, const int64_t* spatial, int sd) {
  std::vector<int64_t> d{a, b};
  for (int j = 3 - sd; j < 3; ++j) d.push_back(spatial[j]);
  return d;
}

BackendDescriptor Tensor(int64_t uid, const std::vector<int64_t>& dims, cudnnDataType_t type, int64_t align,
                         const char* op) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
  BackendDescriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR, op);
  WEFT_CUDNN_SET(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  WEFT_CUDNN_SET(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, static_cast<int64_t>(dims.size()), dims.data());
  WEFT_CUDNN_SET(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, static_cast<int64_t>(strides.size()), strides.data());
  WEFT_CUDNN_SET(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  WEFT_CUDNN_SET(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
  t.Finalize("tensor descriptor");
  return t;
}

// The operation graph of one pass; the descriptors it refers to come first, the graph
// last.
std::vector<BackendDescriptor> BuildGraph(cudnnHandle_t handle, ConvPass pass, const op::ConvGeom& g, DType dt,
                                          const int64_t align[3], bool accumulate, const char* op) {
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  CudnnTypeOf(dt, &type);
  // float16 and bfloat16 accumulate in float32, as the CPU kernels do.
  cudnnDataType_t compute = dt == DType::kFloat64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  int sd = SpatialDims(g);
  std::vector<BackendDescriptor> keep;
  keep.push_back(Tensor(kUidX, Dims(g.n, g.c, g.in, sd), type, align[0], op));
  keep.push_back(Tensor(kUidW, Dims(g.f, g.c / g.g, g.k, sd), type, align[1], op));
  keep.push_back(Tensor(kUidY, Dims(g.n, g.f, g.out, sd), type, align[2], op));

  BackendDescriptor conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, op);
  std::vector<int64_t> stride, dilate, pad;
  for (int j = 3 - sd; j < 3; ++j) {
    stride.push_back(g.s[j]);
    dilate.push_back(g.d[j]);
    pad.push_back(g.pl[j]);
  }
  int64_t nsd = sd;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  WEFT_CUDNN_SET(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  WEFT_CUDNN_SET(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  WEFT_CUDNN_SET(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &nsd);
  WEFT_CUDNN_SET(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, nsd, dilate.data());
  WEFT_CUDNN_SET(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, nsd, stride.data());
  WEFT_CUDNN_SET(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, nsd, pad.data());
  WEFT_CUDNN_SET(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, nsd, pad.data());
  conv.Finalize("convolution descriptor");

  // Scaling factors have the compute type's width: double for float64, float otherwise.
  double alpha_d = 1.0, beta_d = accumulate ? 1.0 : 0.0;
  float alpha_f = 1.0f, beta_f = accumulate ? 1.0f : 0.0f;
  bool wide = dt == DType::kFloat64;
  cudnnBackendAttributeType_t st = wide ? CUDNN_TYPE_DOUBLE : CUDNN_TYPE_FLOAT;
  const void* alpha = wide ? static_cast<const void*>(&alpha_d) : &alpha_f;
  const void* beta = wide ? static_cast<const void*>(&beta_d) : &beta_f;
  const BackendDescriptor &x = keep[0], &w = keep[1], &y = keep[2];
  std::unique_ptr<BackendDescriptor> operation;
  switch (pass) {
    case ConvPass::kForward:
      operation = std::make_unique<BackendDescriptor>(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, op);
      WEFT_CUDNN_SET(*operation, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, st, 1, alpha);
      WEFT_CUDNN_SET(*operation, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, st, 1, beta);
      operation->SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv, "FORWARD_CONV_DESC");
      operation->SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x, "FORWARD_X");
      operation->SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w, "FORWARD_W");
      operation->SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y, "FORWARD_Y");
      break;
    case ConvPass::kBackwardData:
      operation = std::make_unique<BackendDescriptor>(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, op);
      WEFT_CUDNN_SET(*operation, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, st, 1, alpha);
      WEFT_CUDNN_SET(*operation, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, st, 1, beta);
      operation->SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, conv, "BWD_DATA_CONV_DESC");
      operation->SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, x, "BWD_DATA_DX");
      operation->SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, w, "BWD_DATA_W");
      operation->SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, y, "BWD_DATA_DY");
      break;
    case ConvPass::kBackwardFilter:
      operation =
          std::make_unique<BackendDescriptor>(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, op);
      WEFT_CUDNN_SET(*operation, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, st, 1, alpha);
      WEFT_CUDNN_SET(*operation, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, st, 1, beta);
      operation->SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, conv, "BWD_FILTER_CONV_DESC");
      operation->SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, x, "BWD_FILTER_X");
      operation->SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, w, "BWD_FILTER_DW");
      operation->SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, y, "BWD_FILTER_DY");
      break;
  }
  operation->Finalize("convolution operation");

  BackendDescriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, op);
  WEFT_CUDNN_SET(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  graph.SetDescriptor(CUDNN_ATTR_OPERATIONGRAPH_OPS, *operation, "CUDNN_ATTR_OPERATIONGRAPH_OPS");
  graph.Finalize("operation graph");
  keep.push_back(std::move(conv));
  keep.push_back(std::move(*operation));
  keep.push_back(std::move(graph));
  return keep;
}

// The engine configurations the heuristics propose for the graph, best first.
std::vector<BackendDescriptor> EngineConfigs(const BackendDescriptor& graph, cudnnBackendHeurMode_t mode,
                                             const char* op) {
  BackendDescriptor heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, op);
  heur.SetDescriptor(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph, "CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH");
  WEFT_CUDNN_SET(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  if (heur.TryFinalize() != CUDNN_STATUS_SUCCESS) return {};
  int64_t count = 0;
  CheckCudnn(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                      &count, nullptr),
             "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINEHEUR_RESULTS count)", op);
  std::vector<BackendDescriptor> cfgs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    cfgs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, op);
    raw.push_back(cfgs.back().get());
  }
  int64_t got = 0;
  if (count > 0)
    CheckCudnn(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                        count, &got, raw.data()),
               "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINEHEUR_RESULTS)", op);
  cfgs.erase(cfgs.begin() + std::max<int64_t>(0, std::min(got, count)), cfgs.end());
  return cfgs;
}

// Whether an engine is unwanted here: float32 and float64 never take engines that convert
// their inputs down (to float16), float32 takes tensor-core (TF32) engines only when TF32
// is allowed, and runtime-compiled engines (whose plans compile kernels with NVRTC, which
// takes seconds) only when `allow_compiled` is set because nothing else runs the problem.
bool Unwanted(const BackendDescriptor& cfg, DType dt, bool allow_tf32, bool allow_compiled, const char* op) {
  BackendDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR, op);
  cudnnBackendDescriptor_t raw = engine.get();
  int64_t n = 0;
  CheckCudnn(cudnnBackendGetAttribute(cfg.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                      &raw),
             "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINECFG_ENGINE)", op);
  if (!allow_compiled) {
    cudnnBackendBehaviorNote_t behaviour[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
    int64_t count = 0;
    CheckCudnn(cudnnBackendGetAttribute(raw, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                        CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &count, behaviour),
               "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE)", op);
    for (int64_t i = 0; i < std::min<int64_t>(count, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT); ++i)
      if (behaviour[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) return true;
  }
  if (dt != DType::kFloat32 && dt != DType::kFloat64) return false;
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t count = 0;
  CheckCudnn(cudnnBackendGetAttribute(raw, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                      CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count, notes),
             "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINE_NUMERICAL_NOTE)", op);
  for (int64_t i = 0; i < std::min<int64_t>(count, CUDNN_NUMERICAL_NOTE_TYPE_COUNT); ++i) {
    if (notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) return true;
    if (notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE && dt == DType::kFloat32 && !allow_tf32) return true;
  }
  return false;
}

struct Plan {
  std::vector<BackendDescriptor> keep;  // what the plan was built from
  std::unique_ptr<BackendDescriptor> plan;  // null: cuDNN has no engine for the problem
  int64_t workspace = 0;
};

// An execution plan for one engine configuration, or null when the engine refuses.
std::unique_ptr<BackendDescriptor> MakePlan(cudnnHandle_t handle, const BackendDescriptor& cfg, int64_t* workspace,
                                            const char* op) {
  auto plan = std::make_unique<BackendDescriptor>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, op);
  WEFT_CUDNN_SET(*plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  plan->SetDescriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfg, "CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG");
  if (plan->TryFinalize() != CUDNN_STATUS_SUCCESS) return nullptr;
  int64_t n = 0;
  CheckCudnn(cudnnBackendGetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                                      workspace),
             "cudnnBackendGetAttribute(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE)", op);
  return plan;
}

void Execute(cudnnHandle_t handle, const BackendDescriptor& plan, const void* x, const void* w, const void* y,
             void* workspace, const char* op) {
  int64_t uids[3] = {kUidX, kUidW, kUidY};
  void* ptrs[3] = {const_cast<void*>(x), const_cast<void*>(w), const_cast<void*>(y)};
  BackendDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, op);
  WEFT_CUDNN_SET(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
  WEFT_CUDNN_SET(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs);
  WEFT_CUDNN_SET(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  pack.Finalize("variant pack");
  CheckCudnn(cudnnBackendExecute(handle, plan.get(), pack.get()), "cudnnBackendExecute", op);
}

class Events {
 public:
  Events() {
    Check(cudaEventCreate(&start), "cudaEventCreate");
    cudaError_t err = cudaEventCreate(&stop);
    if (err != cudaSuccess) {
      cudaEventDestroy(start);
      Check(err, "cudaEventCreate");
    }
  }
  ~Events() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  cudaEvent_t start = nullptr, stop = nullptr;
};

// Candidates timed when tuning: enough to find cuDNN's fast engines without spending
// seconds on a layer.
constexpr size_t kMaxTimedPlans = 8;

Plan BuildPlan(const OpContext& ctx, cudnnHandle_t handle, ConvPass pass, const op::ConvGeom& g, DType dt,
               const void* x, const void* w, const void* y, bool accumulate, ConvTune tune, int64_t limit,
               bool allow_tf32, const char* op) {
  Plan result;
  int64_t align[3] = {ByteAlignment(x), ByteAlignment(w), ByteAlignment(y)};
  try {
    result.keep = BuildGraph(handle, pass, g, dt, align, accumulate, op);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kUnsupported) return result;
    throw;
  }
  const BackendDescriptor& graph = result.keep.back();
  // Heuristic choice: the first plan within the limit, else the one needing least.
  // Tuning: up to kMaxTimedPlans plans (within the limit unless kFastest), timed below.
  struct Candidate {
    std::unique_ptr<BackendDescriptor> plan;
    int64_t workspace;
  };
  std::vector<Candidate> candidates;
  bool timed = tune != ConvTune::kHeuristic;
  // Precompiled engines from heuristics mode A, else from the fallback list, else (rare)
  // runtime-compiled ones from either.
  for (int attempt = 0; attempt < 4 && candidates.empty(); ++attempt) {
    cudnnBackendHeurMode_t mode = attempt % 2 == 0 ? CUDNN_HEUR_MODE_A : CUDNN_HEUR_MODE_FALLBACK;
    bool allow_compiled = attempt >= 2;
    for (BackendDescriptor& cfg : EngineConfigs(graph, mode, op)) {
      if (Unwanted(cfg, dt, allow_tf32, allow_compiled, op)) continue;
      int64_t ws = 0;
      std::unique_ptr<BackendDescriptor> plan = MakePlan(handle, cfg, &ws, op);
      if (!plan) continue;
      bool fits = tune == ConvTune::kFastest || ws <= limit;
      if (timed && !fits) continue;
      result.keep.push_back(std::move(cfg));
      candidates.push_back({std::move(plan), ws});
      if (!timed && fits) break;
      if (timed && candidates.size() >= kMaxTimedPlans) break;
    }
  }
  if (candidates.empty()) return result;

  size_t best = 0;
  if (!timed) {
    // The last candidate is the first that fits; if none fits, the smallest workspace.
    if (candidates.back().workspace <= limit) best = candidates.size() - 1;
    else
      for (size_t i = 1; i < candidates.size(); ++i)
        if (candidates[i].workspace < candidates[best].workspace) best = i;
  } else if (candidates.size() > 1) {
    // Each candidate writes a scratch copy of the output, so timing never disturbs (or,
    // with req 'add', accumulates into) the real one; inputs are only read.
    const int64_t* out_dims_spatial = pass == ConvPass::kForward ? g.out : pass == ConvPass::kBackwardData ? g.in : g.k;
    int64_t out_elems = pass == ConvPass::kForward ? g.n * g.f : pass == ConvPass::kBackwardData ? g.n * g.c
                                                                                                  : g.f * (g.c / g.g);
    for (int j = 0; j < 3; ++j) out_elems *= out_dims_spatial[j];
    int64_t out_bytes = (out_elems * static_cast<int64_t>(DTypeSize(dt)) + 255) / 256 * 256;
    int64_t max_ws = 0;
    for (const Candidate& c : candidates) max_ws = std::max(max_ws, c.workspace);
    char* scratch = static_cast<char*>(ctx.requested.at(0).temp->Get(static_cast<size_t>(out_bytes + max_ws)));
    const void* tx = pass == ConvPass::kBackwardData ? scratch : x;
    const void* tw = pass == ConvPass::kBackwardFilter ? scratch : w;
    const void* ty = pass == ConvPass::kForward ? scratch : y;
    cudaStream_t stream = StreamOf(ctx.run_ctx.stream);
    Events ev;
    float best_ms = std::numeric_limits<float>::infinity();
    for (size_t i = 0; i < candidates.size(); ++i) {
      void* ws = candidates[i].workspace > 0 ? scratch + out_bytes : nullptr;
      float ms = 0;
      try {
        // One untimed run loads the kernels; the timed run follows.
        Execute(handle, *candidates[i].plan, tx, tw, ty, ws, op);
        Check(cudaEventRecord(ev.start, stream), "cudaEventRecord");
        Execute(handle, *candidates[i].plan, tx, tw, ty, ws, op);
        Check(cudaEventRecord(ev.stop, stream), "cudaEventRecord");
        // Tuning runs once per problem and thread; waiting for its own timing run is the
        // one host wait a convolution ever makes.
        Check(cudaEventSynchronize(ev.stop), "cudaEventSynchronize");
        Check(cudaEventElapsedTime(&ms, ev.start, ev.stop), "cudaEventElapsedTime");
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::kUnsupported) throw;
        continue;
      }
      if (ms < best_ms) {
        best_ms = ms;
        best = i;
      }
    }
    if (!std::isfinite(best_ms)) return result;
  }
  result.plan = std::move(candidates[best].plan);
  result.workspace = candidates[best].workspace;
  return result;
}

ConvPlanCache<Plan>& ThreadPlans() {
  static thread_local ConvPlanCache<Plan> plans;
  return plans;
}

}  // namespace

size_t CudnnConvPlanCount() { return ThreadPlans().size(); }

bool CudnnConvolution(const char* op, const OpContext& ctx, ConvPass pass, const op::ConvGeom& g, DType dt,
                      const void* x, const void* w, const void* y, OpReq req, ConvTune tune, int64_t workspace_limit) {
  cudnnDataType_t type;
  if (!CudnnTypeOf(dt, &type) || !OutputMatchesSymmetricPadding(g)) return false;
  const engine::RunContext& rctx = ctx.run_ctx;
  DeviceGuard guard(rctx.ctx.dev_id);
  bool allow_tf32 = CudnnAllowTf32();
  bool accumulate = req == OpReq::kAddTo;
  // The handle cache is created before the plan cache, so that at thread exit the plans
  // are destroyed before the handle they were built with.
  cudnnHandle_t handle = CudnnHandle(rctx, op);
  ConvPlanCache<Plan>& cache = ThreadPlans();
  ConvPlanKey key = MakeConvPlanKey(pass, g, dt, x, w, y, rctx.ctx.dev_id, tune, workspace_limit, allow_tf32, accumulate);
  Plan* plan = cache.Find(key);
  if (!plan)
    plan = &cache.Insert(key, BuildPlan(ctx, handle, pass, g, dt, x, w, y, accumulate, tune, workspace_limit,
                                        allow_tf32, op));
  if (!plan->plan) return false;
  void* ws = plan->workspace > 0 ? ctx.requested.at(0).temp->Get(static_cast<size_t>(plan->workspace)) : nullptr;
  Execute(handle, *plan->plan, x, w, y, ws, op);
  return true;
}

}  // namespace cuda
}  // namespace weft

#endif  // WEFT_USE_CUDNN
