// NCCL collectives for the "device" store (builds with WEFT_USE_NCCL only).
//
// One set of communicators per set of GPUs, made once with ncclCommInitAll (every GPU of
// this process) and kept for the life of the process: destroying them at exit would race
// the CUDA runtime's own teardown. Each communicator has its own non-blocking stream, so
// the collectives do not wait for, nor delay, the engine's streams; the engine operation
// that runs them waits for those streams before it reports the outputs ready.
#if WEFT_USE_NCCL

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "core/base/cuda_utils.h"
#include "core/engine/engine.h"
#include "core/kvstore/device_comm.h"

namespace weft {
namespace kvstore {
namespace {

void CheckNccl(ncclResult_t r, const char* call) {
  WEFT_CHECK(r == ncclSuccess, kRuntime, "NCCL call ", call, " failed: ", ncclGetErrorString(r));
}
#define WEFT_NCCL_CALL(expr) CheckNccl((expr), #expr)

ncclDataType_t NcclType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return ncclFloat32;
    case DType::kFloat64: return ncclFloat64;
    case DType::kFloat16: return ncclFloat16;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
    case DType::kBfloat16: return ncclBfloat16;
#endif
    case DType::kUint8: return ncclUint8;
    case DType::kInt8: return ncclInt8;
    case DType::kInt32: return ncclInt32;
    case DType::kInt64: return ncclInt64;
    default: Throw(ErrorKind::kType, "kvstore: NCCL cannot reduce ", DTypeName(dtype), " arrays");
  }
}

// Communicators over a sorted set of GPUs, rank i on devs[i].
struct Comms {
  std::vector<int> devs;
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;

  int RankOf(int dev) const {
    auto it = std::find(devs.begin(), devs.end(), dev);
    WEFT_CHECK(it != devs.end(), kInternal, "kvstore: gpu(", dev, ") is not in the NCCL group");
    return static_cast<int>(it - devs.begin());
  }
};

// The communicators of a set of GPUs, made on first use (ncclCommInitAll is collective
// over the set, so one thread makes them all, under the lock).
const Comms& CommsFor(std::vector<int> devs) {
  static std::mutex mu;
  static auto* cache = new std::map<std::vector<int>, std::unique_ptr<Comms>>();
  std::sort(devs.begin(), devs.end());
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = (*cache)[devs];
  if (!slot) {
    auto c = std::make_unique<Comms>();
    c->devs = devs;
    c->comms.resize(devs.size());
    WEFT_NCCL_CALL(ncclCommInitAll(c->comms.data(), static_cast<int>(devs.size()), devs.data()));
    for (int d : devs) {
      cuda::DeviceGuard guard(d);
      cudaStream_t s = nullptr;
      WEFT_CUDA_CALL_ON(Context::GPU(d), cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      c->streams.push_back(s);
    }
    slot = std::move(c);
  }
  return *slot;
}

// Runs `launch(rank)` for every rank of `comms` inside one NCCL group, then waits for the
// group's streams.
template <typename F>
void RunGroup(const Comms& comms, F launch) {
  WEFT_NCCL_CALL(ncclGroupStart());
  try {
    for (size_t i = 0; i < comms.devs.size(); ++i) launch(static_cast<int>(i));
  } catch (...) {
    ncclGroupEnd();
    throw;
  }
  WEFT_NCCL_CALL(ncclGroupEnd());
  for (size_t i = 0; i < comms.devs.size(); ++i) {
    cuda::DeviceGuard guard(comms.devs[i]);
    WEFT_CUDA_CALL_ON(Context::GPU(comms.devs[i]), cudaStreamSynchronize(comms.streams[i]));
  }
}

// The GPU of each array, which must all differ.
std::vector<int> DistinctGPUs(const std::vector<NDArray>& arrays, const char* what) {
  std::vector<int> devs;
  for (const NDArray& a : arrays) {
    WEFT_CHECK(a.ctx().is_gpu(), kInternal, "kvstore: NCCL ", what, " got an array on ", a.ctx().ToString());
    WEFT_CHECK(std::find(devs.begin(), devs.end(), a.ctx().dev_id) == devs.end(), kInternal, "kvstore: NCCL ",
               what, " got two arrays on ", a.ctx().ToString());
    devs.push_back(a.ctx().dev_id);
  }
  return devs;
}

}  // namespace

bool NcclSupports(DType dtype) {
  try {
    NcclType(dtype);
    return true;
  } catch (const Error&) {
    return false;
  }
}

void NcclReduce(const std::vector<NDArray>& vals, const NDArray& dst, int priority) {
  const Comms* comms = &CommsFor(DistinctGPUs(vals, "reduce"));
  const int root = comms->RankOf(dst.ctx().dev_id);
  const ncclDataType_t type = NcclType(dst.dtype());
  std::vector<engine::VarHandle> reads;
  for (const NDArray& v : vals) reads.push_back(v.var());
  // The collective spans several GPUs, so it runs from a CPU worker that waits for it.
  engine::Engine::Get()->PushSync(
      [vals, dst, root, type, comms](engine::RunContext) {
        // The communicators' ranks are in device order; vals may come in any order.
        std::vector<const NDArray*> by_rank(comms->devs.size());
        for (const NDArray& v : vals) by_rank[comms->RankOf(v.ctx().dev_id)] = &v;
        const size_t count = static_cast<size_t>(dst.Size());
        void* recv = dst.data().dptr;
        RunGroup(*comms, [&](int rank) {
          WEFT_NCCL_CALL(ncclReduce(by_rank[rank]->data().dptr, rank == root ? recv : nullptr, count, type, ncclSum,
                                    root, comms->comms[rank], comms->streams[rank]));
        });
      },
      Context::CPU(), reads, {dst.var()}, engine::FnProperty::kNormal, priority, "KVStoreNcclReduce");
}

void NcclBroadcast(const NDArray& src, const std::vector<NDArray>& outs, int priority) {
  const Comms* comms = &CommsFor(DistinctGPUs(outs, "broadcast"));
  const int root = comms->RankOf(src.ctx().dev_id);
  const ncclDataType_t type = NcclType(src.dtype());
  std::vector<engine::VarHandle> writes;
  for (const NDArray& o : outs) writes.push_back(o.var());
  std::vector<engine::VarHandle> reads;
  // The root's out may be the source itself, which the write then covers.
  if (std::none_of(outs.begin(), outs.end(), [&](const NDArray& o) { return o.SameChunk(src); }))
    reads.push_back(src.var());
  engine::Engine::Get()->PushSync(
      [src, outs, root, type, comms](engine::RunContext) {
        std::vector<const NDArray*> by_rank(comms->devs.size());
        for (const NDArray& o : outs) by_rank[comms->RankOf(o.ctx().dev_id)] = &o;
        const size_t count = static_cast<size_t>(src.Size());
        const void* send = src.data().dptr;
        RunGroup(*comms, [&](int rank) {
          WEFT_NCCL_CALL(ncclBroadcast(send, by_rank[rank]->data().dptr, count, type, root, comms->comms[rank],
                                       comms->streams[rank]));
        });
      },
      Context::CPU(), reads, writes, engine::FnProperty::kNormal, priority, "KVStoreNcclBroadcast");
}

}  // namespace kvstore
}  // namespace weft

#endif  // WEFT_USE_NCCL
