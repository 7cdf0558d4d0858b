test_that("every operator of the loaded library has its mx.nd and mx.symbol function", {
  ns <- asNamespace("weft")
  n <- weft:::weft_op_count()
  expect_gt(n, 100)
  skipped <- c("_dnnl_region", "_dnnl_train_region", "_fused_pointwise", "_CrossDeviceCopy")
  checked <- 0
  for (i in seq_len(n) - 1L) {
    op <- weft:::weft_op_get_by_index(i)
    name <- weft:::weft_op_get_name(op)
    if (startsWith(name, "_backward_") || name %in% skipped) next
    r <- if (startsWith(name, "_")) paste0("internal.", gsub("_", ".", substring(name, 2))) else gsub("_", ".", name)
    expect_true(is.function(ns[[paste0("mx.nd.", r)]]), info = name)
    expect_true(is.function(ns[[paste0("mx.symbol.", r)]]), info = name)
    expect_true(paste0("mx.nd.", r) %in% getNamespaceExports("weft"), info = name)
    checked <- checked + 1
  }
  expect_gt(checked, 150)
})

test_that("a representative set of operators gives hand-computed values", {
  x <- mx.nd.array(matrix(c(1, -2, 3, -4, 5, -6), 3))         # Weft (2, 3): rows (1,-2,3), (-4,5,-6)
  expect_equal(as.array(mx.nd.relu(x)), matrix(c(1, 0, 3, 0, 5, 0), 3))
  expect_equal(as.array(mx.nd.Activation(x, act_type = "sigmoid")), 1 / (1 + exp(-matrix(c(1, -2, 3, -4, 5, -6), 3))),
               tolerance = 1e-6)
  expect_equal(as.array(mx.nd.abs(x)), matrix(c(1, 2, 3, 4, 5, 6), 3))
  # sum over Weft's axis 1 (R's first dim).
  expect_equal(as.array(mx.nd.sum(x, axis = 1)), c(2, -5))
  expect_equal(as.array(mx.nd.sum(x)), -3)
  expect_equal(as.array(mx.nd.max(x, axis = 0)), c(1, 5, 3))
  expect_equal(as.array(mx.nd.argmax(x, axis = 1)), c(2, 1))
  expect_equal(as.array(mx.nd.transpose(x)), t(matrix(c(1, -2, 3, -4, 5, -6), 3)))
  # Vector parameters are in R's order, as MXNet's R package takes them: R dims c(2, 3).
  expect_equal(as.array(mx.nd.reshape(x, shape = c(2, 3))), matrix(c(1, -2, 3, -4, 5, -6), 2))
  expect_equal(as.array(mx.nd.clip(x, a_min = -1, a_max = 2)), matrix(c(1, -1, 2, -1, 2, -1), 3))
  sm <- as.array(mx.nd.softmax(mx.nd.array(c(1, 2, 3))))
  expect_equal(sm, c(exp(1:3) / sum(exp(1:3))), tolerance = 1e-6)
  # dot of Weft (2,3) and (3,2) arrays: A B = [[6,3],[15,6]], R columns (6,3) and (15,6).
  a <- matrix(c(1, 2, 3, 4, 5, 6), 3)   # Weft A = [[1,2,3],[4,5,6]]
  b <- matrix(c(1, 0, 1, 0, 1, 1), 2)   # Weft B = [[1,0],[1,0],[1,1]]
  expect_equal(as.array(mx.nd.dot(mx.nd.array(a), mx.nd.array(b))), matrix(c(6, 3, 15, 6), 2))
  # FullyConnected: y = x W^T + b per sample (one sample per R column).
  xin <- matrix(c(1, 2, 3, 4), 2)       # 2 samples of 2 features
  w <- matrix(c(1, 0, -1, 0, 1, 2), 2)  # Weft W (3 outputs, 2 inputs) = [[1,0],[-1,0],[1,2]]
  fc <- mx.nd.FullyConnected(mx.nd.array(xin), mx.nd.array(w), mx.nd.array(c(0.5, 0, -1)), num_hidden = 3)
  expect_equal(as.array(fc), matrix(c(1.5, -1, 4, 3.5, -3, 10), 3))
  fc_nb <- mx.nd.FullyConnected(data = mx.nd.array(xin), weight = mx.nd.array(w), num_hidden = 3, no_bias = TRUE)
  expect_equal(as.array(fc_nb), matrix(c(1, -1, 5, 3, -3, 11), 3))
  # Variadic: Concat along Weft's axis 0 (R's last dim), with the count filled in.
  cc <- mx.nd.Concat(mx.nd.array(matrix(1:4, 2)), mx.nd.array(matrix(5:6, 2)), dim = 0)
  expect_equal(as.array(cc), matrix(1:6, 2) + 0)
  cl <- mx.nd.concat(list(mx.nd.array(1:2), mx.nd.array(3)), dim = 0)
  expect_equal(as.array(cl), c(1, 2, 3))
  st <- mx.nd.stack(mx.nd.array(1:2), mx.nd.array(3:4))
  expect_equal(as.array(st), matrix(1:4, 2) + 0)
  expect_equal(as.array(mx.nd.one.hot(mx.nd.array(c(2, 0)), depth = 3)), matrix(c(0, 0, 1, 1, 0, 0), 3))
  expect_equal(as.array(mx.nd.exp(mx.nd.array(c(0, 1)))), c(1, exp(1)), tolerance = 1e-6)
  expect_equal(as.array(mx.nd.internal.plus.scalar(mx.nd.array(1:2), scalar = 3)), c(4, 5))
  expect_equal(as.array(mx.nd.broadcast.add(mx.nd.array(matrix(1:4, 2)), mx.nd.array(c(10, 20)))),
               matrix(c(11, 22, 13, 24), 2))
  # 2x2 max pooling of a 1x1x4x4 NCHW image (R dims reversed: c(4, 4, 1, 1)).
  img <- array(as.numeric(1:16), c(4, 4, 1, 1))
  pool <- mx.nd.Pooling(mx.nd.array(img), kernel = c(2, 2), stride = c(2, 2), pool_type = "max")
  expect_equal(as.array(pool), array(c(6, 8, 14, 16), c(2, 2, 1, 1)))
  # A 2x2 all-ones kernel sums windows.
  conv <- mx.nd.Convolution(mx.nd.array(img), mx.nd.ones(c(2, 2, 1, 1)), kernel = c(2, 2), num_filter = 1,
                            no_bias = TRUE)
  expect_equal(as.array(conv)[1, 1, 1, 1], 1 + 2 + 5 + 6)
  expect_equal(dim(conv), c(3L, 3L, 1L, 1L))
})

test_that("out writes into a given array and multiple outputs come as a list", {
  x <- mx.nd.array(c(1, 4, 9))
  o <- mx.nd.zeros(3)
  mx.nd.sqrt(x, out = o)
  expect_equal(as.array(o), c(1, 2, 3))
  parts <- mx.nd.split(mx.nd.array(matrix(1:6, 2)), num_outputs = 3, axis = 0)
  expect_length(parts, 3)
  expect_equal(as.array(parts[[2]]), matrix(3:4, 2, 1) + 0)
})

test_that("unknown operators, bad parameters and wrong shapes are R errors with Weft's message", {
  err <- tryCatch(weft:::.weft_nd_invoke("NoSuchOp", list(), NULL, NULL, NULL), error = function(e) e)
  expect_s3_class(err, "weft_error")
  expect_equal(err$status.name, "WEFT_ERR_NOT_FOUND")
  expect_match(conditionMessage(err), "NoSuchOp")
  x <- mx.nd.array(1:4)
  expect_error(mx.nd.Activation(x, act_type = "bogus"), "bogus")
  expect_error(mx.nd.dot(mx.nd.array(matrix(1:6, 3)), mx.nd.array(matrix(1:6, 3))), "dot")
  expect_error(mx.nd.reshape(x, shape = c(3, 3)), "reshape")
  expect_error(mx.nd.FullyConnected(x, num_hidden = 2), "FullyConnected")
  expect_error(mx.nd.sum(x, nonsense = 1), "unused argument")
  expect_error(mx.nd.relu("a"), "input 1 is a character")
})

test_that("the elementwise math operators agree with R's functions", {
  v <- c(0.1, 0.35, 0.5, 0.75, 0.9)
  x <- mx.nd.array(v, dtype = "float64")
  ref <- list(abs = abs, ceil = ceiling, floor = floor, trunc = trunc, exp = exp, expm1 = expm1, log = log,
              log10 = log10, log1p = log1p, log2 = log2, sqrt = sqrt, rsqrt = function(a) 1 / sqrt(a),
              cbrt = function(a) a^(1 / 3), rcbrt = function(a) a^(-1 / 3), square = function(a) a^2,
              reciprocal = function(a) 1 / a, negative = function(a) -a, sign = sign,
              sigmoid = function(a) 1 / (1 + exp(-a)), relu = function(a) pmax(a, 0),
              softsign = function(a) a / (1 + abs(a)), sin = sin, cos = cos, tan = tan, sinh = sinh, cosh = cosh,
              tanh = tanh, arcsin = asin, arccos = acos, arctan = atan, arcsinh = asinh,
              arctanh = atanh, gamma = gamma, gammaln = lgamma, degrees = function(a) a * 180 / pi,
              radians = function(a) a * pi / 180, erf = function(a) 2 * pnorm(a * sqrt(2)) - 1,
              erfinv = function(a) qnorm((a + 1) / 2) / sqrt(2), rint = round,
              fix = trunc)
  ns <- asNamespace("weft")
  for (op in names(ref)) {
    got <- as.array(ns[[paste0("mx.nd.", op)]](x))
    expect_equal(as.numeric(got), ref[[op]](v), tolerance = 1e-7, info = op)
  }
  expect_equal(as.numeric(as.array(mx.nd.arccosh(x + 1))), acosh(v + 1), tolerance = 1e-7)
  expect_equal(as.numeric(as.array(mx.nd.round(mx.nd.array(c(0.4, 1.6, -2.2))))), c(0, 2, -2))
})

test_that("internal aliases are there too: crop.assign writes a region given in R's order", {
  x <- mx.nd.ones(c(2, 3, 4))                 # Weft (4, 3, 2)
  z <- mx.nd.array(array(c(5, 6, 7, 8), c(2, 2, 1)))
  # R's region [1:2, 2:3, 1], as MXNet's R package reads begin and end.
  y <- mx.nd.internal.crop.assign(x, z, begin = c(0, 1, 0), end = c(2, 3, 1))
  want <- array(1, c(2, 3, 4))
  want[1:2, 2:3, 1] <- c(5, 6, 7, 8)
  expect_equal(as.array(y), want)
  expect_equal(as.array(mx.nd.internal.PlusScalar(mx.nd.array(c(1, 2)), scalar = 0.5)), c(1.5, 2.5))
})

test_that("vector parameters are reversed into the engine's order, scalars are not (MXNet's R rule)", {
  x <- mx.nd.array(array(as.numeric(1:24), c(2, 3, 4)))   # Weft (4, 3, 2)
  # crop/slice: begin and end list R's dims; MXNet's own R test of crop expects dims c(2, 1, 3).
  expect_equal(dim(mx.nd.crop(mx.nd.ones(c(2, 3, 4)), begin = c(0, 0, 0), end = c(2, 1, 3))), c(2L, 1L, 3L))
  expect_equal(as.array(mx.nd.slice(x, begin = c(1, 0, 2), end = c(2, 2, 4))),
               array(as.numeric(1:24), c(2, 3, 4))[2, 1:2, 3:4, drop = FALSE])
  expect_equal(dim(mx.nd.reshape(x, shape = c(6, -1))), c(6L, 4L))
  expect_equal(dim(mx.nd.reshape(x, shape = c(0, -1), reverse = TRUE)), c(2L, 12L))
  # A whole vector is reversed whatever it means: axes too (as MXNet's R package does), so
  # c(0, 2, 1) is the engine's (1, 2, 0).
  expect_equal(dim(mx.nd.transpose(x, axes = c(0, 2, 1))), rev(c(3L, 2L, 4L)))
  expect_equal(dim(mx.nd.tile(x, reps = c(1, 2, 3))), c(2L, 6L, 12L))
  # An asymmetric kernel: c(width, height).
  img <- mx.nd.array(array(1, c(5, 4, 1, 1)))             # W 5, H 4
  conv <- mx.nd.Convolution(img, mx.nd.ones(c(3, 1, 1, 1)), kernel = c(3, 1), num_filter = 1, no_bias = TRUE)
  expect_equal(dim(conv), c(3L, 4L, 1L, 1L))
  expect_equal(as.array(conv)[1, 1, 1, 1], 3)
  # A single number is not reversed: axis = 0 is the engine's first axis (R's last dim).
  expect_equal(dim(mx.nd.sum(x, axis = 0)), c(2L, 3L))
  expect_equal(dim(mx.nd.sum(x, axis = c(0, 1))), 2L)
  # Symbols the same: a reshape given in R's order.
  s <- mx.symbol.reshape(mx.symbol.Variable("data"), shape = c(6, -1))
  expect_equal(mx.symbol.infer.shape(s, data = c(2, 3, 4))$out.shapes[[1]], c(6L, 4L))
})

test_that("operator parameters also go by MXNet's dotted names", {
  x <- mx.nd.array(matrix(c(1, 2, 3, 4, 5, 6), 3))   # Weft (2, 3)
  w <- mx.nd.array(matrix(c(1, 0, -1, 2, 2, 2), 3))  # Weft (2, 3): two hidden units
  y <- mx.nd.FullyConnected(x, w, num.hidden = 2, no.bias = TRUE)
  # Each output is a sample's dot product with each weight row.
  expect_equal(as.array(y), matrix(c(1 - 3, 2 + 4 + 6, 4 - 6, 8 + 10 + 12), 2))
  data <- mx.symbol.Variable("data")
  fc <- mx.symbol.FullyConnected(data, num.hidden = 4, no.bias = TRUE, name = "fc")
  expect_equal(arguments(fc), c("data", "fc_weight"))
  expect_equal(mx.symbol.infer.shape(fc, data = c(3, 5))$out.shapes$fc_output, c(4L, 5L))
  expect_error(mx.nd.FullyConnected(x, w, num.hidden = 2, no.such = 1), "mx.nd.FullyConnected: unused argument no.such")
  expect_error(mx.symbol.FullyConnected(data, NULL, NULL, 2, TRUE, TRUE, 7), "unused argument at position 1")
})
