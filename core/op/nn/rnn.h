// The fused RNN operator (MXNet 1.x's `RNN`): parameters, the packed parameter layout and
// the sizes every compute path (CPU here, a device backend later) derives from them.
//
// Packed parameters, as MXNet packs them (one flat vector): first every weight, for each
// layer l, for each direction d (forward, then reverse):
//   i2h weight (G*H x I_l), h2h weight (G*H x P), and with projection_size the h2r weight
//   (P x H),
// then every bias in the same (l, d) order: i2h bias (G*H), h2h bias (G*H). G is 1 for
// rnn_relu/rnn_tanh, 4 for lstm (gates i, f, g, o), 3 for gru (gates r, z, n); H is
// state_size; P is projection_size when given, else H; I_0 is the input size and I_l =
// D*P for the layers above.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/base/param.h"
#include "core/op/registry.h"

namespace weft {
namespace op {

struct RNNParam {
  int state_size = 0;
  int num_layers = 0;
  bool bidirectional = false;
  std::string mode;
  double p = 0;
  bool state_outputs = false;
  std::optional<int> projection_size;
  std::optional<double> lstm_state_clip_min;
  std::optional<double> lstm_state_clip_max;
  bool lstm_state_clip_nan = false;
  bool use_sequence_length = false;
};

// RNN's fields, for RNNParam and the parameters that extend it (the int8 LSTM).
template <typename P>
void RnnFields(ParamSchema<P>& s) {
  s.template Field<int>("state_size", &P::state_size).Min(1).Describe("Size of the hidden state of each layer.");
  s.template Field<int>("num_layers", &P::num_layers).Min(1).Describe("Number of stacked layers.");
  s.template Field<bool>("bidirectional", &P::bidirectional).Default(false)
      .Describe("Whether each layer runs both ways.");
  s.template Field<std::string>("mode", &P::mode)
      .Choices({"rnn_relu", "rnn_tanh", "lstm", "gru"})
      .Describe("The recurrent cell.");
  s.template Field<double>("p", &P::p).Default(0.0).Range(0, 1).Describe(
      "Dropout probability on the outputs of every layer but the last (training only).");
  s.template Field<bool>("state_outputs", &P::state_outputs).Default(false).Describe(
      "Whether the final states are outputs too.");
  s.template Field<std::optional<int>>("projection_size", &P::projection_size).Default(std::nullopt).Describe(
      "Size of the LSTM's projected hidden state (lstm only).");
  s.template Field<std::optional<double>>("lstm_state_clip_min", &P::lstm_state_clip_min)
      .Default(std::nullopt)
      .Describe(
      "Lower bound the LSTM cell state is clipped to.");
  s.template Field<std::optional<double>>("lstm_state_clip_max", &P::lstm_state_clip_max)
      .Default(std::nullopt)
      .Describe(
      "Upper bound the LSTM cell state is clipped to.");
  s.template Field<bool>("lstm_state_clip_nan", &P::lstm_state_clip_nan).Default(false).Describe(
      "Whether clipping also replaces NaN cell states (by the lower bound).");
  s.template Field<bool>("use_sequence_length", &P::use_sequence_length).Default(false).Describe(
      "Whether the input sequence_length (N,) gives each sequence's valid length.");
}

WEFT_PARAM_SCHEMA(RNNParam, s) { RnnFields(s); }

enum class RnnMode : int { kRelu = 0, kTanh = 1, kLstm = 2, kGru = 3 };

// Sizes of one call. Hout is what a layer emits per direction (P with projection, else H).
struct RnnDims {
  RnnMode mode = RnnMode::kLstm;
  int64_t T = 0, N = 0, I = 0, H = 0, L = 0, D = 1, G = 1, Hout = 0;
  bool proj = false;

  int64_t InSize(int64_t l) const { return l == 0 ? I : D * Hout; }
  int64_t GH() const { return G * H; }
  // Elements of layer l's weights for one direction: i2h, h2h and (projection) h2r.
  int64_t LayerWeights(int64_t l) const { return GH() * InSize(l) + GH() * Hout + (proj ? Hout * H : 0); }
  int64_t WeightOffset(int64_t l, int64_t d) const {
    int64_t off = 0;
    for (int64_t k = 0; k < l; ++k) off += D * LayerWeights(k);
    return off + d * LayerWeights(l);
  }
  int64_t WeightsTotal() const { return WeightOffset(L, 0); }
  int64_t BiasOffset(int64_t l, int64_t d) const { return WeightsTotal() + (l * D + d) * 2 * GH(); }
  int64_t ParamSize() const { return WeightsTotal() + L * D * 2 * GH(); }
};

// Inputs and outputs, shared by the CPU and GPU compute functions.
inline bool IsLstm(const RNNParam& p) { return p.mode == "lstm"; }
inline int NumVisibleOutputs(const RNNParam& p) { return p.state_outputs ? (IsLstm(p) ? 3 : 2) : 1; }
inline bool HasMask(const RNNParam& p) { return p.p > 0; }
inline int NumForwardInputs(const RNNParam& p) { return 3 + (IsLstm(p) ? 1 : 0) + (p.use_sequence_length ? 1 : 0); }
// Outputs: the visible ones, the dropout mask (p > 0), then the reserve.
inline int NumForwardOutputs(const RNNParam& p) { return NumVisibleOutputs(p) + (HasMask(p) ? 1 : 0) + 1; }

// Positions of the optional inputs: state_cell then sequence_length follow state.
inline int CellInput(const RNNParam& p) { return IsLstm(p) ? 3 : -1; }
inline int LengthInput(const RNNParam& p) { return p.use_sequence_length ? 3 + (IsLstm(p) ? 1 : 0) : -1; }

RnnMode ParseRnnMode(const std::string& mode);

// Sizes from the parameters and the data shape (T, N, I); throws kValue naming the
// parameter when the parameters contradict each other (projection_size without lstm).
RnnDims MakeRnnDims(const NodeAttrs& attrs, int64_t T, int64_t N, int64_t I);

}  // namespace op
}  // namespace weft
