# Training over buckets of sequences of different lengths (MXNet's mx.io.bucket.iter and
# mx.model.buckets): one executor per bucket, all sharing the parameter arrays.

# Batches from `buckets`, a list named by sequence length whose entries are
# list(data = <seq.len x samples matrix>, label = <vector or matrix, last dim over samples>).
# Each epoch visits every batch of every bucket (in bucket order, or in a random order with
# shuffle); bucketID names the bucket of the current batch (its value: the batch's number in
# the bucket). value() gives data, label and seq.mask (per sample, the number of entries that
# are not data.mask.element). A bucket's last batch is completed from its first samples.
mx.io.bucket.iter <- function(buckets, batch.size, data.mask.element = 0, shuffle = FALSE, seed = 123) {
  if (!is.list(buckets) || length(buckets) == 0 || is.null(names(buckets)) || any(names(buckets) == "")) {
    stop("mx.io.bucket.iter: buckets must be a non-empty list named by sequence length", call. = FALSE)
  }
  for (b in names(buckets)) {
    x <- buckets[[b]]
    if (!is.list(x) || !is.matrix(x$data) || is.null(x$label)) {
      stop(sprintf("mx.io.bucket.iter: bucket '%s' must be list(data = <matrix>, label = )", b), call. = FALSE)
    }
    nlab <- if (is.null(dim(x$label))) length(x$label) else utils::tail(dim(x$label), 1)
    if (nlab != ncol(x$data)) {
      stop(sprintf("mx.io.bucket.iter: bucket '%s' has %d samples of data but %d labels", b, ncol(x$data), nlab),
           call. = FALSE)
    }
  }
  batch.size <- as.integer(batch.size)
  if (batch.size < 1) stop("mx.io.bucket.iter: batch.size must be at least 1", call. = FALSE)
  if (shuffle) set.seed(seed)
  sizes <- vapply(buckets, function(x) ncol(x$data), 1L)
  per.bucket <- as.integer(ceiling(sizes / batch.size))
  names(per.bucket) <- names(buckets)
  take <- function(a, idx) if (is.null(dim(a))) a[idx] else a[, idx, drop = FALSE]
  it <- new.env(parent = emptyenv())
  st <- new.env(parent = emptyenv())
  st$order <- lapply(sizes, seq_len)
  st$plan <- integer(0)
  st$pos <- 0L
  it$bucketID <- NULL
  it$reset <- function() {
    plan <- unlist(lapply(names(per.bucket), function(b) stats::setNames(seq_len(per.bucket[[b]]), rep(b, per.bucket[[b]]))))
    if (shuffle) {
      plan <- plan[sample.int(length(plan))]
      st$order <- lapply(sizes, sample.int)
    }
    st$plan <- plan
    st$pos <- 0L
    it$bucketID <- NULL
    invisible(NULL)
  }
  it$iter.next <- function() {
    if (st$pos >= length(st$plan)) return(FALSE)
    st$pos <- st$pos + 1L
    it$bucketID <- st$plan[st$pos]
    TRUE
  }
  current <- function() {
    if (is.null(it$bucketID)) stop("mx.io.bucket.iter: call iter.next() first", call. = FALSE)
    b <- names(it$bucketID)
    k <- it$bucketID[[1]]
    idx <- (k - 1L) * batch.size + seq_len(batch.size)
    pad <- sum(idx > sizes[[b]])
    list(bucket = b, idx = st$order[[b]][((idx - 1L) %% sizes[[b]]) + 1L], pad = as.integer(pad))
  }
  it$value <- function() {
    cur <- current()
    x <- buckets[[cur$bucket]]
    data <- x$data[, cur$idx, drop = FALSE]
    list(data = mx.nd.array(data), seq.mask = mx.nd.array(colSums(data != data.mask.element)),
         label = mx.nd.array(take(x$label, cur$idx)))
  }
  it$num.pad <- function() current()$pad
  it$free <- function() invisible(NULL)
  it$finalize <- it$free
  class(it) <- c("MXBucketIter", "MXDataIter")
  it
}

mx.model.buckets <- function(symbol, train.data, eval.data = NULL, metric = NULL, arg.params = NULL,
                             aux.params = NULL, fixed.params = NULL, num.round = 1, begin.round = 1,
                             initializer = mx.init.uniform(0.01), optimizer = "sgd", ctx = NULL,
                             batch.end.callback = NULL, epoch.end.callback = NULL, kvstore = "local",
                             verbose = TRUE, metric_cpu = TRUE, ...) {
  fun <- "mx.model.buckets"
  ctxs <- .weft_ctx_list(ctx, fun)
  ndevice <- length(ctxs)
  ctx <- ctxs[[1]]
  if (!(is.character(kvstore) && kvstore == "local") && !is.null(kvstore)) {
    stop("mx.model.buckets: only kvstore = \"local\" is supported (no distributed store)", call. = FALSE)
  }
  for (d in list(train.data, eval.data)) {
    if (!is.null(d) && !.weft_is_iter_like(d)) {
      stop(sprintf("mx.model.buckets: expected a data iterator, got %s", class(d)[1]), call. = FALSE)
    }
  }
  bucket_symbol <- function(iter) {
    if (!is.list(symbol) || is.mx.symbol(symbol)) return(symbol)
    b <- names(iter$bucketID)
    if (is.null(b) || is.null(symbol[[b]])) {
      stop(sprintf("mx.model.buckets: no symbol for bucket '%s' (symbols for: %s)",
                   if (is.null(b)) "NULL" else b, paste(names(symbol), collapse = ", ")), call. = FALSE)
    }
    symbol[[b]]
  }
  first <- .weft_first_batch(train.data)
  sym_ini <- bucket_symbol(train.data)
  args <- arguments(sym_ini)
  # Arguments fed from the batch: those named by its fields, and the label argument (the one
  # ending in "label") from the "label" field.
  input.names <- intersect(names(first), args)
  fields <- stats::setNames(input.names, input.names)
  label.arg <- .weft_label_name(sym_ini, input.names)
  if (!is.null(first$label) && !is.null(label.arg) && !(label.arg %in% input.names)) {
    input.names <- c(input.names, label.arg)
    fields[[label.arg]] <- "label"
  }
  if (length(input.names) == 0) {
    stop(sprintf("mx.model.buckets: the batch's fields (%s) name no argument of the symbol",
                 paste(names(first), collapse = ", ")), call. = FALSE)
  }
  shapes <- do.call(mx.symbol.infer.shape, c(list(sym_ini), lapply(fields, function(f) dim(first[[f]]))))
  if (is.null(shapes)) stop("mx.model.buckets: the batch's shapes do not determine every argument's shape", call. = FALSE)
  # Parameters named as MXNet's initializers know them (weights, biases, gamma, beta) are
  # drawn and trained unless fixed; other arguments (e.g. initial RNN states) stay zeros.
  param.shapes <- shapes$arg.shapes[setdiff(args, input.names)]
  drawn <- grepl("(weight|bias|gamma|beta)$", names(param.shapes))
  known <- mx.init.create(initializer, param.shapes[drawn], ctx, skip.unknown = TRUE)
  params <- lapply(param.shapes, function(s) mx.nd.zeros(s, ctx))
  params[names(known)] <- known
  for (n in intersect(names(arg.params), names(params))) params[[n]] <- mx.nd.copyto(arg.params[[n]], ctx)
  trained <- setdiff(names(known), fixed.params)
  aux <- mx.init.create(initializer, shapes$aux.shapes, ctx, skip.unknown = FALSE)
  for (n in intersect(names(aux.params), names(aux))) aux[[n]] <- mx.nd.copyto(aux.params[[n]], ctx)
  if (is.character(optimizer)) {
    batch.size <- utils::tail(dim(first[[fields[[1]]]]), 1)
    optimizer <- mx.opt.create(optimizer, rescale.grad = 1 / batch.size, ...)
  }
  # One updater, on the first context's parameters; with several contexts each has copies of
  # the parameters and auxiliary states, and every batch is split over them as in
  # mx.model.FeedForward.create.
  updater <- mx.opt.get.updater(optimizer, params[trained])
  dev.params <- c(list(params), lapply(ctxs[-1], function(c) lapply(params, function(p) mx.nd.copyto(p, c))))
  dev.aux <- c(list(aux), lapply(ctxs[-1], function(c) lapply(aux, function(a) mx.nd.copyto(a, c))))
  execs <- list()
  # The executor of the current batch's bucket on context d: bound once per bucket, input
  # shapes and context, on that context's shared parameter and auxiliary arrays.
  exec_for <- function(iter, b, d) {
    sym <- bucket_symbol(iter)
    key <- paste(c(d, names(iter$bucketID), vapply(input.names, function(n) paste(dim(b[[fields[[n]]]]), collapse = "x"), "")),
                 collapse = "/")
    if (is.null(execs[[key]])) {
      sargs <- arguments(sym)
      inputs <- stats::setNames(lapply(input.names, function(n) mx.nd.zeros(dim(b[[fields[[n]]]]), ctxs[[d]])), input.names)
      missing <- setdiff(sargs, c(input.names, names(params)))
      if (length(missing)) {
        stop(sprintf("mx.model.buckets: bucket '%s' has arguments the first bucket lacks: %s", names(iter$bucketID),
                     paste(missing, collapse = ", ")), call. = FALSE)
      }
      reqs <- ifelse(sargs %in% trained, "write", "null")
      args.d <- dev.params[[d]]
      if (ndevice > 1) {
        # Arguments neither fed nor trained (initial RNN states) may have a batch dim: a
        # context's slice gets zeros of its own shape for them.
        given <- lapply(stats::setNames(input.names, input.names), function(n) dim(b[[fields[[n]]]]))
        slice.shapes <- do.call(mx.symbol.infer.shape, c(list(sym), given))$arg.shapes
        for (n in setdiff(names(args.d), trained)) {
          s <- slice.shapes[[n]]
          if (!is.null(s) && !identical(as.integer(s), as.integer(dim(args.d[[n]])))) args.d[[n]] <- mx.nd.zeros(s, ctxs[[d]])
        }
      }
      execs[[key]] <<- mx.symbol.bind(sym, ctxs[[d]], arg.arrays = c(inputs, args.d)[sargs],
                                      aux.arrays = dev.aux[[d]][auxiliary.states(sym)], grad.reqs = reqs)
    }
    execs[[key]]
  }
  label_of <- function(b) if (!is.null(b$label)) b$label else b[[fields[[length(fields)]]]]
  run_epoch <- function(iter, is.train, state) {
    iter$reset()
    nbatch <- 0
    while (isTRUE(iter$iter.next())) {
      b <- .weft_batch(iter)
      # Every field's last dim runs over the batch's sequences: each context gets a slice.
      parts <- if (ndevice == 1) list(b) else {
        slices <- .weft_batch_slices(utils::tail(dim(b[[fields[[1]]]]), 1), ndevice, fun)
        lapply(slices, function(s) lapply(b, .weft_slice_samples, s = s, whole = FALSE))
      }
      used <- lapply(seq_len(ndevice), function(d) {
        exec <- exec_for(iter, parts[[d]], d)
        for (n in input.names) weft_ndarray_copy_to(parts[[d]][[fields[[n]]]], exec$arg.arrays[[n]])
        mx.exec.forward(exec, is.train = is.train)
        if (is.train) mx.exec.backward(exec)
        exec
      })
      if (is.train) {
        .weft_sum_into_first(lapply(used, function(e) e$grad.arrays), trained, ctx)
        updater(params[trained], used[[1]]$grad.arrays[trained])
        for (d in seq_len(ndevice)[-1]) for (n in trained) weft_ndarray_copy_to(params[[n]], dev.params[[d]][[n]])
      }
      if (!is.null(metric)) {
        for (d in seq_len(ndevice)) {
          state <- metric$update(as.array(label_of(parts[[d]])), as.array(used[[d]]$outputs[[1]]), state)
        }
      }
      nbatch <- nbatch + 1
      if (is.train && !is.null(batch.end.callback)) {
        env$train.metric <- state
        batch.end.callback(iteration, nbatch, env, verbose)
      }
    }
    state
  }
  env <- new.env(parent = emptyenv())
  env$metric <- metric
  on.exit(for (e in execs) e$free())
  model <- NULL
  for (iteration in seq(begin.round, num.round)) {
    env$train.metric <- run_epoch(train.data, TRUE, if (is.null(metric)) NULL else metric$init())
    if (!is.null(metric) && verbose) {
      r <- metric$get(env$train.metric)
      message(sprintf("[%d] Train-%s=%f", iteration, r$name, r$value))
    }
    env$eval.metric <- NULL
    if (!is.null(eval.data)) {
      env$eval.metric <- run_epoch(eval.data, FALSE, if (is.null(metric)) NULL else metric$init())
      if (!is.null(metric) && verbose) {
        r <- metric$get(env$eval.metric)
        message(sprintf("[%d] Validation-%s=%f", iteration, r$name, r$value))
      }
    }
    # Auxiliary states (statistics each context gathered) averaged over the contexts.
    avg.aux <- lapply(names(aux), function(n) .weft_mean_on(lapply(dev.aux, function(a) a[[n]]), ctx))
    model <- structure(list(symbol = sym_ini, arg.params = .weft_copy_params(params[names(known)]),
                            aux.params = stats::setNames(avg.aux, names(aux))), class = "MXFeedForwardModel")
    env$model <- model
    if (!is.null(epoch.end.callback) && identical(epoch.end.callback(iteration, 0, env, verbose), FALSE)) break
  }
  model
}
