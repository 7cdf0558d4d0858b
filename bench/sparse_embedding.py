"""A 1M x 64 embedding trained with 1,000 active rows a step: the row_sparse gradient with
a lazy SGD update against the dense gradient and dense update, in Weft and in PyTorch
(nn.Embedding(sparse=True) + SGD as the peer).

A step is: look the rows up (forward), backward with an upstream gradient of ones, update
the weight with SGD. The sparse steps' gradients are row_sparse (Weft: Embedding with
sparse_grad=True into a row_sparse gradient buffer, then sgd_update's lazy path); the dense
steps' gradients are dense 1M x 64 arrays. "weft sparse weight" keeps the weight itself
row_sparse in a kvstore (gluon.contrib.nn.SparseEmbedding + Trainer, MXNet's way): each step
pulls its 1,000 rows (row_sparse_data), runs forward and backward on them, and the Trainer
pushes the row_sparse gradient, which the kvstore's lazy SGD applies to those rows.
"""
import peer  # first: it sets the environment the libraries read

import numpy as np  # noqa: E402
import torch  # noqa: E402

import weft as mx  # noqa: E402
from weft import nd, autograd  # noqa: E402

ROWS, DIM, ACTIVE, LR = 1_000_000, 64, 1_000, 0.1


def _draw(seed, count=20):
    # Drawn before any timing: choice without replacement permutes all 1M rows (tens of ms).
    rng = np.random.RandomState(seed)
    return [np.sort(rng.choice(ROWS, ACTIVE, replace=False)).astype(np.int64) for _ in range(count)]


_BATCHES = _draw(0)


def batches(seed):
    i = seed
    while True:
        yield _BATCHES[i % len(_BATCHES)]
        i += 1


def weft_step(sparse):
    weight = nd.zeros((ROWS, DIM))
    weight.attach_grad(stype="row_sparse" if sparse else "default")
    it = batches(0)

    def step():
        idx = nd.array(next(it), dtype="int64")
        with autograd.record():
            out = nd.Embedding(idx, weight, input_dim=ROWS, output_dim=DIM, sparse_grad=sparse)
        out.backward()
        nd.sgd_update(weight, weight.grad, lr=LR, out=weight)
    return step, weight


def weft_sparse_weight_step():
    from weft import gluon
    emb = gluon.contrib.nn.SparseEmbedding(ROWS, DIM)
    emb.initialize(mx.init.Zero())
    trainer = gluon.Trainer(emb.collect_params(), "sgd", {"learning_rate": LR}, kvstore="local")
    it = batches(0)

    def step():
        idx = nd.array(next(it), dtype="int64")
        with autograd.record():
            out = emb(idx)
        out.backward()
        trainer.step(1)

    class Whole:  # the weight, pulled whole once the timing is over
        def sum(self):
            return emb.weight._reduce().sum()
    return step, Whole()


def torch_step(sparse):
    emb = torch.nn.Embedding(ROWS, DIM, sparse=sparse)
    torch.nn.init.zeros_(emb.weight)
    opt = torch.optim.SGD(emb.parameters(), lr=LR)
    it = batches(0)

    def step():
        idx = torch.from_numpy(next(it))
        opt.zero_grad()
        emb(idx).sum().backward()
        opt.step()
    return step, emb.weight


def main():
    results = {}
    for name, make in (("weft sparse", lambda: weft_step(True)), ("weft sparse weight", weft_sparse_weight_step),
                       ("weft dense", lambda: weft_step(False)),
                       ("torch sparse", lambda: torch_step(True)), ("torch dense", lambda: torch_step(False))):
        step, weight = make()
        sync = nd.waitall if name.startswith("weft") else None
        results[name] = peer.seconds_per_call(step, min_seconds=2.0, min_runs=5, sync=sync)
        # Every step adds -LR to its active rows: the sum of the weight is known.
        total = float(weight.sum().asscalar() if name.startswith("weft") else weight.detach().sum())
        print(f"{name:>18}: {results[name] * 1e3:8.2f} ms/step  (weight sum {total:.1f})")
        del step, weight
    print(f"weft dense/sparse step time: {results['weft dense'] / results['weft sparse']:.1f}x")
    print(f"torch dense/sparse step time: {results['torch dense'] / results['torch sparse']:.1f}x")
    print(f"sparse step, weft/torch time: {results['weft sparse'] / results['torch sparse']:.2f}")
    print(f"sparse weight step, weft/torch sparse time: {results['weft sparse weight'] / results['torch sparse']:.2f}")
    peer.record("1M x 64 embedding, 1000 rows/step, sparse SGD step", results["weft sparse"] * 1e3,
                results["torch sparse"] * 1e3, "ms/step", False)
    peer.record("1M x 64 embedding, 1000 rows/step, row_sparse weight in a kvstore (SparseEmbedding + Trainer)",
                results["weft sparse weight"] * 1e3, results["torch sparse"] * 1e3, "ms/step", False)
    peer.record("1M x 64 embedding, 1000 rows/step, dense SGD step", results["weft dense"] * 1e3,
                results["torch dense"] * 1e3, "ms/step", False)


if __name__ == "__main__":
    main()
