# Idiomatic R on top of the functions SWIG generates from frontends/swig/weft.i. Failed
# calls raise R errors carrying Weft's message; the SWIG functions return a list whose
# first element is NULL and whose next elements are the C function's out-parameters.

# Loads the compiled binding (weft.so and weft.R) from `dir`.
weft_load <- function(dir) {
  dyn.load(file.path(dir, paste0("weft", .Platform$dynlib.ext)))
  source(file.path(dir, "weft.R"))
  methods::cacheMetaData(1)
  invisible(TRUE)
}

WEFT_DEVICE_CPU_CODE <- 1L
WEFT_DTYPE_FLOAT32_CODE <- 0L

# A context: device type code (1 cpu, 2 gpu, 3 cpu_pinned) and device id.
weft_context <- function(device_type = WEFT_DEVICE_CPU_CODE, device_id = 0L) {
  ctx <- weft_context_t()
  ctx$device_type <- as.integer(device_type)
  ctx$device_id <- as.integer(device_id)
  ctx
}

# A float32 array of the given shape holding `values` in row-major order.
nd_array <- function(values, shape = length(values), ctx = weft_context()) {
  values <- as.double(values)
  if (prod(shape) != length(values)) {
    stop(sprintf("nd_array: shape (%s) holds %d values, got %d",
                 paste(shape, collapse = ", "), prod(shape), length(values)))
  }
  arr <- weft_ndarray_create(shape, length(shape), WEFT_DTYPE_FLOAT32_CODE, ctx)[[2]]
  weft_ndarray_copy_from_host(arr, writeBin(values, raw(), size = 4, endian = "little"))
  arr
}

nd_shape <- function(arr) {
  ndim <- weft_ndarray_get_ndim(arr)[[2]]
  weft_ndarray_get_shape(arr, ndim)[[2]]
}

# The values of a float32 array in row-major order (waits for pending writes).
nd_values <- function(arr) {
  size <- weft_ndarray_get_size(arr)[[2]]
  bytes <- weft_ndarray_copy_to_host(arr, 4 * size)[[2]]
  readBin(bytes, "double", n = size, size = 4, endian = "little")
}

nd_free <- function(arr) invisible(weft_ndarray_free(arr))

# Runs the registered operator `op` on a list of arrays with named string parameters;
# returns the list of its outputs.
nd_invoke <- function(op, inputs = list(), params = list()) {
  handle <- weft_op_get(op)[[2]]
  keys <- names(params)
  if (is.null(keys)) keys <- character(0)
  vals <- vapply(params, as.character, "")
  weft_imperative_invoke(handle, length(inputs), inputs, length(keys), keys, vals, 0L, list())[[2]]
}
