// khatri_rao: the column-wise Kronecker product of matrices with one column count: column
// j of the result is kron(A1[:, j], ..., An[:, j]), so the row of (i1, ..., in) is
// ((i1 * r2 + i2) * r3 + ...).
#include "core/op/elemwise/math.h"
#include "core/op/op_util.h"

namespace weft {
namespace op {
namespace {

// The product of two elements in the accumulation type: integers wrap (WrapMul), bool's is
// its AND.
template <typename A>
A Times(A a, A b) { return WrapMul(a, b); }
inline bool Times(bool a, bool b) { return a && b; }

}  // namespace

struct KhatriRaoParam {
  int num_args = 1;
};

WEFT_PARAM_SCHEMA(KhatriRaoParam, s) {
  s.Field("num_args", &KhatriRaoParam::num_args).Min(1).Describe("Number of input matrices.");
}

namespace {

bool KhatriRaoShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  for (const auto& s : *in) if (!s.is_known()) return false;
  int64_t rows = 1, cols = -1;
  for (size_t i = 0; i < in->size(); ++i) {
    const Shape& s = (*in)[i];
    if (s.ndim() != 2 || (cols >= 0 && s[1] != cols))
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected matrices with ",
            cols >= 0 ? std::to_string(cols) + " columns" : std::string("one column count"), ", but input ", i,
            " has shape ", s.ToString());
    cols = s[1];
    rows *= s[0];
  }
  AssignShape(attrs, out, 0, Shape({rows, cols}), "output");
  return true;
}

void KhatriRaoCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  int64_t rows = out[0].shape[0], cols = out[0].shape[1];
  WEFT_TYPE_SWITCH(out[0].dtype, T, {
    using A = typename AccType<T>::type;
    T* y = out[0].ptr<T>();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < cols; ++j) {
        A p = 1;
        int64_t rest = r;
        for (int64_t m = static_cast<int64_t>(in.size()) - 1; m >= 0; --m) {
          int64_t rm = in[m].shape[0];
          p = Times(p, static_cast<A>(in[m].ptr<T>()[(rest % rm) * cols + j]));
          rest /= rm;
        }
        Store(y + r * cols + j, req[0], p);
      }
    }
  });
}

}  // namespace

WEFT_REGISTER_OP(khatri_rao)
    .Describe("The column-wise Kronecker (Khatri-Rao) product of matrices with one column count: the result has "
              "the product of their row counts as rows.")
    .SetNumInputs([](const NodeAttrs& attrs) { return attrs.Params<KhatriRaoParam>().num_args; })
    .SetKeyVarNumArgs("num_args")
    .AddArgument("args", "NDArray-or-Symbol[]", "Positional input matrices")
    .SetParams<KhatriRaoParam>()
    .SetAttr<FInferShape>("FInferShape", KhatriRaoShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", KhatriRaoCompute);

}  // namespace op
}  // namespace weft
