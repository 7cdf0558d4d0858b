test_that("mx.init.create and mx.init.internal.default give every parameter its start", {
  mx.set.seed(3)
  arrs <- mx.init.create(mx.init.uniform(0.5), list(fc_weight = c(40, 50), fc_bias = 50, bn_gamma = 7))
  expect_equal(names(arrs), c("fc_weight", "fc_bias", "bn_gamma"))
  w <- as.array(arrs$fc_weight)
  expect_equal(dim(w), c(40L, 50L))
  expect_true(all(w >= -0.5 & w <= 0.5))
  expect_gt(sd(w), 0.25)   # uniform(-0.5, 0.5) has sd 0.289
  expect_identical(as.array(arrs$fc_bias), rep(0, 50))
  expect_identical(as.array(arrs$bn_gamma), rep(1, 7))
  expect_identical(mx.init.create(mx.init.normal(1), list()), list())
  # An initializer that gives NULL for a name is skipped, or kept as NULL.
  only_bias <- function(name, shape, ctx) mx.init.internal.default(name, shape, ctx, allow.unknown = TRUE)
  expect_equal(names(mx.init.create(only_bias, list(a_weight = 2, a_bias = 2))), "a_bias")
  expect_equal(length(mx.init.create(only_bias, list(a_weight = 2, a_bias = 2), skip.unknown = FALSE)), 2)
  expect_error(mx.init.create(only_bias, list(2)), "named by parameter")

  expect_identical(as.array(mx.init.internal.default("x_moving_var", c(2, 3))), matrix(1, 2, 3))
  expect_identical(as.array(mx.init.internal.default("x_beta", 4)), rep(0, 4))
  expect_null(mx.init.internal.default("x_weight", 4, allow.unknown = TRUE))
  expect_error(mx.init.internal.default("x_weight", 4), "Unkown initialization pattern for  x_weight \\(mx.init.internal")
})

test_that("mx.model.init.params gives every parameter with its inferred shape", {
  data <- mx.symbol.Variable("data")
  fc <- mx.symbol.FullyConnected(data, num_hidden = 3, name = "fc")
  bn <- mx.symbol.BatchNorm(fc, name = "bn")
  net <- mx.symbol.SoftmaxOutput(bn, name = "sm")
  p <- mx.model.init.params(net, list(data = c(4, 8)), list(sm_label = 8), mx.init.uniform(0.1))
  expect_equal(sort(names(p$arg.params)), c("bn_beta", "bn_gamma", "fc_bias", "fc_weight"))
  expect_equal(dim(p$arg.params$fc_weight), c(4L, 3L))
  expect_true(all(abs(as.array(p$arg.params$fc_weight)) <= 0.1))
  expect_identical(as.array(p$arg.params$bn_gamma), c(1, 1, 1))
  expect_equal(names(p$aux.params), c("bn_moving_mean", "bn_moving_var"))
  expect_identical(as.array(p$aux.params$bn_moving_var), c(1, 1, 1))
  expect_error(mx.model.init.params(net, list(), NULL, mx.init.uniform(0.1)), "do not determine every argument's shape")
})

test_that("mx.init.Xavier scales by MXNet R's fans: the last dim out, the others in", {
  mx.set.seed(9)
  shape <- c(3, 3, 16, 32)          # a 3x3 convolution from 16 to 32 channels, R dims
  fan_in <- 3 * 3 * 16
  fan_out <- 32
  w <- as.array(mx.init.Xavier()("conv_weight", shape))
  bound <- sqrt(3 / ((fan_in + fan_out) / 2))
  expect_equal(dim(w), as.integer(shape))
  expect_true(all(abs(w) <= bound))
  expect_gt(max(abs(w)), 0.98 * bound)
  for (factor in c("in", "out", "avg")) {
    g <- as.array(mx.init.Xavier("gaussian", factor, magnitude = 2)("conv_weight", shape))
    n <- switch(factor, "in" = fan_in, out = fan_out, avg = (fan_in + fan_out) / 2)
    expect_equal(sd(g), sqrt(2 / n), tolerance = 0.03)
    expect_equal(mean(g), 0, tolerance = 0.01)
  }
  expect_identical(as.array(mx.init.Xavier()("conv_bias", 32)), rep(0, 32))
})
