// MXNet's multi-head attention products on interleaved projections
// (_contrib_interleaved_matmul_selfatt_qk / _selfatt_valatt / _encdec_qk / _encdec_valatt)
// and their _backward_ operators.
//
// Layouts (E = heads * D, attention batch i = b * heads + h):
//   queries            (Lq, B, E):   [l, b, h*D + d]
//   keys_values        (Lk, B, 2E):  [l, b, h*2D + {0: key, 1: value}*D + d]
//   queries_keys_values (L, B, 3E):  [l, b, h*3D + {0: query, 1: key, 2: value}*D + d]
//   attention          (B*heads, Lq, Lk)
// so the projection p of head i, seen as an (L, D) matrix, starts p*D elements after the
// i-th group of P*D and its rows are B*P*E apart: every product is a strided batched GEMM
// on the shared Gemm (gemm.h) without copying the projections apart. The qk products are
// scaled by 1/sqrt(D).
#include <cmath>
#include <cstring>

#include "core/op/linalg/gemm.h"
#include "core/op/op_util.h"

namespace weft {
namespace op {

struct InterleavedMatMulParam {
  int heads = 1;
};

WEFT_PARAM_SCHEMA(InterleavedMatMulParam, s) {
  s.Field("heads", &InterleavedMatMulParam::heads).Min(1).Describe("Set number of heads");
}

namespace {

enum class Kind { kSelfQK, kSelfValAtt, kEncDecQK, kEncDecValAtt };

// The sizes of one call, found from the forward inputs' shapes.
struct AttGeom {
  int64_t lq = 0, lk = 0, batch = 0, heads = 0, d = 0;
  int64_t E() const { return heads * d; }
  Shape AttShape() const { return Shape{batch * heads, lq, lk}; }
  Shape OutShape() const { return Shape{lq, batch, E()}; }
};

[[noreturn]] void BadShape(const NodeAttrs& attrs, const std::string& what, const Shape& got) {
  Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': ", what, ", got ", got.ToString());
}

// Splits a (L, B, P*E) projection's last axis into heads of D, checking it divides.
//
// selfatt_qk alone (`floor_head_dim`) takes any last axis C >= 3 * heads, as MXNet does:
// its output (B*heads, L, L) does not depend on D, and MXNet (both its plain and its oneDNN
// kernel) then uses D = floor(floor(C / 3) / heads) and reads the input as its first
// L*B*heads*3*D elements laid out (L, B, heads*3*D). The strides below come from D, not
// from C, so they read exactly that; the backward writes those elements' gradients and
// leaves the rest zero, which is the gradient of that forward.
AttGeom ProjGeom(const NodeAttrs& attrs, const Shape& s, int parts, const char* name, const char* layout,
                 bool floor_head_dim = false) {
  int64_t heads = attrs.Params<InterleavedMatMulParam>().heads;
  if (s.ndim() != 3)
    BadShape(attrs, std::string("input '") + name + "' must be 3-D " + layout, s);
  if (floor_head_dim) {
    if (s[2] < parts * heads)
      BadShape(attrs, std::string("the last axis of input '") + name + "' must be at least " +
                          std::to_string(parts) + " * heads = " + std::to_string(parts * heads) +
                          " (one element per projection and head) " + layout,
               s);
    AttGeom g;
    g.lq = g.lk = s[0];
    g.batch = s[1];
    g.heads = heads;
    g.d = s[2] / parts / heads;
    return g;
  }
  if (s[2] % (parts * heads) != 0)
    BadShape(attrs, std::string("the last axis of input '") + name + "' must be a multiple of " +
                        std::to_string(parts) + " * heads = " + std::to_string(parts * heads) + " " + layout,
             s);
  AttGeom g;
  g.lq = g.lk = s[0];
  g.batch = s[1];
  g.heads = heads;
  g.d = s[2] / (parts * heads);
  return g;
}

void CheckAttention(const NodeAttrs& attrs, const AttGeom& g, const Shape& att) {
  if (att != g.AttShape())
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'attention' must have shape ",
          g.AttShape().ToString(), " (batch * heads, query length, key length), got ", att.ToString());
}

// Checks the forward inputs (all known) and returns the geometry.
AttGeom Geometry(const NodeAttrs& attrs, Kind kind, const std::vector<Shape>& in) {
  switch (kind) {
    case Kind::kSelfQK:
      return ProjGeom(attrs, in[0], 3, "queries_keys_values", "(seq_length, batch, heads * head_dim * 3)",
                      /*floor_head_dim=*/true);
    case Kind::kSelfValAtt: {
      AttGeom g = ProjGeom(attrs, in[0], 3, "queries_keys_values", "(seq_length, batch, heads * head_dim * 3)");
      CheckAttention(attrs, g, in[1]);
      return g;
    }
    case Kind::kEncDecQK: {
      AttGeom q = ProjGeom(attrs, in[0], 1, "queries", "(query_length, batch, heads * head_dim)");
      AttGeom kv = ProjGeom(attrs, in[1], 2, "keys_values", "(key_length, batch, heads * head_dim * 2)");
      if (kv.batch != q.batch || kv.d != q.d)
        Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': keys_values must have shape (key_length, ",
              q.batch, ", ", 2 * q.E(), ") to match queries ", in[0].ToString(), ", got ", in[1].ToString());
      q.lk = kv.lk;
      return q;
    }
    case Kind::kEncDecValAtt: {
      AttGeom g = ProjGeom(attrs, in[0], 2, "keys_values", "(key_length, batch, heads * head_dim * 2)");
      if (in[1].ndim() != 3) BadShape(attrs, "input 'attention' must be 3-D (batch * heads, query length, key length)", in[1]);
      g.lq = in[1][1];
      CheckAttention(attrs, g, in[1]);
      return g;
    }
  }
  return {};
}

Shape ForwardOutShape(Kind kind, const AttGeom& g) {
  return kind == Kind::kSelfQK || kind == Kind::kEncDecQK ? g.AttShape() : g.OutShape();
}

int NumForwardInputs(Kind kind) { return kind == Kind::kSelfQK ? 1 : 2; }

FInferShape ForwardShape(Kind kind) {
  return [kind](const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
    for (const auto& s : *in) if (!s.is_known()) return false;
    AssignShape(attrs, out, 0, ForwardOutShape(kind, Geometry(attrs, kind, *in)), "output");
    return true;
  };
}

// Backward inputs: (ograd, forward inputs...); outputs: one gradient per forward input.
FInferShape BackwardShape(Kind kind) {
  return [kind](const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
    std::vector<Shape> fwd(in->begin() + 1, in->end());
    for (const auto& s : fwd) if (!s.is_known()) return false;
    AttGeom g = Geometry(attrs, kind, fwd);
    AssignShape(attrs, in, 0, ForwardOutShape(kind, g), "input");
    for (size_t i = 0; i < fwd.size(); ++i) AssignShape(attrs, out, i, fwd[i], "output");
    return true;
  };
}

// One strided operand: projection `part` of a (L, B, parts*E) tensor, or an attention map.
GemmOperand Proj(const TBlob& t, const AttGeom& g, int parts, int part, bool transpose) {
  const char* base = static_cast<const char*>(t.dptr) + part * g.d * DTypeSize(t.dtype);
  return GemmOperand{base, g.batch * parts * g.E(), parts * g.d, transpose};
}

GemmOperand Att(const TBlob& t, const AttGeom& g, bool transpose) {
  return GemmOperand{t.dptr, g.lk, g.lq * g.lk, transpose};
}

// Where a product lands: a (rows, cols) block per attention batch, rows `ld` apart.
struct Dest {
  void* data;
  int64_t ld, stride;
};

Dest ProjDest(const TBlob& t, const AttGeom& g, int parts, int part) {
  return Dest{static_cast<char*>(t.dptr) + part * g.d * DTypeSize(t.dtype), g.batch * parts * g.E(), parts * g.d};
}

Dest AttDest(const TBlob& t, const AttGeom& g) { return Dest{t.dptr, g.lk, g.lq * g.lk}; }

// dst_i (+)= scale * op(A_i) op(B_i) for every attention batch. Gemm has no alpha, so a
// scaled product goes through a contiguous scratch first.
void Product(const NodeAttrs& attrs, DType dt, int64_t m, int64_t n, int64_t k, const GemmOperand& a,
             const GemmOperand& b, double scale, bool add, const Dest& dst, int64_t batch) {
  const char* name = attrs.op->name.c_str();
  if (scale == 1.0) {
    Gemm(dt, m, n, k, a, b, add ? 1.0 : 0.0, dst.data, dst.ld, dst.stride, batch, name);
    return;
  }
  std::vector<char> scratch(static_cast<size_t>(batch * m * n) * DTypeSize(dt));
  Gemm(dt, m, n, k, a, b, 0.0, scratch.data(), n, m * n, batch, name);
  WEFT_FLOAT_TYPE_SWITCH(dt, T, name, {
    using A = typename AccType<T>::type;
    const T* p = reinterpret_cast<const T*>(scratch.data());
    T* c = static_cast<T*>(dst.data);
    ParallelFor(batch, 1, [&](int64_t ib, int64_t ie) {
      for (int64_t i = ib; i < ie; ++i)
        for (int64_t r = 0; r < m; ++r) {
          T* row = c + i * dst.stride + r * dst.ld;
          const T* src = p + (i * m + r) * n;
          for (int64_t j = 0; j < n; ++j)
            row[j] = static_cast<T>((add ? static_cast<A>(row[j]) : A(0)) + static_cast<A>(scale) * static_cast<A>(src[j]));
        }
    });
  });
}

double QKScale(const AttGeom& g) { return 1.0 / std::sqrt(static_cast<double>(g.d)); }

void ForwardCompute(Kind kind, const NodeAttrs& attrs, const std::vector<TBlob>& in, OpReq req, const TBlob& out) {
  if (req == OpReq::kNullOp) return;
  std::vector<Shape> shapes;
  for (const auto& t : in) shapes.push_back(t.shape);
  AttGeom g = Geometry(attrs, kind, shapes);
  if (out.shape != ForwardOutShape(kind, g))
    BadShape(attrs, "the output must have shape " + ForwardOutShape(kind, g).ToString(), out.shape);
  bool add = req == OpReq::kAddTo;
  int64_t nb = g.batch * g.heads;
  DType dt = in[0].dtype;
  switch (kind) {
    case Kind::kSelfQK:  // Q K^T / sqrt(D)
      Product(attrs, dt, g.lq, g.lk, g.d, Proj(in[0], g, 3, 0, false), Proj(in[0], g, 3, 1, true), QKScale(g), add,
              AttDest(out, g), nb);
      break;
    case Kind::kSelfValAtt:  // att V
      Product(attrs, dt, g.lq, g.d, g.lk, Att(in[1], g, false), Proj(in[0], g, 3, 2, false), 1.0, add,
              ProjDest(out, g, 1, 0), nb);
      break;
    case Kind::kEncDecQK:
      Product(attrs, dt, g.lq, g.lk, g.d, Proj(in[0], g, 1, 0, false), Proj(in[1], g, 2, 0, true), QKScale(g), add,
              AttDest(out, g), nb);
      break;
    case Kind::kEncDecValAtt:
      Product(attrs, dt, g.lq, g.d, g.lk, Att(in[1], g, false), Proj(in[0], g, 2, 1, false), 1.0, add,
              ProjDest(out, g, 1, 0), nb);
      break;
  }
}

// A gradient written by parts: a write request clears the whole array first (the parts
// no product reaches, such as the value third of d(queries_keys_values) in the qk
// product, are zero), then every part accumulates.
bool PrepareGrad(const TBlob& t, OpReq req) {
  if (req == OpReq::kNullOp) return false;
  if (req != OpReq::kAddTo) std::memset(t.dptr, 0, t.Bytes());
  return true;
}

void BackwardCompute(Kind kind, const NodeAttrs& attrs, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                     const std::vector<TBlob>& out) {
  std::vector<Shape> shapes;
  for (size_t i = 1; i < in.size(); ++i) shapes.push_back(in[i].shape);
  AttGeom g = Geometry(attrs, kind, shapes);
  if (in[0].shape != ForwardOutShape(kind, g))
    BadShape(attrs, "input 'ograd' must have the forward output's shape " + ForwardOutShape(kind, g).ToString(),
             in[0].shape);
  for (size_t i = 0; i < out.size(); ++i)
    if (req[i] != OpReq::kNullOp && out[i].shape != shapes[i])
      BadShape(attrs, "gradient " + std::to_string(i) + " must have shape " + shapes[i].ToString(), out[i].shape);
  for (const auto& t : in)
    if (t.dtype != in[0].dtype)
      Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': every input must have dtype ", DTypeName(in[0].dtype),
            ", got ", DTypeName(t.dtype));
  const TBlob& grad = in[0];
  DType dt = grad.dtype;
  int64_t nb = g.batch * g.heads;
  switch (kind) {
    case Kind::kSelfQK: {  // G = d(out): dQ = G K s, dK = G^T Q s
      const TBlob& qkv = in[1];
      if (!PrepareGrad(out[0], req[0])) break;
      Product(attrs, dt, g.lq, g.d, g.lk, Att(grad, g, false), Proj(qkv, g, 3, 1, false), QKScale(g), true,
              ProjDest(out[0], g, 3, 0), nb);
      Product(attrs, dt, g.lk, g.d, g.lq, Att(grad, g, true), Proj(qkv, g, 3, 0, false), QKScale(g), true,
              ProjDest(out[0], g, 3, 1), nb);
      break;
    }
    case Kind::kSelfValAtt: {  // d att = G V^T, dV = att^T G
      const TBlob &qkv = in[1], &att = in[2];
      if (PrepareGrad(out[0], req[0]))
        Product(attrs, dt, g.lk, g.d, g.lq, Att(att, g, true), Proj(grad, g, 1, 0, false), 1.0, true,
                ProjDest(out[0], g, 3, 2), nb);
      if (req[1] != OpReq::kNullOp)
        Product(attrs, dt, g.lq, g.lk, g.d, Proj(grad, g, 1, 0, false), Proj(qkv, g, 3, 2, true), 1.0,
                req[1] == OpReq::kAddTo, AttDest(out[1], g), nb);
      break;
    }
    case Kind::kEncDecQK: {  // dQ = G K s, dK = G^T Q s
      const TBlob &q = in[1], &kv = in[2];
      if (req[0] != OpReq::kNullOp)
        Product(attrs, dt, g.lq, g.d, g.lk, Att(grad, g, false), Proj(kv, g, 2, 0, false), QKScale(g),
                req[0] == OpReq::kAddTo, ProjDest(out[0], g, 1, 0), nb);
      if (PrepareGrad(out[1], req[1]))
        Product(attrs, dt, g.lk, g.d, g.lq, Att(grad, g, true), Proj(q, g, 1, 0, false), QKScale(g), true,
                ProjDest(out[1], g, 2, 0), nb);
      break;
    }
    case Kind::kEncDecValAtt: {  // d att = G V^T, dV = att^T G
      const TBlob &kv = in[1], &att = in[2];
      if (PrepareGrad(out[0], req[0]))
        Product(attrs, dt, g.lk, g.d, g.lq, Att(att, g, true), Proj(grad, g, 1, 0, false), 1.0, true,
                ProjDest(out[0], g, 2, 1), nb);
      if (req[1] != OpReq::kNullOp)
        Product(attrs, dt, g.lq, g.lk, g.d, Proj(grad, g, 1, 0, false), Proj(kv, g, 2, 1, true), 1.0,
                req[1] == OpReq::kAddTo, AttDest(out[1], g), nb);
      break;
    }
  }
}

void Register(Kind kind, const char* name, const char* doc, std::vector<std::pair<const char*, const char*>> args) {
  std::string backward = std::string("_backward_") + (name + std::strlen("_contrib_"));
  Op& op = OpRegistry::Get()->Register(name);
  op.Describe(doc).SetNumInputs(NumForwardInputs(kind));
  for (const auto& a : args) op.AddArgument(a.first, "NDArray-or-Symbol", a.second);
  op.SetParams<InterleavedMatMulParam>()
      .SetAttr<FInferShape>("FInferShape", ForwardShape(kind))
      .SetAttr<FInferType>("FInferType", SameFloatType)
      .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
      .SetAttr<FCompute>("FCompute<cpu>",
                         FCompute([kind](const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
                           ForwardCompute(kind, attrs, in, req[0], out[0]);
                         }))
      .SetAttr<FGradient>("FGradient", FGradient([backward](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
                            std::vector<GradValue> ins{a.out_grads[0]};
                            ins.insert(ins.end(), a.inputs.begin(), a.inputs.end());
                            return b.Call(backward, ins, attrs.dict);
                          }));

  Op& bw = OpRegistry::Get()->Register(backward);
  bw.Describe(std::string("Gradients of ") + name + " with respect to each of its inputs.")
      .SetNumInputs(NumForwardInputs(kind) + 1)
      .SetNumOutputs(NumForwardInputs(kind))
      .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output");
  for (const auto& a : args) bw.AddArgument(a.first, "NDArray-or-Symbol", std::string("The forward ") + a.first);
  bw.SetParams<InterleavedMatMulParam>()
      .SetAttr<FInferShape>("FInferShape", BackwardShape(kind))
      .SetAttr<FInferType>("FInferType", SameFloatType)
      .SetAttr<FCompute>("FCompute<cpu>",
                         FCompute([kind](const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
                           BackwardCompute(kind, attrs, in, req, out);
                         }));
}

const bool kRegistered = [] {
  Register(Kind::kSelfQK, "_contrib_interleaved_matmul_selfatt_qk",
           "Self-attention scores from interleaved projections: for queries_keys_values of shape (seq_length, "
           "batch, heads * head_dim * 3), whose last axis holds per head the query, key and value projections one "
           "after the other, the (batch * heads, seq_length, seq_length) products q k^T / sqrt(head_dim), one per "
           "head of each sequence (batch index b * heads + h). As in MXNet, a last axis C that is not a multiple "
           "of 3 * heads is accepted: head_dim is then floor(floor(C / 3) / heads) and the input is read as its "
           "first seq_length * batch * heads * 3 * head_dim elements in that layout.",
           {{"queries_keys_values", "Interleaved queries, keys and values"}});
  Register(Kind::kSelfValAtt, "_contrib_interleaved_matmul_selfatt_valatt",
           "Self-attention output: the attention weights (batch * heads, seq_length, seq_length) times the value "
           "projections held in queries_keys_values (seq_length, batch, heads * head_dim * 3), laid out as "
           "(seq_length, batch, heads * head_dim) with the heads of a position side by side.",
           {{"queries_keys_values", "Queries, keys and values interleaved"}, {"attention", "Attention maps"}});
  Register(Kind::kEncDecQK, "_contrib_interleaved_matmul_encdec_qk",
           "Encoder-decoder attention scores: queries (query_length, batch, heads * head_dim) against the key "
           "projections of keys_values (key_length, batch, heads * head_dim * 2, key and value interleaved per "
           "head): (batch * heads, query_length, key_length) products q k^T / sqrt(head_dim).",
           {{"queries", "Queries"}, {"keys_values", "Keys and values interleaved"}});
  Register(Kind::kEncDecValAtt, "_contrib_interleaved_matmul_encdec_valatt",
           "Encoder-decoder attention output: attention (batch * heads, query_length, key_length) times the value "
           "projections of keys_values (key_length, batch, heads * head_dim * 2), laid out as (query_length, "
           "batch, heads * head_dim).",
           {{"keys_values", "Keys and values interleaved"}, {"attention", "Attention maps"}});
  return true;
}();

}  // namespace
}  // namespace op
}  // namespace weft
