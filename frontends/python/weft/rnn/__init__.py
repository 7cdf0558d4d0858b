"""MXNet 1.x's legacy symbolic RNN API (`mx.rnn`): cells that build Symbol graphs step by
step (`RNNCell`, `LSTMCell`, `GRUCell`, `FusedRNNCell`, modifiers, convolutional cells),
`BucketSentenceIter`/`encode_sentences` for bucketed text, and checkpoints that unpack the
gates' weights (`save_rnn_checkpoint`, `load_rnn_checkpoint`, `do_rnn_checkpoint`)."""
from . import io, rnn, rnn_cell
from .io import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .rnn_cell import *  # noqa: F401,F403

__all__ = rnn_cell.__all__ + rnn.__all__ + io.__all__
