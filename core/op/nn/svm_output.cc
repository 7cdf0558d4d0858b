// SVMOutput: an output layer for a support vector machine. The forward is the identity on
// the scores; the gradient (the head gradient is ignored, as for the other loss outputs) is
// the derivative of the hinge loss summed over the rows of the last axis:
//   L2 (default): reg * sum_k max(0, margin - y_k * x_k)^2
//   L1 (use_linear): reg * sum_k max(0, margin - y_k * x_k)
// with y_k = +1 for the labelled class and -1 for the others. Labels hold one class index per
// row (data.shape[:-1]); a label outside [0, classes) marks no class as the right one.
#include "core/op/nn/item_grain.h"
#include "core/op/nn/norm_util.h"

namespace weft {
namespace op {

struct SVMOutputParam {
  double margin = 1.0;
  double regularization_coefficient = 1.0;
  bool use_linear = false;
};

WEFT_PARAM_SCHEMA(SVMOutputParam, s) {
  s.Field("margin", &SVMOutputParam::margin).Default(1.0).Describe("Scores inside this margin are penalised.");
  s.Field("regularization_coefficient", &SVMOutputParam::regularization_coefficient)
      .Default(1.0)
      .Describe("Weight of the loss (the trade-off between coefficient size and error).");
  s.Field("use_linear", &SVMOutputParam::use_linear).Default(false).Describe("Use the L1-SVM loss instead of L2-SVM.");
}

namespace {

using nn::Acc;
using nn::Put;

Shape LabelShapeOf(const Shape& d) {
  std::vector<int64_t> dims(d.begin(), d.end() - 1);
  return Shape(dims);
}

bool SVMShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  Shape d = (*in)[0].known_ndim() ? (*in)[0] : (*out)[0];
  if (!d.known_ndim()) return false;
  nn::CheckMinNdim(attrs, d, 1);
  AssignShape(attrs, in, 0, d, "input");
  AssignShape(attrs, out, 0, d, "output");
  AssignShape(attrs, in, 1, LabelShapeOf((*in)[0]), "input");
  return (*in)[0].is_known() && (*in)[1].is_known();
}

bool SVMType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType d = (*in)[0] != DType::kUnknown ? (*in)[0] : (*out)[0];
  if (d == DType::kUnknown) return false;
  if (!IsFloatDType(d))
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': expected a floating-point input 'data', got ", DTypeName(d));
  AssignType(attrs, in, 0, d, "input");
  AssignType(attrs, out, 0, d, "output");
  if ((*in)[1] == DType::kUnknown) (*in)[1] = d;
  return true;
}

void SVMCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                const std::vector<TBlob>& out) {
  CopyWithReq(in[0], out[0], req[0]);
}

// Inputs: output, label.
bool SVMBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[0];
  if (!d.known_ndim()) return false;
  nn::CheckMinNdim(attrs, d, 1, "output");
  AssignShape(attrs, in, 1, LabelShapeOf(d), "input");
  AssignShape(attrs, out, 0, d, "output");
  return d.is_known() && (*in)[1].is_known();
}

bool SVMBackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  if ((*in)[0] == DType::kUnknown) return false;
  AssignType(attrs, out, 0, (*in)[0], "output");
  return (*in)[1] != DType::kUnknown;
}

void SVMBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<SVMOutputParam>();
  const int64_t classes = in[0].shape[in[0].ndim() - 1];
  const int64_t rows = LabelShapeOf(in[0].shape).Size();
  if (in[1].Size() != rows)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'label' has shape ", in[1].shape.ToString(),
          ", expected ", LabelShapeOf(in[0].shape).ToString());
  WEFT_NN_FLOAT_SWITCH(attrs, in[0].dtype, T, {
    using A = Acc<T>;
    const T* x = in[0].ptr<T>();
    T* dx = out[0].ptr<T>();
    const A margin = static_cast<A>(p.margin), reg = static_cast<A>(p.regularization_coefficient);
    WEFT_TYPE_SWITCH(in[1].dtype, L, {
      const L* label = in[1].ptr<L>();
      ParallelFor(rows, ItemGrain(classes), [&](int64_t rb, int64_t re) {
        for (int64_t r = rb; r < re; ++r) {
          const int64_t k = ConvertValue<int64_t>(label[r]);
          for (int64_t c = 0; c < classes; ++c) {
            // y * x with y = +1 for the labelled class, -1 for the others.
            const A y = c == k ? A(1) : A(-1);
            const A v = static_cast<A>(x[r * classes + c]);
            const A slack = margin - y * v;
            A g = 0;
            if (slack > 0) g = p.use_linear ? -y * reg : A(-2) * y * reg * slack;
            Put(dx + r * classes + c, req[0], g);
          }
        }
      });
    });
  });
}

}  // namespace

WEFT_REGISTER_OP(SVMOutput)
    .Describe("Identity on the scores whose gradient is that of the (L2 or L1) SVM hinge loss with label; the head "
              "gradient is ignored.")
    .SetNumInputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "Input scores, classes on the last axis")
    .AddArgument("label", "NDArray-or-Symbol", "Class labels, one per row (data.shape[:-1])")
    .SetParams<SVMOutputParam>()
    .SetAttr<FInferShape>("FInferShape", SVMShape)
    .SetAttr<FInferType>("FInferType", SVMType)
    .SetAttr<FInplaceOption>("FInplaceOption", [](const NodeAttrs&) { return std::vector<std::pair<int, int>>{{0, 0}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", SVMCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_SVMOutput", {a.outputs[0], a.inputs[1]}, attrs.dict),
                                    GradValue()};
    });

WEFT_REGISTER_OP(_backward_SVMOutput)
    .Describe("Gradient of SVMOutput: (output, label) -> d data.")
    .SetNumInputs(2)
    .AddArgument("output", "NDArray-or-Symbol", "The forward output")
    .AddArgument("label", "NDArray-or-Symbol", "Class labels")
    .SetParams<SVMOutputParam>()
    .SetAttr<FInferShape>("FInferShape", SVMBackwardShape)
    .SetAttr<FInferType>("FInferType", SVMBackwardType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", SVMBackwardCompute);

}  // namespace op
}  // namespace weft
