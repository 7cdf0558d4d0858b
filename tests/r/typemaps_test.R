# Tests of the R typemaps of frontends/swig/weft_r.i through the generated functions
# themselves: out-parameters of each kind, lists of handles and character vectors, raw
# buffers, contexts, and counts larger than their vectors.
# Usage: Rscript typemaps_test.R <folder of the built binding>
binding_dir <- commandArgs(trailingOnly = TRUE)[1]
source(file.path(binding_dir, "ndarray.R"))
suppressMessages(weft_load(binding_dir))

check <- function(ok, what) if (!isTRUE(ok)) stop(what)
expect_error_naming <- function(expr, word) {
  message <- tryCatch({ expr; NULL }, error = function(e) conditionMessage(e))
  if (is.null(message) || !grepl(word, message, fixed = TRUE)) {
    stop(sprintf("expected an error naming '%s', got: %s", word, if (is.null(message)) "none" else message))
  }
}

# Out-parameters: list(NULL, out1, out2, ...).
version <- weft_get_version()
check(length(version) == 5 && is.null(version[[1]]), "weft_get_version returns list(NULL, 4 values)")
check(identical(unlist(version[2:5]), c(0L, 1L, 0L, 0L)), "version 0.1.0, ABI 0")
check(identical(weft_dtype_name(1L)[[2]], "float64"), "dtype 1 is float64")
check(identical(weft_dtype_size(4L)[[2]], 4), "int32 is 4 bytes")

# Operator metadata: strings and logical out-parameters.
op <- weft_op_get("_plus_scalar")[[2]]
check(identical(weft_op_get_name(op)[[2]], "_plus_scalar"), "operator name")
n_params <- weft_op_get_num_params(op)[[2]]
params <- lapply(seq_len(n_params) - 1L, function(i) weft_op_get_param(op, i))
scalar <- Filter(function(p) identical(p[[2]], "scalar"), params)
check(length(scalar) == 1 && length(scalar[[1]]) == 6 && is.logical(scalar[[1]][[6]]),
      "_plus_scalar has a parameter 'scalar' with name, type, default, doc and required")

# Shapes: capacity in, the first min(capacity, ndim) dims out; contexts as c(type, id).
a <- nd_array(1:24, shape = c(2, 3, 4))
check(identical(weft_ndarray_get_shape(a, 2L)[[2]], c(2, 3)), "shape with capacity 2")
check(identical(weft_ndarray_get_context(a)[[2]], c(1L, 0L)), "context cpu(0)")
b <- weft_ndarray_create(c(4, 6), 2L, 0L, c(1L, 0L))[[2]]
invisible(weft_ndarray_copy_to(a, b))
check(identical(nd_values(b), as.double(1:24)), "copy into an array made with a c(type, id) context")
expect_error_naming(weft_ndarray_create(c(4, 6), 3L, 0L, c(1L, 0L)), "ndim = 3 but shape has 2")

# Lists of arrays and names through the NDArray list format, and raw buffers.
saved <- weft_ndarray_save_to_bytes(2L, list(a, b), c("a", "b"))[[2]]
data <- weft_bytes_get(saved)[[2]]
check(is.raw(data) && length(data) > 2 * 24 * 4, "saved bytes hold both arrays")
loaded <- weft_ndarray_load_from_bytes(data)[[2]]
check(identical(weft_ndarray_list_size(loaded)[[2]], 2L), "loaded list has 2 arrays")
check(identical(weft_ndarray_list_has_names(loaded)[[2]], 1L), "loaded list is named")
check(identical(weft_ndarray_list_name(loaded, 1L)[[2]], "b"), "second name is b")
b2 <- weft_ndarray_list_get(loaded, 1L)[[2]]
check(identical(nd_values(b2), as.double(1:24)), "loaded values")
expect_error_naming(weft_ndarray_save_to_bytes(3L, list(a, b), NULL), "num = 3 but arrays has 2")
expect_error_naming(weft_ndarray_copy_from_host(a, as.raw(1:8)), "expected nbytes = 96")
expect_error_naming(weft_ndarray_copy_from_host(a, 1:8), "raw vector")
expect_error_naming(weft_ndarray_copy_to_host(a, -1), "nbytes must be a count")
expect_error_naming(weft_ndarray_free(list()), "arr must be a _p_weft_ndarray, got list")
expect_error_naming(weft_ndarray_free(op), "arr must be a _p_weft_ndarray, got _p_weft_op")

# Gradients: one list entry per input.
grads <- weft_imperative_gradient(op, 1L, list(a), 1L, list(a), list(a), 1L, "scalar", "2")[[2]]
check(is.list(grads) && length(grads) == 1, "one gradient per input")
check(identical(nd_values(grads[[1]]), as.double(1:24)), "gradient of x + c passes the output gradient through")

# Errors name the status kind and carry the library's message.
expect_error_naming(weft_op_get("no_such_operator"), "weft not found: Operator 'no_such_operator'")
expect_error_naming(weft_imperative_invoke(op, 2L, list(a), 0L, NULL, NULL, 0L, NULL), "num_inputs = 2 but inputs has 1")

for (h in c(list(a, b, b2), grads)) nd_free(h)
invisible(weft_ndarray_list_free(loaded))
invisible(weft_bytes_free(saved))
cat("R typemaps test passed\n")
