# MXNet R-package interfaces beyond the basic ones: user data iterators, models with several
# inputs, serialized models, the profiler, graph.viz, and the metrics MXNet adds.

# A reference class iterator in the way MXNet's R users write them: two array iterators
# (user ids, item ids) combined into one batch with the fields the model's inputs are named by.
PairIter <- setRefClass("PairIter", fields = c("iter1", "iter2"), contains = "Rcpp_MXArrayDataIter",
  methods = list(
    initialize = function(iter1, iter2) {
      .self$iter1 <- iter1
      .self$iter2 <- iter2
      .self
    },
    value = function() list(user = .self$iter1$value()$data, item = .self$iter2$value()$data,
                            score = .self$iter1$value()$label),
    iter.next = function() {
      .self$iter1$iter.next()
      .self$iter2$iter.next()
    },
    reset = function() {
      .self$iter1$reset()
      .self$iter2$reset()
    },
    num.pad = function() .self$iter1$num.pad(),
    finalize = function() {
      .self$iter1$finalize()
      .self$iter2$finalize()
    }))

factorization_net <- function(nuser, nitem, k) {
  user <- mx.symbol.Variable("user")
  item <- mx.symbol.Variable("item")
  score <- mx.symbol.Variable("score")
  u <- mx.symbol.Embedding(data = user, input_dim = nuser, output_dim = k, name = "user1")
  v <- mx.symbol.Embedding(data = item, input_dim = nitem, output_dim = k, name = "item1")
  pred <- mx.symbol.Flatten(mx.symbol.sum_axis(u * v, axis = 1), name = "pred")
  mx.symbol.LinearRegressionOutput(data = pred, label = score, name = "out")
}

test_that("a reference class iterator of two inputs trains a factorization model and predicts", {
  set.seed(11)
  n <- 1200
  user <- sample(10, n, TRUE) - 1
  item <- sample(12, n, TRUE) - 1
  score <- rnorm(10)[user + 1] * rnorm(12)[item + 1]
  it <- PairIter$new(mx.io.arrayiter(user, score, batch.size = 40), mx.io.arrayiter(item, score, batch.size = 40))
  expect_true(is.mx.dataiter(it))
  mx.set.seed(5)
  logger <- mx.metric.logger()
  model <- mx.model.FeedForward.create(factorization_net(10, 12, 3), X = it, num.round = 25,
                                       initializer = mx.init.uniform(0.5), learning.rate = 0.1, momentum = 0.9,
                                       eval.metric = mx.metric.rmse, input.names = c("user", "item"),
                                       output.names = "score", verbose = FALSE,
                                       epoch.end.callback = mx.callback.log.train.metric(1, logger))
  expect_equal(sort(names(model$arg.params)), c("item1_weight", "user1_weight"))
  expect_lt(tail(logger$train, 1), 0.1 * sd(score))
  # The prediction is the dot product of the two learnt embeddings (R dims: k x count).
  U <- as.array(model$arg.params$user1_weight)
  V <- as.array(model$arg.params$item1_weight)
  expected <- colSums(U[, user + 1] * V[, item + 1])
  from_iter <- predict(model, it)
  expect_equal(as.numeric(from_iter), expected, tolerance = 1e-5)
  from_list <- predict(model, list(user = user, item = item), array.batch.size = 64)
  expect_equal(as.numeric(from_list), expected, tolerance = 1e-5)
  expect_lt(sqrt(mean((expected - score)^2)), 0.1 * sd(score))
})

test_that("input and output names are found from the batch's fields when not given", {
  set.seed(2)
  n <- 600
  user <- sample(6, n, TRUE) - 1
  item <- sample(5, n, TRUE) - 1
  score <- rnorm(6)[user + 1] + rnorm(5)[item + 1]
  it <- PairIter$new(mx.io.arrayiter(user, score, batch.size = 50), mx.io.arrayiter(item, score, batch.size = 50))
  mx.set.seed(1)
  # No *label argument and no names given: every field that is an argument is fed, the
  # score included, so the model trains as with input.names and output.names.
  model <- mx.model.FeedForward.create(factorization_net(6, 5, 2), X = it, num.round = 30,
                                       initializer = mx.init.uniform(0.5), learning.rate = 0.1, momentum = 0.9,
                                       verbose = FALSE)
  fitted <- as.numeric(predict(model, list(user = user, item = item)))
  expect_lt(sqrt(mean((fitted - score)^2)), 0.5 * sd(score))
  expect_equal(sort(names(model$arg.params)), c("item1_weight", "user1_weight"))
})

test_that("a list with reset, iter.next, value and num.pad giving R arrays is an iterator", {
  set.seed(4)
  x <- matrix(rnorm(2 * 256), 2)
  y <- 2 * x[1, ] - 3 * x[2, ] + 1
  pos <- 0
  bs <- 32
  it <- list(
    reset = function() pos <<- 0,
    iter.next = function() {
      pos <<- pos + 1
      pos <= ncol(x) / bs
    },
    value = function() {
      idx <- (pos - 1) * bs + seq_len(bs)
      list(data = x[, idx, drop = FALSE], label = y[idx])
    },
    num.pad = function() 0)
  data <- mx.symbol.Variable("data")
  net <- mx.symbol.LinearRegressionOutput(mx.symbol.FullyConnected(data, num_hidden = 1, name = "fc"), name = "lro")
  mx.set.seed(0)
  model <- mx.model.FeedForward.create(net, X = it, num.round = 60, learning.rate = 0.1, momentum = 0.5,
                                       verbose = FALSE)
  expect_equal(as.numeric(as.array(model$arg.params$fc_weight)), c(2, -3), tolerance = 1e-2)
  expect_equal(as.numeric(as.array(model$arg.params$fc_bias)), 1, tolerance = 1e-2)
  expect_equal(as.numeric(predict(model, it)), y, tolerance = 1e-2)
  expect_equal(dim(mx.io.extract(it, "data")), c(2L, 256L))
})

test_that("the iterator base classes say which method a subclass lacks", {
  Half <- setRefClass("Half", contains = "Rcpp_MXNativeDataIter",
                      methods = list(reset = function() invisible(NULL)))
  h <- Half$new()
  expect_true(is.mx.dataiter(h))
  expect_null(h$reset())
  expect_error(h$iter.next(), "Half: a subclass of Rcpp_MXNativeDataIter must define the method iter.next\\(\\)")
  expect_error(mx.model.FeedForward.create(mx.symbol.Variable("data"), X = h, verbose = FALSE),
               "must define the method iter.next")
  expect_false(is.mx.dataiter(list(a = 1)))
  expect_error(mx.model.FeedForward.create(mx.symbol.Variable("data"), X = list(1:3, 4:6), verbose = FALSE),
               "list of 2 arrays without names")
})

test_that("arrayiter batches a named list of arrays and keeps vectors 1-D", {
  it <- mx.io.arrayiter(list(a = matrix(1:8, 2), b = 11:14), label = 21:24, batch.size = 3)
  it$reset()
  expect_true(it$iter.next())
  b <- it$value()
  expect_equal(names(b), c("a", "b", "label"))
  expect_equal(as.array(b$a), matrix(1:6, 2) + 0)
  expect_equal(dim(b$b), 3L)
  expect_equal(as.array(b$b), c(11, 12, 13))
  expect_true(it$iter.next())
  expect_equal(it$num.pad(), 2L)
  expect_equal(as.array(it$value()$b), c(14, 12, 13))
  expect_error(mx.io.arrayiter(list(a = 1:3, b = 1:4)), "differ in their sample counts .*a 3, b 4")
  expect_error(mx.io.arrayiter(list(1:3)), "needs a distinct name")
})

test_that("models with two inputs train from a named list of arrays", {
  set.seed(8)
  a <- matrix(rnorm(3 * 200), 3)
  b <- matrix(rnorm(2 * 200), 2)
  y <- as.numeric(c(1, -1, 2) %*% a + c(0.5, 3) %*% b)
  net <- mx.symbol.LinearRegressionOutput(
    mx.symbol.FullyConnected(mx.symbol.Variable("a"), num_hidden = 1, no_bias = TRUE, name = "fa") +
      mx.symbol.FullyConnected(mx.symbol.Variable("b"), num_hidden = 1, no_bias = TRUE, name = "fb"),
    name = "lro")
  mx.set.seed(3)
  model <- mx.model.FeedForward.create(net, X = list(a = a, b = b), y = y, num.round = 40, array.batch.size = 20,
                                       learning.rate = 0.1, verbose = FALSE)
  expect_equal(as.numeric(as.array(model$arg.params$fa_weight)), c(1, -1, 2), tolerance = 1e-2)
  expect_equal(as.numeric(as.array(model$arg.params$fb_weight)), c(0.5, 3), tolerance = 1e-2)
  expect_equal(as.numeric(predict(model, list(a = a, b = b))), y, tolerance = 1e-2)
  # input.names that the symbol lacks are named in the error.
  expect_error(mx.model.FeedForward.create(net, X = list(a = a, b = b), y = y, input.names = c("a", "c"),
                                           num.round = 1, verbose = FALSE), "no argument c")
})

test_that("fixed.param keeps parameters and allow.extra.params drops unknown ones", {
  x <- matrix(c(1, 2, 3, 4, 5, 6), 2)
  y <- c(1, 2, 3)
  data <- mx.symbol.Variable("data")
  net <- mx.symbol.LinearRegressionOutput(mx.symbol.FullyConnected(data, num_hidden = 1, name = "fc"), name = "lro")
  w0 <- mx.nd.array(matrix(c(0.25, -0.5), 2))
  extra <- list(fc_weight = w0, other_weight = mx.nd.ones(c(2, 2)))
  expect_error(mx.model.FeedForward.create(net, X = x, y = y, arg.params = extra, num.round = 1, verbose = FALSE),
               "arg.params/aux.params name other_weight")
  model <- mx.model.FeedForward.create(net, X = x, y = y, arg.params = extra, allow.extra.params = TRUE,
                                       fixed.param = "fc_weight", num.round = 3, array.batch.size = 3,
                                       learning.rate = 0.1, verbose = FALSE)
  expect_equal(as.array(model$arg.params$fc_weight), matrix(c(0.25, -0.5), 2))
  # The bias alone moved: one SGD step per epoch on the mean residual of the fixed weights.
  expect_false(as.numeric(as.array(model$arg.params$fc_bias)) == 0)
  expect_null(model$arg.params$other_weight)
})

test_that("mx.serialize makes a model that survives saveRDS and predicts the same", {
  x <- matrix(c(1, 2, 3, 4, 5, 6, 7, 8), 2)
  data <- mx.symbol.Variable("data")
  net <- mx.symbol.LinearRegressionOutput(mx.symbol.FullyConnected(data, num_hidden = 1, name = "fc"), name = "lro")
  mx.set.seed(2)
  model <- mx.model.FeedForward.create(net, X = x, y = 1:4, num.round = 2, array.batch.size = 4, verbose = FALSE)
  s <- mx.serialize(model)
  expect_true(is.serialized(s))
  expect_false(is.serialized(model))
  expect_identical(mx.serialize(s), s)
  expect_true(is.character(s$symbol_json))
  expect_equal(s$arg.params$fc_weight, as.array(model$arg.params$fc_weight))
  f <- tempfile(fileext = ".rds")
  saveRDS(s, f)
  back <- readRDS(f)
  expect_equal(predict(back, x), predict(model, x), tolerance = 1e-6)
  u <- mx.unserialize(back)
  expect_false(is.serialized(u))
  expect_true(is.mx.symbol(u$symbol))
  expect_equal(as.array(u$arg.params$fc_bias), as.array(model$arg.params$fc_bias))
  prefix <- file.path(tempdir(), "serialized")
  mx.model.save(back, prefix, 1)
  expect_equal(predict(mx.model.load(prefix, 1), x), predict(model, x), tolerance = 1e-6)
  expect_error(mx.serialize(list()), "expected an MXFeedForwardModel, got list")
})

test_that("mx.profiler.config and mx.profiler.state record operations into the file", {
  f <- tempfile(fileext = ".json")
  expect_equal(MX.PROF.STATE, list(STOP = 0L, RUN = 1L))
  mx.profiler.config(list(filename = f, profile.all = TRUE, continuous_dump = FALSE))
  mx.profiler.state(MX.PROF.STATE$RUN)
  expect_equal(weft:::weft_profiler_get_state(), 1L)
  a <- mx.nd.ones(c(3, 3))
  b <- as.array(mx.nd.dot(a, a))
  mx.profiler.state(MX.PROF.STATE$STOP)
  expect_equal(weft:::weft_profiler_get_state(), 0L)
  expect_equal(b, matrix(3, 3, 3))
  weft:::weft_profiler_dump(1L)
  trace <- jsonlite::fromJSON(f, simplifyVector = FALSE)
  names_seen <- vapply(trace$traceEvents, function(e) if (is.null(e$name)) "" else e$name, "")
  expect_true("dot" %in% names_seen)
  expect_error(mx.profiler.config(list(no_such_key = 1)), "no_such_key", class = "weft_error")
  expect_error(mx.profiler.config(list(TRUE)), "key = value")
  expect_error(mx.profiler.state(3), "MX.PROF.STATE\\$RUN \\(1\\) or MX.PROF.STATE\\$STOP \\(0\\), got 3")
})

test_that("graph.viz writes the operators and shapes as Graphviz DOT", {
  data <- mx.symbol.Variable("data")
  net <- mx.symbol.Convolution(data, kernel = c(3, 3), stride = c(2, 2), num_filter = 4, name = "conv1")
  net <- mx.symbol.Activation(net, act_type = "relu", name = "relu1")
  net <- mx.symbol.FullyConnected(mx.symbol.Flatten(net, name = "flat"), num_hidden = 5, name = "fc1")
  net <- mx.symbol.SoftmaxOutput(net, name = "sm")
  g <- graph.viz(net, shape = c(9, 9, 1, 2), direction = "LR")
  expect_s3_class(g, "MXGraphViz")
  lines <- strsplit(g$dot, "\n")[[1]]
  expect_equal(lines[1], "digraph mxnet_symbol {")
  expect_true("  graph [rankdir=LR];" %in% lines)
  node <- function(name) grep(sprintf("\\\\n%s[\\\\\"]", name), lines, value = TRUE)
  expect_match(node("conv1"), "label=\"Convolution\\\\nconv1\\\\n3x3 / 2x2, 4\", shape=box")
  expect_match(node("relu1"), "label=\"Activation\\\\nrelu1\\\\nrelu\"")
  expect_match(node("flat"), "shape=oval")
  expect_match(node("fc1"), "FullyConnected\\\\nfc1\\\\n5\"")
  # Variables are left out; 4 operators, 4 edges whose labels are the R dims that flow.
  expect_equal(length(grep("^  n[0-9]+ \\[label=", lines)), 5)
  edges <- grep("->", lines, value = TRUE)
  expect_equal(length(edges), 4)
  expect_equal(sub(".*label=\"([^\"]*)\".*", "\\1", edges), c("4x4x4x2", "4x4x4x2", "64x2", "5x2"))
  expect_false(any(grepl("label=", grep("->", strsplit(graph.viz(net)$dot, "\n")[[1]], value = TRUE))))
  expect_output(print(g), "digraph mxnet_symbol")
  expect_error(graph.viz(net, type = "vis"), "type = \"vis\" is not available")
  expect_error(graph.viz(net, direction = "up"), "direction must be")
  expect_error(graph.viz(data + 1, shape = list(other = 3)), "'other' is not an input", class = "weft_error")
  two <- mx.symbol.dot(mx.symbol.Variable("a"), mx.symbol.Variable("b"))
  expect_error(graph.viz(two, shape = list(a = c(2, 3))), "shapes given \\(a\\) do not determine every shape")
  if (nzchar(Sys.which("dot"))) {
    svg <- tempfile(fileext = ".svg")
    r <- graph.viz(net, file = svg)
    expect_equal(r$file, svg)
    expect_true(any(grepl("<svg", readLines(svg))))
  }
})

test_that("top_k_accuracy and logistic_acc count as MXNet's do", {
  pred <- matrix(c(0.1, 0.5, 0.4,
                   0.7, 0.2, 0.1,
                   0.3, 0.3, 0.4,
                   0.2, 0.3, 0.5), 3)
  label <- c(2, 1, 0, 0)
  top2 <- mx.metric.top_k_accuracy$update(label, pred, mx.metric.top_k_accuracy$init())
  # top_k is 5 by default: with 3 classes every label is among the top ones.
  expect_equal(mx.metric.top_k_accuracy$get(top2)$value, 1)
  expect_equal(mx.metric.top_k_accuracy$get(top2)$name, "top_k_accuracy")
  s <- mx.metric.logistic_acc$init()
  s <- mx.metric.logistic_acc$update(c(1, 0, 1, 0), c(0.9, 0.6, 0.4, 0.1), s)
  s <- mx.metric.logistic_acc$update(c(1, 1), c(0.7, 0.8), s)
  expect_equal(mx.metric.logistic_acc$get(s), list(name = "accuracy", value = (0.5 + 1) / 2))
})

test_that("ctx gives the context of an array", {
  expect_equal(ctx(mx.nd.ones(2)), mx.cpu())
  expect_error(ctx(1), "expected an MXNDArray, got numeric")
})

test_that("logloss of one probability per label is the binary cross-entropy, as MXNet's", {
  label <- c(1, 0, 1, 0)
  p <- c(0.9, 0.2, 0.6, 0.0)
  s <- mx.metric.logloss$update(label, matrix(p, 1), mx.metric.logloss$init())
  expected <- -mean(c(log(0.9), log(0.8), log(0.6), log(1 - 1e-15)))
  expect_equal(mx.metric.logloss$get(s)$value, expected, tolerance = 1e-12)
  # Several labels per sample (a multi-label logistic output): every entry counts.
  s <- mx.metric.logloss$update(matrix(c(1, 0, 0, 1), 2), matrix(c(0.5, 0.25, 0.5, 0.75), 2),
                                mx.metric.logloss$init())
  expect_equal(mx.metric.logloss$get(s)$value, -mean(log(c(0.5, 0.75, 0.5, 0.75))), tolerance = 1e-12)
  # Class probabilities (one column per sample) keep the multi-class form.
  s <- mx.metric.logloss$update(c(0, 2), matrix(c(0.7, 0.2, 0.1, 0.1, 0.3, 0.6), 3), mx.metric.logloss$init())
  expect_equal(mx.metric.logloss$get(s)$value, -mean(log(c(0.7, 0.6))), tolerance = 1e-12)
})

test_that("a metric written for MXNet (mx.nd.* on its label and pred) runs on this package's R values", {
  # MXNet's metrics get MXNDArrays; here they get R values, which mx.nd.* operators take.
  mae <- mx.metric.custom("mae", function(label, pred) {
    pred <- mx.nd.reshape(pred, shape = 0)
    as.array(mx.nd.mean(mx.nd.abs(label - pred)))
  })
  s <- mae$update(c(1, 2, 4), matrix(c(1.5, 2, 3), 1), mae$init())
  expect_equal(mae$get(s)$value, (0.5 + 0 + 1) / 3, tolerance = 1e-6)
  expect_equal(as.array(mx.nd.abs(c(-1, 2.5))), c(1, 2.5))
  expect_equal(as.array(mx.nd.broadcast.add(matrix(1:4, 2), mx.nd.ones(c(2, 2)))), matrix(2:5, 2) + 0)
  expect_error(mx.nd.abs("a"), "input 1 is a character, not an MXNDArray or a numeric array")
  set.seed(1)
  x <- matrix(rnorm(13 * 120), 120)                 # one sample per row, as data.matrix gives
  y <- as.numeric(x %*% seq(-1, 1, length.out = 13)) + 3
  data <- mx.symbol.Variable("data")
  lro <- mx.symbol.LinearRegressionOutput(mx.symbol.FullyConnected(data, num_hidden = 1))
  logger <- mx.metric.logger()
  mx.set.seed(0)
  model <- mx.model.FeedForward.create(lro, X = x, y = y, num.round = 30, array.batch.size = 20, learning.rate = 0.05,
                                       momentum = 0.9, eval.metric = mae, verbose = FALSE,
                                       epoch.end.callback = mx.callback.log.train.metric(1, logger))
  expect_lt(tail(logger$train, 1), 0.05)
  fitted <- as.numeric(predict(model, x))
  expect_equal(mean(abs(fitted - y)), tail(logger$train, 1), tolerance = 0.5)
})
