"""Symbolic recurrent cells, as MXNet 1.x's `mx.rnn.rnn_cell`.

A cell maps (input symbol, state symbols) to (output symbol, new state symbols), naming the
nodes of step t `<prefix>t<t>_...` and its weights `<prefix>i2h_weight` etc. (shared by all
steps), so that graphs and parameter files are MXNet's. `unroll` builds a whole sequence.
"""
import functools
import warnings

from .. import initializer as init
from .. import ndarray, symbol
from ..symbol import Symbol

__all__ = ["RNNParams", "BaseRNNCell", "RNNCell", "LSTMCell", "GRUCell", "FusedRNNCell", "SequentialRNNCell",
           "DropoutCell", "ModifierCell", "ZoneoutCell", "ResidualCell", "BidirectionalCell", "BaseConvRNNCell",
           "ConvRNNCell", "ConvLSTMCell", "ConvGRUCell"]


def _normalize_sequence(length, inputs, layout, merge, in_layout=None):
    """(inputs as one symbol with time on the layout's T axis (merge True) or a list of
    per-step symbols (merge False; None leaves them), the T axis)."""
    if layout not in ("NTC", "TNC"):
        raise ValueError("unroll: layout must be 'NTC' or 'TNC', got %r" % (layout,))
    axis = layout.find("T")
    in_axis = in_layout.find("T") if in_layout is not None else axis
    if isinstance(inputs, Symbol):
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise ValueError("unroll: a merged input must be a symbol with one output")
            inputs = list(symbol.split(inputs, axis=in_axis, num_outputs=length, squeeze_axis=1))
    else:
        inputs = list(inputs)
        if length is not None and len(inputs) != length:
            raise ValueError("unroll: length is %d but %d step inputs were given" % (length, len(inputs)))
        if merge is True:
            inputs = symbol.stack(*inputs, axis=axis)
            in_axis = axis
    if isinstance(inputs, Symbol) and axis != in_axis:
        inputs = symbol.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis


def _zeros_like_batch(ref, ref_batch_axis):
    """A begin_state `func`: zeros of the state's shape whose 0 (batch) size is taken from
    `ref`'s axis `ref_batch_axis`. MXNet fills a 0 size of `zeros` by inference from the
    consumers; Weft's shape inference does not, so the zeros are made from the input."""

    def zeros(name, shape, __layout__="NC", dtype=None, **kwargs):
        batch_axis = __layout__.find("N")
        per_sample = symbol.zeros_like(symbol.sum(ref, axis=ref_batch_axis, exclude=True))
        one = [1] * len(shape)
        one[batch_axis] = -1
        z = symbol.reshape(per_sample, shape=tuple(one))
        others = [a for a in range(len(shape)) if a != batch_axis]
        z = symbol.broadcast_axis(z, axis=tuple(others), size=tuple(shape[a] for a in others), name=name)
        return z if dtype in (None, "float32") else symbol.cast(z, dtype=dtype)

    return zeros


def _default_begin_state(cell, inputs, layout):
    """The zero states for an unroll given no begin_state."""
    if isinstance(inputs, Symbol):
        return cell.begin_state(func=_zeros_like_batch(inputs, layout.find("N")))
    return cell.begin_state(func=_zeros_like_batch(inputs[0], 0))


class RNNParams(object):
    """The weight variables of cells, by name under `prefix`; cells given the same RNNParams
    share their weights."""

    def __init__(self, prefix=""):
        self._prefix = prefix
        self._params = {}

    def get(self, name, **kwargs):
        """The variable `<prefix><name>`, made with `kwargs` (init=, shape=, ...) the first time."""
        name = self._prefix + name
        if name not in self._params:
            self._params[name] = symbol.Variable(name, **kwargs)
        return self._params[name]


class BaseRNNCell(object):
    """Base of the symbolic cells: parameters, begin_state, (un)packing of gate weights and
    unroll. Subclasses define state_info and __call__(inputs, states)."""

    def __init__(self, prefix="", params=None):
        if params is None:
            params = RNNParams(prefix)
            self._own_params = True
        else:
            self._own_params = False
        self._prefix = prefix
        self._params = params
        self._modified = False
        self.reset()

    def reset(self):
        """Resets the step counters before a new sequence."""
        self._init_counter = -1
        self._counter = -1
        for cell in getattr(self, "_cells", []):
            cell.reset()

    def __call__(self, inputs, states):
        raise NotImplementedError("%s cannot be stepped" % type(self).__name__)

    @property
    def params(self):
        """The cell's RNNParams (reading them marks them shared)."""
        self._own_params = False
        return self._params

    @property
    def state_info(self):
        raise NotImplementedError("%s does not define state_info" % type(self).__name__)

    @property
    def state_shape(self):
        return [info["shape"] for info in self.state_info]

    @property
    def _gate_names(self):
        return ()

    def begin_state(self, func=symbol.zeros, **kwargs):
        """The initial states, `func(name=<prefix>begin_state_<i>, shape=..., __layout__=...,
        **kwargs)` each (e.g. func=symbol.Variable to feed them). The batch size in the
        shapes is 0 (unknown); unroll without begin_state makes zeros of the input's batch."""
        if self._modified:
            raise RuntimeError("%s is wrapped by a modifier cell; call begin_state on the modifier" % self._prefix)
        states = []
        for info in self.state_info:
            self._init_counter += 1
            args = dict(kwargs)
            if info is not None:
                args.update(info)
            states.append(func(name="%sbegin_state_%d" % (self._prefix, self._init_counter), **args))
        return states

    def unpack_weights(self, args):
        """`args` with each gate's rows of the i2h/h2h weights and biases as arrays of their
        own (`<prefix>i2h_i_weight`, ...), as MXNet's checkpoints keep them."""
        args = dict(args)
        if not self._gate_names:
            return args
        h = self._num_hidden
        for group in ("i2h", "h2h"):
            weight = args.pop("%s%s_weight" % (self._prefix, group))
            bias = args.pop("%s%s_bias" % (self._prefix, group))
            for j, gate in enumerate(self._gate_names):
                args["%s%s%s_weight" % (self._prefix, group, gate)] = weight[j * h:(j + 1) * h].copy()
                args["%s%s%s_bias" % (self._prefix, group, gate)] = bias[j * h:(j + 1) * h].copy()
        return args

    def pack_weights(self, args):
        """The inverse of unpack_weights: the gates' arrays stacked back into i2h/h2h."""
        args = dict(args)
        if not self._gate_names:
            return args
        for group in ("i2h", "h2h"):
            for kind in ("weight", "bias"):
                parts = [args.pop("%s%s%s_%s" % (self._prefix, group, gate, kind)) for gate in self._gate_names]
                args["%s%s_%s" % (self._prefix, group, kind)] = ndarray.concatenate(parts)
        return args

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        """Steps the cell `length` times over `inputs` (one symbol in `layout`, or a list of
        per-step symbols). Returns (outputs: a list, or one symbol when merge_outputs is True;
        None keeps the inputs' form, states after the last step)."""
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, False)
        if begin_state is None:
            begin_state = _default_begin_state(self, inputs, layout)
        states = begin_state
        outputs = []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, inputs, activation, **kwargs):
        if isinstance(activation, str):
            return symbol.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs, **kwargs)


class _DenseCell(BaseRNNCell):
    """What RNNCell, LSTMCell and GRUCell share: the i2h and h2h fully connected projections."""

    def _weights(self, i2h_bias_init=None):
        self._iW = self.params.get("i2h_weight")
        self._iB = self.params.get("i2h_bias", init=i2h_bias_init) if i2h_bias_init else self.params.get("i2h_bias")
        self._hW = self.params.get("h2h_weight")
        self._hB = self.params.get("h2h_bias")

    def _projections(self, inputs, state, name, gates):
        rows = self._num_hidden * gates
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB, num_hidden=rows, name=name + "i2h")
        h2h = symbol.FullyConnected(data=state, weight=self._hW, bias=self._hB, num_hidden=rows, name=name + "h2h")
        return i2h, h2h


class RNNCell(_DenseCell):
    """Elman cell: out = activation(i2h(x) + h2h(h))."""

    def __init__(self, num_hidden, activation="tanh", prefix="rnn_", params=None):
        super(RNNCell, self).__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._activation = activation
        self._weights()

    @property
    def state_info(self):
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self):
        return ("",)

    def __call__(self, inputs, states):
        self._counter += 1
        name = "%st%d_" % (self._prefix, self._counter)
        i2h, h2h = self._projections(inputs, states[0], name, 1)
        output = self._get_activation(i2h + h2h, self._activation, name=name + "out")
        return output, [output]


class LSTMCell(_DenseCell):
    """LSTM (gates i, f, c, o); the i2h bias starts with `forget_bias` on the forget gate."""

    def __init__(self, num_hidden, prefix="lstm_", params=None, forget_bias=1.0):
        super(LSTMCell, self).__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._weights(init.LSTMBias(forget_bias=forget_bias))

    @property
    def state_info(self):
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}] * 2

    @property
    def _gate_names(self):
        return ("_i", "_f", "_c", "_o")

    def __call__(self, inputs, states):
        self._counter += 1
        name = "%st%d_" % (self._prefix, self._counter)
        i2h, h2h = self._projections(inputs, states[0], name, 4)
        i, f, c, o = symbol.SliceChannel(i2h + h2h, num_outputs=4, name=name + "slice")
        next_c = symbol.elemwise_add(symbol.Activation(f, act_type="sigmoid", name=name + "f") * states[1],
                                     symbol.Activation(i, act_type="sigmoid", name=name + "i")
                                     * symbol.Activation(c, act_type="tanh", name=name + "c"), name=name + "state")
        next_h = symbol.elemwise_mul(symbol.Activation(o, act_type="sigmoid", name=name + "o"),
                                     symbol.Activation(next_c, act_type="tanh"), name=name + "out")
        return next_h, [next_h, next_c]


class GRUCell(_DenseCell):
    """GRU (gates r, z and the candidate o); the reset gate scales h2h's candidate rows."""

    def __init__(self, num_hidden, prefix="gru_", params=None):
        super(GRUCell, self).__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._weights()

    @property
    def state_info(self):
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self):
        return ("_r", "_z", "_o")

    def __call__(self, inputs, states):
        self._counter += 1
        name = "%st%d_" % (self._prefix, self._counter)
        prev = states[0]
        i2h, h2h = self._projections(inputs, prev, name, 3)
        i_r, i_z, i_n = symbol.SliceChannel(i2h, num_outputs=3, name=name + "i2h_slice")
        h_r, h_z, h_n = symbol.SliceChannel(h2h, num_outputs=3, name=name + "h2h_slice")
        reset = symbol.Activation(i_r + h_r, act_type="sigmoid", name=name + "r_act")
        update = symbol.Activation(i_z + h_z, act_type="sigmoid", name=name + "z_act")
        candidate = symbol.Activation(i_n + reset * h_n, act_type="tanh", name=name + "h_act")
        next_h = symbol.elemwise_add((1. - update) * candidate, update * prev, name=name + "out")
        return next_h, [next_h]


class FusedRNNCell(BaseRNNCell):
    """`num_layers` layers of `mode` ('rnn_relu', 'rnn_tanh', 'lstm', 'gru') as one RNN
    operator over the whole sequence, its weights one packed vector `<prefix>parameters`
    (initialised gate by gate by init.FusedRNN). It can only be unrolled; `unfuse()` gives
    the equivalent stack of step cells, whose weights unpack_weights names."""

    _MODES = {"rnn_relu": ("",), "rnn_tanh": ("",), "lstm": ("_i", "_f", "_c", "_o"), "gru": ("_r", "_z", "_o")}

    def __init__(self, num_hidden, num_layers=1, mode="lstm", bidirectional=False, dropout=0., get_next_state=False,
                 forget_bias=1.0, prefix=None, params=None):
        if mode not in self._MODES:
            raise ValueError("FusedRNNCell: mode must be one of %s, got %r" % (sorted(self._MODES), mode))
        if prefix is None:
            prefix = "%s_" % mode
        super(FusedRNNCell, self).__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._dropout = dropout
        self._get_next_state = get_next_state
        self._directions = ["l", "r"] if bidirectional else ["l"]
        self._parameter = self.params.get("parameters", init=init.FusedRNN(None, num_hidden, num_layers, mode,
                                                                            bidirectional, forget_bias))

    @property
    def state_info(self):
        layers = len(self._directions) * self._num_layers
        count = 2 if self._mode == "lstm" else 1
        return [{"shape": (layers, 0, self._num_hidden), "__layout__": "LNC"} for _ in range(count)]

    @property
    def _gate_names(self):
        return self._MODES[self._mode]

    def _slices(self, arr, num_input):
        """{name: view of arr} of each gate's weight and bias, in the operator's packing: all
        weights (layer by layer, direction by direction, i2h then h2h), then all biases."""
        h = self._num_hidden
        b = len(self._directions)
        out = {}
        p = 0
        for layer in range(self._num_layers):
            width = num_input if layer == 0 else b * h
            for d in self._directions:
                for group, cols in (("i2h", width), ("h2h", h)):
                    for gate in self._gate_names:
                        out["%s%s%d_%s%s_weight" % (self._prefix, d, layer, group, gate)] = \
                            arr[p:p + h * cols].reshape((h, cols))
                        p += h * cols
        for layer in range(self._num_layers):
            for d in self._directions:
                for group in ("i2h", "h2h"):
                    for gate in self._gate_names:
                        out["%s%s%d_%s%s_bias" % (self._prefix, d, layer, group, gate)] = arr[p:p + h]
                        p += h
        if p != arr.size:
            raise ValueError("FusedRNNCell: the packed parameters have %d values, %d expected" % (arr.size, p))
        return out

    def _num_input(self, size):
        b, g, h, n = len(self._directions), len(self._gate_names), self._num_hidden, self._num_layers
        # size = b*g*h*(num_input + h + 2) + (n - 1)*b*g*h*(b*h + h + 2)
        rest = size - (n - 1) * b * g * h * (b * h + h + 2)
        return rest // (b * g * h) - h - 2

    def unpack_weights(self, args):
        args = dict(args)
        arr = args.pop(self._parameter.name)
        for name, view in self._slices(arr, self._num_input(arr.size)).items():
            args[name] = view.copy()
        return args

    def pack_weights(self, args):
        args = dict(args)
        first = args["%sl0_i2h%s_weight" % (self._prefix, self._gate_names[0])]
        num_input = first.shape[1]
        b, g, h, n = len(self._directions), len(self._gate_names), self._num_hidden, self._num_layers
        total = b * g * h * (num_input + h + 2) + (n - 1) * b * g * h * (b * h + h + 2)
        arr = ndarray.zeros((total,), ctx=first.context, dtype=first.dtype)
        for name, view in self._slices(arr, num_input).items():
            view[:] = args.pop(name)
        args[self._parameter.name] = arr
        return args

    def __call__(self, inputs, states):
        raise NotImplementedError("FusedRNNCell cannot be stepped; use unroll (or unfuse())")

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, True)
        if axis == 1:
            warnings.warn("FusedRNNCell: NTC layout is transposed to TNC for the RNN operator; TNC is faster")
            inputs = symbol.swapaxes(inputs, dim1=0, dim2=1)
        if begin_state is None:
            begin_state = self.begin_state(func=_zeros_like_batch(inputs, 1))
        states = {"state": begin_state[0]}
        if self._mode == "lstm":
            states["state_cell"] = begin_state[1]
        rnn = symbol.RNN(data=inputs, parameters=self._parameter, state_size=self._num_hidden,
                         num_layers=self._num_layers, bidirectional=self._bidirectional, p=self._dropout,
                         state_outputs=self._get_next_state, mode=self._mode, name=self._prefix + "rnn", **states)
        if not self._get_next_state:
            outputs, states = rnn, []
        else:
            outputs, states = rnn[0], [rnn[i] for i in range(1, 3 if self._mode == "lstm" else 2)]
        if axis == 1:
            outputs = symbol.swapaxes(outputs, dim1=0, dim2=1)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def unfuse(self):
        """The same network as a SequentialRNNCell of step cells (bidirectional layers as
        BidirectionalCells, dropout between layers as DropoutCells), named so that
        unpack_weights' arrays are their weights."""
        def make(prefix):
            if self._mode.startswith("rnn_"):
                return RNNCell(self._num_hidden, activation=self._mode[4:], prefix=prefix)
            return {"lstm": LSTMCell, "gru": GRUCell}[self._mode](self._num_hidden, prefix=prefix)

        stack = SequentialRNNCell()
        for i in range(self._num_layers):
            if self._bidirectional:
                stack.add(BidirectionalCell(make("%sl%d_" % (self._prefix, i)), make("%sr%d_" % (self._prefix, i)),
                                            output_prefix="%sbi_l%d_" % (self._prefix, i)))
            else:
                stack.add(make("%sl%d_" % (self._prefix, i)))
            if self._dropout > 0 and i != self._num_layers - 1:
                stack.add(DropoutCell(self._dropout, prefix="%s_dropout%d_" % (self._prefix, i)))
        return stack


class SequentialRNNCell(BaseRNNCell):
    """Cells stacked: each step feeds one cell's output to the next."""

    def __init__(self, params=None):
        super(SequentialRNNCell, self).__init__(prefix="", params=params)
        self._override_cell_params = params is not None
        self._cells = []

    def add(self, cell):
        """Appends `cell` (with this stack's params when the stack was given some)."""
        self._cells.append(cell)
        if self._override_cell_params:
            if not cell._own_params:
                raise ValueError("SequentialRNNCell: %s was given its own params; a stack with params= needs "
                                 "cells that own theirs" % cell._prefix)
            cell.params._params.update(self.params._params)
        self.params._params.update(cell.params._params)

    @property
    def state_info(self):
        return [info for cell in self._cells for info in cell.state_info]

    def begin_state(self, **kwargs):
        if self._modified:
            raise RuntimeError("SequentialRNNCell is wrapped by a modifier cell; call begin_state on the modifier")
        return [s for cell in self._cells for s in cell.begin_state(**kwargs)]

    def unpack_weights(self, args):
        for cell in self._cells:
            args = cell.unpack_weights(args)
        return args

    def pack_weights(self, args):
        for cell in self._cells:
            args = cell.pack_weights(args)
        return args

    def __call__(self, inputs, states):
        self._counter += 1
        next_states = []
        p = 0
        for cell in self._cells:
            if isinstance(cell, BidirectionalCell):
                raise TypeError("SequentialRNNCell: a BidirectionalCell cannot be stepped; use unroll")
            n = len(cell.state_info)
            inputs, new = cell(inputs, states[p:p + n])
            p += n
            next_states.extend(new)
        return inputs, next_states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        self.reset()
        if begin_state is None:
            normalized, _ = _normalize_sequence(length, inputs, layout, None)
            begin_state = _default_begin_state(self, normalized, layout)
        p = 0
        next_states = []
        last = len(self._cells) - 1
        for i, cell in enumerate(self._cells):
            n = len(cell.state_info)
            inputs, states = cell.unroll(length, inputs=inputs, begin_state=begin_state[p:p + n], layout=layout,
                                         merge_outputs=None if i < last else merge_outputs)
            p += n
            next_states.extend(states)
        return inputs, next_states


class DropoutCell(BaseRNNCell):
    """Dropout (rate `dropout`) on each step's input; no state."""

    def __init__(self, dropout, prefix="dropout_", params=None):
        super(DropoutCell, self).__init__(prefix, params)
        if not 0 <= dropout < 1:
            raise ValueError("DropoutCell: dropout must be in [0, 1), got %r" % (dropout,))
        self.dropout = dropout

    @property
    def state_info(self):
        return []

    def __call__(self, inputs, states):
        if self.dropout > 0:
            inputs = symbol.Dropout(data=inputs, p=self.dropout)
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, Symbol):
            return self(inputs, [])   # one Dropout over the merged sequence
        return super(DropoutCell, self).unroll(length, inputs, begin_state=begin_state or [], layout=layout,
                                               merge_outputs=merge_outputs)


class ModifierCell(BaseRNNCell):
    """Base of cells wrapping `base_cell` (whose params and states they use); the base cell
    is then only called through the modifier."""

    def __init__(self, base_cell):
        if base_cell._modified:
            raise RuntimeError("cell %s is already wrapped by a modifier cell" % base_cell._prefix)
        base_cell._modified = True
        super(ModifierCell, self).__init__()
        self.base_cell = base_cell

    @property
    def params(self):
        self._own_params = False
        return self.base_cell.params

    @property
    def state_info(self):
        return self.base_cell.state_info

    def begin_state(self, init_sym=symbol.zeros, **kwargs):
        if self._modified:
            raise RuntimeError("%s is wrapped by a modifier cell; call begin_state on the modifier"
                               % type(self).__name__)
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(func=kwargs.pop("func", init_sym), **kwargs)
        finally:
            self.base_cell._modified = True

    def unpack_weights(self, args):
        return self.base_cell.unpack_weights(args)

    def pack_weights(self, args):
        return self.base_cell.pack_weights(args)

    def __call__(self, inputs, states):
        raise NotImplementedError("%s does not define __call__" % type(self).__name__)


class ZoneoutCell(ModifierCell):
    """Zoneout: in training, each output/state element keeps its previous value with
    probability `zoneout_outputs`/`zoneout_states`."""

    def __init__(self, base_cell, zoneout_outputs=0., zoneout_states=0.):
        if isinstance(base_cell, (FusedRNNCell, BidirectionalCell)):
            raise TypeError("ZoneoutCell cannot wrap a %s (it cannot be stepped)" % type(base_cell).__name__)
        super(ZoneoutCell, self).__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self.prev_output = None

    def reset(self):
        super(ZoneoutCell, self).reset()
        self.prev_output = None

    def __call__(self, inputs, states):
        next_output, next_states = self.base_cell(inputs, states)

        def keep_new(p, like):
            return symbol.Dropout(symbol.ones_like(like), p=p)

        prev = self.prev_output if self.prev_output is not None else symbol.zeros_like(next_output)
        output = (symbol.where(keep_new(self.zoneout_outputs, next_output), next_output, prev)
                  if self.zoneout_outputs != 0 else next_output)
        new_states = ([symbol.where(keep_new(self.zoneout_states, new), new, old)
                       for new, old in zip(next_states, states)] if self.zoneout_states != 0 else next_states)
        self.prev_output = output
        return output, new_states


class ResidualCell(ModifierCell):
    """output = base(x) + x."""

    def __call__(self, inputs, states):
        output, states = self.base_cell(inputs, states)
        return symbol.elemwise_add(output, inputs, name="%s_plus_residual" % output.name), states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs=inputs, begin_state=begin_state, layout=layout,
                                                    merge_outputs=merge_outputs)
        finally:
            self.base_cell._modified = True
        merge = isinstance(outputs, Symbol) if merge_outputs is None else merge_outputs
        inputs, _ = _normalize_sequence(length, inputs, layout, merge)
        if merge:
            return symbol.elemwise_add(outputs, inputs), states
        return [symbol.elemwise_add(o, i) for o, i in zip(outputs, inputs)], states


class BidirectionalCell(BaseRNNCell):
    """`l_cell` forward and `r_cell` backward over the sequence, outputs concatenated per
    step (left first). It can only be unrolled."""

    def __init__(self, l_cell, r_cell, params=None, output_prefix="bi_"):
        super(BidirectionalCell, self).__init__("", params=params)
        self._output_prefix = output_prefix
        self._override_cell_params = params is not None
        if self._override_cell_params:
            if not (l_cell._own_params and r_cell._own_params):
                raise ValueError("BidirectionalCell: with params=, both cells must own their params")
            l_cell.params._params.update(self.params._params)
            r_cell.params._params.update(self.params._params)
        self.params._params.update(l_cell.params._params)
        self.params._params.update(r_cell.params._params)
        self._cells = [l_cell, r_cell]

    def unpack_weights(self, args):
        for cell in self._cells:
            args = cell.unpack_weights(args)
        return args

    def pack_weights(self, args):
        for cell in self._cells:
            args = cell.pack_weights(args)
        return args

    def __call__(self, inputs, states):
        raise NotImplementedError("BidirectionalCell cannot be stepped; use unroll")

    @property
    def state_info(self):
        return [info for cell in self._cells for info in cell.state_info]

    def begin_state(self, **kwargs):
        if self._modified:
            raise RuntimeError("BidirectionalCell is wrapped by a modifier cell; call begin_state on the modifier")
        return [s for cell in self._cells for s in cell.begin_state(**kwargs)]

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, False)
        if begin_state is None:
            begin_state = _default_begin_state(self, inputs, layout)
        l_cell, r_cell = self._cells
        n = len(l_cell.state_info)
        l_out, l_states = l_cell.unroll(length, inputs=inputs, begin_state=begin_state[:n], layout=layout,
                                        merge_outputs=merge_outputs)
        r_out, r_states = r_cell.unroll(length, inputs=list(reversed(inputs)), begin_state=begin_state[n:],
                                        layout=layout, merge_outputs=merge_outputs)
        if merge_outputs is None:
            merge_outputs = isinstance(l_out, Symbol) and isinstance(r_out, Symbol)
            l_out, _ = _normalize_sequence(length, l_out, layout, merge_outputs)
            r_out, _ = _normalize_sequence(length, r_out, layout, merge_outputs)
        if merge_outputs:
            r_out = symbol.reverse(r_out, axis=axis)
            outputs = symbol.concat(l_out, r_out, dim=2, name="%sout" % self._output_prefix)
        else:
            outputs = [symbol.concat(lo, ro, dim=1, name="%st%d" % (self._output_prefix, i))
                       for i, (lo, ro) in enumerate(zip(l_out, reversed(r_out)))]
        return outputs, l_states + r_states


class BaseConvRNNCell(BaseRNNCell):
    """Base of the convolutional cells (2-D, NCHW): i2h and h2h are convolutions, the states
    feature maps. `input_shape` is a whole batch's (N, C, H, W); the state's spatial size is
    the i2h convolution's output. The h2h kernel must be odd (the state keeps its size)."""

    def __init__(self, input_shape, num_hidden, h2h_kernel, h2h_dilate, i2h_kernel, i2h_stride, i2h_pad, i2h_dilate,
                 i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
                 activation, prefix="", params=None, conv_layout="NCHW"):
        super(BaseConvRNNCell, self).__init__(prefix=prefix, params=params)
        if conv_layout != "NCHW":
            raise ValueError("%s: only the NCHW layout is supported, got %r" % (type(self).__name__, conv_layout))
        if any(k % 2 == 0 for k in h2h_kernel):
            raise ValueError("%s: h2h_kernel must be odd, got %r" % (type(self).__name__, h2h_kernel))
        self._h2h_kernel = tuple(h2h_kernel)
        self._h2h_dilate = tuple(h2h_dilate)
        self._h2h_pad = tuple(d * (k - 1) // 2 for d, k in zip(h2h_dilate, h2h_kernel))
        self._i2h_kernel = tuple(i2h_kernel)
        self._i2h_stride = tuple(i2h_stride)
        self._i2h_pad = tuple(i2h_pad)
        self._i2h_dilate = tuple(i2h_dilate)
        self._num_hidden = num_hidden
        self._input_shape = tuple(input_shape)
        self._conv_layout = conv_layout
        self._activation = activation
        spatial = tuple((s + 2 * p - d * (k - 1) - 1) // st + 1 for s, k, st, p, d in
                        zip(self._input_shape[2:], self._i2h_kernel, self._i2h_stride, self._i2h_pad,
                            self._i2h_dilate))
        self._state_shape = (0, num_hidden) + spatial
        self._iW = self.params.get("i2h_weight", init=i2h_weight_initializer)
        self._hW = self.params.get("h2h_weight", init=h2h_weight_initializer)
        self._iB = self.params.get("i2h_bias", init=i2h_bias_initializer)
        self._hB = self.params.get("h2h_bias", init=h2h_bias_initializer)

    @property
    def _num_gates(self):
        return len(self._gate_names)

    @property
    def state_info(self):
        return [{"shape": self._state_shape, "__layout__": self._conv_layout}] * self._num_states

    _num_states = 1

    def _conv_forward(self, inputs, states, name):
        rows = self._num_hidden * self._num_gates
        i2h = symbol.Convolution(name="%si2h" % name, data=inputs, num_filter=rows, kernel=self._i2h_kernel,
                                 stride=self._i2h_stride, pad=self._i2h_pad, dilate=self._i2h_dilate,
                                 weight=self._iW, bias=self._iB, layout=self._conv_layout)
        h2h = symbol.Convolution(name="%sh2h" % name, data=states[0], num_filter=rows, kernel=self._h2h_kernel,
                                 dilate=self._h2h_dilate, pad=self._h2h_pad, stride=(1, 1), weight=self._hW,
                                 bias=self._hB, layout=self._conv_layout)
        return i2h, h2h

    def __call__(self, inputs, states):
        self._counter += 1
        name = "%st%d_" % (self._prefix, self._counter)
        i2h, h2h = self._conv_forward(inputs, states, name)
        return self._step(i2h, h2h, states, name)


_LEAKY = functools.partial(symbol.LeakyReLU, act_type="leaky", slope=0.2)


def _conv_init(cls):
    def __init__(self, input_shape, num_hidden, h2h_kernel=(3, 3), h2h_dilate=(1, 1), i2h_kernel=(3, 3),
                 i2h_stride=(1, 1), i2h_pad=(1, 1), i2h_dilate=(1, 1), i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 activation=_LEAKY, prefix=cls._default_prefix, params=None, conv_layout="NCHW"):
        BaseConvRNNCell.__init__(self, input_shape, num_hidden, h2h_kernel, h2h_dilate, i2h_kernel, i2h_stride,
                                 i2h_pad, i2h_dilate, i2h_weight_initializer, h2h_weight_initializer,
                                 i2h_bias_initializer, h2h_bias_initializer, activation, prefix, params, conv_layout)
    cls.__init__ = __init__
    return cls


@_conv_init
class ConvRNNCell(BaseConvRNNCell):
    """Convolutional Elman cell; the activation defaults to leaky ReLU (slope 0.2)."""
    _default_prefix = "ConvRNN_"

    @property
    def _gate_names(self):
        return ("",)

    def _step(self, i2h, h2h, states, name):
        output = self._get_activation(i2h + h2h, self._activation, name="%sout" % name)
        return output, [output]


@_conv_init
class ConvLSTMCell(BaseConvRNNCell):
    """Convolutional LSTM (Shi et al. 2015), gates i, f, c, o on the channel axis; the
    activation (default leaky ReLU, slope 0.2) serves the candidate and the cell output."""
    _default_prefix = "ConvLSTM_"
    _num_states = 2

    @property
    def _gate_names(self):
        return ("_i", "_f", "_c", "_o")

    def _step(self, i2h, h2h, states, name):
        i, f, c, o = symbol.SliceChannel(i2h + h2h, num_outputs=4, axis=1, name="%sslice" % name)
        next_c = symbol.elemwise_add(symbol.Activation(f, act_type="sigmoid", name="%sf" % name) * states[1],
                                     symbol.Activation(i, act_type="sigmoid", name="%si" % name)
                                     * self._get_activation(c, self._activation, name="%sc" % name),
                                     name="%sstate" % name)
        next_h = symbol.elemwise_mul(symbol.Activation(o, act_type="sigmoid", name="%so" % name),
                                     self._get_activation(next_c, self._activation), name="%sout" % name)
        return next_h, [next_h, next_c]


@_conv_init
class ConvGRUCell(BaseConvRNNCell):
    """Convolutional GRU, gates r, z and the candidate on the channel axis."""
    _default_prefix = "ConvGRU_"

    @property
    def _gate_names(self):
        return ("_r", "_z", "_o")

    def _step(self, i2h, h2h, states, name):
        i_r, i_z, i_n = symbol.SliceChannel(i2h, num_outputs=3, axis=1, name="%s_i2h_slice" % name)
        h_r, h_z, h_n = symbol.SliceChannel(h2h, num_outputs=3, axis=1, name="%s_h2h_slice" % name)
        reset = symbol.Activation(i_r + h_r, act_type="sigmoid", name="%s_r_act" % name)
        update = symbol.Activation(i_z + h_z, act_type="sigmoid", name="%s_z_act" % name)
        candidate = self._get_activation(i_n + reset * h_n, self._activation, name="%s_h_act" % name)
        next_h = symbol.elemwise_add((1. - update) * candidate, update * states[0], name="%sout" % name)
        return next_h, [next_h]
