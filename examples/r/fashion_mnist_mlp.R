# Trains an MLP (784-128-64-10, ReLU, softmax) on Debian's Fashion-MNIST with the R package:
# mx.io.MNISTIter reads the files, mx.model.FeedForward.create trains with SGD and momentum,
# predict gives the test accuracy (about 86 % after 8 epochs), and the model is saved as a
# checkpoint that the Python front end loads with weft.model.load_checkpoint.
#
#   R_LIBS=build/tests/r/lib Rscript examples/r/fashion_mnist_mlp.R [data folder] [epochs]
#
# (ctest's r.install installs the package into build/tests/r/lib; or R CMD INSTALL it.)
library(weft)

args <- commandArgs(trailingOnly = TRUE)
dir <- if (length(args) >= 1) args[1] else "/usr/share/datasets/fashion-mnist"
epochs <- if (length(args) >= 2) as.integer(args[2]) else 8L
file <- function(name) file.path(dir, name)

train <- mx.io.MNISTIter(image = file("train-images-idx3-ubyte.gz"), label = file("train-labels-idx1-ubyte.gz"),
                         batch.size = 100, flat = TRUE, shuffle = TRUE, silent = TRUE)
test <- mx.io.MNISTIter(image = file("t10k-images-idx3-ubyte.gz"), label = file("t10k-labels-idx1-ubyte.gz"),
                        batch.size = 100, flat = TRUE, shuffle = FALSE, silent = TRUE)

data <- mx.symbol.Variable("data")
net <- mx.symbol.FullyConnected(data, num_hidden = 128, name = "fc1")
net <- mx.symbol.Activation(net, act_type = "relu", name = "relu1")
net <- mx.symbol.FullyConnected(net, num_hidden = 64, name = "fc2")
net <- mx.symbol.Activation(net, act_type = "relu", name = "relu2")
net <- mx.symbol.FullyConnected(net, num_hidden = 10, name = "fc3")
net <- mx.symbol.SoftmaxOutput(net, name = "softmax")

mx.set.seed(0)
model <- mx.model.FeedForward.create(net, X = train, eval.data = test, num.round = epochs,
                                     learning.rate = 0.05, momentum = 0.9, initializer = mx.init.Xavier(),
                                     eval.metric = mx.metric.accuracy,
                                     batch.end.callback = mx.callback.log.train.metric(200))

probs <- predict(model, test)
labels <- c()
test$reset()
while (test$iter.next()) labels <- c(labels, as.array(test$value()$label))
accuracy <- mean(max.col(t(probs)) - 1 == labels)
cat(sprintf("test accuracy: %.4f on %d images\n", accuracy, length(labels)))

prefix <- file.path(tempdir(), "fashion_mlp")
mx.model.save(model, prefix, epochs)
cat(sprintf("checkpoint: %s-symbol.json, %s-%04d.params\n", prefix, prefix, epochs))
if (accuracy < 0.85) quit(status = 1)
