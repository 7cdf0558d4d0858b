# Two Gaussian blobs in 4-D: an MLP separates them in a few epochs.
blobs <- function(n) {
  set.seed(7)
  y <- rep(0:1, length.out = n)
  x <- matrix(rnorm(4 * n, sd = 0.5), 4) + rbind(2 * y - 1, 1 - 2 * y, 0, 0)
  list(x = x, y = y)
}

test_that("mx.mlp trains on R arrays, predicts, and checkpoints round-trip", {
  d <- blobs(400)
  mx.set.seed(3)
  logger <- mx.metric.logger()
  prefix <- file.path(tempdir(), "blobs")
  model <- mx.mlp(d$x, d$y, hidden_node = 8, out_node = 2, activation = "relu", num.round = 3,
                  array.batch.size = 20, learning.rate = 0.1, momentum = 0.9, eval.metric = mx.metric.accuracy,
                  eval.data = list(data = d$x, label = d$y), initializer = mx.init.Xavier(),
                  epoch.end.callback = mx.callback.save.checkpoint(prefix),
                  batch.end.callback = mx.callback.log.train.metric(5, logger), verbose = FALSE)
  expect_s3_class(model, "MXFeedForwardModel")
  expect_gt(length(logger$train), 3)
  pred <- predict(model, d$x, array.batch.size = 30)
  expect_equal(dim(pred), c(2L, 400L))
  expect_equal(colSums(pred), rep(1, 400), tolerance = 1e-5)
  expect_gt(mean(max.col(t(pred)) - 1 == d$y), 0.95)
  expect_true(all(file.exists(sprintf("%s-%04d.params", prefix, 1:3))))
  loaded <- mx.model.load(prefix, 3)
  expect_equal(sort(names(loaded$arg.params)), sort(names(model$arg.params)))
  expect_equal(predict(loaded, d$x), pred, tolerance = 1e-6)
  expect_error(mx.model.load(prefix, 9), class = "weft_error")
})

test_that("an MLP reaches 85 % test accuracy on Fashion-MNIST, and Python reads its checkpoint", {
  skip_unless_long()
  d <- fashion_dir()
  train <- mx.io.MNISTIter(image = file.path(d, "train-images-idx3-ubyte.gz"),
                           label = file.path(d, "train-labels-idx1-ubyte.gz"),
                           batch.size = 100, flat = TRUE, shuffle = TRUE, silent = TRUE)
  test <- mx.io.MNISTIter(image = file.path(d, "t10k-images-idx3-ubyte.gz"),
                          label = file.path(d, "t10k-labels-idx1-ubyte.gz"),
                          batch.size = 100, flat = TRUE, shuffle = FALSE, silent = TRUE)
  mx.set.seed(0)
  data <- mx.symbol.Variable("data")
  net <- mx.symbol.FullyConnected(data, num_hidden = 128, name = "fc1")
  net <- mx.symbol.Activation(net, act_type = "relu", name = "relu1")
  net <- mx.symbol.FullyConnected(net, num_hidden = 64, name = "fc2")
  net <- mx.symbol.Activation(net, act_type = "relu", name = "relu2")
  net <- mx.symbol.FullyConnected(net, num_hidden = 10, name = "fc3")
  net <- mx.symbol.SoftmaxOutput(net, name = "softmax")
  model <- mx.model.FeedForward.create(net, X = train, num.round = 8, learning.rate = 0.05, momentum = 0.9,
                                       eval.metric = mx.metric.accuracy, initializer = mx.init.Xavier(),
                                       verbose = FALSE)
  pred <- predict(model, test)
  labels <- numeric(0)
  test$reset()
  while (test$iter.next()) labels <- c(labels, as.array(test$value()$label))
  acc <- mean(max.col(t(pred)) - 1 == labels)
  message(sprintf("Fashion-MNIST test accuracy: %.4f", acc))
  expect_equal(length(labels), 10000)
  expect_gte(acc, 0.85)

  prefix <- file.path(tempdir(), "fashion")
  mx.model.save(model, prefix, 8)
  first <- pred[, 1:20]
  csv <- tempfile(fileext = ".csv")
  run_python(c("import gzip, numpy as np, weft as mx",
               sprintf("sym, arg, aux = mx.model.load_checkpoint(%s, 8)", deparse(prefix)),
               sprintf("raw = gzip.open(%s).read()", deparse(file.path(d, "t10k-images-idx3-ubyte.gz"))),
               "x = np.frombuffer(raw, np.uint8, 20 * 784, 16).reshape(20, 784).astype(np.float32) / 256",
               "ex = sym.simple_bind(mx.cpu(), data=(20, 784), grad_req='null')",
               "ex.copy_params_from(arg, aux, allow_extra_params=True)",
               "ex.arg_dict['data'][:] = x",
               "out = ex.forward(is_train=False)[0].asnumpy()",
               sprintf("np.savetxt(%s, out, delimiter=',')", deparse(csv))))
  py <- t(as.matrix(utils::read.csv(csv, header = FALSE)))
  expect_equal(unname(py), first, tolerance = 1e-5)
})

test_that("a checkpoint written by Python loads and predicts in R", {
  skip_if(Sys.getenv("WEFT_PYTHON") == "")
  prefix <- file.path(tempdir(), "pymodel")
  out <- run_python(c("import numpy as np, weft as mx",
                      "d = mx.sym.Variable('data')",
                      "fc = mx.sym.FullyConnected(d, num_hidden=3, name='fc')",
                      "net = mx.sym.SoftmaxOutput(fc, name='softmax')",
                      "w = mx.nd.array(np.array([[1, 0], [0, 1], [1, 1]], dtype=np.float32))",
                      "b = mx.nd.array(np.array([0, 0.5, -1], dtype=np.float32))",
                      sprintf("mx.model.save_checkpoint(%s, 2, net, {'fc_weight': w, 'fc_bias': b}, {})",
                              deparse(prefix)),
                      "print('saved')"))
  expect_equal(out, "saved")
  model <- mx.model.load(prefix, 2)
  expect_equal(names(model$arg.params), c("fc_weight", "fc_bias"))
  expect_equal(as.array(model$arg.params$fc_weight), matrix(c(1, 0, 0, 1, 1, 1), 2))
  x <- matrix(c(1, 2, 0, 0), 2)  # samples (1, 2) and (0, 0)
  p <- predict(model, x, array.batch.size = 2)
  z1 <- c(1, 2.5, 2)
  z2 <- c(0, 0.5, -1)
  expect_equal(p, cbind(exp(z1) / sum(exp(z1)), exp(z2) / sum(exp(z2))), tolerance = 1e-6)
})

test_that("optimizers and metrics give hand-computed values", {
  w <- mx.nd.array(c(1, 2))
  opt <- mx.opt.create("sgd", learning.rate = 0.5, wd = 0.1)
  opt$update(1, w, mx.nd.array(c(1, -1)), opt$create.state(1, w))
  expect_equal(as.array(w), c(1 - 0.5 * (1 + 0.1), 2 - 0.5 * (-1 + 0.2)), tolerance = 1e-6)
  a <- mx.nd.array(c(1, 1))
  adam <- mx.opt.create("adam", learning.rate = 0.1)
  st <- adam$create.state(1, a)
  adam$update(1, a, mx.nd.array(c(2, -3)), st)
  # Adam's first step (MXNet's R update, no bias correction) moves each weight by
  # lr * 0.1 / sqrt(0.001) against the gradient's sign.
  expect_equal(as.array(a), c(1 - 0.1 * sqrt(10), 1 + 0.1 * sqrt(10)), tolerance = 1e-4)
  expect_error(mx.opt.create("nope"), "unknown optimizer 'nope'")
  s <- mx.metric.accuracy$init()
  s <- mx.metric.accuracy$update(c(0, 1, 1), matrix(c(0.9, 0.1, 0.2, 0.8, 0.7, 0.3), 2), s)
  expect_equal(mx.metric.accuracy$get(s)$value, 2 / 3)
  r <- mx.metric.rmse$update(c(1, 2), c(1, 4), mx.metric.rmse$init())
  expect_equal(mx.metric.rmse$get(r)$value, sqrt(2))
})

test_that("the regression and log-loss metrics give hand-computed values", {
  lab <- c(1, 2, 4)
  pred <- matrix(c(1.5, 2, 3), 1)
  run <- function(m) m$get(m$update(lab, pred, m$init()))$value
  expect_equal(run(mx.metric.mse), (0.25 + 0 + 1) / 3)
  expect_equal(run(mx.metric.mae), (0.5 + 0 + 1) / 3)
  expect_equal(run(mx.metric.rmsle), sqrt(mean((log1p(c(1.5, 2, 3)) - log1p(lab))^2)))
  probs <- matrix(c(0.7, 0.3, 0.2, 0.8, 1, 0), 2)   # one column of class probabilities per sample
  m <- mx.metric.logloss
  expect_equal(m$get(m$update(c(0, 1, 1), probs, m$init()))$value, -mean(log(c(0.7, 0.8, 1e-15))))
})

test_that("Perplexity leaves out labels of -1 and averages the batches' perplexities", {
  m <- mx.metric.Perplexity
  probs <- matrix(c(0.5, 0.25, 0.25,
                    0.1, 0.6, 0.3,
                    0.2, 0.2, 0.6,
                    0.9, 0.05, 0.05), 3)      # 3 classes, 4 samples
  s <- m$update(c(0, 1, 2, -1), probs, m$init())
  first <- exp(-(log(0.5) + log(0.6) + log(0.6)) / 3)
  expect_equal(m$get(s)$name, "Perplexity")
  expect_equal(m$get(s)$value, first)
  s <- m$update(c(2, 0), probs[, 1:2], s)
  second <- exp(-(log(0.25) + log(0.1)) / 2)
  expect_equal(m$get(s)$value, (first + second) / 2)
})

test_that("array.layout takes samples as rows or columns, and auto tells them apart", {
  set.seed(5)
  x <- matrix(rnorm(6 * 40), 6)                        # 6 features, 40 samples (colmajor)
  y <- as.numeric(colSums(x[1:3, ]) > 0)
  mx.set.seed(2)
  m <- mx.model.FeedForward.create(mx.symbol.SoftmaxOutput(mx.symbol.FullyConnected(mx.symbol.Variable("data"),
                                   num_hidden = 2, name = "fc"), name = "sm"),
                                   X = t(x), y = y, num.round = 1, array.batch.size = 10, learning.rate = 0.1,
                                   verbose = FALSE)          # rows are samples: transposed by "auto"
  expect_equal(dim(m$arg.params$fc_weight), c(6L, 2L))
  p_col <- predict(m, x, array.layout = "colmajor")
  expect_equal(dim(p_col), c(2L, 40L))
  expect_equal(predict(m, t(x)), p_col)                 # auto: only the transposed one fits
  expect_equal(predict(m, t(x), array.layout = "rowmajor"), p_col)
  expect_error(predict(m, matrix(0, 5, 7)), "fits neither layout \\(the model's input size\\)")
  expect_error(mx.model.FeedForward.create(m$symbol, X = x, y = c(y, 1), num.round = 1, verbose = FALSE),
               "a 6 x 40 matrix fits neither layout \\(41 samples\\)")
  # Labels with several values per sample: an array whose last dim runs over samples.
  it <- mx.io.arrayiter(matrix(1:8, 2), label = matrix(c(1:4, -(1:4)), 2, byrow = TRUE), batch.size = 2)
  it$reset()
  it$iter.next()
  expect_equal(as.array(it$value()$label), matrix(c(1, -1, 2, -2), 2))
  expect_error(mx.io.arrayiter(matrix(1:8, 2), label = matrix(1:6, 2)), "4 samples of data but 3 labels")
})

test_that("the speedometer reports samples per second every `frequency` batches", {
  cb <- mx.callback.log.speedometer(batch.size = 32, frequency = 2)
  env <- new.env()
  expect_silent(cb(1, 1, env))                       # the first batch starts the clock
  Sys.sleep(0.05)
  msg <- tryCatch(cb(1, 2, env), message = function(m) conditionMessage(m))
  speed <- as.numeric(sub(".*Speed: ([0-9.]+) samples/sec.*", "\\1", msg))
  expect_match(msg, "^Batch \\[2\\] Speed: [0-9.]+ samples/sec")
  expect_gt(speed, 0)
  expect_lt(speed, 32 / 0.05 + 1)                     # one batch of 32 in at least 50 ms
  expect_silent(cb(1, 3, env))
  env$metric <- mx.metric.accuracy
  env$train.metric <- c(3, 4)
  expect_message(cb(1, 4, env), "Batch \\[4\\] Speed: [0-9.]+ samples/sec Train-accuracy=0.750000")
  expect_silent(cb(1, 6, env, verbose = FALSE))
  expect_silent(cb(2, 1, env))                        # a new epoch restarts the clock
})

test_that("a list of contexts splits each batch over them and trains as one context does", {
  set.seed(11)
  x <- matrix(rnorm(6 * 120), 6, 120)
  y <- as.integer(x[1, ] - x[2, ] > 0)
  fit <- function(net, ctx, batch = 40) {
    set.seed(5)
    mx.set.seed(5)
    mx.model.FeedForward.create(net, X = x, y = y, ctx = ctx, num.round = 2, array.batch.size = batch,
                                learning.rate = 0.05, momentum = 0.9, initializer = mx.init.uniform(0.2),
                                array.layout = "colmajor", verbose = FALSE)
  }
  data <- mx.symbol.Variable("data")
  hidden <- mx.symbol.Activation(mx.symbol.FullyConnected(data, num_hidden = 5, name = "fc1"), act_type = "tanh")
  mlp <- mx.symbol.SoftmaxOutput(mx.symbol.FullyConnected(hidden, num_hidden = 2, name = "fc2"), name = "softmax")
  one <- fit(mlp, mx.cpu())
  # Summed slice gradients are the whole batch's: the same weights after two epochs, for an
  # even split and for MXNet's uneven one (14, 14 and 12 samples).
  for (ctx in list(list(mx.cpu(0), mx.cpu(1)), list(mx.cpu(0), mx.cpu(1), mx.cpu(2)))) {
    several <- fit(mlp, ctx)
    for (n in names(one$arg.params)) {
      expect_equal(as.array(several$arg.params[[n]]), as.array(one$arg.params[[n]]), tolerance = 1e-5)
    }
  }
  # BatchNorm's statistics come from each context's slice and are averaged: with momentum 0
  # on the inputs, the moving mean is the mean of the last batch's two half means, which is
  # that batch's mean.
  bn <- mx.symbol.BatchNorm(data, fix_gamma = TRUE, momentum = 0, name = "bn")
  net <- mx.symbol.SoftmaxOutput(mx.symbol.FullyConnected(bn, num_hidden = 2, name = "fc"), name = "softmax")
  single <- fit(net, mx.cpu())
  pair <- fit(net, list(mx.cpu(0), mx.cpu(1)))
  expect_equal(as.array(pair$aux.params$bn_moving_mean), as.array(single$aux.params$bn_moving_mean), tolerance = 1e-5)
  expect_false(isTRUE(all.equal(as.array(pair$aux.params$bn_moving_mean), rep(0, 6))))
  expect_error(fit(mlp, list(mx.cpu(0), mx.cpu(1), mx.cpu(2), mx.cpu(3)), batch = 3),
               "a batch of 3 samples cannot be split over 4 contexts \\(context 4 would get none\\)")
  expect_error(fit(mlp, list(mx.cpu(0), "cpu")), "ctx must be a context or a list of contexts, got a list of 2 \\(MXContext, character\\)")
})

test_that("a model whose output has one value per sample predicts a vector, and loggers come from $new()", {
  set.seed(2)
  x <- matrix(rnorm(3 * 50), 3, 50)
  y <- colSums(x)
  data <- mx.symbol.Variable("data")
  label <- mx.symbol.Variable("label")
  fc <- mx.symbol.FullyConnected(data, num_hidden = 1, name = "fc")
  # MXNet's custom-loss vignette: the loss itself is the output, one value per sample.
  loss <- mx.symbol.MakeLoss(mx.symbol.square(mx.symbol.Reshape(fc, shape = 0) - label), name = "loss")
  logger <- mx.metric.logger$new()
  expect_s4_class(logger, "mx.metric.logger")
  expect_equal(class(logger)[1], "mx.metric.logger")
  mx.set.seed(0)
  model <- mx.model.FeedForward.create(loss, X = x, y = y, num.round = 30, array.batch.size = 10,
                                       learning.rate = 0.05, array.layout = "colmajor", verbose = FALSE,
                                       eval.metric = mx.metric.mse,
                                       epoch.end.callback = mx.callback.log.train.metric(1, logger))
  expect_length(logger$train, 30)
  expect_length(logger$eval, 0)
  pred <- predict(model, x, array.batch.size = 15, array.layout = "colmajor")
  expect_null(dim(pred))
  expect_length(pred, 50)
  # Predicting feeds no label (zeros): the output is the squared prediction, fc's own output.
  w <- as.array(model$arg.params$fc_weight)
  expect_equal(pred, as.vector((t(x) %*% as.vector(w) + as.array(model$arg.params$fc_bias))^2), tolerance = 1e-4)
  expect_lt(mean((sqrt(pred) - abs(y))^2), 0.05)
})
