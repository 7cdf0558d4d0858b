# Every optimizer of mx.opt.create against its update rule written out in R, over two steps
# (so that the states carry over), and the updater's MXNet-style result.

w0 <- c(0.5, -1.5, 2)
g1 <- c(0.3, -0.8, 1.2)
g2 <- c(-0.6, 0.1, 0.4)

# Two steps of `opt` on a copy of w0 with the gradients g1 then g2, through the updater.
two_steps <- function(opt) {
  w <- mx.nd.array(w0)
  upd <- mx.opt.get.updater(opt, list(w))
  upd(list(w), list(mx.nd.array(g1)))
  upd(list(w), list(mx.nd.array(g2)))
  as.array(w)
}

test_that("rmsprop, plain and centered, follows its update rule", {
  lr <- 0.1; gamma1 <- 0.9; gamma2 <- 0.8; eps <- 1e-4
  w <- w0; n <- 0
  for (g in list(g1, g2)) {
    n <- (1 - gamma1) * g^2 + gamma1 * n
    w <- w - lr * g / sqrt(n + eps)
  }
  opt <- mx.opt.create("rmsprop", learning.rate = lr, centered = FALSE, gamma1 = gamma1, epsilon = eps)
  expect_equal(two_steps(opt), w, tolerance = 1e-5)

  w <- w0; n <- 0; gm <- 0; delta <- 0
  for (g in list(g1, g2)) {
    n <- (1 - gamma1) * g^2 + gamma1 * n
    gm <- (1 - gamma1) * g + gamma1 * gm
    delta <- gamma2 * delta - lr * g / sqrt(n - gm^2 + eps)
    w <- w + delta
  }
  opt <- mx.opt.rmsprop(learning.rate = lr, centered = TRUE, gamma1 = gamma1, gamma2 = gamma2, epsilon = eps)
  expect_equal(two_steps(opt), w, tolerance = 1e-5)
})

test_that("adagrad, adadelta and nag follow their update rules", {
  lr <- 0.2; eps <- 1e-6; wd <- 0.01
  w <- w0; h <- 0
  for (g in list(g1, g2)) {
    h <- h + g^2
    w <- w - lr * (g / sqrt(h + eps) + wd * w)
  }
  expect_equal(two_steps(mx.opt.create("adagrad", learning.rate = lr, epsilon = eps, wd = wd)), w, tolerance = 1e-5)

  rho <- 0.9; eps <- 1e-5
  w <- w0; acc_g <- 0; acc_d <- 0
  for (g in list(g1, g2)) {
    acc_g <- rho * acc_g + (1 - rho) * g^2
    d <- sqrt(acc_d + eps) / sqrt(acc_g + eps) * g
    acc_d <- rho * acc_d + (1 - rho) * d^2
    w <- w - d
  }
  expect_equal(two_steps(mx.opt.create("adadelta", rho = rho, epsilon = eps)), w, tolerance = 1e-5)

  lr <- 0.1; mom <- 0.9
  w <- w0; m <- 0
  for (g in list(g1, g2)) {
    m <- mom * m + g
    w <- w - lr * (g + mom * m)
  }
  expect_equal(two_steps(mx.opt.create("nag", learning.rate = lr, momentum = mom)), w, tolerance = 1e-5)
  # Without momentum NAG is plain SGD.
  expect_equal(two_steps(mx.opt.nag(learning.rate = lr)), w0 - lr * (g1 + g2), tolerance = 1e-6)
})

test_that("adam steps as MXNet's R package: the adam_update operator without bias corrections", {
  lr <- 0.1; b1 <- 0.9; b2 <- 0.999; eps <- 1e-8
  w <- w0; m <- 0; v <- 0
  for (t in 1:2) {
    g <- list(g1, g2)[[t]]
    m <- b1 * m + (1 - b1) * g
    v <- b2 * v + (1 - b2) * g^2
    w <- w - lr * m / (sqrt(v) + eps)
  }
  expect_equal(two_steps(mx.opt.create("adam", learning.rate = lr)), w, tolerance = 1e-5)
  # The first step is lr * 0.1 / sqrt(0.001) = 3.16 lr against the gradient's sign.
  x <- mx.nd.array(c(1, 1))
  opt <- mx.opt.adam(learning.rate = 1)
  opt$update(1, x, mx.nd.array(c(-2, 0.5)), opt$create.state(1, x))
  expect_equal(as.array(x), c(1 + 0.1 / sqrt(0.001), 1 - 0.1 / sqrt(0.001)), tolerance = 1e-5)
})

test_that("sgd takes MXNet's clip_gradient", {
  w <- mx.nd.array(w0)
  opt <- mx.opt.sgd(learning.rate = 1, clip_gradient = 0.5)
  opt$update(1, w, mx.nd.array(g1), opt$create.state(1, w))
  expect_equal(as.array(w), w0 - pmin(pmax(g1, -0.5), 0.5), tolerance = 1e-6)
  expect_error(mx.opt.create("lbfgs"), "unknown optimizer 'lbfgs' \\(expected sgd, adam, rmsprop")
})

test_that("the updater returns the updated weights for mx.exec.update.arg.arrays", {
  data <- mx.symbol.Variable("data")
  label <- mx.symbol.Variable("label")
  fc <- mx.symbol.FullyConnected(data, num_hidden = 1, no_bias = TRUE, name = "fc")
  loss <- mx.symbol.LinearRegressionOutput(fc, label = label, name = "loss")
  x <- matrix(c(1, 2, 3, 4, 5, 6), 2)     # three samples of two features
  y <- c(5, 11, 16)
  w <- c(1.1, 1.8)
  exec <- mx.symbol.bind(loss, arg.arrays = list(data = x, fc_weight = matrix(w, 2), label = y),
                         grad.reqs = c("null", "write", "null"))
  upd <- mx.opt.get.updater(mx.opt.create("sgd", learning.rate = 0.1), exec$ref.arg.arrays, ctx = mx.cpu())
  mx.exec.forward(exec, is.train = TRUE)
  mx.exec.backward(exec)
  blocks <- upd(exec$ref.arg.arrays, exec$ref.grad.arrays)
  expect_null(blocks$data)
  expect_null(blocks$label)
  mx.exec.update.arg.arrays(exec, blocks, skip.null = TRUE)
  # The linear regression gradient: sum over samples of (x.w - y) x.
  want <- w - 0.1 * as.vector(x %*% (as.vector(t(x) %*% w) - y))
  expect_equal(as.vector(as.array(blocks$fc_weight)), want, tolerance = 1e-5)
  expect_equal(as.vector(as.array(exec$arg.arrays$fc_weight)), want, tolerance = 1e-5)
})
