"""Multi-layer recurrent layers over the fused `RNN` operator, as MXNet 1.x's
`mx.gluon.rnn.RNN`, `LSTM` and `GRU`.

Each layer/direction has its own parameters, named as MXNet names them
(`l0_i2h_weight`, `l0_h2h_bias`, `r1_i2h_weight`, ...: l/r for the direction, then the
layer), so checkpoints carry over. At each call they are flattened and concatenated in
the operator's packed order: every weight (layer by layer, direction by direction, i2h
then h2h), then every bias in the same order.
"""
from .. import block as _block
from ... import ndarray, symbol
from ...ndarray import NDArray
from . import rnn_cell
from .rnn_cell import _symbol_zeros_like_batch

__all__ = ["RNN", "LSTM", "GRU"]


class _RNNLayer(_block.HybridBlock):
    """The shared implementation of RNN, LSTM and GRU."""

    def __init__(self, hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                 i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                 h2h_bias_initializer, mode, projection_size, h2r_weight_initializer,
                 lstm_state_clip_min, lstm_state_clip_max, lstm_state_clip_nan, dtype,
                 use_sequence_length=False, **kwargs):
        super(_RNNLayer, self).__init__(**kwargs)
        name = type(self).__name__
        if layout not in ("TNC", "NTC"):
            raise ValueError("%s: layout must be 'TNC' or 'NTC', got %r" % (name, layout))
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError("%s: hidden_size must be a positive int, got %r" % (name, hidden_size))
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError("%s: num_layers must be a positive int, got %r" % (name, num_layers))
        if not 0 <= dropout < 1:
            raise ValueError("%s: dropout must be in [0, 1), got %r" % (name, dropout))
        if projection_size is not None and mode != "lstm":
            raise ValueError("%s: projection_size is only for LSTM" % name)
        self._hidden_size = hidden_size
        self._projection_size = projection_size or None
        self._num_layers = num_layers
        self._mode = mode
        self._layout = layout
        self._dropout = dropout
        self._dir = 2 if bidirectional else 1
        self._input_size = input_size
        self._lstm_state_clip_min = lstm_state_clip_min
        self._lstm_state_clip_max = lstm_state_clip_max
        self._lstm_state_clip_nan = lstm_state_clip_nan
        self._dtype = dtype
        self._use_sequence_length = use_sequence_length
        self._gates = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}[mode]
        self._initializers = {"i2h_weight_initializer": i2h_weight_initializer,
                              "h2h_weight_initializer": h2h_weight_initializer,
                              "i2h_bias_initializer": i2h_bias_initializer,
                              "h2h_bias_initializer": h2h_bias_initializer}

        ng, nh, ni = self._gates, hidden_size, input_size
        # What each layer emits per direction: the projection when there is one.
        nout = self._projection_size or nh
        for layer in range(num_layers):
            for d in ["l", "r"][:self._dir]:
                self._register_param("%s%d_i2h_weight" % (d, layer), (ng * nh, ni), i2h_weight_initializer, dtype)
                self._register_param("%s%d_h2h_weight" % (d, layer), (ng * nh, nout), h2h_weight_initializer, dtype)
                if self._projection_size:
                    self._register_param("%s%d_h2r_weight" % (d, layer), (nout, nh), h2r_weight_initializer, dtype)
                self._register_param("%s%d_i2h_bias" % (d, layer), (ng * nh,), i2h_bias_initializer, dtype)
                self._register_param("%s%d_h2h_bias" % (d, layer), (ng * nh,), h2h_bias_initializer, dtype)
            ni = nout * self._dir

    def _register_param(self, name, shape, init, dtype):
        p = self.params.get(name, shape=shape, init=init, allow_deferred_init=True, dtype=dtype)
        setattr(self, name, p)
        return p

    def __repr__(self):
        s = "%s(%s -> %d, %s" % (type(self).__name__, self._input_size if self._input_size else None,
                                 self._hidden_size, self._layout)
        if self._num_layers != 1:
            s += ", num_layers=%d" % self._num_layers
        if self._dropout != 0:
            s += ", dropout=%s" % self._dropout
        if self._dir == 2:
            s += ", bidirectional"
        return s + ")"

    def _unfuse(self):
        """The same network as a stack of recurrent cells (one per layer, a BidirectionalCell
        pair when bidirectional, DropoutCells between layers) sharing this layer's
        parameters, as MXNet's `_unfuse`."""
        if self._projection_size:
            raise NotImplementedError("%s._unfuse: layers with a projection have no cell form"
                                      % type(self).__name__)
        if self._lstm_state_clip_min is not None or self._lstm_state_clip_max is not None:
            raise NotImplementedError("%s._unfuse: state clipping has no cell form" % type(self).__name__)
        make = {"rnn_relu": lambda **kw: rnn_cell.RNNCell(self._hidden_size, activation="relu", **kw),
                "rnn_tanh": lambda **kw: rnn_cell.RNNCell(self._hidden_size, activation="tanh", **kw),
                "lstm": lambda **kw: rnn_cell.LSTMCell(self._hidden_size, **kw),
                "gru": lambda **kw: rnn_cell.GRUCell(self._hidden_size, **kw)}[self._mode]
        stack = rnn_cell.HybridSequentialRNNCell(prefix=self.prefix, params=self.params)
        with stack.name_scope():
            ni = self._input_size
            for layer in range(self._num_layers):
                kwargs = dict(self._initializers, input_size=ni)
                if self._dir == 2:
                    stack.add(rnn_cell.BidirectionalCell(make(prefix="l%d_" % layer, **kwargs),
                                                         make(prefix="r%d_" % layer, **kwargs)))
                else:
                    stack.add(make(prefix="l%d_" % layer, **kwargs))
                if self._dropout > 0 and layer != self._num_layers - 1:
                    stack.add(rnn_cell.DropoutCell(self._dropout))
                ni = self._hidden_size * self._dir
        return stack

    def state_info(self, batch_size=0):
        """Shapes of the states: (layers * directions, batch, hidden) each."""
        nout = self._projection_size or self._hidden_size
        info = [{"shape": (self._num_layers * self._dir, batch_size, nout), "__layout__": "LNC",
                 "dtype": self._dtype}]
        if self._mode == "lstm":
            info.append({"shape": (self._num_layers * self._dir, batch_size, self._hidden_size),
                         "__layout__": "LNC", "dtype": self._dtype})
        return info

    def begin_state(self, batch_size=0, func=ndarray.zeros, **kwargs):
        """The initial states (zeros by default) for a batch of `batch_size`; `func` is
        called as `func(name=..., shape=..., __layout__=..., dtype=..., **kwargs)`."""
        states = []
        for i, info in enumerate(self.state_info(batch_size)):
            info = dict(info)
            info.update(kwargs)
            states.append(func(name="%sh0_%d" % (self.prefix, i), **info))
        return states

    def infer_shape(self, inputs, *args):
        """Fills in the input size of the first layer's i2h weights from (T, N, C) or
        (N, T, C) inputs; the layers above take the one below's output size."""
        if inputs.ndim != 3:
            raise ValueError("%s: inputs must be 3-D (%s), got shape %s"
                             % (type(self).__name__, self._layout, inputs.shape))
        ni = inputs.shape[2]
        nout = self._projection_size or self._hidden_size
        for layer in range(self._num_layers):
            for d in ["l", "r"][:self._dir]:
                getattr(self, "%s%d_i2h_weight" % (d, layer)).shape = (self._gates * self._hidden_size, ni)
            ni = nout * self._dir

    def __call__(self, inputs, states=None, sequence_length=None):
        """Runs the layer: `outputs` when `states` is None (zero initial states), else
        `(outputs, new_states)`."""
        skip_states = states is None
        if states is None:
            if isinstance(inputs, NDArray):
                batch_size = inputs.shape[self._layout.find("N")]
                states = self.begin_state(batch_size, ctx=inputs.context, dtype=inputs.dtype)
            else:
                states = self.begin_state(0, func=_symbol_zeros_like_batch(inputs, self._layout.find("N")))
        if isinstance(states, (NDArray, symbol.Symbol)):
            states = [states]
        states = list(states)
        if isinstance(inputs, NDArray):
            self._check_states(inputs, states)
        args = states
        if self._use_sequence_length:
            if sequence_length is None:
                raise ValueError("%s was made with use_sequence_length=True: pass sequence_length"
                                 % type(self).__name__)
            args = states + [sequence_length]
        elif sequence_length is not None:
            raise ValueError("%s: sequence_length given but the layer was made with use_sequence_length=False"
                             % type(self).__name__)
        # The states travel as separate arguments (the graph's inputs are flat), and the
        # result is always [outputs] + new states, so that one traced graph serves both
        # ways of calling.
        result = super(_RNNLayer, self).__call__(inputs, *args)
        outputs, new_states = result[0], list(result[1:])
        return outputs if skip_states else (outputs, new_states)

    def _check_states(self, inputs, states):
        if inputs.ndim != 3:
            raise ValueError("%s: inputs must be 3-D (%s), got shape %s"
                             % (type(self).__name__, self._layout, inputs.shape))
        infos = self.state_info(inputs.shape[self._layout.find("N")])
        if len(states) != len(infos):
            raise ValueError("%s: expected %d state arrays, got %d" % (type(self).__name__, len(infos), len(states)))
        for state, info in zip(states, infos):
            if not isinstance(state, NDArray) or tuple(state.shape) != tuple(info["shape"]):
                raise ValueError("%s: invalid recurrent state shape: expected %s, got %s"
                                 % (type(self).__name__, info["shape"], getattr(state, "shape", state)))

    def hybrid_forward(self, F, inputs, *args, **kwargs):
        num_states = 2 if self._mode == "lstm" else 1
        states = list(args[:num_states])
        sequence_length = args[num_states] if self._use_sequence_length else None
        outputs, states = self._forward_kernel(F, inputs, states, sequence_length, **kwargs)
        return [outputs] + states

    def _packed_params(self, F, kwargs):
        order = []
        for kind in ("weight", "bias"):
            for layer in range(self._num_layers):
                for d in ["l", "r"][:self._dir]:
                    for g in ("i2h", "h2h", "h2r"):
                        key = "%s%d_%s_%s" % (d, layer, g, kind)
                        if key in kwargs:
                            order.append(F.reshape(kwargs[key], shape=(-1,)))
        # Not concat: in a graph traced before the first call, the first layer's i2h weights
        # get their size from what the RNN operator's parameter vector leaves over.
        return F._internal._rnn_param_concat(*order, dim=0, num_args=len(order))

    def _forward_kernel(self, F, inputs, states, sequence_length, **kwargs):
        if self._layout == "NTC":
            inputs = F.swapaxes(inputs, dim1=0, dim2=1)
        params = self._packed_params(F, kwargs)
        args = list(states)
        if self._use_sequence_length:
            args.append(sequence_length)
        rnn = F.RNN(inputs, params, *args, use_sequence_length=self._use_sequence_length,
                    state_size=self._hidden_size, projection_size=self._projection_size,
                    num_layers=self._num_layers, bidirectional=self._dir == 2, p=self._dropout,
                    state_outputs=True, mode=self._mode, lstm_state_clip_min=self._lstm_state_clip_min,
                    lstm_state_clip_max=self._lstm_state_clip_max,
                    lstm_state_clip_nan=self._lstm_state_clip_nan,
                    name="rnn")
        if self._mode == "lstm":
            outputs, states = rnn[0], [rnn[1], rnn[2]]
        else:
            outputs, states = rnn[0], [rnn[1]]
        if self._layout == "NTC":
            outputs = F.swapaxes(outputs, dim1=0, dim2=1)
        return outputs, states


class RNN(_RNNLayer):
    r"""Elman RNN layers: :math:`h_t = act(W_{ih} x_t + b_{ih} + W_{hh} h_{t-1} + b_{hh})`
    with act 'relu' or 'tanh'.

    Called as `layer(inputs, states=None)`: inputs (T, N, C) for 'TNC' or (N, T, C) for
    'NTC'. Without states it returns only the outputs (begun from zeros); with states it
    returns (outputs, new_states). Outputs are (T, N, D*hidden_size) in the layout.
    """

    def __init__(self, hidden_size, num_layers=1, activation="relu", layout="TNC", dropout=0,
                 bidirectional=False, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 dtype="float32", **kwargs):
        if activation not in ("relu", "tanh"):
            raise ValueError("RNN: activation must be 'relu' or 'tanh', got %r" % (activation,))
        super(RNN, self).__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                                  i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                                  h2h_bias_initializer, "rnn_" + activation, None, None, None, None, False,
                                  dtype, **kwargs)


class LSTM(_RNNLayer):
    r"""Long short-term memory layers (gates i, f, g, o), optionally with a projection of
    the hidden state (`projection_size`) and cell-state clipping. States: [h, c]."""

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False,
                 input_size=0, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", projection_size=None,
                 h2r_weight_initializer=None, state_clip_min=None, state_clip_max=None,
                 state_clip_nan=False, dtype="float32", **kwargs):
        super(LSTM, self).__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                                   i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                                   h2h_bias_initializer, "lstm", projection_size, h2r_weight_initializer,
                                   state_clip_min, state_clip_max, state_clip_nan, dtype, **kwargs)


class GRU(_RNNLayer):
    r"""Gated recurrent unit layers (gates r, z, n), computed as cuDNN does:
    :math:`n = \tanh(W_{in} x + b_{in} + r (W_{hn} h + b_{hn}))`,
    :math:`h_t = (1 - z) n + z h_{t-1}`."""

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False,
                 input_size=0, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", dtype="float32", **kwargs):
        super(GRU, self).__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                                  i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                                  h2h_bias_initializer, "gru", None, None, None, None, False, dtype, **kwargs)
