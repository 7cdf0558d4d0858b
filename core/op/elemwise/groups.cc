// The attribute sets every elementwise operator shares, included by name:
//   ElemwiseUnary    one input, output of its shape and dtype, may run in place
//   ElemwiseBinary   two inputs of one shape and dtype, may write over either
//   BinaryScalar     one input and a `scalar` parameter; like ElemwiseUnary
//   BroadcastBinary  two inputs of one dtype broadcast together (numpy rules); never in
//                    place, since the output may be larger than either input
#include <utility>
#include <vector>

#include "core/op/elemwise/broadcast_shape.h"
#include "core/op/op_util.h"

namespace weft {
namespace op {
namespace {

// Every input and output has one dtype, taken from the first that is known.
bool ElemwiseType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType t = DType::kUnknown;
  for (DType d : *in) if (t == DType::kUnknown) t = d;
  for (DType d : *out) if (t == DType::kUnknown) t = d;
  if (t == DType::kUnknown) return false;
  for (size_t i = 0; i < in->size(); ++i) AssignType(attrs, in, i, t, "input", Mismatch::kSameAsOthers);
  for (size_t i = 0; i < out->size(); ++i) AssignType(attrs, out, i, t, "output", Mismatch::kSameAsOthers);
  return true;
}

std::vector<std::pair<int, int>> InplaceFirst(const NodeAttrs&) { return {{0, 0}}; }
std::vector<std::pair<int, int>> InplaceEither(const NodeAttrs&) { return {{0, 0}, {1, 0}}; }

WEFT_REGISTER_OP_GROUP(ElemwiseUnary)
    .SetAttr<FInferShape>("FInferShape", SameShape)
    .SetAttr<FInferType>("FInferType", ElemwiseType)
    .SetAttr<FInplaceOption>("FInplaceOption", InplaceFirst)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kElemwise);

WEFT_REGISTER_OP_GROUP(ElemwiseBinary)
    .SetAttr<FInferShape>("FInferShape", SameShape)
    .SetAttr<FInferType>("FInferType", ElemwiseType)
    .SetAttr<FInplaceOption>("FInplaceOption", InplaceEither)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kElemwise);

WEFT_REGISTER_OP_GROUP(BinaryScalar)
    .SetAttr<FInferShape>("FInferShape", SameShape)
    .SetAttr<FInferType>("FInferType", ElemwiseType)
    .SetAttr<FInplaceOption>("FInplaceOption", InplaceFirst)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kElemwise);

WEFT_REGISTER_OP_GROUP(BroadcastBinary)
    .SetAttr<FInferShape>("FInferShape", BroadcastBinaryShape)
    .SetAttr<FInferType>("FInferType", ElemwiseType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kBroadcast);

}  // namespace
}  // namespace op
}  // namespace weft
