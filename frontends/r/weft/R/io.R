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
  class(it) <- "MXDataIter"
  it
}

print.MXDataIter <- function(x, ...) {
  cat("<MXDataIter>\n")
  invisible(x)
}

# Batches of the last dim of `data` (one sample per column of a matrix, as in MXNet's R
# package) and of `label`. The last batch is completed from the start; num.pad() says how
# many samples that added.
mx.io.arrayiter <- function(data, label = NULL, batch.size = 128, shuffle = FALSE) {
  d <- dim(data)
  if (is.null(d)) {
    data <- array(data, dim = c(1, length(data)))
    d <- dim(data)
  }
  n <- d[length(d)]
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
  state$order <- seq_len(n)
  state$pos <- 0L
  state$current <- NULL
  state$pad <- 0L
  take_last <- function(a, dims, idx) {
    if (length(dims) == 2) return(a[, idx, drop = FALSE])
    args <- c(list(a), rep(list(quote(expr = )), length(dims) - 1), list(idx), drop = FALSE)
    do.call(`[`, args)
  }
  take <- function(idx) take_last(data, d, idx)
  it$reset <- function() {
    state$order <- if (shuffle) sample.int(n) else seq_len(n)
    state$pos <- 0L
    invisible(NULL)
  }
  it$iter.next <- function() {
    if (state$pos >= n) return(FALSE)
    idx <- state$pos + seq_len(batch.size)
    state$pad <- as.integer(sum(idx > n))
    idx <- state$order[((idx - 1L) %% n) + 1L]
    state$pos <- state$pos + batch.size
    state$current <- idx
    TRUE
  }
  it$value <- function() {
    if (is.null(state$current)) stop("mx.io.arrayiter: call iter.next() first", call. = FALSE)
    list(data = mx.nd.array(take(state$current)),
         label = if (is.null(label)) NULL
                 else mx.nd.array(if (is.null(ld)) label[state$current] else take_last(label, ld, state$current)))
  }
  it$num.pad <- function() state$pad
  it$free <- function() invisible(NULL)
  class(it) <- c("MXArrayIter", "MXDataIter")
  it
}

# Every batch's `field` ("data" or "label") of `iter`, without the padding of the last
# batch, joined along the last R dim into one MXNDArray; the iterator is reset after.
mx.io.extract <- function(iter, field) {
  if (!inherits(iter, "MXDataIter")) stop(sprintf("mx.io.extract: expected an MXDataIter, got %s", class(iter)[1]),
                                          call. = FALSE)
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
