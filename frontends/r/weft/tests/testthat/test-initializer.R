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
  expect_error(mx.init.internal.default("x_weight", 4), "unknown initialization pattern for 'x_weight'")
})
