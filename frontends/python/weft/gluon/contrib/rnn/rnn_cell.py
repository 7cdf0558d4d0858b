"""LSTMPCell, VariationalDropoutCell and dynamic_unroll, as MXNet 1.9's
`gluon.contrib.rnn.rnn_cell`."""
from .... import ndarray, symbol
from ...rnn.rnn_cell import (BidirectionalCell, HybridRecurrentCell, ModifierCell,
                             _format_sequence, _get_begin_state, _mask_sequence_variable_length,
                             _tensor_types)

__all__ = ["VariationalDropoutCell", "LSTMPCell", "dynamic_unroll"]


class VariationalDropoutCell(ModifierCell):
    """Variational dropout (Gal & Ghahramani 2016) around `base_cell`: one dropout mask per
    sequence, the same at every step, for the inputs, the first state and the outputs (three
    independent masks, rates `drop_inputs`, `drop_states`, `drop_outputs`; 0 leaves that one
    alone). Stepping by hand, call reset() between sequences to draw new masks."""

    def __init__(self, base_cell, drop_inputs=0., drop_states=0., drop_outputs=0.):
        if drop_states and isinstance(base_cell, BidirectionalCell):
            raise ValueError("VariationalDropoutCell: a BidirectionalCell cannot take state dropout; wrap "
                             "its two cells instead")
        for what, p in (("drop_inputs", drop_inputs), ("drop_states", drop_states), ("drop_outputs", drop_outputs)):
            if not 0 <= p < 1:
                raise ValueError("VariationalDropoutCell: %s must be in [0, 1), got %r" % (what, p))
        super(VariationalDropoutCell, self).__init__(base_cell)
        self.drop_inputs = drop_inputs
        self.drop_states = drop_states
        self.drop_outputs = drop_outputs
        self._masks = {}

    def _alias(self):
        return "vardrop"

    def reset(self):
        super(VariationalDropoutCell, self).reset()
        self._masks = {}

    def _mask(self, F, which, p, like):
        """The mask `which` of this sequence: dropout of ones (0 or 1/(1-p); all ones outside
        training), drawn at the first step and kept until reset()."""
        if which not in self._masks:
            self._masks[which] = F.Dropout(F.ones_like(like), p=p)
        return self._masks[which]

    def hybrid_forward(self, F, inputs, states):
        if self.drop_states:
            states = list(states)
            states[0] = states[0] * self._mask(F, "states", self.drop_states, states[0])
        if self.drop_inputs:
            inputs = inputs * self._mask(F, "inputs", self.drop_inputs, inputs)
        output, next_states = self.base_cell(inputs, states)
        if self.drop_outputs:
            output = output * self._mask(F, "outputs", self.drop_outputs, output)
        return output, next_states

    def __repr__(self):
        return "%s(p_in=%s, p_state=%s, p_out=%s, %s)" % (type(self).__name__, self.drop_inputs, self.drop_states,
                                                          self.drop_outputs, self.base_cell)

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        if self.drop_states:
            # the state mask acts inside the recurrence: step by step
            return super(VariationalDropoutCell, self).unroll(length, inputs, begin_state, layout, merge_outputs,
                                                              valid_length=valid_length)
        # Without state dropout the masks act on whole sequences: one Dropout call each, its
        # mask shared along the time axis.
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, True)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)
        if self.drop_inputs:
            inputs = F.Dropout(inputs, p=self.drop_inputs, axes=(axis,))
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs, states, layout, merge_outputs=True,
                                                    valid_length=valid_length)
        finally:
            self.base_cell._modified = True
        if self.drop_outputs:
            outputs = F.Dropout(outputs, p=self.drop_outputs, axes=(axis,))
        merge = isinstance(outputs, _tensor_types) if merge_outputs is None else merge_outputs
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge)
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis, merge)
        return outputs, states


class LSTMPCell(HybridRecurrentCell):
    """LSTM with a projected recurrent state (Sak et al. 2014): the gates read the input and
    r_{t-1} (projection_size wide), c_t is the usual LSTM cell state (hidden_size wide),
    h_t = o * tanh(c_t) and the output and next recurrent state are r_t = h2r_weight . h_t.
    States: [r (N, projection_size), c (N, hidden_size)]; gates in MXNet's order i, f, g, o."""

    def __init__(self, hidden_size, projection_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 h2r_weight_initializer=None, i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 input_size=0, prefix=None, params=None):
        super(LSTMPCell, self).__init__(prefix=prefix, params=params)
        for what, v in (("hidden_size", hidden_size), ("projection_size", projection_size)):
            if not isinstance(v, int) or v <= 0:
                raise ValueError("LSTMPCell: %s must be a positive int, got %r" % (what, v))
        self._hidden_size = hidden_size
        self._input_size = input_size
        self._projection_size = projection_size
        rows = 4 * hidden_size
        self.i2h_weight = self.params.get("i2h_weight", shape=(rows, input_size), init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(rows, projection_size), init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2r_weight = self.params.get("h2r_weight", shape=(projection_size, hidden_size),
                                          init=h2r_weight_initializer, allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(rows,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(rows,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._projection_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def infer_shape(self, inputs, *args):
        if inputs.ndim != 2:
            raise ValueError("LSTMPCell: a step input must be (batch, features), got shape %s" % (inputs.shape,))
        self.i2h_weight.shape = (4 * self._hidden_size, inputs.shape[1])

    def _alias(self):
        return "lstmp"

    def __repr__(self):
        shape = self.i2h_weight.shape
        return "%s(%s -> %s -> %s)" % (type(self).__name__, shape[1] if shape[1] else None, shape[0],
                                       self._projection_size)

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, h2r_weight, i2h_bias, h2h_bias):
        prefix = "t%d_" % self._counter
        rows = 4 * self._hidden_size
        gates = (F.FullyConnected(inputs, i2h_weight, i2h_bias, num_hidden=rows, name=prefix + "i2h")
                 + F.FullyConnected(states[0], h2h_weight, h2h_bias, num_hidden=rows, name=prefix + "h2h"))
        i, f, g, o = F.SliceChannel(gates, num_outputs=4, name=prefix + "slice")
        c = F.elemwise_add(F.sigmoid(f) * states[1], F.sigmoid(i) * F.tanh(g), name=prefix + "state")
        h = F.elemwise_mul(F.sigmoid(o), F.tanh(c), name=prefix + "hidden")
        r = F.FullyConnected(h, h2r_weight, no_bias=True, num_hidden=self._projection_size, name=prefix + "out")
        return r, [r, c]


def dynamic_unroll(cell, inputs, begin_state, drop_inputs=0, drop_outputs=0, layout="TNC", valid_length=None):
    """Runs `cell` over the merged sequence `inputs` (layout 'TNC' or 'NTC') from
    `begin_state`; returns (outputs merged in `layout`, final states). Dropout with rates
    `drop_inputs`/`drop_outputs` shares its mask along time. With `valid_length` (N,), each
    sequence's states stop changing after its last valid step and the outputs past it are 0.

    On NDArrays Weft steps the cell in Python; on Symbols (a hybridized block) the loop is
    one `foreach` node, as in MXNet, so the sequence length need not be known when the
    graph is traced. Both compute the same values and gradients."""
    inputs, axis, F, _ = _format_sequence(None, inputs, layout, True)
    if isinstance(begin_state, _tensor_types):
        begin_state = [begin_state]
    if drop_inputs:
        inputs = F.Dropout(inputs, p=drop_inputs, axes=(axis,))
    if F is not ndarray:
        return _foreach_unroll(cell, inputs, begin_state, axis, drop_outputs, valid_length)
    length = inputs.shape[axis]
    steps = F.split(inputs, axis=axis, num_outputs=length, squeeze_axis=True) if length > 1 else \
        [F.squeeze(inputs, axis=axis)]
    states = list(begin_state)
    outputs = []
    for t, x in enumerate(steps):
        out, new_states = cell(x, states)
        if valid_length is not None:
            alive = valid_length > t
            new_states = [F.where(alive, new, old) for new, old in zip(new_states, states)]
        states = list(new_states)
        outputs.append(out)
    outputs = F.stack(*outputs, axis=axis)
    if drop_outputs:
        outputs = F.Dropout(outputs, p=drop_outputs, axes=(axis,))
    if valid_length is not None:
        outputs = F.SequenceMask(outputs, valid_length, use_sequence_length=True, axis=axis)
    return outputs, states


def _foreach_unroll(cell, inputs, begin_state, axis, drop_outputs, valid_length):
    """dynamic_unroll on Symbols: the cell's step traced once into a foreach over time."""
    F = symbol
    if axis != 0:
        inputs = F.swapaxes(inputs, dim1=0, dim2=axis)
    states = list(begin_state)
    if valid_length is None:
        def body(x, step_states):
            out, new_states = cell(x, step_states)
            return out, list(new_states)
    else:
        # The step count travels as one more state: a sequence's states stop changing once
        # the count reaches its valid length.
        def body(x, step_states):
            cell_states, step = step_states[:-1], step_states[-1]
            out, new_states = cell(x, cell_states)
            alive = F.broadcast_greater(valid_length, step)
            new_states = [F.where(alive, new, old) for new, old in zip(new_states, cell_states)]
            return out, new_states + [step + 1]
        states.append(F.zeros((1,)))
    outputs, states = F.contrib.foreach(body, inputs, states)
    states = list(states)
    if valid_length is not None:
        states = states[:-1]
        outputs = F.SequenceMask(outputs, valid_length, use_sequence_length=True, axis=0)
    if axis != 0:
        outputs = F.swapaxes(outputs, dim1=0, dim2=axis)
    if drop_outputs:
        outputs = F.Dropout(outputs, p=drop_outputs, axes=(axis,))
    return outputs, states
