// _contrib_quantized_rnn: MXNet 1.9's int8 LSTM (its oneDNN int8 RNN), inference only.
//
// Inputs, as MXNet lists them: data (uint8, (T, N, I)), parameters (float32, RNN's packed
// vector), state and state_cell (float32, (L*D, N, H)), then min_data and max_data, which
// hold what _contrib_quantize_asym wrote beside the data: its `scale` and `shift` (MXNet
// names the inputs min_data/max_data and its arguments data_scale/data_shift). A uint8 q
// stands for (q - shift) / scale, oneDNN's asymmetric rule for its int8 RNN.
// Outputs: output (T, N, D*H) and, with state_outputs, the final states, all float32.
//
// What is computed, per layer and direction (gates i, f, g, o as RNN packs them):
// - The weights are quantized per gate row c (4H rows): w_q = round(w * ws[c]), ws[c] =
//   127 / the largest |w| of row c over the i2h and h2h weights of every layer and
//   direction (one scale vector for the whole operator, as MXNet gives oneDNN); 64 instead
//   of 127 where oneDNN runs without VNNI (WeightLevels).
// - Every value that enters a product is uint8 with the data's scale and shift: the data
//   itself, the output of the layer below, and the recurrent state h (quantized again
//   after every step; h0 comes in float). The products are u8 x s8 accumulated in int32
//   (oneDNN inner products where built in), then dequantized with the shift taken out:
//   (acc - shift * sum_k w_q[c, k]) / (scale * ws[c]), plus both float biases.
// - The cell state, the gate activations and the outputs stay float32; the last layer's
//   output is written unquantized.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <vector>

#include "core/op/nn/rnn.h"
#include "core/op/nn/rnn_math.h"
#include "core/op/quantization/quantized_product.h"

namespace weft {
namespace op {

// RNN's parameters (the operator is configured exactly as the float RNN it replaces) and
// `quantized`, which MXNet's graph pass writes into the node.
struct QuantizedRnnParam : RNNParam {
  bool quantized = true;
};

// The settings the int8 LSTM refuses (mode other than lstm, projection, clipping, sequence
// lengths) are refused by Checked below, with the reason.
WEFT_PARAM_SCHEMA(QuantizedRnnParam, s) {
  RnnFields(s);
  s.Field("quantized", &QuantizedRnnParam::quantized).Default(true)
      .Describe("Set by the quantization pass (MXNet writes it into the node); the operator is always int8.");
}

namespace {

constexpr int kNumInputs = 6;
enum { kData = 0, kParams, kState, kStateCell, kScale, kShift };

// Refuses what MXNet's int8 LSTM does not do, with the reason.
const QuantizedRnnParam& Checked(const NodeAttrs& attrs) {
  const auto& p = attrs.Params<QuantizedRnnParam>();
  const std::string& op = attrs.op->name;
  WEFT_CHECK(p.mode == "lstm", kValue, "Operator '", op, "': the quantized RNN supports mode='lstm' only, got mode='",
             p.mode, "'");
  WEFT_CHECK(!p.projection_size, kValue, "Operator '", op, "': projection_size is not supported by the quantized LSTM");
  WEFT_CHECK(!p.lstm_state_clip_min && !p.lstm_state_clip_max, kValue, "Operator '", op,
             "': lstm_state_clip_min/lstm_state_clip_max are not supported by the quantized LSTM");
  WEFT_CHECK(!p.use_sequence_length, kValue, "Operator '", op,
             "': use_sequence_length is not supported by the quantized LSTM (it has no sequence_length input)");
  return p;
}

RnnDims Dims(const QuantizedRnnParam& p, int64_t T, int64_t N, int64_t I) {
  RnnDims d;
  d.mode = RnnMode::kLstm;
  d.T = T;
  d.N = N;
  d.I = I;
  d.H = p.state_size;
  d.L = p.num_layers;
  d.D = p.bidirectional ? 2 : 1;
  d.G = 4;
  d.Hout = d.H;
  return d;
}

std::vector<std::string> InputNames(const NodeAttrs& attrs) {
  Checked(attrs);
  return {"data", "parameters", "state", "state_cell", "min_data", "max_data"};
}

std::vector<std::string> OutputNames(const NodeAttrs& attrs) {
  // "statecell_ouput" is MXNet's spelling; symbols list it so.
  if (Checked(attrs).state_outputs) return {"output", "state_output", "statecell_ouput"};
  return {"output"};
}

bool QuantizedRnnShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = Checked(attrs);
  const std::string& op = attrs.op->name;
  quant::RangeShapes(attrs, in, kScale, 2);
  const Shape& data = (*in)[kData];
  if (!data.known_ndim()) return false;
  WEFT_CHECK(data.ndim() == 3, kShape, "Operator '", op, "': input 'data' must be 3-D (T, N, C) in layout TNC, got ",
             data.ToString());
  if (!data.is_known()) return false;
  RnnDims d = Dims(p, data[0], data[1], data[2]);
  AssignShape(attrs, in, kParams, Shape({d.ParamSize()}), "input");
  AssignShape(attrs, in, kState, Shape({d.L * d.D, d.N, d.H}), "input");
  AssignShape(attrs, in, kStateCell, Shape({d.L * d.D, d.N, d.H}), "input");
  AssignShape(attrs, out, 0, Shape({d.T, d.N, d.D * d.H}), "output");
  if (p.state_outputs) {
    AssignShape(attrs, out, 1, Shape({d.L * d.D, d.N, d.H}), "output");
    AssignShape(attrs, out, 2, Shape({d.L * d.D, d.N, d.H}), "output");
  }
  return true;
}

bool QuantizedRnnType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  Checked(attrs);
  DType t = (*in)[kData];
  WEFT_CHECK(t == DType::kUnknown || t == DType::kUint8, kType, "Operator '", attrs.op->name,
             "': input 'data' must be uint8 (quantized by _contrib_quantize_asym), got ", DTypeName(t));
  for (int i = kParams; i < kNumInputs; ++i) AssignType(attrs, in, i, DType::kFloat32, "input");
  for (size_t i = 0; i < out->size(); ++i) AssignType(attrs, out, i, DType::kFloat32, "output");
  return t != DType::kUnknown;
}

// y (m, n) int32 = x (m, k) uint8 times w (n, k) int8 transposed.
struct U8Gemm {
  int64_t m, k, n;
  std::shared_ptr<const quant::Int8Plan> plan;
  U8Gemm(int64_t m_, int64_t k_, int64_t n_) : m(m_), k(k_), n(n_) {
    quant::Epilogue e;  // int32 out, no scale: the raw accumulators
    plan = quant::Int8FcPlan(m, k, n, DType::kUint8, false, e, /*narrow_weights=*/true);
  }
  size_t TempBytes() const { return plan ? quant::Int8TempBytes(*plan) : 0; }
  // `w_version` names the block of the int8 weights, so that oneDNN's layout of them is kept
  // with them (made once, not at every time step).
  void Run(const uint8_t* x, const int8_t* w, int32_t* y, char* temp, const InputVersion* w_version) const {
    if (plan) {
      quant::RunInt8(*plan, x, w, nullptr, nullptr, y, temp, w_version);
    } else {
      quant::Epilogue e;
      quant::ReferenceFc(m, k, n, DType::kUint8, x, w, nullptr, e, nullptr, y);
    }
  }
};

// One sequence's step from its gate pre-activations g (i, f, g, o): c and h updated in
// place, h also written to y. A free function with restrict pointers so that the loop
// vectorises (rnn_math's exp is written for that).
WEFT_RNN_VECTOR_LOOP
void LstmCell(int64_t H, const float* __restrict g, float* __restrict c, float* __restrict h, float* __restrict y) {
  using rnn_math::Sigmoid;
  using rnn_math::Tanh;
#pragma omp simd
  for (int64_t j = 0; j < H; ++j) {
    float cv = Sigmoid(g[H + j]) * c[j] + Sigmoid(g[j]) * Tanh(g[2 * H + j]);
    c[j] = cv;
    h[j] = Sigmoid(g[3 * H + j]) * Tanh(cv);
    y[j] = h[j];
  }
}

void QuantizeU8(const float* x, int64_t n, float scale, float shift, uint8_t* q) {
  ParallelFor(n, kElemGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) q[i] = quant::Saturate<uint8_t>(static_cast<double>(x[i]) * scale + shift);
  });
}

// The int8 weights (laid out as the float ones), each gate row's scale ws, and each row's
// sum of int8 weights (the shift's share), per (layer, direction): i2h rows then h2h rows.
struct Int8Weights {
  std::shared_ptr<std::vector<int8_t>> wq;
  std::vector<float> ws;
  std::vector<int32_t> rowsum;
};

// The largest int8 weight: 127, or 64 where oneDNN runs without VNNI, whose u8 x s8 pairs
// of products must fit int16 (2 * 255 * 64 <= 32767). Narrow weights keep the products one
// oneDNN GEMM each there, as fast as int8 gets on those CPUs, for one bit of weight
// precision; full-range weights would need the split (two products and a pass to join
// them, slower than the float LSTM). Without oneDNN the loops are exact either way.
float WeightLevels() {
#if defined(WEFT_USE_ONEDNN)
  return quant::VnniProducts() ? 127.0f : 64.0f;
#else
  return 127.0f;
#endif
}

std::shared_ptr<const Int8Weights> QuantizeWeights(const RnnDims& d, const float* w) {
  const int64_t H = d.H, G4 = 4 * H;
  auto out = std::make_shared<Int8Weights>();
  // One scale per gate row over every layer and direction.
  std::vector<float> row_max(static_cast<size_t>(G4), 0.0f);
  for (int64_t l = 0; l < d.L; ++l)
    for (int64_t dir = 0; dir < d.D; ++dir) {
      const float* wl = w + d.WeightOffset(l, dir);
      const int64_t in_size = d.InSize(l);
      for (int64_t c = 0; c < G4; ++c) {
        float m = row_max[c];
        for (int64_t k = 0; k < in_size; ++k) m = std::max(m, std::fabs(wl[c * in_size + k]));
        const float* wh = wl + G4 * in_size;
        for (int64_t k = 0; k < H; ++k) m = std::max(m, std::fabs(wh[c * H + k]));
        row_max[c] = m;
      }
    }
  std::vector<float>& ws = out->ws;
  ws.resize(static_cast<size_t>(G4));
  const float levels = WeightLevels();
  for (int64_t c = 0; c < G4; ++c) ws[c] = row_max[c] > 0 ? levels / row_max[c] : 1.0f;

  // The int8 weights, laid out as the float ones, and each row's sum (the shift's share).
  out->wq = std::make_shared<std::vector<int8_t>>(static_cast<size_t>(d.WeightsTotal()));
  std::vector<int8_t>& wq = *out->wq;
  std::vector<int32_t>& rowsum = out->rowsum;
  rowsum.assign(static_cast<size_t>(d.L * d.D * 2 * G4), 0);
  for (int64_t l = 0; l < d.L; ++l)
    for (int64_t dir = 0; dir < d.D; ++dir) {
      const int64_t off = d.WeightOffset(l, dir), in_size = d.InSize(l);
      int32_t* sums = rowsum.data() + (l * d.D + dir) * 2 * G4;
      for (int part = 0; part < 2; ++part) {
        const int64_t k_size = part == 0 ? in_size : H;
        const int64_t base = off + (part == 0 ? 0 : G4 * in_size);
        for (int64_t c = 0; c < G4; ++c) {
          int32_t sum = 0;
          for (int64_t k = 0; k < k_size; ++k) {
            int8_t q = quant::Saturate<int8_t>(static_cast<double>(w[base + c * k_size + k]) * ws[c]);
            wq[base + c * k_size + k] = q;
            sum += q;
          }
          sums[part * G4 + c] = sum;
        }
      }
    }
  return out;
}

// The int8 weights of a parameters array, kept while the array is neither written nor
// freed (MXNet keeps them by the array's version too), so that a call neither quantizes
// them nor has oneDNN lay them out again. Without the array's version (a direct C++ call)
// they are made for the call alone.
std::shared_ptr<const Int8Weights> WeightsFor(const RnnDims& d, const float* w, const InputVersion* v) {
  if (v == nullptr || v->array.expired()) return QuantizeWeights(d, w);
  struct Kept {
    std::weak_ptr<const void> array;
    uint64_t writes;
    const float* address;
    int64_t L, D, I, H;
    std::shared_ptr<const Int8Weights> weights;
  };
  static std::mutex mu;
  static std::vector<Kept> kept;
  auto same = [&](const Kept& k) {
    return !k.array.owner_before(v->array) && !v->array.owner_before(k.array) && k.writes == v->writes &&
           k.address == w && k.L == d.L && k.D == d.D && k.I == d.I && k.H == d.H;
  };
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& k : kept)
      if (same(k) && !k.array.expired()) return k.weights;
  }
  auto made = QuantizeWeights(d, w);
  std::lock_guard<std::mutex> lock(mu);
  // Entries of freed arrays, and older states of this one, go.
  kept.erase(std::remove_if(kept.begin(), kept.end(),
                            [&](const Kept& k) {
                              return k.array.expired() ||
                                     (!k.array.owner_before(v->array) && !v->array.owner_before(k.array));
                            }),
             kept.end());
  kept.push_back({v->array, v->writes, w, d.L, d.D, d.I, d.H, made});
  return made;
}

void QuantizedRnnCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = Checked(attrs);
  const std::string& op = attrs.op->name;
  const Shape& ds = in[kData].shape;
  const RnnDims d = Dims(p, ds[0], ds[1], ds[2]);
  const float scale = quant::ReadScalar(in[kScale]), shift = quant::ReadScalar(in[kShift]);
  WEFT_CHECK(std::isfinite(scale) && scale > 0 && std::isfinite(shift), kValue, "Operator '", op,
             "': expected the data's quantization scale (min_data, from _contrib_quantize_asym) to be positive and "
             "finite and its shift (max_data) finite, got scale ", scale, " and shift ", shift,
             " (a calibrated range of width 0 gives scale 0)");
  for (size_t k = 0; k < req.size(); ++k)
    WEFT_CHECK(req[k] != OpReq::kAddTo, kUnsupported, "Operator '", op,
               "': accumulating into an output (req 'add') is not supported");
  const int64_t T = d.T, N = d.N, H = d.H, G4 = 4 * H, TN = T * N, LD = d.L * d.D;
  const float* w = in[kParams].ptr<float>();

  const auto& versions = CallInputVersions();
  // Held for the call: the kept entry may be replaced meanwhile by another thread's call.
  const std::shared_ptr<const Int8Weights> held =
      WeightsFor(d, w, versions.size() > kParams ? &versions[kParams] : nullptr);
  const Int8Weights& iw = *held;
  const std::vector<int8_t>& wq = *iw.wq;
  const std::vector<float>& ws = iw.ws;
  const std::vector<int32_t>& rowsum = iw.rowsum;
  InputVersion wq_version;
  wq_version.array = std::shared_ptr<const void>(iw.wq, iw.wq->data());
  // What one accumulator step of row c is worth.
  std::vector<double> unit(static_cast<size_t>(G4));
  for (int64_t c = 0; c < G4; ++c) unit[c] = 1.0 / (static_cast<double>(scale) * ws[c]);

  // The products: one input projection per distinct input width, one per step.
  std::vector<U8Gemm> input_gemm;
  for (int64_t l = 0; l < std::min<int64_t>(d.L, 2); ++l) input_gemm.emplace_back(TN, d.InSize(l), G4);
  U8Gemm step_gemm(N, H, G4);
  size_t temp_bytes = step_gemm.TempBytes();
  for (const auto& g : input_gemm) temp_bytes = std::max(temp_bytes, g.TempBytes());
  char* temp = nullptr;
  if (temp_bytes > 0) {
    for (const auto& r : ctx.requested)
      if (r.type == ResourceType::kTempSpace && r.temp != nullptr) temp = static_cast<char*>(r.temp->Get(temp_bytes));
    WEFT_CHECK(temp != nullptr, kInternal, "Operator '", op, "': no temporary space was provided");
  }

  const int64_t widest = std::max(d.I, d.D * H);
  std::vector<uint8_t> xq(static_cast<size_t>(TN * widest));
  std::vector<int32_t> acc(static_cast<size_t>(TN * G4)), acch(static_cast<size_t>(N * G4));
  std::vector<float> gx(static_cast<size_t>(TN * G4)), y(static_cast<size_t>(TN * d.D * H));
  std::vector<float> h(static_cast<size_t>(N * H)), c(static_cast<size_t>(N * H)), bias(static_cast<size_t>(G4));
  std::vector<uint8_t> hq(static_cast<size_t>(N * H));
  std::vector<float> final_h(static_cast<size_t>(LD * N * H)), final_c(static_cast<size_t>(LD * N * H));

  std::memcpy(xq.data(), in[kData].dptr, static_cast<size_t>(TN * d.I));
  const float* h0 = in[kState].ptr<float>();
  const float* c0 = in[kStateCell].ptr<float>();
  for (int64_t l = 0; l < d.L; ++l) {
    const int64_t in_size = d.InSize(l);
    const U8Gemm& xg = input_gemm[std::min<int64_t>(l, 1)];
    for (int64_t dir = 0; dir < d.D; ++dir) {
      const int64_t ld = l * d.D + dir, off = d.WeightOffset(l, dir);
      const int32_t* sx = rowsum.data() + ld * 2 * G4;
      const int32_t* sh = sx + G4;
      const float* bx = w + d.BiasOffset(l, dir);
      for (int64_t k = 0; k < G4; ++k) bias[k] = bx[k] + bx[G4 + k];
      xg.Run(xq.data(), wq.data() + off, acc.data(), temp, &wq_version);
      ParallelFor(TN, 64, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r)
          for (int64_t k = 0; k < G4; ++k)
            gx[r * G4 + k] = static_cast<float>((acc[r * G4 + k] - static_cast<double>(shift) * sx[k]) * unit[k]) + bias[k];
      });
      std::memcpy(h.data(), h0 + ld * N * H, sizeof(float) * N * H);
      std::memcpy(c.data(), c0 + ld * N * H, sizeof(float) * N * H);
      const int8_t* whq = wq.data() + off + G4 * in_size;
      for (int64_t s = 0; s < T; ++s) {
        const int64_t t = dir == 0 ? s : T - 1 - s;
        QuantizeU8(h.data(), N * H, scale, shift, hq.data());
        step_gemm.Run(hq.data(), whq, acch.data(), temp, &wq_version);
        ParallelFor(N, 4, [&](int64_t b, int64_t e) {
          std::vector<float> pre(static_cast<size_t>(G4));
          for (int64_t n = b; n < e; ++n) {
            const float* g = gx.data() + (t * N + n) * G4;
            const int32_t* a = acch.data() + n * G4;
            for (int64_t k = 0; k < G4; ++k)
              pre[k] = g[k] + static_cast<float>((a[k] - static_cast<double>(shift) * sh[k]) * unit[k]);
            LstmCell(H, pre.data(), c.data() + n * H, h.data() + n * H, y.data() + (t * N + n) * d.D * H + dir * H);
          }
        });
      }
      std::memcpy(final_h.data() + ld * N * H, h.data(), sizeof(float) * N * H);
      std::memcpy(final_c.data() + ld * N * H, c.data(), sizeof(float) * N * H);
    }
    // The next layer reads this one's output as uint8 with the data's scale and shift.
    if (l + 1 < d.L) QuantizeU8(y.data(), TN * d.D * H, scale, shift, xq.data());
  }
  if (req[0] != OpReq::kNullOp) std::memcpy(out[0].dptr, y.data(), sizeof(float) * y.size());
  if (p.state_outputs) {
    if (req[1] != OpReq::kNullOp) std::memcpy(out[1].dptr, final_h.data(), sizeof(float) * final_h.size());
    if (req[2] != OpReq::kNullOp) std::memcpy(out[2].dptr, final_c.data(), sizeof(float) * final_c.size());
  }
}

}  // namespace

WEFT_REGISTER_OP(_contrib_quantized_rnn)
    .Describe(
        "MXNet 1.9's int8 LSTM (inference only): the RNN operator with mode='lstm' on uint8 data quantized "
        "asymmetrically by _contrib_quantize_asym (q = x * scale + shift; min_data and max_data carry that scale "
        "and shift). The gate weights are quantized to int8 per gate row, every value entering a product (data, "
        "the layer below, the recurrent state) is uint8 with the data's scale and shift, products accumulate in "
        "int32, and the biases, cell state, outputs and states are float32. Other modes, projection_size, "
        "lstm_state_clip_min/max and use_sequence_length are refused.")
    .SetNumInputs([](const NodeAttrs& attrs) {
      Checked(attrs);
      return kNumInputs;
    })
    .SetNumOutputs([](const NodeAttrs& attrs) { return Checked(attrs).state_outputs ? 3 : 1; })
    .AddArgument("data", "NDArray-or-Symbol", "Input data (T, N, I), uint8.")
    .AddArgument("parameters", "NDArray-or-Symbol", "The float32 packed weights and biases, as RNN's.")
    .AddArgument("state", "NDArray-or-Symbol", "Initial hidden state (L*D, N, H), float32.")
    .AddArgument("state_cell", "NDArray-or-Symbol", "Initial cell state (L*D, N, H), float32.")
    .AddArgument("min_data", "NDArray-or-Symbol", "The data's quantization scale (output 'scale' of quantize_asym).")
    .AddArgument("max_data", "NDArray-or-Symbol", "The data's quantization shift (output 'shift' of quantize_asym).")
    .SetParams<QuantizedRnnParam>()
    .SetAttr<FListNames>("FListInputNames", InputNames)
    .SetAttr<FListNames>("FListOutputNames", OutputNames)
    .SetAttr<FInferShape>("FInferShape", QuantizedRnnShape)
    .SetAttr<FInferType>("FInferType", QuantizedRnnType)
    .SetAttr<FResourceRequest>("FResourceRequest",
                               [](const NodeAttrs&) { return std::vector<ResourceRequest>{{ResourceType::kTempSpace}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<TInputVersions>("TInputVersions", true)
    .SetAttr<FCompute>("FCompute<cpu>", QuantizedRnnCompute);

}  // namespace op
}  // namespace weft
