# mx.callback.early.stop: its thresholds and its count of bad epochs, called as
# FeedForward.create calls it and through FeedForward.create.

# The environment FeedForward.create hands an epoch-end callback, with the metric values
# given (rmse's state is c(sum, count), so c(v, 1) reads back as v).
epoch_env <- function(train = NULL, eval = NULL) {
  env <- new.env()
  env$metric <- mx.metric.rmse
  env$train.metric <- if (is.null(train)) NULL else c(train, 1)
  env$eval.metric <- if (is.null(eval)) NULL else c(eval, 1)
  env
}

# The iteration at which `cb` first returns FALSE over the validation values, or NA.
stops_at <- function(cb, evals) {
  for (i in seq_along(evals)) if (!cb(i, 0, epoch_env(eval = evals[i]), FALSE)) return(i)
  NA
}

test_that("early.stop stops when a metric passes its threshold", {
  cb <- mx.callback.early.stop(train.metric = 0.5)
  expect_true(cb(1, 0, epoch_env(train = 0.7), FALSE))
  expect_false(cb(2, 0, epoch_env(train = 0.4), FALSE))
  cb <- mx.callback.early.stop(eval.metric = 0.9, maximize = TRUE)
  expect_true(cb(1, 0, epoch_env(train = 0.95, eval = 0.9), FALSE))
  expect_false(cb(2, 0, epoch_env(eval = 0.91), FALSE))
  # Without a validation metric the eval threshold cannot trigger.
  expect_true(cb(3, 0, epoch_env(train = 0.99), FALSE))
})

test_that("early.stop stops after bad.steps epochs worse than the best", {
  # Best 4 at epoch 2; epochs 3 and 4 are worse: the second bad epoch stops.
  expect_equal(stops_at(mx.callback.early.stop(bad.steps = 2), c(5, 4, 4.5, 4.2, 3)), 4)
  # An improvement (or a tie) restarts the count.
  expect_equal(stops_at(mx.callback.early.stop(bad.steps = 2), c(5, 4, 4.5, 4, 4.1, 3.9, 4.2, 4.3)), 8)
  expect_equal(stops_at(mx.callback.early.stop(bad.steps = 1, maximize = TRUE), c(0.1, 0.3, 0.35, 0.2)), 4)
  expect_true(is.na(stops_at(mx.callback.early.stop(bad.steps = 3), c(3, 2, 1, 0.5))))
  # Iteration 1 starts a new run: the callback can be reused for another training.
  cb <- mx.callback.early.stop(bad.steps = 1)
  expect_equal(stops_at(cb, c(1, 2)), 2)
  expect_equal(stops_at(cb, c(5, 4, 6)), 3)
  expect_message(cb(1, 0, epoch_env(eval = 1), TRUE), NA)
  expect_message(cb(2, 0, epoch_env(eval = 2), TRUE), "Best score=1, iteration \\[1\\]")
  expect_error(mx.callback.early.stop(bad.steps = 0), "bad.steps must be NULL or one number of epochs >= 1, got 0")
})

test_that("FeedForward.create stops at the epoch where early.stop says so", {
  set.seed(5)
  x <- matrix(rnorm(2 * 16), 2)
  y <- as.numeric(c(1, -2) %*% x)
  net <- linreg_net()
  w0 <- matrix(c(0, 0), 2, 1)
  epochs <- c()
  stop_cb <- mx.callback.early.stop(train.metric = 0.5)
  cb <- function(iteration, nbatch, env, verbose) {
    epochs <<- c(epochs, iteration)
    stop_cb(iteration, nbatch, env, verbose)
  }
  model <- mx.model.FeedForward.create(net, X = x, y = y, num.round = 50, array.batch.size = 16,
                                       learning.rate = 0.3, eval.metric = mx.metric.rmse,
                                       arg.params = list(fc_weight = mx.nd.array(w0)),
                                       epoch.end.callback = cb, verbose = FALSE)
  # Full-batch gradient descent written out: the training rmse of each epoch is that of the
  # weights before its update; training ends after the first epoch whose rmse is below 0.5.
  w <- w0
  n <- 0
  repeat {
    n <- n + 1
    rmse <- sqrt(mean((crossprod(w, x) - y)^2))
    w <- w - 0.3 * (x %*% t(crossprod(w, x) - y)) / 16
    if (rmse < 0.5) break
  }
  expect_lt(n, 50)
  expect_equal(epochs, seq_len(n))
  expect_equal(as.array(model$arg.params$fc_weight), w, tolerance = 1e-5)
})
