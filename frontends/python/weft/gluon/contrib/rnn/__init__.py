"""Contributed recurrent cells, as MXNet 1.9's `gluon.contrib.rnn`: convolutional RNN/LSTM/GRU
cells (1-D to 3-D), the projected LSTM (`LSTMPCell`), variational dropout and
`dynamic_unroll`."""
from . import conv_rnn_cell, rnn_cell
from .conv_rnn_cell import *  # noqa: F401,F403
from .rnn_cell import *  # noqa: F401,F403

__all__ = conv_rnn_cell.__all__ + rnn_cell.__all__
