# Loading, errors, contexts and the conversion of R values into the strings that the
# engine parses as operator and iterator parameters.

.weft_state <- new.env(parent = emptyenv())
.weft_ops <- new.env(parent = emptyenv())

.onLoad <- function(libname, pkgname) {
  .Call(C_weft_r_init, .weft_signal)
  v <- weft_get_version()
  .weft_check_abi(v$abi, sprintf("%d.%d.%d", v$major, v$minor, v$patch))
  role <- weft_kvstore_get_role()
  if (role != "worker") .weft_run_role(role)
  # Work still queued at exit would run while the library's static objects are destroyed.
  reg.finalizer(.weft_state, function(e) try(weft_wait_all(), silent = TRUE), onexit = TRUE)
}

# Refuses a libweft whose ABI differs from the one c_api.h had when this package was made.
.weft_check_abi <- function(abi, version) {
  if (!identical(as.integer(abi), .weft_abi_version)) {
    stop(sprintf(paste("weft: the loaded libweft %s has ABI version %d, but this package was generated",
                       "for ABI version %d (c_api.h %s): rebuild the package against this libweft"),
                 version, as.integer(abi), .weft_abi_version, .weft_header_version), call. = FALSE)
  }
  invisible(TRUE)
}

# A server or scheduler process of a dist job (tools/launch.py runs the same command for
# every role, with DMLC_ROLE set) serves its role when the package loads, then ends.
.weft_run_role <- function(role) {
  status <- tryCatch({
    if (role == "scheduler") {
      weft_kvstore_run_scheduler()
    } else {
      kv <- weft_kvstore_create("dist")
      .Call(C_weft_r_kvstore_run_server, kv)
      weft_kvstore_free(kv)
    }
    0L
  }, error = function(e) {
    message(sprintf("weft %s: %s", role, conditionMessage(e)))
    1L
  })
  quit(save = "no", status = status)
}

# Called by the C glue on every failed C API call: an R condition of class
# c("weft_error", "error", "condition") with the status code, its name and Weft's message.
.weft_signal <- function(status, message, fun) {
  cond <- structure(class = c("weft_error", "error", "condition"),
                    list(message = message, call = NULL, status = status,
                         status.name = names(.weft_status_names)[.weft_status_names == status],
                         c.function = fun))
  stop(cond)
}

mx.cpu <- function(dev.id = 0L) structure(c(1L, as.integer(dev.id)), class = "MXContext")
mx.gpu <- function(dev.id = 0L) structure(c(2L, as.integer(dev.id)), class = "MXContext")

# The context that arrays, initializers and executors use when none is given.
mx.ctx.default <- function(new = NULL) {
  if (!is.null(new)) {
    if (!is.mx.context(new)) stop("mx.ctx.default: expected an MXContext (mx.cpu() or mx.gpu(i))", call. = FALSE)
    .weft_state$ctx <- new
  }
  if (is.null(.weft_state$ctx)) mx.cpu() else .weft_state$ctx
}

is.mx.context <- function(x) inherits(x, "MXContext")
is.mx.ndarray <- function(x) inherits(x, "MXNDArray")
is.mx.symbol <- function(x) inherits(x, "MXSymbol")
# This package's iterators, and user iterators deriving from MXNet's iterator classes.
is.mx.dataiter <- function(x) {
  inherits(x, "MXDataIter") || methods::is(x, "Rcpp_MXArrayDataIter") || methods::is(x, "Rcpp_MXNativeDataIter")
}

print.MXContext <- function(x, ...) {
  cat(.weft_ctx_str(x), "\n", sep = "")
  invisible(x)
}

.weft_ctx_str <- function(ctx) {
  sprintf("%s(%d)", c("cpu", "gpu", "cpu_pinned", "", "cpu_shared")[ctx[1]], ctx[2])
}

mx.set.seed <- function(seed) invisible(weft_random_seed(seed))

# One parameter value of an operator or data iterator, converted as MXNet's R package
# converts it: a vector (length != 1) is a tuple in reversed order, R's order of dims to the
# engine's, so shape = c(784, -1) is the engine's (-1, 784) and data.shape = c(28, 28, 3) its
# (3, 28, 28); NULL stays NULL (the default applies).
.weft_param <- function(x) {
  if (is.null(x)) return(NULL)
  if (inherits(x, "MXContext")) return(.weft_ctx_str(x))
  if (is.character(x) && length(x) == 1) return(x)
  if (length(x) != 1) return(.weft_shape_param(x))
  .weft_scalar(x)
}

# A tuple-typed parameter (shapes, kernels, axes), reversed as .weft_param's vectors; one
# value is a 1-tuple.
.weft_shape_param <- function(x) {
  if (is.null(x)) return(NULL)
  if (is.character(x) && length(x) == 1) return(x)
  .weft_tuple(rev(x))
}

# A value as written, never reversed: symbol attributes, profiler settings.
.weft_plain_value <- function(x) {
  if (is.null(x)) return(NULL)
  if (is.character(x) && length(x) == 1) return(x)
  if (length(x) != 1) return(.weft_tuple(x))
  .weft_scalar(x)
}

# A tuple in the engine's syntax, in the order given ("(2, 3)", "(5,)"); NA elements are None.
.weft_tuple <- function(x) {
  items <- vapply(seq_along(x), function(i) if (is.na(x[i])) "None" else .weft_number(x[i]), "")
  paste0("(", paste(items, collapse = ", "), if (length(x) == 1) "," else "", ")")
}

.weft_scalar <- function(x) if (is.logical(x)) (if (isTRUE(x)) "True" else "False") else .weft_number(x)

.weft_number <- function(v) {
  if (is.logical(v)) return(if (isTRUE(v)) "True" else "False")
  if (is.numeric(v) && is.finite(v) && v == round(v) && abs(v) < 2^53) return(sprintf("%.0f", v))
  as.character(v)
}

.weft_op_handle <- function(name) {
  h <- .weft_ops[[name]]
  if (is.null(h)) {
    h <- weft_op_get(name)
    assign(name, h, envir = .weft_ops)
  }
  h
}

# Inputs given as ... or as one list.
.weft_dots <- function(...) {
  args <- list(...)
  if (length(args) == 1 && is.list(args[[1]]) && !is.object(args[[1]])) args <- args[[1]]
  args
}

# The inputs of a variadic operator (those counted by parameter `count`): lists given
# among them (mx.nd.concat(data = list(a, b)), or c(a, b) of handles) are spliced in, and a
# count given by the caller (num_args = 2, or num.args) is checked against the inputs and
# dropped, since the count passed to the engine is the number of inputs.
.weft_variadic <- function(op, inputs, count) {
  nms <- names(inputs)
  out <- list()
  given <- NULL
  for (i in seq_along(inputs)) {
    nm <- if (is.null(nms)) "" else nms[i]
    v <- inputs[[i]]
    if (nm %in% c(count, gsub("_", ".", count, fixed = TRUE))) {
      given <- v
    } else if (is.list(v) && !is.object(v)) {
      out <- c(out, unname(v))
    } else {
      out <- c(out, list(v))
    }
  }
  if (!is.null(given) && (!is.numeric(given) || length(given) != 1 || given != length(out))) {
    stop(sprintf("%s: %s = %s, but %d inputs were given", op, count, paste(format(given), collapse = ", "),
                 length(out)), call. = FALSE)
  }
  out
}

mx.free <- function(x) {
  if (inherits(x, "MXNDArray")) {
    weft_ndarray_free(x)
  } else if (inherits(x, "MXSymbol")) {
    weft_symbol_free(x)
  } else if (inherits(x, c("MXExecutor", "MXKVStore", "MXDataIter"))) {
    x$free()
  } else {
    stop("mx.free: expected an MXNDArray, MXSymbol, MXExecutor, MXKVStore or MXDataIter")
  }
  invisible(NULL)
}

# Parameters given to a generated operator function by MXNet's dotted names (no.bias for
# no_bias; they arrive in its `...`) are set as the underscore-named arguments in `env`,
# the function's frame; a name that is no parameter of the function is an error.
.weft_dotted_args <- function(env, extra, fun) {
  if (length(extra) == 0) return(invisible(NULL))
  nms <- names(extra)
  if (is.null(nms)) nms <- rep("", length(extra))
  for (i in seq_along(extra)) {
    key <- gsub(".", "_", nms[i], fixed = TRUE)
    if (key == "" || key %in% c("out", "name", "attr") || !exists(key, envir = env, inherits = FALSE)) {
      stop(sprintf("%s: unused argument %s", fun, if (nms[i] == "") sprintf("at position %d of ...", i) else nms[i]),
           call. = FALSE)
    }
    assign(key, extra[[i]], envir = env)
  }
  invisible(NULL)
}
