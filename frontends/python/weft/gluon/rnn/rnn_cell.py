"""Recurrent cells, as MXNet 1.x's `mx.gluon.rnn` cells.

A cell computes one time step: `output, new_states = cell(x_t, states)`. `unroll` runs
it over a whole sequence (layout 'NTC' or 'TNC', given as one array or as a list of
per-step arrays) and returns the outputs as a list or merged into one array.
Cells are HybridBlocks: the step is written once against `F` (weft.nd or weft.sym).
"""
from .. import block as _block
from ..parameter import DeferredInitializationError
from ... import ndarray, symbol
from ...ndarray import NDArray
from ...symbol import Symbol

__all__ = ["RecurrentCell", "HybridRecurrentCell", "RNNCell", "LSTMCell", "GRUCell",
           "SequentialRNNCell", "HybridSequentialRNNCell", "DropoutCell", "ModifierCell",
           "ZoneoutCell", "ResidualCell", "BidirectionalCell"]

_tensor_types = (Symbol, NDArray)


def _children(block):
    """The child blocks of `block`, in registration order."""
    return list(block._children.values())


def _cells_state_info(cells, batch_size):
    return sum([c.state_info(batch_size) for c in cells], [])


def _cells_begin_state(cells, **kwargs):
    return sum([c.begin_state(**kwargs) for c in cells], [])


def _symbol_zeros_like_batch(like, like_batch_axis):
    """A `func` for begin_state in symbolic mode: zeros whose batch dimension (axis 0 of
    'NC', axis 1 of 'LNC' states) is taken from `like`, whose batch is at `like_batch_axis`
    (the batch size is unknown while the graph is built).

    The zeros are computed from `like` alone (zeros_like of a per-sample reduction,
    broadcast to the state's other sizes), with no constant node: a `_zeros` constant
    taken to the batch size by broadcast_like gave wrong GRU outputs when the executor
    both folded constants and planned memory."""

    def zeros(shape, __layout__="NC", dtype=None, name=None, **kwargs):
        batch_axis = __layout__.find("N")
        per_sample = symbol.zeros_like(symbol.sum(like, axis=like_batch_axis, exclude=True))
        one = [1] * len(shape)
        one[batch_axis] = -1
        z = symbol.reshape(per_sample, shape=tuple(one))
        others = [a for a in range(len(shape)) if a != batch_axis]
        z = symbol.broadcast_axis(z, axis=tuple(others), size=tuple(shape[a] for a in others), name=name)
        return z if dtype in (None, "float32") else symbol.cast(z, dtype=dtype)

    return zeros


def _get_begin_state(cell, F, begin_state, inputs, batch_size):
    """`begin_state` when given, else the cell's zero states for this batch."""
    if begin_state is not None:
        return begin_state
    first = inputs if isinstance(inputs, _tensor_types) else inputs[0]
    if F is ndarray:
        return cell.begin_state(func=ndarray.zeros, batch_size=batch_size, ctx=first.context,
                                dtype=first.dtype)
    # A per-step symbol is (N, C): its batch is axis 0. For a merged symbol the batch size
    # is unknown, and _format_sequence returns the layout's batch axis in its place.
    return cell.begin_state(func=_symbol_zeros_like_batch(first, 0 if not isinstance(inputs, Symbol)
                                                          else batch_size), batch_size=0)


def _format_sequence(length, inputs, layout, merge, in_layout=None):
    """Normalises a sequence to a list of per-step arrays (`merge=False`), one merged array
    with time on the layout's T axis (`merge=True`), or leaves it as it came (None).

    Returns (inputs, time axis, F, batch size). For a merged Symbol the batch size is
    unknown; the batch axis is returned in its place, for _get_begin_state.
    """
    if layout not in ("NTC", "TNC"):
        raise ValueError("unroll: layout must be 'NTC' or 'TNC', got %r" % (layout,))
    if inputs is None:
        raise ValueError("unroll: inputs must be an array or a list of arrays, got None")
    axis = layout.find("T")
    batch_axis = layout.find("N")
    in_axis = in_layout.find("T") if in_layout is not None else axis
    if isinstance(inputs, Symbol):
        F = symbol
        batch_size = batch_axis
        if merge is False:
            if length is None:
                raise ValueError("unroll: a Symbol sequence needs `length`")
            inputs = list(symbol.split(inputs, axis=in_axis, num_outputs=length, squeeze_axis=True))
    elif isinstance(inputs, NDArray):
        F = ndarray
        batch_size = inputs.shape[batch_axis]
        if length is not None and length != inputs.shape[in_axis]:
            raise ValueError("unroll: length is %d but the inputs have %d steps on axis %d (layout %s)"
                             % (length, inputs.shape[in_axis], in_axis, layout))
        if merge is False:
            steps = inputs.shape[in_axis]
            parts = ndarray.split(inputs, axis=in_axis, num_outputs=steps, squeeze_axis=True)
            inputs = [parts] if steps == 1 else list(parts)
    else:
        inputs = list(inputs)
        if not inputs or not all(isinstance(i, _tensor_types) for i in inputs):
            raise TypeError("unroll: inputs must be an NDArray, a Symbol or a list of them, got %r"
                            % (inputs,))
        if length is not None and len(inputs) != length:
            raise ValueError("unroll: length is %d but %d step inputs were given" % (length, len(inputs)))
        if isinstance(inputs[0], Symbol):
            F = symbol
            batch_size = 0
        else:
            F = ndarray
            batch_size = inputs[0].shape[0]
        if merge is True:
            inputs = F.stack(*inputs, axis=axis)
            in_axis = axis
    if isinstance(inputs, _tensor_types) and axis != in_axis:
        inputs = F.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis, F, batch_size


def _mask_sequence_variable_length(F, data, length, valid_length, time_axis, merge):
    """Zeroes the outputs past each sequence's valid length: one merged array when `merge`,
    else a list of per-step arrays (`data` may come either way)."""
    if isinstance(data, (list, tuple)):
        data = F.stack(*data, axis=time_axis)
    out = F.SequenceMask(data, valid_length, use_sequence_length=True, axis=time_axis)
    if not merge:
        out = list(F.split(out, num_outputs=length, axis=time_axis, squeeze_axis=True)) if length > 1 else [
            F.squeeze(out, axis=time_axis)]
    return out


def _reverse_sequences(sequences, unroll_step, valid_length=None):
    """The per-step list reversed, each sequence within its own valid length."""
    if valid_length is None:
        return list(reversed(sequences))
    F = symbol if isinstance(sequences[0], Symbol) else ndarray
    stacked = F.stack(*sequences, axis=0)
    rev = F.SequenceReverse(stacked, valid_length, use_sequence_length=True, axis=0)
    if unroll_step == 1:
        return [F.squeeze(rev, axis=0)]
    return list(F.split(rev, num_outputs=unroll_step, axis=0, squeeze_axis=True))


def _get_activation(F, inputs, activation, **kwargs):
    """`activation` by name (an Activation act_type) or as a callable/Block."""
    if isinstance(activation, str):
        return F.Activation(inputs, act_type=activation, **kwargs)
    return activation(inputs, **kwargs)


class RecurrentCell(_block.Block):
    """Base of the recurrent cells: states, begin_state and unroll.

    Subclasses define `state_info(batch_size)` (one dict per state: 'shape' and
    '__layout__') and the step, `forward(inputs, states) -> (output, new_states)`.
    """

    def __init__(self, prefix=None, params=None):
        super(RecurrentCell, self).__init__(prefix=prefix, params=params)
        self._modified = False
        self.reset()

    def reset(self):
        """Resets the step counters before a new sequence (unroll does this)."""
        self._init_counter = -1
        self._counter = -1
        for cell in _children(self):
            cell.reset()

    def state_info(self, batch_size=0):
        """The shape and layout of each state, for a batch of `batch_size`."""
        raise NotImplementedError("%s does not define state_info" % type(self).__name__)

    def begin_state(self, batch_size=0, func=ndarray.zeros, **kwargs):
        """The initial states, made by `func(name=..., shape=..., __layout__=..., **kwargs)`
        (default: zeros; e.g. `ctx=` goes through kwargs)."""
        if self._modified:
            raise RuntimeError("%s is wrapped by a modifier cell (ZoneoutCell, ResidualCell); call "
                               "begin_state on the modifier instead" % self.name)
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            info = dict(info) if info is not None else {}
            info.update(kwargs)
            states.append(func(name="%sbegin_state_%d" % (self.prefix, self._init_counter), **info))
        return states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        """Runs the cell `length` steps over `inputs`.

        Returns (outputs, states): outputs as a list of per-step arrays, or merged along
        the layout's T axis when `merge_outputs` is True (None: as the inputs came);
        states are those after the last step (or, with `valid_length`, after each
        sequence's last valid step).
        """
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        length = len(inputs)
        begin_state = _get_begin_state(self, F, begin_state, inputs, batch_size)
        states = begin_state
        outputs = []
        all_states = []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
            if valid_length is not None:
                all_states.append(states)
        if valid_length is not None:
            states = [F.SequenceLast(F.stack(*per_step, axis=0), valid_length, use_sequence_length=True, axis=0)
                      for per_step in zip(*all_states)]
            # Merged, as MXNet's: with valid_length, merge_outputs=None gives one array.
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis, True)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, F, inputs, activation, **kwargs):
        return _get_activation(F, inputs, activation, **kwargs)

    def forward(self, inputs, states):
        """One step: (output, new states)."""
        self._counter += 1
        return super(RecurrentCell, self).forward(inputs, states)


class HybridRecurrentCell(RecurrentCell, _block.HybridBlock):
    """A recurrent cell whose step is `hybrid_forward(F, inputs, states, **params)`.

    A step runs imperatively on NDArrays and composes a graph on Symbols (so a cell inside
    a hybridized block is part of that block's graph). The step itself is not cached as a
    graph of its own: its states are a list, and the core's graph cache takes flat inputs.
    """

    def __init__(self, prefix=None, params=None):
        super(HybridRecurrentCell, self).__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError("%s does not define hybrid_forward" % type(self).__name__)

    def forward(self, inputs, states):
        """One step: (output, new states)."""
        self._counter += 1
        if isinstance(inputs, Symbol):
            with self.name_scope():
                params = {k: v.var() for k, v in self._reg_params.items()}
                return self.hybrid_forward(symbol, inputs, states, **params)
        ctx = inputs.context
        try:
            params = {k: v.data(ctx) for k, v in self._reg_params.items()}
        except DeferredInitializationError:
            self.infer_shape(inputs, states)
            for p in self._reg_params.values():
                p._finish_deferred_init()
            params = {k: v.data(ctx) for k, v in self._reg_params.items()}
        return self.hybrid_forward(ndarray, inputs, states, **params)

    def infer_shape(self, inputs, states):
        """Fills in unknown parameter shapes by tracing one step symbolically with the
        shapes of `inputs` and `states`."""
        data = symbol.var("data")
        state_vars = [symbol.var("state%d" % i) for i in range(len(states))]
        params = {k: v.var() for k, v in self._reg_params.items()}
        counter = self._counter
        output, new_states = self.hybrid_forward(symbol, data, state_vars, **params)
        self._counter = counter
        graph = symbol.Group([output] + list(new_states))
        known = {"data": tuple(inputs.shape)}
        known.update(("state%d" % i, tuple(s.shape)) for i, s in enumerate(states))
        arg_shapes, _, _ = graph.infer_shape(**known)
        if arg_shapes is None:
            raise ValueError("%s: cannot infer the parameter shapes from input shape %s and state shapes %s"
                             % (self.name, inputs.shape, [s.shape for s in states]))
        shapes = dict(zip(graph.list_arguments(), arg_shapes))
        for p in self._reg_params.values():
            if p.name in shapes:
                p.shape = shapes[p.name]


class _GatedCell(HybridRecurrentCell):
    """The shared parameters of RNNCell, LSTMCell and GRUCell: i2h and h2h weights and
    biases with `gates * hidden_size` rows, input size inferred on the first call when 0."""

    _gates = 1

    def __init__(self, hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                 i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params):
        super(_GatedCell, self).__init__(prefix=prefix, params=params)
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError("%s: hidden_size must be a positive int, got %r" % (type(self).__name__, hidden_size))
        self._hidden_size = hidden_size
        self._input_size = input_size
        rows = self._gates * hidden_size
        self.i2h_weight = self.params.get("i2h_weight", shape=(rows, input_size),
                                          init=i2h_weight_initializer, allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(rows, hidden_size),
                                          init=h2h_weight_initializer, allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(rows,),
                                        init=i2h_bias_initializer, allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(rows,),
                                        init=h2h_bias_initializer, allow_deferred_init=True)

    def infer_shape(self, inputs, *args):
        """Fills in the input size of i2h_weight from the first step's (N, C) input."""
        if inputs.ndim != 2:
            raise ValueError("%s: a step input must be (batch, features), got shape %s"
                             % (type(self).__name__, inputs.shape))
        self.i2h_weight.shape = (self._gates * self._hidden_size, inputs.shape[1])

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self):
        return type(self).__name__.replace("Cell", "").lower()

    def __repr__(self):
        shape = self.i2h_weight.shape
        return "%s(%s -> %s)" % (type(self).__name__, shape[1] if shape[1] else None, shape[0])

    def _projections(self, F, inputs, state, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = "t%d_" % self._counter
        rows = self._gates * self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=rows,
                               name=prefix + "i2h")
        h2h = F.FullyConnected(data=state, weight=h2h_weight, bias=h2h_bias, num_hidden=rows,
                               name=prefix + "h2h")
        return prefix, i2h, h2h


class RNNCell(_GatedCell):
    r"""Elman cell: :math:`h_t = act(W_{ih} x_t + b_{ih} + W_{hh} h_{t-1} + b_{hh})`."""

    _gates = 1

    def __init__(self, hidden_size, activation="tanh", i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", input_size=0, prefix=None, params=None):
        super(RNNCell, self).__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                                      i2h_bias_initializer, h2h_bias_initializer, input_size,
                                      prefix, params)
        self._activation = activation

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix, i2h, h2h = self._projections(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        output = self._get_activation(F, F.elemwise_add(i2h, h2h, name=prefix + "plus0"),
                                      self._activation, name=prefix + "out")
        return output, [output]


class LSTMCell(_GatedCell):
    r"""Long short-term memory cell (gates i, f, g, o in that order of the weight rows):

    .. math::
        i = \sigma(\cdot),\ f = \sigma(\cdot),\ g = \tanh(\cdot),\ o = \sigma(\cdot),\
        c_t = f c_{t-1} + i g,\ h_t = o \tanh(c_t)

    States: [h, c]."""

    _gates = 4

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 prefix=None, params=None, activation="tanh", recurrent_activation="sigmoid"):
        super(LSTMCell, self).__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                                       i2h_bias_initializer, h2h_bias_initializer, input_size,
                                       prefix, params)
        self._activation = activation
        self._recurrent_activation = recurrent_activation

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix, i2h, h2h = self._projections(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        gates = F.elemwise_add(i2h, h2h, name=prefix + "plus0")
        slices = F.split(gates, num_outputs=4, axis=1, name=prefix + "slice")
        in_gate = self._get_activation(F, slices[0], self._recurrent_activation, name=prefix + "i")
        forget_gate = self._get_activation(F, slices[1], self._recurrent_activation, name=prefix + "f")
        in_transform = self._get_activation(F, slices[2], self._activation, name=prefix + "c")
        out_gate = self._get_activation(F, slices[3], self._recurrent_activation, name=prefix + "o")
        next_c = F.elemwise_add(F.elemwise_mul(forget_gate, states[1]), F.elemwise_mul(in_gate, in_transform),
                                name=prefix + "state")
        next_h = F.elemwise_mul(out_gate, self._get_activation(F, next_c, self._activation),
                                name=prefix + "out")
        return next_h, [next_h, next_c]


class GRUCell(_GatedCell):
    r"""Gated recurrent unit (gates r, z, n in that order of the weight rows), as cuDNN
    and MXNet compute it:

    .. math::
        r = \sigma(W_{ir} x + b_{ir} + W_{hr} h + b_{hr}),\
        z = \sigma(W_{iz} x + b_{iz} + W_{hz} h + b_{hz}),\
        n = \tanh(W_{in} x + b_{in} + r (W_{hn} h + b_{hn})),\
        h_t = (1 - z) n + z h_{t-1}
    """

    _gates = 3

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 prefix=None, params=None, activation="tanh", recurrent_activation="sigmoid"):
        super(GRUCell, self).__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                                      i2h_bias_initializer, h2h_bias_initializer, input_size,
                                      prefix, params)
        self._activation = activation
        self._recurrent_activation = recurrent_activation

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prev_h = states[0]
        prefix, i2h, h2h = self._projections(F, inputs, prev_h, i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        i2h_r, i2h_z, i2h_n = F.split(i2h, num_outputs=3, axis=1, name=prefix + "i2h_slice")
        h2h_r, h2h_z, h2h_n = F.split(h2h, num_outputs=3, axis=1, name=prefix + "h2h_slice")
        reset_gate = self._get_activation(F, F.elemwise_add(i2h_r, h2h_r), self._recurrent_activation,
                                          name=prefix + "r_act")
        update_gate = self._get_activation(F, F.elemwise_add(i2h_z, h2h_z), self._recurrent_activation,
                                           name=prefix + "z_act")
        candidate = self._get_activation(F, F.elemwise_add(i2h_n, F.elemwise_mul(reset_gate, h2h_n)),
                                         self._activation, name=prefix + "h_act")
        # (1 - z) * n + z * h, written as n + z * (h - n): one temporary fewer.
        next_h = F.elemwise_add(candidate, F.elemwise_mul(update_gate, F.elemwise_sub(prev_h, candidate)),
                                name=prefix + "out")
        return next_h, [next_h]


class SequentialRNNCell(RecurrentCell):
    """Stacks cells: each step's output feeds the next cell; the states are concatenated."""

    def __init__(self, prefix=None, params=None):
        super(SequentialRNNCell, self).__init__(prefix=prefix, params=params)

    def __repr__(self):
        lines = ["  (%d): %s" % (i, repr(c).replace("\n", "\n  ")) for i, c in enumerate(_children(self))]
        return "%s(\n%s\n)" % (type(self).__name__, "\n".join(lines))

    def add(self, cell):
        """Appends a cell. A BidirectionalCell is accepted, as in MXNet: the sequence then
        unrolls but cannot be stepped (the bidirectional cell refuses the step)."""
        self.register_child(cell)

    def state_info(self, batch_size=0):
        return _cells_state_info(_children(self), batch_size)

    def begin_state(self, **kwargs):
        if self._modified:
            raise RuntimeError("%s is wrapped by a modifier cell; call begin_state on the modifier" % self.name)
        return _cells_begin_state(_children(self), **kwargs)

    def __call__(self, inputs, states):
        self._counter += 1
        next_states = []
        p = 0
        for cell in _children(self):
            n = len(cell.state_info())
            inputs, state = cell(inputs, states[p:p + n])
            p += n
            next_states.extend(state)
        return inputs, next_states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, _, F, batch_size = _format_sequence(length, inputs, layout, None)
        cells = _children(self)
        begin_state = _get_begin_state(self, F, begin_state, inputs, batch_size)
        p = 0
        next_states = []
        for i, cell in enumerate(cells):
            n = len(cell.state_info())
            inputs, states = cell.unroll(length, inputs=inputs, begin_state=begin_state[p:p + n],
                                         layout=layout, merge_outputs=None if i < len(cells) - 1 else merge_outputs,
                                         valid_length=valid_length)
            p += n
            next_states.extend(states)
        return inputs, next_states

    def __getitem__(self, i):
        return _children(self)[i]

    def __len__(self):
        return len(self._children)


class HybridSequentialRNNCell(HybridRecurrentCell):
    """SequentialRNNCell whose children are all HybridRecurrentCells, so that it hybridizes."""

    def __init__(self, prefix=None, params=None):
        super(HybridSequentialRNNCell, self).__init__(prefix=prefix, params=params)

    __repr__ = SequentialRNNCell.__repr__
    state_info = SequentialRNNCell.state_info
    begin_state = SequentialRNNCell.begin_state
    unroll = SequentialRNNCell.unroll
    __getitem__ = SequentialRNNCell.__getitem__
    __len__ = SequentialRNNCell.__len__

    def add(self, cell):
        """Appends a hybrid cell."""
        if not isinstance(cell, HybridRecurrentCell):
            raise TypeError("%s: expected a HybridRecurrentCell, got %s"
                            % (type(self).__name__, type(cell).__name__))
        self.register_child(cell)

    __call__ = SequentialRNNCell.__call__


class DropoutCell(HybridRecurrentCell):
    """Applies Dropout (rate `rate`, shared over `axes`) to the inputs; no state."""

    def __init__(self, rate, axes=(), prefix=None, params=None):
        super(DropoutCell, self).__init__(prefix=prefix, params=params)
        if not 0 <= rate < 1:
            raise ValueError("DropoutCell: rate must be in [0, 1), got %r" % (rate,))
        self._rate = rate
        self._axes = tuple(axes)

    def __repr__(self):
        return "%s(rate=%s, axes=%s)" % (type(self).__name__, self._rate, self._axes)

    def state_info(self, batch_size=0):
        return []

    def _alias(self):
        return "dropout"

    def hybrid_forward(self, F, inputs, states):
        if self._rate > 0:
            inputs = F.Dropout(data=inputs, p=self._rate, axes=self._axes, name="t%d_fwd" % self._counter)
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, _, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, _tensor_types):
            # A whole merged sequence takes one Dropout call instead of one per step.
            return self.hybrid_forward(F, inputs, begin_state if begin_state else [])
        return super(DropoutCell, self).unroll(length, inputs, begin_state=begin_state, layout=layout,
                                               merge_outputs=merge_outputs, valid_length=valid_length)


class ModifierCell(HybridRecurrentCell):
    """Base of cells that wrap another (`base_cell`) and change its step; the parameters
    are the base cell's, and the base cell is then only called through the modifier."""

    def __init__(self, base_cell):
        if base_cell._modified:
            raise RuntimeError("cell %s is already wrapped by a modifier cell" % base_cell.name)
        base_cell._modified = True
        super(ModifierCell, self).__init__(prefix=base_cell.prefix + self._alias(), params=None)
        self.base_cell = base_cell

    @property
    def params(self):
        return self.base_cell.params

    def state_info(self, batch_size=0):
        return self.base_cell.state_info(batch_size)

    def begin_state(self, func=ndarray.zeros, **kwargs):
        if self._modified:
            raise RuntimeError("%s is wrapped by a modifier cell; call begin_state on the modifier" % self.name)
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(func=func, **kwargs)
        finally:
            self.base_cell._modified = True

    def hybrid_forward(self, F, inputs, states):
        raise NotImplementedError("%s does not define hybrid_forward" % type(self).__name__)

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, self.base_cell)


class ZoneoutCell(ModifierCell):
    """Zoneout (Krueger et al. 2016): in training, each output/state element keeps its
    previous value with probability `zoneout_outputs` / `zoneout_states`."""

    def __init__(self, base_cell, zoneout_outputs=0., zoneout_states=0.):
        if isinstance(base_cell, BidirectionalCell):
            raise TypeError("ZoneoutCell cannot wrap a BidirectionalCell (it cannot be stepped); wrap its "
                            "two cells instead")
        for what, p in (("zoneout_outputs", zoneout_outputs), ("zoneout_states", zoneout_states)):
            if not 0 <= p < 1:
                raise ValueError("ZoneoutCell: %s must be in [0, 1), got %r" % (what, p))
        super(ZoneoutCell, self).__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self._prev_output = None

    def __repr__(self):
        return "%s(p_out=%s, p_state=%s, %s)" % (type(self).__name__, self.zoneout_outputs,
                                                  self.zoneout_states, self.base_cell)

    def _alias(self):
        return "zoneout"

    def reset(self):
        super(ZoneoutCell, self).reset()
        self._prev_output = None

    def hybrid_forward(self, F, inputs, states):
        next_output, next_states = self.base_cell(inputs, states)

        def keep_new(p, like):
            # Dropout of ones is 0 where the old value is kept (and 1/(1-p) elsewhere,
            # which `where` reads as true); outside training it is all ones.
            return F.Dropout(F.ones_like(like), p=p)

        prev_output = self._prev_output
        if prev_output is None:
            prev_output = F.zeros_like(next_output)
        output = (F.where(keep_new(self.zoneout_outputs, next_output), next_output, prev_output)
                  if self.zoneout_outputs != 0 else next_output)
        new_states = ([F.where(keep_new(self.zoneout_states, new), new, old) for new, old in zip(next_states, states)]
                      if self.zoneout_states != 0 else next_states)
        self._prev_output = output
        return output, new_states


class ResidualCell(ModifierCell):
    """Adds the input to the base cell's output: `output = base(x) + x`."""

    def __init__(self, base_cell):
        super(ResidualCell, self).__init__(base_cell)

    def _alias(self):
        return "residual"

    def hybrid_forward(self, F, inputs, states):
        output, states = self.base_cell(inputs, states)
        output = F.elemwise_add(output, inputs, name="t%d_fwd" % self._counter)
        return output, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs=inputs, begin_state=begin_state, layout=layout,
                                                    merge_outputs=merge_outputs, valid_length=valid_length)
        finally:
            self.base_cell._modified = True
        merge_outputs = isinstance(outputs, _tensor_types) if merge_outputs is None else merge_outputs
        inputs, axis, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if valid_length is not None:
            inputs = _mask_sequence_variable_length(F, inputs, length, valid_length, axis, merge_outputs)
        if merge_outputs:
            outputs = F.elemwise_add(outputs, inputs)
        else:
            outputs = [F.elemwise_add(o, i) for o, i in zip(outputs, inputs)]
        return outputs, states


class BidirectionalCell(HybridRecurrentCell):
    """Runs `l_cell` forward and `r_cell` backward over the sequence and concatenates their
    outputs per step (left first). It can only be unrolled, not stepped."""

    def __init__(self, l_cell, r_cell, output_prefix="bi_"):
        super(BidirectionalCell, self).__init__(prefix="", params=None)
        self.register_child(l_cell, "l_cell")
        self.register_child(r_cell, "r_cell")
        self._output_prefix = output_prefix

    def __call__(self, inputs, states):
        raise NotImplementedError("BidirectionalCell cannot be stepped; use unroll")

    def __repr__(self):
        l_cell, r_cell = _children(self)
        return "%s(forward=%s, backward=%s)" % (type(self).__name__, l_cell, r_cell)

    def state_info(self, batch_size=0):
        return _cells_state_info(_children(self), batch_size)

    def begin_state(self, **kwargs):
        if self._modified:
            raise RuntimeError("%s is wrapped by a modifier cell; call begin_state on the modifier" % self.name)
        return _cells_begin_state(_children(self), **kwargs)

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        came_merged = isinstance(inputs, _tensor_types)
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        length = len(inputs)
        reversed_inputs = _reverse_sequences(inputs, length, valid_length)
        begin_state = _get_begin_state(self, F, begin_state, inputs, batch_size)
        l_cell, r_cell = _children(self)
        n_left = len(l_cell.state_info(batch_size))
        l_outputs, l_states = l_cell.unroll(length, inputs=inputs, begin_state=begin_state[:n_left],
                                            layout=layout, merge_outputs=False, valid_length=valid_length)
        r_outputs, r_states = r_cell.unroll(length, inputs=reversed_inputs, begin_state=begin_state[n_left:],
                                            layout=layout, merge_outputs=False, valid_length=valid_length)
        r_outputs = _reverse_sequences(r_outputs, length, valid_length)
        outputs = [F.concat(lo, ro, dim=1, name="%st%d" % (self._output_prefix, i))
                   for i, (lo, ro) in enumerate(zip(l_outputs, r_outputs))]
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis, False)
        merge = came_merged if merge_outputs is None else merge_outputs
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge)
        return outputs, l_states + r_states
