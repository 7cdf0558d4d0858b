# The worker of test-dist.R's dist_sync job (tools/launch.py runs this script for every
# role: the scheduler and the server serve their role when the package loads). Each worker
# writes what it pulled to OUTDIR/worker-<rank>.params.
# Usage: Rscript dist_worker.R OUTDIR
library(weft)
out <- commandArgs(trailingOnly = TRUE)[1]
kv <- mx.kv.create("dist_sync")
rank <- kv$rank
kv$init(c(3, 4), list(mx.nd.zeros(c(3, 2)), mx.nd.zeros(c(1000, 1200))))
kv$init("w", mx.nd.ones(4))
# Each worker pushes rank + 1: the servers keep the sum over workers.
kv$push(3, mx.nd.ones(c(3, 2)) * (rank + 1))
small <- mx.nd.zeros(c(3, 2))
kv$pull(3, small)
kv$push(4, mx.nd.ones(c(1000, 1200)) * (rank + 1))
big <- mx.nd.zeros(c(1000, 1200))
kv$pull(4, big)
pp <- mx.nd.zeros(4)
kv$pushpull("w", mx.nd.array(c(1, 2, 3, 4)) * (rank + 1), pp)
# Training through the store: each worker has its own data and its own initial draws; the
# store gives them rank 0's initial weights and the sum of their gradients.
set.seed(rank + 1)
x <- matrix(rnorm(4 * 100), 4)
y <- as.integer(x[1, ] > 0)
mx.set.seed(rank + 10)
net <- mx.symbol.SoftmaxOutput(mx.symbol.FullyConnected(mx.symbol.Variable("data"), num_hidden = 2, name = "fc"),
                               name = "softmax")
model <- mx.model.FeedForward.create(net, X = x, y = y, kvstore = kv, num.round = 2, array.batch.size = 20,
                                     learning.rate = 0.5, momentum = 0.9, verbose = FALSE)
kv$barrier()
mx.nd.save(list(small = small, big_sum = mx.nd.sum(big), pushpull = pp,
                info = mx.nd.array(c(rank, kv$num.workers)), fc_weight = model$arg.params$fc_weight,
                fc_bias = model$arg.params$fc_bias),
           file.path(out, sprintf("worker-%d.params", rank)))
kv$free()
