# Shared by the tests: where the data and the Python front end are, and which tests are long.

fashion_dir <- function() {
  d <- Sys.getenv("WEFT_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")
  if (!file.exists(file.path(d, "t10k-images-idx3-ubyte.gz"))) skip("Debian's dataset-fashion-mnist is not installed")
  d
}

# The long tests (training to 85 %, a dist job) run under ctest (r.testthat sets
# WEFT_R_LONG_TESTS=1), not in R CMD check.
skip_unless_long <- function() {
  if (Sys.getenv("WEFT_R_LONG_TESTS") != "1") skip("long test: set WEFT_R_LONG_TESTS=1 (ctest r.testthat does)")
}

# The Python front end's interpreter (the worktree's .venv), for cross-language checks.
python_or_skip <- function() {
  py <- Sys.getenv("WEFT_PYTHON")
  if (py == "" || !file.exists(py)) skip("WEFT_PYTHON does not name the Python front end's interpreter")
  py
}

run_python <- function(code) {
  script <- tempfile(fileext = ".py")
  writeLines(code, script)
  out <- suppressWarnings(system2(python_or_skip(), script, stdout = TRUE, stderr = TRUE))
  status <- attr(out, "status")
  if (!is.null(status) && status != 0) stop(paste(c("python failed:", out), collapse = "\n"))
  out
}

# Weft's (row-major) shape of an array.
weft_shape <- function(x) weft:::.weft_shape(x)

# A one-output linear regression without bias (weight "fc_weight"), for tests that check
# training's weights against gradient descent written out in R.
linreg_net <- function() {
  mx.symbol.LinearRegressionOutput(
    mx.symbol.FullyConnected(mx.symbol.Variable("data"), num_hidden = 1, no_bias = TRUE, name = "fc"),
    name = "lro")
}
