// Channels-last layouts (NWC, NHWC, NDHWC) of Convolution, Deconvolution and Pooling: the
// channels-first kernels run on transposed copies of the operands. The copies cost two
// passes over each operand, which the kernels' own reorders (oneDNN blocks channels
// anyway) make small next to the convolution itself.
#include <vector>

#include "core/op/data_move.h"
#include "core/op/nn/conv_common.h"
#include "core/storage/storage.h"

namespace weft {
namespace op {

bool IsChannelsLast(const std::string& layout) {
  return layout == "NWC" || layout == "NHWC" || layout == "NDHWC";
}

std::string ChannelsFirstLayout(const std::string& layout) {
  if (!IsChannelsLast(layout)) return layout;
  return "NC" + layout.substr(1, layout.size() - 2);
}

Shape ToChannelsFirst(const Shape& s) {
  if (!s.known_ndim() || s.ndim() < 3) return s;
  const int nd = s.ndim();
  Shape r(nd);
  r[0] = s[0];
  r[1] = s[nd - 1];
  for (int i = 2; i < nd; ++i) r[i] = s[i - 1];
  return r;
}

Shape ToChannelsLast(const Shape& s) {
  if (!s.known_ndim() || s.ndim() < 3) return s;
  const int nd = s.ndim();
  Shape r(nd);
  r[0] = s[0];
  r[nd - 1] = s[1];
  for (int i = 1; i < nd - 1; ++i) r[i] = s[i + 1];
  return r;
}

namespace {

// Storage for the channels-first copies, handed back when the call ends (the CPU kernels
// have finished by then).
class Scratch {
 public:
  ~Scratch() {
    for (const StorageHandle& h : held_) Storage::Get()->Free(h);
  }
  TBlob Blob(const Shape& shape, DType dt, Context ctx) {
    held_.push_back(Storage::Get()->Alloc(static_cast<size_t>(shape.Size()) * DTypeSize(dt), ctx));
    return TBlob(held_.back().dptr, shape, dt, ctx);
  }

 private:
  std::vector<StorageHandle> held_;
};

// dst (n, c, s...) (req)= src (n, s..., c) moved.
void LastToFirst(const OpContext& ctx, const TBlob& src, const TBlob& dst, OpReq req) {
  const int nd = src.ndim();
  std::vector<int64_t> from = ContiguousStrides(src.shape), stride(nd);
  stride[0] = from[0];
  stride[1] = from[nd - 1];
  for (int i = 2; i < nd; ++i) stride[i] = from[i - 1];
  StridedGather(ctx, dst.shape, stride, 0, src, dst, req);
}

// dst (n, s..., c) (req)= src (n, c, s...) moved.
void FirstToLast(const OpContext& ctx, const TBlob& src, const TBlob& dst, OpReq req) {
  const int nd = src.ndim();
  std::vector<int64_t> from = ContiguousStrides(src.shape), stride(nd);
  stride[0] = from[0];
  stride[nd - 1] = from[1];
  for (int i = 1; i < nd - 1; ++i) stride[i] = from[i + 1];
  StridedGather(ctx, dst.shape, stride, 0, src, dst, req);
}

}  // namespace

void RunOnChannelsFirst(const NodeAttrs& cf_attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out, const FCompute& inner) {
  if (OnGPU(ctx))
    Throw(ErrorKind::kUnsupported, "Operator '", cf_attrs.op->name, "': channels-last layouts run on the CPU only");
  Scratch scratch;
  std::vector<TBlob> cin(in), cout(out);
  std::vector<OpReq> creq(req);
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].ndim() < 3) continue;
    cin[i] = scratch.Blob(ToChannelsFirst(in[i].shape), in[i].dtype, in[i].ctx);
    LastToFirst(ctx, in[i], cin[i], OpReq::kWriteTo);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].ndim() < 3) continue;
    cout[i] = scratch.Blob(ToChannelsFirst(out[i].shape), out[i].dtype, out[i].ctx);
    // The kernel writes the copy; adding into the real output happens on the way back.
    if (creq[i] != OpReq::kNullOp) creq[i] = OpReq::kWriteTo;
  }
  inner(cf_attrs, ctx, cin, creq, cout);
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].ndim() < 3 || req[i] == OpReq::kNullOp) continue;
    FirstToLast(ctx, cout[i], out[i], req[i] == OpReq::kAddTo ? OpReq::kAddTo : OpReq::kWriteTo);
  }
}

}  // namespace op
}  // namespace weft
