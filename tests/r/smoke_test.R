# Smoke test of the R binding: arrays round-trip, an operator runs through
# weft_imperative_invoke, and failures raise R errors carrying Weft's message.
# Usage: Rscript smoke_test.R <folder of the built binding>
binding_dir <- commandArgs(trailingOnly = TRUE)[1]
source(file.path(binding_dir, "ndarray.R"))
suppressMessages(weft_load(binding_dir))

expect_equal <- function(got, want, what) {
  if (!identical(length(got), length(want)) || any(got != want)) {
    stop(sprintf("%s: expected (%s), got (%s)", what, paste(want, collapse = ", "), paste(got, collapse = ", ")))
  }
}

expect_error_naming <- function(expr, word) {
  message <- tryCatch({ expr; NULL }, error = function(e) conditionMessage(e))
  if (is.null(message)) stop(sprintf("expected an error naming '%s', got none", word))
  if (!grepl(word, message, fixed = TRUE)) {
    stop(sprintf("expected an error naming '%s', got: %s", word, message))
  }
}

a <- nd_array(1:6, shape = c(2, 3))
expect_equal(nd_shape(a), c(2, 3), "shape of a")
expect_equal(nd_values(a), 1:6, "values of a")

outs <- nd_invoke("_plus_scalar", list(a), list(scalar = 2.5))
expect_equal(length(outs), 1L, "number of outputs of _plus_scalar")
expect_equal(nd_shape(outs[[1]]), c(2, 3), "shape of a + 2.5")
expect_equal(nd_values(outs[[1]]), c(3.5, 4.5, 5.5, 6.5, 7.5, 8.5), "values of a + 2.5")

expect_error_naming(nd_invoke("no_such_operator", list(a)), "no_such_operator")
expect_error_naming(nd_invoke("_plus_scalar", list(a), list(scalar = "not a number")), "scalar")
expect_error_naming(nd_array(1:3, shape = c(2, 2)), "holds 4 values")

nd_free(outs[[1]])
nd_free(a)
cat("R smoke test passed\n")
