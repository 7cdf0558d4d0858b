# rnn.graph over the fused RNN operator, trained with mx.model.buckets.

test_that("rnn.graph has MXNet's argument names for each configuration", {
  lstm <- rnn.graph(num_rnn_layer = 1, input_size = 4, num_embed = 8, num_hidden = 16, num_decode = 4,
                    loss_output = "softmax", config = "seq-to-one", cell_type = "lstm")
  expect_equal(arguments(lstm), c("data", "embed.weight", "rnn.params.weight", "rnn.state", "rnn.state.cell",
                                  "cls.weight", "cls.bias", "label"))
  gru <- rnn.graph(num_rnn_layer = 2, num_hidden = 6, num_decode = 1, loss_output = "linear",
                   config = "one-to-one", cell_type = "gru", masking = TRUE)
  expect_equal(arguments(gru), c("data", "rnn.params.weight", "rnn.state", "seq.mask", "cls.weight", "cls.bias",
                                 "label"))
  # Without a loss: the RNN's outputs per step, (hidden, time, batch) in R's order.
  bare <- rnn.graph(num_rnn_layer = 1, num_hidden = 5, num_decode = 1, config = "one-to-one", cell_type = "rnn_tanh")
  s <- mx.symbol.infer.shape(bare, data = c(3, 7, 2), rnn.state = c(5, 2, 1))
  expect_equal(s$out.shapes[[1]], c(5L, 7L, 2L))
  expect_error(rnn.graph(num_rnn_layer = 1, num_hidden = 5, num_decode = 1, config = "many", cell_type = "lstm"),
               "'arg' should be one of")
  expect_error(rnn.graph(num_rnn_layer = 1, num_embed = 3, num_hidden = 5, num_decode = 1, config = "seq-to-one",
                         cell_type = "gru"), "num_embed needs input_size")
})

test_that("an LSTM from rnn.graph learns over buckets to classify a sequence by its first token", {
  set.seed(1)
  mk <- function(len, n) {
    d <- matrix(sample(4, len * n, TRUE) - 1, len)
    list(data = d, label = d[1, ])
  }
  train <- mx.io.bucket.iter(list("3" = mk(3, 400), "5" = mk(5, 400)), batch.size = 40, shuffle = TRUE)
  eval <- mx.io.bucket.iter(list("4" = mk(4, 200), "6" = mk(6, 200)), batch.size = 40)
  net <- rnn.graph(num_rnn_layer = 1, input_size = 4, num_embed = 8, num_hidden = 16, num_decode = 4,
                   loss_output = "softmax", config = "seq-to-one", cell_type = "lstm")
  mx.set.seed(2)
  logger <- mx.metric.logger()
  model <- mx.model.buckets(net, train, eval.data = eval, metric = mx.metric.accuracy, num.round = 12,
                            optimizer = "adam", learning.rate = 0.01, initializer = mx.init.Xavier(),
                            epoch.end.callback = mx.callback.log.train.metric(1, logger), verbose = FALSE)
  expect_equal(names(model$arg.params), c("embed.weight", "rnn.params.weight", "cls.weight", "cls.bias"))
  expect_equal(tail(logger$train, 1), 1)
  # Lengths it never saw in training.
  expect_gte(tail(logger$eval, 1), 0.99)
  # mx.infer.rnn: one column of class probabilities per sequence, in the iterator's order,
  # the padding of each bucket's last batch (200 = 6 * 30 + 20) left out.
  set.seed(5)
  b4 <- mk(4, 200)
  b6 <- mk(6, 200)
  pred <- mx.infer.rnn(mx.io.bucket.iter(list("4" = b4, "6" = b6), batch.size = 30), model)
  expect_equal(dim(pred), c(4L, 400L))
  expect_equal(colSums(pred), rep(1, 400), tolerance = 1e-5)
  expect_gte(mean(max.col(t(pred)) - 1 == c(b4$label, b6$label)), 0.99)
  expect_error(mx.infer.rnn(list(a = 1), model), "expected a data iterator")
})

test_that("a masked one-to-one GRU from rnn.graph learns to repeat each token", {
  set.seed(3)
  mk <- function(len, n) {
    d <- matrix(sample(4, len * n, TRUE), len)
    list(data = d, label = d - 1)
  }
  train <- mx.io.bucket.iter(list("3" = mk(3, 200), "4" = mk(4, 200)), batch.size = 20)
  net <- rnn.graph(num_rnn_layer = 1, input_size = 5, num_embed = 8, num_hidden = 16, num_decode = 4,
                   loss_output = "softmax", config = "one-to-one", cell_type = "gru", masking = TRUE)
  mx.set.seed(4)
  logger <- mx.metric.logger()
  mx.model.buckets(net, train, metric = mx.metric.accuracy, num.round = 4, optimizer = "adam",
                   learning.rate = 0.01, initializer = mx.init.Xavier(),
                   epoch.end.callback = mx.callback.log.train.metric(1, logger), verbose = FALSE)
  expect_equal(tail(logger$train, 1), 1)
})
