"""Convolutional recurrent cells (Shi et al. 2015), as MXNet 1.9's
`gluon.contrib.rnn.conv_rnn_cell`: the i2h and h2h projections of RNN, LSTM and GRU cells are
convolutions, the states are feature maps. The h2h convolution keeps the state's size (odd
kernels, "same" padding); the state's spatial size is the i2h convolution's output size for
`input_shape` (one sample's shape, channels first)."""
from ...rnn.rnn_cell import HybridRecurrentCell

__all__ = ["Conv1DRNNCell", "Conv2DRNNCell", "Conv3DRNNCell", "Conv1DLSTMCell", "Conv2DLSTMCell",
           "Conv3DLSTMCell", "Conv1DGRUCell", "Conv2DGRUCell", "Conv3DGRUCell"]

_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def _spec(value, dims, what, cls):
    if isinstance(value, int):
        return (value,) * dims
    value = tuple(int(v) for v in value)
    if len(value) != dims:
        raise ValueError("%s: %s must be an int or %d ints, got %r" % (cls, what, dims, value))
    return value


class _ConvRecurrentCell(HybridRecurrentCell):
    """What the nine convolutional cells share; `_gates` and `_step` make the kind."""

    _gates = 1
    _kind = ""

    def __init__(self, dims, input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad, i2h_dilate, h2h_dilate,
                 i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
                 conv_layout, activation, prefix, params):
        super(_ConvRecurrentCell, self).__init__(prefix=prefix, params=params)
        cls = type(self).__name__
        if conv_layout != _LAYOUTS[dims]:
            raise ValueError("%s: only the channels-first layout %s is supported, got %r"
                             % (cls, _LAYOUTS[dims], conv_layout))
        input_shape = tuple(int(s) for s in input_shape)
        if len(input_shape) != dims + 1:
            raise ValueError("%s: input_shape is one sample's (channels, %d spatial sizes), got %r"
                             % (cls, dims, input_shape))
        self._hidden_channels = hidden_channels
        self._input_shape = input_shape
        self._conv_layout = conv_layout
        self._activation = activation
        self._i2h_kernel = _spec(i2h_kernel, dims, "i2h_kernel", cls)
        self._i2h_pad = _spec(i2h_pad, dims, "i2h_pad", cls)
        self._i2h_dilate = _spec(i2h_dilate, dims, "i2h_dilate", cls)
        self._h2h_kernel = _spec(h2h_kernel, dims, "h2h_kernel", cls)
        self._h2h_dilate = _spec(h2h_dilate, dims, "h2h_dilate", cls)
        if any(k % 2 == 0 for k in self._h2h_kernel):
            raise ValueError("%s: h2h_kernel must be odd (the state keeps its size), got %r"
                             % (cls, self._h2h_kernel))
        self._h2h_pad = tuple(d * (k - 1) // 2 for d, k in zip(self._h2h_dilate, self._h2h_kernel))
        self._stride = (1,) * dims
        spatial = tuple(s + 2 * p - d * (k - 1) for s, k, p, d in
                        zip(input_shape[1:], self._i2h_kernel, self._i2h_pad, self._i2h_dilate))
        if any(s <= 0 for s in spatial):
            raise ValueError("%s: the i2h convolution leaves nothing of input %r (kernel %r, pad %r, dilate %r)"
                             % (cls, input_shape, self._i2h_kernel, self._i2h_pad, self._i2h_dilate))
        self._state_shape = (hidden_channels,) + spatial
        rows = hidden_channels * self._gates
        self.i2h_weight = self.params.get("i2h_weight", shape=(rows, input_shape[0]) + self._i2h_kernel,
                                          init=i2h_weight_initializer, allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(rows, hidden_channels) + self._h2h_kernel,
                                          init=h2h_weight_initializer, allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(rows,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(rows,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size,) + self._state_shape, "__layout__": self._conv_layout}] * self._num_states

    _num_states = 1

    def _alias(self):
        return self._kind

    def __repr__(self):
        return "%s(%d -> %d, %s, %s)" % (type(self).__name__, self._input_shape[0],
                                         self._hidden_channels * self._gates, self._activation, self._conv_layout)

    def _convs(self, F, inputs, state, i2h_weight, h2h_weight, i2h_bias, h2h_bias, prefix):
        rows = self._hidden_channels * self._gates
        i2h = F.Convolution(inputs, i2h_weight, i2h_bias, num_filter=rows, kernel=self._i2h_kernel,
                            stride=self._stride, pad=self._i2h_pad, dilate=self._i2h_dilate,
                            layout=self._conv_layout, name=prefix + "i2h")
        h2h = F.Convolution(state, h2h_weight, h2h_bias, num_filter=rows, kernel=self._h2h_kernel,
                            stride=self._stride, pad=self._h2h_pad, dilate=self._h2h_dilate,
                            layout=self._conv_layout, name=prefix + "h2h")
        return i2h, h2h

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = "t%d_" % self._counter
        i2h, h2h = self._convs(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias, h2h_bias, prefix)
        return self._step(F, i2h, h2h, states, prefix)


class _ConvRNN(_ConvRecurrentCell):
    _kind = "conv_rnn"

    def _step(self, F, i2h, h2h, states, prefix):
        out = self._get_activation(F, i2h + h2h, self._activation, name=prefix + "out")
        return out, [out]


class _ConvLSTM(_ConvRecurrentCell):
    """Gates i, f, g, o (MXNet's order) on the channel axis; `activation` for g and for the
    cell state's output."""
    _kind = "conv_lstm"
    _gates = 4
    _num_states = 2

    def _step(self, F, i2h, h2h, states, prefix):
        i, f, g, o = F.SliceChannel(i2h + h2h, num_outputs=4, axis=1, name=prefix + "slice")
        c = F.elemwise_add(F.sigmoid(f) * states[1],
                           F.sigmoid(i) * self._get_activation(F, g, self._activation), name=prefix + "state")
        h = F.elemwise_mul(F.sigmoid(o), self._get_activation(F, c, self._activation), name=prefix + "out")
        return h, [h, c]


class _ConvGRU(_ConvRecurrentCell):
    """Reset r, update z and candidate on the channel axis; the reset gate scales the h2h
    candidate term (with its bias), as MXNet's GRU."""
    _kind = "conv_gru"
    _gates = 3

    def _step(self, F, i2h, h2h, states, prefix):
        i_r, i_z, i_n = F.SliceChannel(i2h, num_outputs=3, axis=1, name=prefix + "i2h_slice")
        h_r, h_z, h_n = F.SliceChannel(h2h, num_outputs=3, axis=1, name=prefix + "h2h_slice")
        r = F.sigmoid(i_r + h_r)
        z = F.sigmoid(i_z + h_z)
        n = self._get_activation(F, i_n + r * h_n, self._activation)
        h = F.elemwise_add((1. - z) * n, z * states[0], name=prefix + "out")
        return h, [h]


def _make(name, base, dims):
    layout = _LAYOUTS[dims]

    def __init__(self, input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad=(0,) * dims,
                 i2h_dilate=(1,) * dims, h2h_dilate=(1,) * dims, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 conv_layout=layout, activation="tanh", prefix=None, params=None):
        base.__init__(self, dims, input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad, i2h_dilate,
                      h2h_dilate, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                      h2h_bias_initializer, conv_layout, activation, prefix, params)

    doc = "%d-D convolutional %s cell (layout %s)." % (dims, base._kind.split("_")[1].upper(), layout)
    return type(name, (base,), {"__init__": __init__, "__doc__": doc})


Conv1DRNNCell = _make("Conv1DRNNCell", _ConvRNN, 1)
Conv2DRNNCell = _make("Conv2DRNNCell", _ConvRNN, 2)
Conv3DRNNCell = _make("Conv3DRNNCell", _ConvRNN, 3)
Conv1DLSTMCell = _make("Conv1DLSTMCell", _ConvLSTM, 1)
Conv2DLSTMCell = _make("Conv2DLSTMCell", _ConvLSTM, 2)
Conv3DLSTMCell = _make("Conv3DLSTMCell", _ConvLSTM, 3)
Conv1DGRUCell = _make("Conv1DGRUCell", _ConvGRU, 1)
Conv2DGRUCell = _make("Conv2DGRUCell", _ConvGRU, 2)
Conv3DGRUCell = _make("Conv3DGRUCell", _ConvGRU, 3)
