test_that("simple.bind, forward and backward give the hand-computed values", {
  data <- mx.symbol.Variable("data")
  fc <- mx.symbol.FullyConnected(data, num_hidden = 2, name = "fc")
  loss <- mx.symbol.MakeLoss(mx.symbol.sum(fc * fc))
  exec <- mx.simple.bind(loss, data = c(3, 2), grad.req = "write", fixed.param = "data")
  expect_equal(names(exec$arg.arrays), c("data", "fc_weight", "fc_bias"))
  expect_null(exec$grad.arrays$data)
  x <- matrix(c(1, 2, 3, -1, 0, 1), 3)  # 2 samples of 3 features
  w <- matrix(c(1, 0, 1, 0, 1, 0), 3)   # Weft W rows (1,0,1) and (0,1,0): R columns
  b <- c(0.5, -0.5)
  mx.exec.update.arg.arrays(exec, list(data = x, fc_weight = mx.nd.array(w), fc_bias = b), match.name = TRUE)
  mx.exec.forward(exec, is.train = TRUE)
  y <- t(w) %*% x + b                   # R columns are samples: y = W x + b
  expect_equal(as.array(exec$outputs[[1]]), sum(y^2))
  mx.exec.backward(exec)
  # d/dW sum(y^2) = 2 y x^T, in R's layout t(.); d/db = 2 rowSums(y).
  expect_equal(as.array(exec$grad.arrays$fc_weight), t(2 * y %*% t(x)), tolerance = 1e-6)
  expect_equal(as.array(exec$grad.arrays$fc_bias), 2 * rowSums(y), tolerance = 1e-6)
  expect_output(print(exec), "fc_weight")
  expect_error(mx.exec.update.arg.arrays(exec, list(nope = 1), match.name = TRUE), "no array named nope")
  expect_error(mx.exec.update.arg.arrays(exec, list(fc_bias = mx.nd.zeros(3)), match.name = TRUE), "dim")
  expect_error(mx.simple.bind(loss, data = c(3, 2), nope = c(1, 2)), class = "weft_error")
  exec$free()
  expect_error(mx.exec.forward(exec), "weft_executor_t")
})

test_that("symbol.bind uses the arrays given and allocates gradients", {
  a <- mx.symbol.Variable("a")
  b <- mx.symbol.Variable("b")
  s <- a * b + a
  exec <- mx.symbol.bind(s, arg.arrays = list(a = c(1, 2, 3), b = c(4, 5, 6)), grad.reqs = "write")
  mx.exec.forward(exec)
  expect_equal(as.array(exec$outputs[[1]]), c(5, 12, 21))
  mx.exec.backward(exec, mx.nd.ones(3))
  expect_equal(as.array(exec$grad.arrays$a), c(5, 6, 7))
  expect_equal(as.array(exec$grad.arrays$b), c(1, 2, 3))
  # Requests per argument, as a list (MXNet's demos) or named in any order.
  for (reqs in list(list("write", "null"), c(b = "null", a = "write"))) {
    e <- mx.symbol.bind(s, arg.arrays = list(a = c(1, 2, 3), b = c(4, 5, 6)), grad.reqs = reqs)
    mx.exec.forward(e)
    mx.exec.backward(e, mx.nd.ones(3))
    expect_equal(as.array(e$grad.arrays$a), c(5, 6, 7))
    expect_null(e$grad.arrays$b)
  }
  expect_error(mx.symbol.bind(s, arg.arrays = list(a = c(1, 2))),
               "1 argument arrays for the 2 arguments of the symbol \\(a, b\\); none named b")
  # Named by exactly the symbol's arguments: taken by name; otherwise by position, whatever
  # the names (as MXNet's R package binds: its optimizer tests name fc_weight "fc1_weight").
  by_name <- mx.symbol.bind(s, arg.arrays = list(b = c(4, 5, 6), a = c(1, 2, 3)))
  by_pos <- mx.symbol.bind(s, arg.arrays = list(x = c(1, 2, 3), y = c(4, 5, 6)))
  for (e in list(by_name, by_pos)) {
    mx.exec.forward(e)
    expect_equal(as.array(e$outputs[[1]]), c(5, 12, 21))
  }
  expect_error(mx.symbol.bind(s, arg.arrays = list(a = c(1, 2), b = c(1, 2, 3))), class = "weft_error")
})

test_that("executors run aux states (BatchNorm) in training", {
  bn <- mx.symbol.BatchNorm(mx.symbol.Variable("data"), name = "bn", fix_gamma = FALSE, momentum = 0.5)
  exec <- mx.simple.bind(bn, data = c(2, 4), grad.req = "null")
  x <- matrix(c(1, 10, 3, 20, 5, 30, 7, 40), 2)  # channel 1: 1,3,5,7; channel 2: 10..40
  mx.exec.update.arg.arrays(exec, list(data = x, bn_gamma = c(1, 1), bn_beta = c(0, 0)), match.name = TRUE)
  mx.exec.update.aux.arrays(exec, list(bn_moving_mean = c(0, 0), bn_moving_var = c(1, 1)), match.name = TRUE)
  mx.exec.forward(exec, is.train = TRUE)
  out <- as.array(exec$outputs[[1]])
  expect_equal(rowMeans(out), c(0, 0), tolerance = 1e-5)
  expect_equal(as.array(exec$aux.arrays$bn_moving_mean), c(2, 12.5), tolerance = 1e-5)
})
