"""Contributed Gluon layers, as MXNet 1.9's `gluon.contrib`: `nn` (concurrent containers,
Identity, pixel shuffles, SyncBatchNorm, SparseEmbedding) and `rnn` (convolutional cells,
LSTMPCell, VariationalDropoutCell). MXNet's `contrib.cnn` (deformable convolutions) is left
out: Weft has no deformable-convolution operator."""
from . import nn, rnn

__all__ = ["nn", "rnn"]
