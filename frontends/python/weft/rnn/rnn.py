"""Checkpoints of networks built from symbolic cells, as MXNet 1.x's `mx.rnn.rnn`: the
parameter files hold each gate's weights unpacked (`<prefix>i2h_i_weight`, ...)."""
import warnings

from ..model import load_checkpoint, save_checkpoint
from .rnn_cell import BaseRNNCell

__all__ = ["rnn_unroll", "save_rnn_checkpoint", "load_rnn_checkpoint", "do_rnn_checkpoint"]


def _cells(cells):
    return [cells] if isinstance(cells, BaseRNNCell) else list(cells)


def rnn_unroll(cell, length, inputs=None, begin_state=None, input_prefix="", layout="NTC"):
    """Deprecated: cell.unroll(length, inputs, begin_state, layout)."""
    warnings.warn("rnn_unroll is deprecated; call cell.unroll directly", DeprecationWarning)
    return cell.unroll(length=length, inputs=inputs, begin_state=begin_state, layout=layout)


def save_rnn_checkpoint(cells, prefix, epoch, symbol, arg_params, aux_params):
    """model.save_checkpoint with the weights of `cells` (a cell or a list) unpacked."""
    for cell in _cells(cells):
        arg_params = cell.unpack_weights(arg_params)
    save_checkpoint(prefix, epoch, symbol, arg_params, aux_params)


def load_rnn_checkpoint(cells, prefix, epoch):
    """model.load_checkpoint, with the weights of `cells` packed again: (symbol, arg, aux)."""
    sym, arg, aux = load_checkpoint(prefix, epoch)
    for cell in _cells(cells):
        arg = cell.pack_weights(arg)
    return sym, arg, aux


def do_rnn_checkpoint(cells, prefix, period=1):
    """An epoch-end callback (Module.fit's epoch_end_callback) calling save_rnn_checkpoint
    every `period` epochs, numbered from 1."""
    period = int(max(1, period))

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            save_rnn_checkpoint(cells, prefix, iter_no + 1, sym, arg, aux)
    return _callback
