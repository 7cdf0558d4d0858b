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
  # Over two contexts: the initial states take each slice's batch size, and the summed
  # gradients give the weights one context gives.
  fit <- function(ctx) {
    mx.set.seed(2)
    mx.model.buckets(net, mx.io.bucket.iter(list("3" = mk(3, 80), "5" = mk(5, 80)), batch.size = 40), num.round = 2,
                     optimizer = "sgd", learning.rate = 0.05, initializer = mx.init.Xavier(), ctx = ctx,
                     verbose = FALSE)
  }
  set.seed(6)
  one <- fit(mx.cpu())
  set.seed(6)
  two <- fit(list(mx.cpu(0), mx.cpu(1)))
  for (n in names(one$arg.params)) {
    expect_equal(as.array(two$arg.params[[n]]), as.array(one$arg.params[[n]]), tolerance = 1e-5)
  }
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

test_that("rnn.graph.unroll builds per-step cells that mx.model.buckets trains with one symbol per length", {
  lstm <- rnn.graph.unroll(num_rnn_layer = 2, seq_len = 3, input_size = 4, num_embed = 8, num_hidden = 16,
                           num_decode = 4, loss_output = "softmax", config = "seq-to-one", cell_type = "lstm")
  expect_equal(setdiff(arguments(lstm), c("data", "label")),
               c("embed.weight", "l1.i2h.weight", "l1.i2h.bias", "l2.i2h.weight", "l2.i2h.bias",
                 "l1.h2h.weight", "l1.h2h.bias", "l2.h2h.weight", "l2.h2h.bias", "cls.weight", "cls.bias"))
  s <- mx.symbol.infer.shape(lstm, data = c(3, 10), label = 10)
  expect_equal(s$arg.shapes$l1.i2h.weight, c(8L, 64L))
  expect_equal(s$arg.shapes$l2.h2h.weight, c(16L, 64L))
  expect_equal(s$out.shapes[[1]], c(4L, 10L))
  # With output_last_state: the output, then each layer's h and c.
  st <- rnn.graph.unroll(num_rnn_layer = 2, seq_len = 2, num_hidden = 5, num_decode = 1, config = "seq-to-one",
                         cell_type = "lstm", output_last_state = TRUE)
  expect_equal(length(outputs(st)), 5)
  expect_true(all(c("init_1_h", "init_1_c", "init_2_h", "init_2_c") %in% arguments(st)))
  set.seed(1)
  mk <- function(len, n) {
    d <- matrix(sample(4, len * n, TRUE) - 1, len)
    list(data = d, label = d[1, ])
  }
  train <- mx.io.bucket.iter(list("3" = mk(3, 400), "5" = mk(5, 400)), batch.size = 40, shuffle = TRUE)
  nets <- lapply(c("3" = 3, "5" = 5), function(n) {
    rnn.graph.unroll(num_rnn_layer = 1, seq_len = n, input_size = 4, num_embed = 8, num_hidden = 16, num_decode = 4,
                     loss_output = "softmax", config = "seq-to-one", cell_type = "gru")
  })
  mx.set.seed(2)
  logger <- mx.metric.logger()
  model <- mx.model.buckets(nets, train, metric = mx.metric.accuracy, num.round = 12, optimizer = "adam",
                            learning.rate = 0.01, initializer = mx.init.Xavier(),
                            epoch.end.callback = mx.callback.log.train.metric(1, logger), verbose = FALSE)
  expect_equal(sort(names(model$arg.params)),
               sort(c("embed.weight", "l1.gates.i2h.weight", "l1.gates.i2h.bias", "l1.gates.h2h.weight",
                      "l1.gates.h2h.bias", "l1.trans.i2h.weight", "l1.trans.i2h.bias", "l1.trans.h2h.weight",
                      "l1.trans.h2h.bias", "cls.weight", "cls.bias")))
  expect_equal(tail(logger$train, 1), 1)
  # The GRU cell by hand for a one-step sequence from a zero state (no gates.h2h then):
  # h = update * tanh(Wx + b + W'0 + b').
  one <- rnn.graph.unroll(num_rnn_layer = 1, seq_len = 1, num_hidden = 2, num_decode = 1, config = "seq-to-one",
                          cell_type = "gru")
  x <- matrix(c(0.5, -1, 0.25), 3)        # one sample of 3 features, R dims (features, time, batch)
  p <- list(l1.gates.i2h.weight = matrix(c(0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 0.7, 0.8, 0.9, -0.1, 0.2, 0.3), 3),
            l1.gates.i2h.bias = c(0.1, -0.2, 0.3, 0.05),
            l1.trans.i2h.weight = matrix(c(0.2, -0.4, 0.6, 0.1, 0.3, -0.5), 3), l1.trans.i2h.bias = c(0.01, -0.02),
            l1.trans.h2h.weight = matrix(0.7, 2, 2), l1.trans.h2h.bias = c(0.5, -0.5))
  exec <- mx.simple.bind(one, data = c(3, 1, 1))
  mx.exec.update.arg.arrays(exec, c(list(data = array(x, c(3, 1, 1))), lapply(p, mx.nd.array)), match.name = TRUE)
  mx.exec.forward(exec, is.train = FALSE)
  sig <- function(z) 1 / (1 + exp(-z))
  gates <- as.numeric(t(p$l1.gates.i2h.weight) %*% x) + p$l1.gates.i2h.bias
  cand <- tanh(as.numeric(t(p$l1.trans.i2h.weight) %*% x) + p$l1.trans.i2h.bias + p$l1.trans.h2h.bias)
  expect_equal(as.numeric(as.array(exec$outputs[[1]])), sig(gates[1:2]) * cand, tolerance = 1e-6)
})

test_that("rnn.graph.unroll's LSTM cell computes MXNet's gates over two steps", {
  net <- rnn.graph.unroll(num_rnn_layer = 1, seq_len = 2, num_hidden = 1, num_decode = 1, config = "seq-to-one",
                          cell_type = "lstm")
  p <- list(l1.i2h.weight = matrix(c(0.5, -0.3, 0.8, 0.2), 1), l1.i2h.bias = c(0.1, 0.2, -0.1, 0.05),
            l1.h2h.weight = matrix(c(-0.4, 0.6, 0.3, 0.9), 1), l1.h2h.bias = c(0.02, -0.03, 0.04, 0.01))
  x <- c(1.5, -0.7)                          # one feature, two steps, one sample
  exec <- mx.simple.bind(net, data = c(1, 2, 1))
  mx.exec.update.arg.arrays(exec, c(list(data = array(x, c(1, 2, 1))), lapply(p, mx.nd.array)), match.name = TRUE)
  mx.exec.forward(exec, is.train = FALSE)
  sig <- function(z) 1 / (1 + exp(-z))
  g <- as.numeric(p$l1.i2h.weight) * x[1] + p$l1.i2h.bias
  c1 <- sig(g[1]) * tanh(g[2])
  h1 <- sig(g[4]) * tanh(c1)
  g <- as.numeric(p$l1.i2h.weight) * x[2] + p$l1.i2h.bias + as.numeric(p$l1.h2h.weight) * h1 + p$l1.h2h.bias
  c2 <- sig(g[3]) * c1 + sig(g[1]) * tanh(g[2])
  h2 <- sig(g[4]) * tanh(c2)
  expect_equal(as.numeric(as.array(exec$outputs[[1]])), h2, tolerance = 1e-6)
})

test_that("stepping with mx.infer.rnn.one.unroll and mx.infer.rnn.one carries the states", {
  # Zero h2h biases: a zero state given explicitly then equals no state.
  p <- list(l1.i2h.weight = mx.nd.array(matrix(c(0.5, -0.3, 0.8, 0.2), 1)),
            l1.i2h.bias = mx.nd.array(c(0.1, 0.2, -0.1, 0.05)),
            l1.h2h.weight = mx.nd.array(matrix(c(-0.4, 0.6, 0.3, 0.9), 1)), l1.h2h.bias = mx.nd.zeros(4))
  x <- matrix(c(1.5, -0.7, 0.3, 0.9), 2)        # two sequences of two steps, one feature
  whole <- rnn.graph.unroll(num_rnn_layer = 1, seq_len = 2, num_hidden = 1, num_decode = 1, config = "seq-to-one",
                            cell_type = "lstm")
  ref <- mx.infer.rnn.one.unroll(array(x, c(1, 2, 2)), whole, 1, p, list())
  step <- rnn.graph.unroll(num_rnn_layer = 1, seq_len = 1, num_hidden = 1, num_decode = 1, config = "seq-to-one",
                           cell_type = "lstm", output_last_state = TRUE)
  expect_equal(arguments(step)[startsWith(arguments(step), "init_")], c("init_1_h", "init_1_c"))
  s1 <- mx.infer.rnn.one.unroll(array(x[1, ], c(1, 1, 2)), step, 1, p, list())
  expect_equal(length(s1), 3)
  s2 <- mx.infer.rnn.one.unroll(array(x[2, ], c(1, 1, 2)), step, 1, p, list(), init_states = s1[2:3])
  expect_equal(as.array(s2[[1]]), as.array(ref[[1]]), tolerance = 1e-6)
  expect_error(mx.infer.rnn.one.unroll(array(x[2, ], c(1, 1, 2)), step, 1, p, list(), init_states = s1[2]),
               "1 init_states given for the symbol's 2")
  # The same through an iterator, with the states as input.params.
  it <- function(col) mx.io.arrayiter(array(x[col, ], c(1, 1, 2)), batch.size = 2)
  # The states' shapes do not follow from the data: the first call gives them too.
  expect_error(mx.infer.rnn.one(it(1), step, p, list()), "do not determine every argument's shape")
  zero <- list(init_1_h = mx.nd.zeros(c(1, 2)), init_1_c = mx.nd.zeros(c(1, 2)))
  o1 <- mx.infer.rnn.one(it(1), step, p, list(), input.params = zero)
  o2 <- mx.infer.rnn.one(it(2), step, p, list(), input.params = list(init_1_h = o1[[2]], init_1_c = o1[[3]]))
  expect_equal(as.array(o2[[1]]), as.array(ref[[1]]), tolerance = 1e-6)
})
