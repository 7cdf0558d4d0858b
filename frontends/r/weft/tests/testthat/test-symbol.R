mlp_symbol <- function() {
  data <- mx.symbol.Variable("data")
  fc1 <- mx.symbol.FullyConnected(data, num_hidden = 16, name = "fc1")
  act <- mx.symbol.Activation(fc1, act_type = "relu", name = "relu1")
  fc2 <- mx.symbol.FullyConnected(act, num_hidden = 4, name = "fc2")
  mx.symbol.SoftmaxOutput(fc2, name = "softmax")
}

test_that("composition names arguments, outputs and internals as MXNet does", {
  net <- mlp_symbol()
  expect_equal(arguments(net), c("data", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias", "softmax_label"))
  expect_equal(outputs(net), "softmax_output")
  int <- internals(net)
  expect_true(all(c("fc1_output", "relu1_output", "fc2_output") %in% outputs(int)))
  fc1 <- int[["fc1_output"]]
  expect_equal(arguments(fc1), c("data", "fc1_weight", "fc1_bias"))
  expect_equal(outputs(int[[1]]), "data")
  expect_error(int[["nope"]], "no output named 'nope'")
  expect_equal(outputs(children(fc1)), c("data", "fc1_weight", "fc1_bias"))
  g <- mx.symbol.Group(fc1, net)
  expect_equal(outputs(g), c("fc1_output", "softmax_output"))
  expect_output(print(net), "softmax_output")
  # Inputs given by name; a missing one becomes a variable.
  w <- mx.symbol.Variable("shared_w")
  fc <- mx.symbol.FullyConnected(data = mx.symbol.Variable("x"), weight = w, num_hidden = 3, name = "fc")
  expect_equal(arguments(fc), c("x", "shared_w", "fc_bias"))
  # Arithmetic on symbols builds nodes.
  s <- (mx.symbol.Variable("a") + mx.symbol.Variable("b")) * 2 - 1
  expect_equal(arguments(s), c("a", "b"))
})

test_that("infer.shape gives shapes in R's order", {
  shapes <- mx.symbol.infer.shape(mlp_symbol(), data = c(10, 32))
  expect_equal(shapes$arg.shapes$fc1_weight, c(10L, 16L))
  expect_equal(shapes$arg.shapes$fc2_bias, 4L)
  expect_equal(shapes$arg.shapes$softmax_label, 32L)
  expect_equal(shapes$out.shapes$softmax_output, c(4L, 32L))
  expect_length(shapes$aux.shapes, 0)
  expect_null(mx.symbol.infer.shape(mlp_symbol()))
  bn <- mx.symbol.BatchNorm(mx.symbol.Variable("data"), name = "bn")
  expect_equal(mx.symbol.infer.shape(bn, data = c(5, 5, 3, 2))$aux.shapes,
               list(bn_moving_mean = 3L, bn_moving_var = 3L))
  err <- tryCatch(mx.symbol.infer.shape(mlp_symbol(), data = c(10, 32), fc1_weight = c(11, 16)), error = function(e) e)
  expect_s3_class(err, "weft_error")
  expect_match(conditionMessage(err), "fc1")
})

test_that("JSON round-trips in R and with Python", {
  net <- mlp_symbol()
  json <- mx.symbol.tojson(net)
  back <- mx.symbol.load.json(json)
  expect_equal(mx.symbol.tojson(back), json)
  f <- tempfile(fileext = ".json")
  mx.symbol.save(net, f)
  expect_equal(arguments(mx.symbol.load(f)), arguments(net))
  expect_error(mx.symbol.load.json("{not json"), class = "weft_error")
  expect_error(mx.symbol.load(tempfile()), class = "weft_error")
  skip_if(Sys.getenv("WEFT_PYTHON") == "")
  g <- tempfile(fileext = ".json")
  out <- run_python(c("import weft as mx",
                      sprintf("s = mx.sym.load(%s)", deparse(f)),
                      "print(','.join(s.list_arguments()))",
                      "print(s.infer_shape(data=(32, 10))[1][0])",
                      sprintf("s.save(%s)", deparse(g))))
  expect_equal(out, c(paste(arguments(net), collapse = ","), "(32, 4)"))
  expect_equal(mx.symbol.tojson(mx.symbol.load(g)), json)
  # A graph made in Python.
  h <- tempfile(fileext = ".json")
  run_python(c("import weft as mx",
               "d = mx.sym.Variable('data')",
               "c = mx.sym.Convolution(d, kernel=(3, 3), num_filter=2, name='conv')",
               sprintf("mx.sym.Pooling(c, kernel=(2, 2), pool_type='max', name='pool').save(%s)", deparse(h))))
  py <- mx.symbol.load(h)
  expect_equal(arguments(py), c("data", "conv_weight", "conv_bias"))
  expect_equal(mx.symbol.infer.shape(py, data = c(8, 8, 1, 1))$out.shapes$pool_output, c(5L, 5L, 2L, 1L))  # 3x3 conv, then 2x2 pooling at stride 1
})

test_that("symbols answer MXNet's fields and methods, and mx.apply composes a copy", {
  data <- mx.symbol.Variable("data")
  fc1 <- mx.symbol.FullyConnected(data, num_hidden = 4, name = "fc1")
  net <- mx.symbol.FullyConnected(fc1, num_hidden = 2, name = "fc2")
  expect_equal(net$arguments, c("data", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"))
  expect_equal(net$outputs, "fc2_output")
  expect_equal(net$auxiliary.states, character(0))
  expect_equal(net$get.children()$outputs, c("fc1_output", "fc2_weight", "fc2_bias"))
  inner <- net$get.internals()
  expect_equal(inner$get.output(match("fc1_output", inner$outputs))$arguments, c("data", "fc1_weight", "fc1_bias"))
  expect_identical(net$as.json(), mx.symbol.tojson(net))
  f <- tempfile(fileext = ".json")
  net$save(f)
  expect_identical(mx.symbol.load(f)$as.json(), net$as.json())
  expect_equal(net$infer.shape(list(data = c(3, 5)))$out.shapes$fc2_output, c(2L, 5L))
  expect_error(net$no.such, "no field or method 'no.such'")

  x <- mx.symbol.Variable("x")
  x$attributes <- list(`__shape__` = "(1, 2)")
  expect_equal(x$attributes$`__shape__`, "(1, 2)")
  x$attributes$`__lr_mult__` <- 0.5
  expect_equal(x$attributes$`__lr_mult__`, "0.5")
  expect_error(x$outputs <- "y", "'outputs' cannot be set")

  head <- mx.symbol.FullyConnected(num_hidden = 3, name = "fc3")
  composed <- mx.apply(head, fc3_data = net, name = "composed")
  expect_equal(arguments(composed), c(arguments(net), "fc3_weight", "fc3_bias"))
  expect_equal(outputs(composed), "composed_output")
  # The symbol applied is copied, not changed.
  expect_equal(arguments(head), c("fc3_data", "fc3_weight", "fc3_bias"))
  expect_equal(mx.symbol.infer.shape(composed, data = c(3, 5))$out.shapes$composed_output, c(3L, 5L))
  expect_error(mx.apply(head, net), "must be given by argument name")
  expect_error(mx.apply(1, fc3_data = net), "expected an MXSymbol, got numeric")
})

test_that("symbolic operators also have MXNet's underscore names", {
  expect_identical(mx.symbol.elemwise_add, mx.symbol.elemwise.add)
  a <- mx.symbol.Variable("a")
  b <- mx.symbol.Variable("b")
  s <- mx.symbol.sum_axis(mx.symbol.elemwise_add(a, b), axis = 1, name = "s")
  expect_equal(arguments(s), c("a", "b"))
  exec <- mx.simple.bind(s, a = c(3, 2), b = c(3, 2))
  mx.exec.update.arg.arrays(exec, list(a = matrix(1:6, 3), b = matrix(10, 3, 2)), match.name = TRUE)
  mx.exec.forward(exec, is.train = FALSE)
  expect_equal(as.array(exec$outputs$s_output), c(36, 45))
  # The imperative functions keep MXNet's dotted names only.
  expect_false(exists("mx.nd.sum_axis", envir = asNamespace("weft")))
})
