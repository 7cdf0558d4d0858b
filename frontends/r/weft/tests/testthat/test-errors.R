test_that("a libweft of another ABI is refused with both versions named", {
  expect_true(weft:::.weft_check_abi(weft:::.weft_abi_version, "0.1.0"))
  err <- tryCatch(weft:::.weft_check_abi(weft:::.weft_abi_version + 1L, "9.9.9"), error = function(e) e)
  expect_match(conditionMessage(err), sprintf("libweft 9.9.9 has ABI version %d", weft:::.weft_abi_version + 1L),
               fixed = TRUE)
  expect_match(conditionMessage(err), sprintf("generated for ABI version %d (c_api.h %s)",
                                              weft:::.weft_abi_version, weft:::.weft_header_version), fixed = TRUE)
})

test_that("Weft's failures are R conditions carrying the status and the message", {
  err <- tryCatch(mx.symbol.FullyConnected(mx.symbol.Variable("x"), num_hidden = -3), error = function(e) e)
  expect_s3_class(err, c("weft_error", "error", "condition"), exact = TRUE)
  expect_equal(err$status.name, "WEFT_ERR_VALUE")
  expect_equal(err$status, 1L)
  expect_equal(err$c.function, "weft_symbol_create_atomic")
  expect_match(conditionMessage(err), "num_hidden")
  caught <- tryCatch(mx.nd.Activation(mx.nd.array(1), act_type = "x"), weft_error = function(e) "caught")
  expect_equal(caught, "caught")
  # Errors of the R layer itself are plain R errors.
  expect_error(mx.nd.array(1, ctx = c(1, 2, 3)), "ctx")
  expect_error(mx.free(1), "expected an MXNDArray")
})

test_that("contexts print and reach the engine", {
  expect_output(print(mx.cpu(0)), "cpu\\(0\\)")
  x <- mx.nd.zeros(2, ctx = mx.cpu())
  expect_equal(as.integer(weft:::weft_ndarray_get_context(x)), c(1L, 0L))
  if (weft:::weft_get_gpu_count() == 0) {
    expect_error(mx.nd.zeros(2, ctx = mx.gpu(0)), class = "weft_error")
  }
})
