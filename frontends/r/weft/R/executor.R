# MXExecutor: an environment holding the executor handle, its symbol and its bound arrays
# by name (arg.arrays, grad.arrays, aux.arrays, outputs). The arrays are the executor's
# own: forward and backward rewrite them in place.

.weft_named <- function(handles, nms) {
  names(handles) <- nms
  handles
}

.weft_executor <- function(handle, symbol) {
  exec <- new.env(parent = emptyenv())
  exec$handle <- handle
  exec$symbol <- symbol
  args <- arguments(symbol)
  exec$arg.arrays <- .weft_named(weft_executor_arrays(handle, 0L), args)
  grads <- weft_executor_arrays(handle, 1L)
  # A list keeps NULL entries only when built by index.
  exec$grad.arrays <- stats::setNames(vector("list", length(args)), args)
  for (i in seq_along(grads)) if (!is.null(grads[[i]])) exec$grad.arrays[[i]] <- grads[[i]]
  exec$aux.arrays <- .weft_named(weft_executor_arrays(handle, 2L), auxiliary.states(symbol))
  exec$outputs <- .weft_named(weft_executor_outputs(handle), outputs(symbol))
  # MXNet's R executor names its own (not copied) arrays ref.*; here every list is the
  # executor's own, so both names give the same arrays.
  exec$ref.arg.arrays <- exec$arg.arrays
  exec$ref.grad.arrays <- exec$grad.arrays
  exec$ref.aux.arrays <- exec$aux.arrays
  exec$ref.outputs <- exec$outputs
  exec$free <- function() {
    weft_executor_free(handle)
    invisible(NULL)
  }
  class(exec) <- "MXExecutor"
  exec
}

print.MXExecutor <- function(x, ...) {
  cat(sprintf("<MXExecutor arguments: %s; outputs: %s>\n", paste(names(x$arg.arrays), collapse = ", "),
              paste(names(x$outputs), collapse = ", ")))
  invisible(x)
}

# Binds `symbol` with every array allocated from the input shapes given in `...` (R's dim
# order, e.g. data = c(784, 128)). grad.req: "null", "write" or "add", for every argument
# but those in fixed.param (which get none).
mx.simple.bind <- function(symbol, ctx = mx.ctx.default(), grad.req = "null", fixed.param = NULL, ...) {
  shapes <- list(...)
  req <- grad.req
  if (!is.null(fixed.param)) {
    args <- setdiff(arguments(symbol), fixed.param)
    req <- paste0("{", paste(sprintf("\"%s\": \"%s\"", args, grad.req), collapse = ", "), "}")
  }
  handle <- weft_executor_simple_bind(symbol, ctx, NULL, .weft_shapes_json(shapes), NULL, req)
  .weft_executor(handle, symbol)
}

# Binds `symbol` to the arrays given (lists in the order of arguments(symbol) and
# auxiliary.states(symbol), or named); grad.reqs as in mx.simple.bind, per argument or one
# for all; gradient arrays are allocated for the arguments that want one.
mx.symbol.bind <- function(symbol, ctx = mx.ctx.default(), arg.arrays, aux.arrays = list(), grad.reqs = "null") {
  args <- arguments(symbol)
  aux <- auxiliary.states(symbol)
  # Arrays named by exactly the symbol's names are taken by name; otherwise by position,
  # whatever their names, as MXNet's R package binds them.
  order <- function(arrays, nms, what) {
    if (!is.null(names(arrays)) && length(arrays) == length(nms) && setequal(names(arrays), nms)) {
      arrays <- arrays[nms]
    } else if (length(arrays) != length(nms)) {
      missing <- if (is.null(names(arrays))) character() else setdiff(nms, names(arrays))
      stop(sprintf("mx.symbol.bind: %d %s arrays for the %d %s%s of the symbol (%s)%s", length(arrays), what,
                   length(nms), what, if (length(nms) == 1) "" else "s", paste(nms, collapse = ", "),
                   if (length(missing)) paste0("; none named ", paste(missing, collapse = ", ")) else ""),
           call. = FALSE)
    }
    lapply(arrays, function(a) if (inherits(a, "MXNDArray")) a else mx.nd.array(a, ctx))
  }
  arg.arrays <- order(arg.arrays, args, "argument")
  aux.arrays <- order(aux.arrays, aux, "auxiliary")
  # One request for all, or one per argument: a character vector or (as MXNet's demos
  # write it) a list, in argument order or named by argument.
  if (is.list(grad.reqs)) grad.reqs <- unlist(grad.reqs)
  if (!is.null(names(grad.reqs)) && all(args %in% names(grad.reqs))) grad.reqs <- grad.reqs[args]
  reqs <- rep_len(as.character(grad.reqs), length(arg.arrays))
  grads <- vector("list", length(arg.arrays))
  for (i in seq_along(arg.arrays)) {
    if (reqs[i] != "null") grads[[i]] <- mx.nd.zeros(dim(arg.arrays[[i]]), ctx)
  }
  handle <- weft_executor_bind(symbol, ctx, unname(arg.arrays), grads, reqs, unname(aux.arrays))
  .weft_executor(handle, symbol)
}

mx.exec.forward <- function(exec, is.train = TRUE) invisible(weft_executor_forward(exec$handle, as.integer(is.train)))

mx.exec.backward <- function(exec, out.grads = NULL) {
  if (inherits(out.grads, "MXNDArray")) out.grads <- list(out.grads)
  invisible(weft_executor_backward(exec$handle, out.grads))
}

# Copies values (MXNDArrays or R arrays) into the executor's arrays of one kind.
.weft_update_arrays <- function(targets, values, match.name, skip.null, what) {
  if (match.name) {
    unknown <- setdiff(names(values), names(targets))
    if (length(unknown)) stop(sprintf("%s: no array named %s", what, paste(unknown, collapse = ", ")), call. = FALSE)
    keys <- names(values)
  } else {
    if (length(values) != length(targets)) {
      stop(sprintf("%s: expected %d arrays, got %d", what, length(targets), length(values)), call. = FALSE)
    }
    keys <- seq_along(values)
  }
  for (k in keys) {
    v <- values[[k]]
    if (is.null(v)) {
      if (skip.null) next
      stop(sprintf("%s: NULL value for %s", what, k), call. = FALSE)
    }
    dst <- targets[[k]]
    if (inherits(v, "MXNDArray")) {
      if (!identical(dim(v), dim(dst))) {
        stop(sprintf("%s: %s has dim c(%s), the executor's c(%s)", what, k, paste(dim(v), collapse = ", "),
                     paste(dim(dst), collapse = ", ")), call. = FALSE)
      }
      weft_ndarray_copy_to(v, dst)
    } else {
      .Call(C_weft_r_nd_copy_from_r, dst, v)
    }
  }
  invisible(NULL)
}

mx.exec.update.arg.arrays <- function(exec, arg.arrays, match.name = FALSE, skip.null = FALSE) {
  .weft_update_arrays(exec$arg.arrays, arg.arrays, match.name, skip.null, "mx.exec.update.arg.arrays")
}

mx.exec.update.aux.arrays <- function(exec, aux.arrays, match.name = FALSE, skip.null = FALSE) {
  .weft_update_arrays(exec$aux.arrays, aux.arrays, match.name, skip.null, "mx.exec.update.aux.arrays")
}

mx.exec.update.grad.arrays <- function(exec, grad.arrays, match.name = FALSE, skip.null = FALSE) {
  .weft_update_arrays(exec$grad.arrays, grad.arrays, match.name, skip.null, "mx.exec.update.grad.arrays")
}
