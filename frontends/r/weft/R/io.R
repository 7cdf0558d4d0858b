# Data iterators: the registry's (mx.io.MNISTIter, mx.io.CSVIter, ...) and an iterator over
# R arrays, with one interface: reset(), iter.next(), value() (list(data, label) as
# MXNDArrays), num.pad(), free().

.weft_iter_create <- function(type, params, shaped) {
  if (length(params) && (is.null(names(params)) || any(names(params) == ""))) {
    stop(sprintf("mx.io.%s: parameters go by name", type), call. = FALSE)
  }
  keys <- gsub(".", "_", names(params), fixed = TRUE)
  vals <- vapply(seq_along(params), function(i) {
    v <- params[[i]]
    if (is.character(v)) v <- path.expand(v)
    if (keys[i] %in% shaped) .weft_shape_param(v) else .weft_param(v)
  }, "")
  handle <- weft_dataiter_create(type, keys, vals)
  it <- new.env(parent = emptyenv())
  it$handle <- handle
  it$reset <- function() invisible(weft_dataiter_reset(handle))
  it$iter.next <- function() weft_dataiter_next(handle) == 1L
  it$value <- function() {
    list(data = weft_dataiter_get_data(handle, 0L),
         label = if (weft_dataiter_get_num_label(handle) > 0L) weft_dataiter_get_label(handle, 0L) else NULL)
  }
  it$num.pad <- function() weft_dataiter_get_pad(handle)
  it$free <- function() invisible(weft_dataiter_free(handle))
  it$finalize <- it$free
  class(it) <- "MXDataIter"
  it
}

print.MXDataIter <- function(x, ...) {
  cat("<MXDataIter>\n")
  invisible(x)
}

# Batches of the last dim of `data` (one sample per column of a matrix, as in MXNet's R
# package) and of `label`. `data` may also be a named list of such arrays (the inputs of a
# model with several, each batched the same way); value() then gives each under its name.
# As MXNet's R package: a short last batch holds, past its own samples, those the batch
# before it held in the same places (zeros when there is only one batch), and num.pad() says
# how many places that fills. With shuffle, the order is drawn when the iterator is made (as
# MXNet's) and again at every reset().
mx.io.arrayiter <- function(data, label = NULL, batch.size = 128, shuffle = FALSE) {
  # A vector is one value per sample, batched as a 1-D array (as MXNet's arrayiter does).
  # MXNDArrays (mx.io.extract's result) are read into R arrays, as MXNet's arrayiter does.
  as_samples <- function(a) {
    if (is.mx.ndarray(a)) a <- as.array(a)
    if (is.null(dim(a))) array(a, dim = length(a)) else a
  }
  if (is.mx.ndarray(label)) label <- as.array(label)
  several <- is.list(data) && !is.object(data)
  if (several) {
    if (length(data) == 0 || is.null(names(data)) || any(names(data) == "") || anyDuplicated(names(data))) {
      stop("mx.io.arrayiter: a list of data arrays needs a distinct name for each (the input names)", call. = FALSE)
    }
    if ("label" %in% names(data)) {
      stop("mx.io.arrayiter: 'label' cannot name a data array; give the labels as `label`", call. = FALSE)
    }
    fields <- lapply(data, as_samples)
  } else {
    fields <- list(data = as_samples(data))
  }
  counts <- vapply(fields, function(a) utils::tail(dim(a), 1), 1L)
  n <- counts[[1]]
  if (any(counts != n)) {
    stop(sprintf("mx.io.arrayiter: the data arrays differ in their sample counts (last dims): %s",
                 paste(sprintf("%s %d", names(fields), counts), collapse = ", ")), call. = FALSE)
  }
  # Labels: one per sample, or an array whose last dim runs over samples (several per sample).
  ld <- dim(label)
  if (length(ld) < 2) ld <- NULL
  nlabel <- if (is.null(ld)) length(label) else ld[length(ld)]
  if (!is.null(label) && nlabel != n) {
    stop(sprintf("mx.io.arrayiter: %d samples of data but %d labels", n, nlabel), call. = FALSE)
  }
  batch.size <- as.integer(batch.size)
  if (batch.size < 1) stop("mx.io.arrayiter: batch.size must be at least 1", call. = FALSE)
  it <- new.env(parent = emptyenv())
  state <- new.env(parent = emptyenv())
  state$order <- if (shuffle) sample.int(n) else seq_len(n)
  state$pos <- 0L
  state$current <- NULL
  state$pad <- 0L
  take_last <- function(a, dims, idx) {
    if (length(dims) == 1) return(as.vector(a)[idx])
    if (length(dims) == 2) return(a[, idx, drop = FALSE])
    args <- c(list(a), rep(list(quote(expr = )), length(dims) - 1), list(idx), drop = FALSE)
    do.call(`[`, args)
  }
  it$reset <- function() {
    state$order <- if (shuffle) sample.int(n) else seq_len(n)
    state$pos <- 0L
    invisible(NULL)
  }
  it$iter.next <- function() {
    if (state$pos >= n) return(FALSE)
    slots <- state$pos + seq_len(batch.size)
    past <- slots > n
    state$pad <- as.integer(sum(past))
    slots[past] <- slots[past] - batch.size
    # NA: a place no earlier batch filled, which stays zero.
    state$current <- ifelse(slots >= 1L, state$order[pmax(slots, 1L)], NA_integer_)
    state$pos <- state$pos + batch.size
    TRUE
  }
  # The samples `idx` of `a` (last dim over samples); NA places are zeros.
  batch_of <- function(a, dims, idx) {
    v <- take_last(a, dims, ifelse(is.na(idx), 1L, idx))
    if (anyNA(idx)) {
      per <- length(v) %/% length(idx)
      for (j in which(is.na(idx))) v[(j - 1L) * per + seq_len(per)] <- 0
    }
    v
  }
  it$value <- function() {
    if (is.null(state$current)) stop("mx.io.arrayiter: call iter.next() first", call. = FALSE)
    out <- lapply(fields, function(a) mx.nd.array(batch_of(a, dim(a), state$current)))
    out["label"] <- list(if (is.null(label)) NULL
                         else mx.nd.array(batch_of(label, if (is.null(ld)) length(label) else ld, state$current)))
    out
  }
  it$num.pad <- function() state$pad
  it$free <- function() invisible(NULL)
  # MXNet's iterators have finalize(); custom iterators that wrap them call it.
  it$finalize <- it$free
  class(it) <- c("MXArrayIter", "MXDataIter")
  it
}

# MXNet's R iterators are C++ classes (Rcpp modules) that users extend with
# setRefClass(..., contains = "Rcpp_MXArrayDataIter") and their own reset(), iter.next(),
# value() and num.pad(). These reference classes carry the two names so that such code
# runs; a method the subclass leaves out says so when called.
.weft_iter_base_methods <- function(cls) {
  # Reference class methods run in the object's environment, not this one: the names are
  # put into each body.
  missing_method <- function(m) {
    eval(bquote(function(...) {
      stop(sprintf("%s: a subclass of %s must define the method %s()", class(.self)[1], .(cls), .(m)), call. = FALSE)
    }))
  }
  list(reset = missing_method("reset"), iter.next = missing_method("iter.next"),
       value = missing_method("value"), num.pad = missing_method("num.pad"),
       finalize = function() invisible(NULL))
}
methods::setRefClass("Rcpp_MXArrayDataIter", fields = list(),
                     methods = .weft_iter_base_methods("Rcpp_MXArrayDataIter"))
methods::setRefClass("Rcpp_MXNativeDataIter", fields = list(),
                     methods = .weft_iter_base_methods("Rcpp_MXNativeDataIter"))

.weft_iter_protocol <- c("reset", "iter.next", "value", "num.pad")

# The function `name` of an iterator-like object (a reference class object, an environment
# or a list), or NULL.
.weft_iter_method <- function(x, name) {
  f <- tryCatch({
    if (methods::is(x, "envRefClass")) do.call(`$`, list(x, name))
    else if (is.environment(x) || (is.list(x) && !is.null(names(x)))) x[[name]]
  }, error = function(e) NULL)
  if (is.function(f)) f else NULL
}

# Whether `x` follows MXNet's iterator protocol: reset(), iter.next() (TRUE while there is a
# batch), value() (a named list of the batch's arrays: data, label, or one per input) and
# num.pad() (how many samples at the end of the batch are padding).
.weft_is_iter_like <- function(x) {
  if (inherits(x, "MXDataIter")) return(TRUE)
  all(vapply(.weft_iter_protocol, function(m) !is.null(.weft_iter_method(x, m)), TRUE))
}

# Every batch's `field` ("data" or "label") of `iter`, without the padding of the last
# batch, joined along the last R dim into one MXNDArray; the iterator is reset after.
mx.io.extract <- function(iter, field) {
  if (!.weft_is_iter_like(iter)) {
    stop(sprintf("mx.io.extract: expected a data iterator (reset(), iter.next(), value(), num.pad()), got %s",
                 class(iter)[1]), call. = FALSE)
  }
  parts <- list()
  lead <- NULL
  iter$reset()
  while (iter$iter.next()) {
    v <- iter$value()[[field]]
    if (is.null(v)) stop(sprintf("mx.io.extract: the iterator gives no '%s'", field), call. = FALSE)
    a <- as.array(v)
    d <- if (is.null(dim(a))) length(a) else dim(a)
    keep <- d[length(d)] - iter$num.pad()
    lead <- d[-length(d)]
    parts[[length(parts) + 1]] <- matrix(a, nrow = prod(lead))[, seq_len(keep), drop = FALSE]
  }
  iter$reset()
  if (length(parts) == 0) stop("mx.io.extract: the iterator gives no batch", call. = FALSE)
  all <- do.call(cbind, parts)
  mx.nd.array(if (length(lead) == 0) as.vector(all) else array(all, c(lead, ncol(all))))
}
