# MXNDArray: an external pointer on a Weft array. R sees it with its dims reversed over the
# same bytes (an R array of dim c(a, b) is a Weft array of shape (b, a)).

.weft_dtype_code <- function(dtype) {
  code <- .weft_dtype_codes[dtype]
  if (length(dtype) != 1 || is.na(code)) {
    stop(sprintf("unknown dtype '%s' (expected one of %s)", paste(dtype, collapse = ","),
                 paste(names(.weft_dtype_codes), collapse = ", ")), call. = FALSE)
  }
  unname(code)
}

mx.nd.array <- function(src.array, ctx = mx.ctx.default(), dtype = "float32") {
  if (inherits(src.array, "MXNDArray")) return(mx.nd.copyto(src.array, ctx))
  .Call(C_weft_r_nd_from_r, src.array, .weft_dtype_code(dtype), ctx)
}

mx.nd.zeros <- function(shape, ctx = mx.ctx.default(), dtype = "float32") {
  .weft_nd_invoke("_zeros", list(), c(shape = .weft_tuple(rev(shape)), ctx = .weft_ctx_str(ctx),
                                      dtype = dtype), NULL, NULL)
}

mx.nd.ones <- function(shape, ctx = mx.ctx.default(), dtype = "float32") {
  .weft_nd_invoke("_ones", list(), c(shape = .weft_tuple(rev(shape)), ctx = .weft_ctx_str(ctx),
                                     dtype = dtype), NULL, NULL)
}

mx.runif <- function(shape, min = 0, max = 1, ctx = mx.ctx.default()) {
  .weft_nd_invoke("_random_uniform", list(), c(low = .weft_number(min), high = .weft_number(max),
                                               shape = .weft_tuple(rev(shape)),
                                               ctx = .weft_ctx_str(ctx)), NULL, NULL)
}

mx.rnorm <- function(shape, mean = 0, sd = 1, ctx = mx.ctx.default()) {
  .weft_nd_invoke("_random_normal", list(), c(loc = .weft_number(mean), scale = .weft_number(sd),
                                              shape = .weft_tuple(rev(shape)),
                                              ctx = .weft_ctx_str(ctx)), NULL, NULL)
}

mx.nd.copyto <- function(src, ctx = mx.ctx.default()) {
  dst <- weft_ndarray_create(.weft_shape(src), weft_ndarray_get_dtype(src), ctx)
  weft_ndarray_copy_to(src, dst)
  dst
}

mx.nd.dtype <- function(x) weft_dtype_name(weft_ndarray_get_dtype(x))

mx.nd.waitall <- function() invisible(weft_wait_all())

# Weft's (row-major) shape.
.weft_shape <- function(x) {
  s <- weft_ndarray_get_shape(x, 32L)
  s$dims[seq_len(s$ndim)]
}

dim.MXNDArray <- function(x) as.integer(rev(.weft_shape(x)))

length.MXNDArray <- function(x) as.integer(weft_ndarray_get_size(x))

as.array.MXNDArray <- function(x, ...) .Call(C_weft_r_nd_to_r, x)

as.matrix.MXNDArray <- function(x, ...) {
  a <- as.array(x)
  if (length(dim(a)) != 2) stop(sprintf("as.matrix: the array has %d dimensions, not 2", length(dim(a))))
  a
}

print.MXNDArray <- function(x, ...) {
  if (isTRUE(.Call(C_weft_r_is_null_handle, x))) {
    cat("<MXNDArray, freed>\n")
    return(invisible(x))
  }
  cat(sprintf("<MXNDArray %s dim c(%s) on %s>\n", mx.nd.dtype(x), paste(dim(x), collapse = ", "),
              .weft_ctx_str(weft_ndarray_get_context(x))))
  print(as.array(x), ...)
  invisible(x)
}

.weft_as_nd <- function(x, like) {
  if (inherits(x, "MXNDArray")) return(x)
  if (is.numeric(x) || is.logical(x)) return(mx.nd.array(x, dtype = mx.nd.dtype(like)))
  stop(sprintf("expected an MXNDArray or a numeric array, got %s", class(x)[1]), call. = FALSE)
}

# Arithmetic and comparisons: array with array (broadcasting over Weft's shapes), or with
# a scalar on either side.
Ops.MXNDArray <- function(e1, e2) {
  if (missing(e2)) {
    if (.Generic == "-") return(mx.nd.negative(e1))
    if (.Generic == "+") return(e1)
    if (.Generic == "!") return(mx.nd.logical.not(e1))
    stop(sprintf("unary %s is not defined for MXNDArray", .Generic), call. = FALSE)
  }
  both <- c("+" = "broadcast_add", "-" = "broadcast_sub", "*" = "broadcast_mul", "/" = "broadcast_div",
            "^" = "broadcast_power", "%%" = "broadcast_mod", "==" = "broadcast_equal",
            "!=" = "broadcast_not_equal", ">" = "broadcast_greater", ">=" = "broadcast_greater_equal",
            "<" = "broadcast_lesser", "<=" = "broadcast_lesser_equal")
  right <- c("+" = "_plus_scalar", "-" = "_minus_scalar", "*" = "_mul_scalar", "/" = "_div_scalar",
             "^" = "_power_scalar", "%%" = "_mod_scalar", "==" = "_equal_scalar",
             "!=" = "_not_equal_scalar", ">" = "_greater_scalar", ">=" = "_greater_equal_scalar",
             "<" = "_lesser_scalar", "<=" = "_lesser_equal_scalar")
  left <- c("+" = "_plus_scalar", "-" = "_rminus_scalar", "*" = "_mul_scalar", "/" = "_rdiv_scalar",
            "^" = "_rpower_scalar", "%%" = "_rmod_scalar", "==" = "_equal_scalar",
            "!=" = "_not_equal_scalar", ">" = "_lesser_scalar", ">=" = "_lesser_equal_scalar",
            "<" = "_greater_scalar", "<=" = "_greater_equal_scalar")
  if (!(.Generic %in% names(both))) stop(sprintf("%s is not defined for MXNDArray", .Generic), call. = FALSE)
  scalar <- function(v) !inherits(v, "MXNDArray") && is.numeric(v) && length(v) == 1 && is.null(dim(v))
  if (scalar(e2)) return(.weft_nd_invoke(right[[.Generic]], list(e1), c(scalar = .weft_number(e2)), NULL, NULL))
  if (scalar(e1)) return(.weft_nd_invoke(left[[.Generic]], list(e2), c(scalar = .weft_number(e1)), NULL, NULL))
  a <- if (inherits(e1, "MXNDArray")) e1 else .weft_as_nd(e1, e2)
  b <- if (inherits(e2, "MXNDArray")) e2 else .weft_as_nd(e2, e1)
  .weft_nd_invoke(both[[.Generic]], list(a, b), NULL, NULL, NULL)
}

# x[i, j, ...] with one index per R dim: each a contiguous increasing range of positions
# (or missing, for all); gives a new array, which keeps every dim (`drop` is accepted as R
# code passes it, and changes nothing).
"[.MXNDArray" <- function(x, ..., drop = TRUE) {
  d <- dim(x)
  idx <- as.list(substitute(list(...)))[-1]
  if (length(idx) != length(d)) {
    stop(sprintf("MXNDArray indexing: expected %d indices (one per dim), got %d", length(d), length(idx)),
         call. = FALSE)
  }
  begin <- integer(length(d))
  end <- integer(length(d))
  for (k in seq_along(d)) {
    if (identical(idx[[k]], quote(expr = ))) {
      begin[k] <- 0L
      end[k] <- d[k]
      next
    }
    v <- eval(idx[[k]], parent.frame())
    if (!is.numeric(v) || length(v) == 0 || any(diff(v) != 1) || v[1] < 1 || v[length(v)] > d[k]) {
      stop(sprintf("MXNDArray indexing: index %d must be a contiguous increasing range within 1..%d", k, d[k]),
           call. = FALSE)
    }
    begin[k] <- as.integer(v[1] - 1)
    end[k] <- as.integer(v[length(v)])
  }
  mx.nd.slice(x, begin = .weft_tuple(rev(begin)), end = .weft_tuple(rev(end)))
}

mx.nd.save <- function(ndarray, filename) {
  if (inherits(ndarray, "MXNDArray")) ndarray <- list(ndarray)
  if (!is.list(ndarray) || !all(vapply(ndarray, inherits, TRUE, "MXNDArray"))) {
    stop("mx.nd.save: expected an MXNDArray or a list of them", call. = FALSE)
  }
  invisible(weft_ndarray_save(path.expand(filename), unname(ndarray), names(ndarray)))
}

mx.nd.load <- function(filename) {
  lst <- weft_ndarray_load(path.expand(filename))
  on.exit(weft_ndarray_list_free(lst))
  n <- weft_ndarray_list_size(lst)
  out <- lapply(seq_len(n) - 1L, function(i) weft_ndarray_list_get(lst, i))
  if (weft_ndarray_list_has_names(lst) == 1L) {
    names(out) <- vapply(seq_len(n) - 1L, function(i) weft_ndarray_list_name(lst, i), "")
  }
  out
}

# Runs operator `op` on `inputs` (MXNDArrays; NULL entries are inputs not given) with
# `params` (a named character vector); `count` names the parameter that counts variadic
# inputs. With `out`, results go into those arrays.
.weft_nd_invoke <- function(op, inputs, params, count, out) {
  if (!is.null(count)) inputs <- .weft_variadic(op, inputs, count)
  inputs <- inputs[!vapply(inputs, is.null, TRUE)]
  # R numeric and logical arrays are taken as arrays (float32, on the context of the first
  # MXNDArray input): metrics here get R values, and those written for MXNet, whose metrics
  # get MXNDArrays, call mx.nd.* on them.
  nd <- vapply(inputs, inherits, TRUE, "MXNDArray")
  for (i in which(!nd)) {
    v <- inputs[[i]]
    if (!(is.numeric(v) || is.logical(v)) || is.object(v)) {
      stop(sprintf("%s: input %d is a %s, not an MXNDArray or a numeric array", op, i, class(v)[1]), call. = FALSE)
    }
    inputs[[i]] <- mx.nd.array(v, if (any(nd)) ctx(inputs[[which(nd)[1]]]) else mx.ctx.default())
  }
  if (!is.null(count)) params <- c(params, stats::setNames(as.character(length(inputs)), count))
  given <- if (is.null(out)) NULL else if (inherits(out, "MXNDArray")) list(out) else out
  res <- weft_imperative_invoke(.weft_op_handle(op), unname(inputs), names(params), unname(params), given)
  if (!is.null(given)) return(invisible(out))
  if (length(res) == 1) res[[1]] else res
}

# The context (device) an array lives on, as MXNet's ctx(nd).
ctx <- function(nd) {
  if (!is.mx.ndarray(nd)) stop(sprintf("ctx: expected an MXNDArray, got %s", class(nd)[1]), call. = FALSE)
  structure(as.integer(weft_ndarray_get_context(nd)), class = "MXContext")
}
