"""Contributed Gluon blocks, as MXNet 1.9's `gluon.contrib`: `nn` (concurrent containers,
Identity, pixel shuffles, SyncBatchNorm, SparseEmbedding), `rnn` (convolutional cells,
LSTMPCell, VariationalDropoutCell), `estimator` (Estimator.fit/evaluate with event handlers),
`data` (IntervalSampler) and `cnn` (DeformableConvolution, ModulatedDeformableConvolution)."""
from . import cnn, data, estimator, nn, rnn

__all__ = ["nn", "rnn", "estimator", "data", "cnn"]
