"""Contributed Gluon blocks, as MXNet 1.9's `gluon.contrib`: `nn` (concurrent containers,
Identity, pixel shuffles, SyncBatchNorm, SparseEmbedding), `rnn` (convolutional cells,
LSTMPCell, VariationalDropoutCell), `estimator` (Estimator.fit/evaluate with event handlers)
and `data` (IntervalSampler). MXNet's `contrib.cnn` (deformable convolutions) is left out:
Weft has no deformable-convolution operator."""
from . import data, estimator, nn, rnn

__all__ = ["nn", "rnn", "estimator", "data"]
