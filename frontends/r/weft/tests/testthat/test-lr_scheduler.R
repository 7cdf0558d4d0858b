# Learning-rate schedulers: the rate each update uses, per update count, through an
# optimizer and through mx.model.FeedForward.create.

# Runs `sched` on a fresh optimizer environment for the update counts in `counts` and
# returns the rate after each call.
rates_for_counts <- function(sched, counts, lr = 1) {
  env <- new.env()
  env$lr <- lr; env$count <- 0; env$num_update <- 0
  vapply(counts, function(n) { env$num_update <- n; sched(env); env$lr }, 0)
}

test_that("FactorScheduler reduces every `step` updates and stops at its floor", {
  sched <- mx.lr_scheduler.FactorScheduler(step = 2, factor_val = 0.5, verbose = FALSE)
  # Reductions when num_update > count + 2: at 3 (count becomes 2), 5 (4), 7 (6).
  expect_equal(rates_for_counts(sched, 0:8), c(1, 1, 1, 0.5, 0.5, 0.25, 0.25, 0.125, 0.125))
  floor <- mx.lr_scheduler.FactorScheduler(step = 1, factor_val = 0.1, stop_factor_lr = 0.05, verbose = FALSE)
  expect_equal(rates_for_counts(floor, 0:5), c(1, 1, 0.1, 0.05, 0.05, 0.05))
  expect_message(rates_for_counts(mx.lr_scheduler.FactorScheduler(1, 0.5), 0:2), "learning rate changed to 0.5")
  expect_error(mx.lr_scheduler.FactorScheduler(0, 0.5), "step must be one number of updates >= 1, got 0")
  expect_error(mx.lr_scheduler.FactorScheduler(2, 1.5), "factor_val must be one number no more than 1.*got 1.5")
})

test_that("MultiFactorScheduler reduces after each of its steps, the last included", {
  sched <- mx.lr_scheduler.MultiFactorScheduler(step = c(2, 5), factor_val = 0.1, verbose = FALSE)
  expect_equal(rates_for_counts(sched, 0:7), c(1, 1, 1, 0.1, 0.1, 0.1, 0.01, 0.01))
  expect_error(mx.lr_scheduler.MultiFactorScheduler(c(5, 2), 0.1), "non-decreasing update counts >= 1, got 5, 2")
  expect_error(mx.lr_scheduler.MultiFactorScheduler(c(0, 2), 0.1), "got 0, 2")
  expect_error(mx.lr_scheduler.MultiFactorScheduler(c(2, 5), 2), "factor_val")
})

test_that("sgd with a scheduler steps each update with the scheduled rate", {
  g <- c(0.5, -1, 2)
  w <- mx.nd.array(c(1, 2, 3))
  sched <- mx.lr_scheduler.FactorScheduler(step = 2, factor_val = 0.5, verbose = FALSE)
  opt <- mx.opt.create("sgd", learning.rate = 0.1, lr_scheduler = sched)
  upd <- mx.opt.get.updater(opt, list(w))
  expected <- c(1, 2, 3)
  # A single weight's k-th update sees num_update = max(0, k - 2): rates 0.1 (updates 1-4),
  # 0.05 (5-6), 0.025 (7-8), 0.0125 (9).
  for (lr in c(rep(0.1, 4), 0.05, 0.05, 0.025, 0.025, 0.0125)) {
    upd(list(w), list(mx.nd.array(g)))
    expected <- expected - lr * g
    expect_equal(as.array(w), expected, tolerance = 1e-6)
  }
  # Adam's step scales with the scheduled rate too.
  w <- mx.nd.array(c(1, 2, 3))
  opt <- mx.opt.adam(learning.rate = 0.1, lr_scheduler = mx.lr_scheduler.FactorScheduler(1, 0.5, verbose = FALSE))
  upd <- mx.opt.get.updater(opt, list(w))
  for (i in 1:4) upd(list(w), list(mx.nd.array(g)))
  # A constant gradient makes step t lr_t * (1 - 0.9^t) / sqrt(1 - 0.999^t) * sign(g) (MXNet's
  # R update, no bias correction; up to epsilon); the rates of updates 1-4 are 0.1, 0.1, 0.1, 0.05.
  t <- 1:4
  moved <- sum(c(0.1, 0.1, 0.1, 0.05) * (1 - 0.9^t) / sqrt(1 - 0.999^t))
  expect_equal(as.array(w), c(1, 2, 3) - moved * sign(g), tolerance = 1e-5)
})

test_that("FeedForward.create with optimizer = \"sgd\" applies the scheduler's rates", {
  set.seed(11)
  x <- matrix(rnorm(2 * 8), 2)
  y <- as.numeric(c(1.5, -0.5) %*% x)
  net <- linreg_net()
  seen <- NULL
  sched <- mx.lr_scheduler.FactorScheduler(step = 1, factor_val = 0.5, verbose = FALSE)
  recording <- function(env) {
    sched(env)
    seen <<- rbind(seen, c(env$num_update, env$lr))
  }
  w0 <- matrix(c(0.2, 0.1), 2, 1)
  model <- mx.model.FeedForward.create(net, X = x, y = y, num.round = 6, array.batch.size = 8,
                                       optimizer = "sgd", learning.rate = 0.4, lr_scheduler = recording,
                                       arg.params = list(fc_weight = mx.nd.array(w0)), verbose = FALSE)
  # One batch per epoch, one weight: update k sees num_update max(0, k - 2), and the rate
  # halves once num_update exceeds the last reduction's count by more than 1.
  expect_equal(seen[, 1], c(0, 0, 1, 2, 3, 4))
  lrs <- 0.4 * c(1, 1, 1, 0.5, 0.25, 0.125)
  expect_equal(seen[, 2], lrs)
  # Full-batch gradient descent on the squared error with those rates (the gradient is
  # rescaled by 1 / batch size).
  w <- w0
  for (lr in lrs) w <- w - lr * (x %*% t(crossprod(w, x) - y)) / 8
  expect_equal(as.array(model$arg.params$fc_weight), w, tolerance = 1e-5)
})
