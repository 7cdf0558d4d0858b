"""The model and data of the dist Gluon test with a row_sparse weight, shared by
kv_worker.py (each worker) and tests/python/test_kvstore_dist.py (the one-process reference)."""
import numpy as np

import weft as mx


def sparse_gluon_batches(rank, steps, vocab):
    """The batches worker `rank` trains on (the test rebuilds both workers' batches)."""
    rng = np.random.RandomState(100 + rank)
    return [(rng.randint(0, vocab // 2, (4, 3)).astype(np.float32), rng.uniform(-1, 1, (4, 1)).astype(np.float32))
            for _ in range(steps)]


class SparseNet(mx.gluon.Block):
    def __init__(self, vocab, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.emb = mx.gluon.contrib.nn.SparseEmbedding(vocab, 5)
            self.out = mx.gluon.nn.Dense(1, in_units=5)

    def forward(self, x):
        return self.out(self.emb(x).sum(axis=1))
