#include "core/op/fused/fused_pointwise.h"

#include <algorithm>

#include "core/op/op_util.h"

namespace weft {
namespace op {
namespace {

// Elements per tile: the buffers of a long chain still fit in L1/L2.
constexpr int64_t kTile = 512;

const FusedProgram& Program(const NodeAttrs& attrs) {
  WEFT_CHECK(attrs.parsed != nullptr, kUnsupported,
             "_fused_pointwise is made by the executor's fusion pass from a chain of operators; it cannot be "
             "called or composed directly");
  return *static_cast<const FusedProgram*>(attrs.parsed.get());
}

template <typename T>
void RunProgram(const FusedProgram& p, const std::vector<TBlob>& in, OpReq req, const TBlob& out) {
  const int64_t n = out.Size();
  const size_t nsteps = p.steps.size();
  ParallelFor(n, std::max<int64_t>(kTile, kElemGrain / static_cast<int64_t>(nsteps)), [&](int64_t begin, int64_t end) {
    // One tile buffer per step; the last step writes the output directly unless it adds.
    thread_local std::vector<T> buffers;
    buffers.resize(nsteps * kTile);
    for (int64_t t = begin; t < end; t += kTile) {
      const int64_t m = std::min(kTile, end - t);
      auto value = [&](const FusedProgram::Ref& r) -> const T* {
        return r.input ? in[r.index].ptr<T>() + t : buffers.data() + static_cast<size_t>(r.index) * kTile;
      };
      for (size_t i = 0; i < nsteps; ++i) {
        const auto& s = p.steps[i];
        bool last = i + 1 == nsteps;
        T* dst = last && req != OpReq::kAddTo ? out.ptr<T>() + t : buffers.data() + i * kTile;
        const T* b = s.binary ? value(s.b) : nullptr;
        if constexpr (std::is_same_v<T, float>) s.fn.f32(value(s.a), b, s.scalar, dst, m);
        else s.fn.f64(value(s.a), b, s.scalar, dst, m);
      }
      if (req == OpReq::kAddTo) {
        const T* r = buffers.data() + (nsteps - 1) * kTile;
        T* o = out.ptr<T>() + t;
#pragma omp simd
        for (int64_t k = 0; k < m; ++k) o[k] += r[k];
      }
    }
  });
}

void FusedCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                  const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const FusedProgram& p = Program(attrs);
  switch (out[0].dtype) {
    case DType::kFloat32: RunProgram<float>(p, in, req[0], out[0]); break;
    case DType::kFloat64: RunProgram<double>(p, in, req[0], out[0]); break;
    default:
      Throw(ErrorKind::kInternal, "_fused_pointwise: a fused chain of ", DTypeName(out[0].dtype),
            " values (only float32 and float64 are fused)");
  }
}

}  // namespace

NodeAttrs MakeFusedAttrs(std::shared_ptr<const FusedProgram> program, const std::string& name) {
  NodeAttrs attrs;
  attrs.op = Op::Get("_fused_pointwise");
  attrs.name = name;
  attrs.parsed = std::move(program);
  return attrs;
}

bool FusibleOn(const Context& ctx, const std::string& cuda_body) {
  if (!ctx.is_gpu()) return true;
#ifdef WEFT_USE_CUDA
  return !cuda_body.empty();
#else
  return false;
#endif
}

WEFT_REGISTER_OP(_fused_pointwise)
    .Describe("A chain of pointwise operators run as one loop (made by the executor's fusion pass; not for "
              "direct use).")
    .SetNumInputs([](const NodeAttrs& attrs) { return Program(attrs).num_inputs; })
    .AddArgument("data", "NDArray-or-Symbol[]", "The inputs of the chain")
    .SetAttr<FInferShape>("FInferShape", SameShape)
    .SetAttr<FCompute>("FCompute<cpu>", FusedCompute);

}  // namespace op
}  // namespace weft
