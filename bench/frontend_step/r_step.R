# One training step of an MLP (784-512-512-10, softmax output) from R: forward and backward
# through an executor bound once, then an SGD-with-momentum update of every weight with
# the engine's sgd_mom_update operator (lr 0.1, momentum 0.9). Prints one JSON line with the
# mean milliseconds per step over --steps steps after --warmup steps.
#
#   Rscript bench/frontend_step/r_step.R --batch 128 --steps 50 --warmup 5
#
# The package is loaded from R's libraries, else from where the r.install test puts it:
# <build>/tests/r/lib, with <build> = $WEFT_BUILD_DIR or the repository's build/.
if (!requireNamespace("weft", quietly = TRUE)) {
  script <- sub("^--file=", "", grep("^--file=", commandArgs(), value = TRUE)[1])
  build <- Sys.getenv("WEFT_BUILD_DIR", file.path(dirname(dirname(dirname(normalizePath(script)))), "build"))
  .libPaths(c(file.path(build, "tests", "r", "lib"), .libPaths()))
}
suppressPackageStartupMessages(library(weft))

arg <- function(name, default) {
  args <- commandArgs(trailingOnly = TRUE)
  i <- match(paste0("--", name), args)
  if (is.na(i)) default else as.integer(args[i + 1])
}
batch <- arg("batch", 128L)
steps <- arg("steps", 50L)
warmup <- arg("warmup", 5L)

net <- mx.symbol.Variable("data")
net <- mx.symbol.FullyConnected(net, num_hidden = 512, name = "fc1")
net <- mx.symbol.Activation(net, act_type = "relu", name = "relu1")
net <- mx.symbol.FullyConnected(net, num_hidden = 512, name = "fc2")
net <- mx.symbol.Activation(net, act_type = "relu", name = "relu2")
net <- mx.symbol.FullyConnected(net, num_hidden = 10, name = "fc3")
net <- mx.symbol.SoftmaxOutput(net, name = "softmax")

mx.set.seed(0)
exec <- mx.simple.bind(net, data = c(784, batch), softmax_label = batch, grad.req = "write",
                       fixed.param = c("data", "softmax_label"))
params <- setdiff(names(exec$arg.arrays), c("data", "softmax_label"))
init <- mx.init.Xavier()
for (p in params) mx.exec.update.arg.arrays(exec, stats::setNames(list(init(p, dim(exec$arg.arrays[[p]]))), p),
                                            match.name = TRUE)
set.seed(0)
mx.exec.update.arg.arrays(exec, list(data = matrix(stats::runif(784 * batch), 784),
                                     softmax_label = sample(0:9, batch, TRUE)), match.name = TRUE)
weights <- exec$arg.arrays[params]
grads <- exec$grad.arrays[params]
updater <- mx.opt.get.updater(mx.opt.create("sgd", learning.rate = 0.1, momentum = 0.9, rescale.grad = 1 / batch),
                              weights)

step <- function() {
  mx.exec.forward(exec, is.train = TRUE)
  mx.exec.backward(exec)
  updater(weights, grads)
}
for (i in seq_len(warmup)) step()
mx.nd.waitall()
start <- as.numeric(Sys.time())
for (i in seq_len(steps)) step()
mx.nd.waitall()
ms <- (as.numeric(Sys.time()) - start) * 1000 / steps
cat(sprintf("{\"lang\": \"r\", \"ms_per_step\": %.4f}\n", ms))
