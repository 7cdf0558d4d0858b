#include "core/imperative/sparse_dispatch.h"

#include "core/base/error.h"
#include "core/imperative/autograd.h"
#include "core/imperative/imperative.h"
#include "core/ndarray/sparse.h"
#include "core/op/sparse/sparse_compute.h"

namespace weft {
namespace imperative {

bool InvokeSparse(const NodeAttrs& attrs, const std::vector<NDArray>& inputs, std::vector<NDArray>* outputs,
                  const std::vector<OpReq>* req, bool is_train) {
  static const auto& kernels = Op::GetAttr<FComputeSparse>("FComputeSparse");
  const Op* op = attrs.op;
  if (!kernels.Contains(op)) return false;
  int num_in = op->NumInputs(attrs);
  int num_out = op->NumOutputs(attrs);
  WEFT_CHECK(static_cast<int>(inputs.size()) == num_in, kValue, "Operator '", op->name, "': expected ", num_in,
             " input", num_in == 1 ? "" : "s", ", got ", inputs.size());
  WEFT_CHECK(outputs->empty() || static_cast<int>(outputs->size()) == num_out, kValue, "Operator '", op->name,
             "': expected ", num_out, " output array", num_out == 1 ? "" : "s", ", got ", outputs->size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    WEFT_CHECK(!inputs[i].is_none(), kValue, "Operator '", op->name, "': input ", i, " is an empty (none) array");
    WEFT_CHECK(inputs[i].ctx() == inputs[0].ctx(), kValue, "Operator '", op->name,
               "': all inputs must be on one context, but input 0 is on ", inputs[0].ctx().ToString(),
               " and input ", i, " on ", inputs[i].ctx().ToString());
  }
  std::vector<Shape> in_shapes, out_shapes(num_out);
  std::vector<DType> in_types, out_types(num_out, DType::kUnknown);
  for (const auto& a : inputs) {
    in_shapes.push_back(a.shape());
    in_types.push_back(a.dtype());
  }
  InferShapeType(attrs, &in_shapes, &in_types, &out_shapes, &out_types);
  for (size_t i = 0; i < inputs.size(); ++i) {
    WEFT_CHECK(in_shapes[i] == inputs[i].shape(), kShape, "Operator '", op->name, "': input ",
               i < op->arguments.size() ? "'" + op->arguments[i].name + "'" : std::to_string(i), " has shape ",
               inputs[i].shape().ToString(), " but the operator expects ", in_shapes[i].ToString());
    WEFT_CHECK(in_types[i] == inputs[i].dtype(), kType, "Operator '", op->name, "': input ", i, " has dtype ",
               DTypeName(inputs[i].dtype()), " but the operator expects ", DTypeName(in_types[i]));
  }
  for (size_t i = 0; i < outputs->size(); ++i) {
    const NDArray& o = (*outputs)[i];
    if (o.is_none()) continue;
    WEFT_CHECK(o.shape() == out_shapes[i], kShape, "Operator '", op->name, "': output ", i, " has shape ",
               o.shape().ToString(), " but the operator produces ", out_shapes[i].ToString());
  }
  std::vector<OpReq> reqs = req ? *req : std::vector<OpReq>();
  reqs.resize(num_out, OpReq::kWriteTo);
  std::vector<NDArray> made;
  if (!kernels[op](attrs, inputs, reqs, &made)) return false;
  WEFT_CHECK(static_cast<int>(made.size()) == num_out, kInternal, "Operator '", op->name,
             "': its sparse kernel made ", made.size(), " outputs, expected ", num_out);
  for (int i = 0; i < num_out; ++i) {
    if (made[i].is_none()) continue;
    WEFT_CHECK(made[i].shape() == out_shapes[i] && made[i].dtype() == out_types[i], kInternal, "Operator '",
               op->name, "': its sparse kernel made output ", i, " of shape ", made[i].shape().ToString(), " ",
               DTypeName(made[i].dtype()), ", expected ", out_shapes[i].ToString(), " ", DTypeName(out_types[i]));
  }

  if (outputs->empty()) {
    *outputs = std::move(made);
  } else {
    for (int i = 0; i < num_out; ++i) {
      NDArray& given = (*outputs)[i];
      if (made[i].is_none() || reqs[i] == OpReq::kNullOp) continue;
      if (given.is_none()) {
        given = made[i];
      } else if (given.is_sparse()) {
        given = made[i].stype() == given.stype() ? made[i] : CastStorage(made[i], given.stype());
      } else {
        // A dense array asked for: the result is written into it (densely, as it must be).
        std::vector<NDArray> into{given};
        std::vector<OpReq> r{reqs[i] == OpReq::kAddTo ? OpReq::kAddTo : OpReq::kWriteTo};
        Invoke(MakeAttrs(Op::Get("_copy"), {}), {made[i]}, &into, nullptr, &r, is_train);
      }
    }
  }
  if (autograd::IsRecording()) autograd::RecordOp(attrs, inputs, outputs, is_train);
  return true;
}

}  // namespace imperative
}  // namespace weft
