// slice: a strided box along the leading axes, with Python slice semantics per axis
// (begin, end and step tuples whose entries may be None). Its gradient writes the
// output gradient into zeros of the input's shape (_backward_slice).
#include <cctype>
#include <optional>
#include <string>

#include "core/op/matrix/slice_kernel.h"

namespace weft {
namespace op {

struct SliceParam {
  std::string begin, end, step;
};

WEFT_PARAM_SCHEMA(SliceParam, s) {
  s.Field("begin", &SliceParam::begin).Describe("Starting indices, a tuple of int or None, e.g. (0, None, -2).");
  s.Field("end", &SliceParam::end).Describe("Ending indices (excluded), a tuple of int or None.");
  s.Field("step", &SliceParam::step).Default("()").Describe("Steps, a tuple of int or None (1); () means all 1.");
}

namespace {

// Parses "(1, None, -2)", "[1,2]", "3" or "()".
std::vector<std::optional<int64_t>> ParseIndexTuple(const NodeAttrs& attrs, const char* name, const std::string& text) {
  std::vector<std::optional<int64_t>> out;
  std::string t;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) t += c;
  if (!t.empty() && (t.front() == '(' || t.front() == '[')) {
    if (t.size() < 2 || (t.back() != ')' && t.back() != ']'))
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter '", name,
            "': expected a tuple of int or None, got '", text, "'");
    t = t.substr(1, t.size() - 2);
  }
  size_t pos = 0;
  while (pos < t.size()) {
    size_t comma = t.find(',', pos);
    std::string item = t.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (item == "None" || item == "none") {
      out.push_back(std::nullopt);
    } else {
      char* stop = nullptr;
      long long v = std::strtoll(item.c_str(), &stop, 10);
      if (item.empty() || *stop != '\0')
        Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter '", name,
              "': expected a tuple of int or None, got '", text, "'");
      out.push_back(v);
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

SliceBox SliceBoxOf(const NodeAttrs& attrs, const Shape& in) {
  const auto& p = attrs.Params<SliceParam>();
  auto begin = ParseIndexTuple(attrs, "begin", p.begin);
  auto end = ParseIndexTuple(attrs, "end", p.end);
  auto step = ParseIndexTuple(attrs, "step", p.step);
  if (begin.size() != end.size() || (!step.empty() && step.size() != begin.size()))
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': begin=", p.begin, ", end=", p.end, " and step=", p.step,
          " must have the same length");
  if (static_cast<int>(begin.size()) > in.ndim())
    Throw(ErrorKind::kIndex, "Operator '", attrs.op->name, "': begin=", p.begin, " has ", begin.size(),
          " entries but the input of shape ", in.ToString(), " has ", in.ndim(), " dimensions");
  SliceBox box = FullBox(in);
  for (size_t d = 0; d < begin.size(); ++d) {
    int64_t s = step.empty() || !step[d] ? 1 : *step[d];
    if (s == 0) Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': step=", p.step, " has a zero step");
    NarrowAxis(&box, static_cast<int>(d), in[static_cast<int>(d)], begin[d], end[d], s);
  }
  return box;
}

bool SliceShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known()) return false;
  AssignShape(attrs, out, 0, BoxShape(SliceBoxOf(attrs, (*in)[0])), "output");
  return true;
}

void SliceCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                  const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  SliceForward(in[0], SliceBoxOf(attrs, in[0].shape), out[0], req[0]);
}

void SliceBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  SliceBackward(in[0], SliceBoxOf(attrs, in[1].shape), out[0], req[0]);
}

bool SliceBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[1].is_known()) return false;
  AssignShape(attrs, in, 0, BoxShape(SliceBoxOf(attrs, (*in)[1])), "input");
  AssignShape(attrs, out, 0, (*in)[1], "output");
  return true;
}

}  // namespace

WEFT_REGISTER_OP(slice)
    .Describe("A strided slice along the leading axes: axis i keeps begin[i]:end[i]:step[i] (Python semantics, "
              "None for the default); later axes are kept whole.")
    .AddAlias("crop")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<SliceParam>()
    .SetAttr<FInferShape>("FInferShape", SliceShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", SliceCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_slice", {a.out_grads[0], a.inputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_slice)
    .Describe("Gradient of slice: zeros of the input's shape with the output gradient in the slice.")
    .SetNumInputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input (for its shape)")
    .SetParams<SliceParam>()
    .SetAttr<FInferShape>("FInferShape", SliceBackwardShape)
    .SetAttr<FCompute>("FCompute<cpu>", SliceBackwardCompute);

}  // namespace op
}  // namespace weft
