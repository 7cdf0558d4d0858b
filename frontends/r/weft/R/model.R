# Training and prediction with a feed-forward network, and checkpoints in the format of
# the Python front end: prefix-symbol.json and prefix-%04d.params with arg:/aux: keys.

# The training or prediction data as an iterator: an iterator (this package's, or a user's
# following MXNet's protocol, see .weft_is_iter_like) as it is; list(data =, label =); a named
# list of arrays (one per input, labels under "label" or in `y`); or an R array with `y`.
.weft_as_iter <- function(X, y, batch.size, shuffle) {
  if (.weft_is_iter_like(X)) return(X)
  if (is.list(X) && !is.object(X)) {
    if (is.null(names(X)) || any(names(X) == "")) {
      stop(sprintf("the data is a list of %d arrays without names: name them by input (and \"label\")", length(X)),
           call. = FALSE)
    }
    label <- if (!is.null(X$label)) X$label else y
    arrays <- X[names(X) != "label"]
    if (identical(names(arrays), "data")) arrays <- arrays$data
    return(mx.io.arrayiter(arrays, label, batch.size, shuffle))
  }
  mx.io.arrayiter(X, y, batch.size, shuffle)
}

# The first batch of `iter` (after a reset), to learn the input shapes.
.weft_first_batch <- function(iter) {
  iter$reset()
  if (!isTRUE(iter$iter.next())) stop("the data iterator gives no batch", call. = FALSE)
  .weft_batch(iter)
}

# The batch of `iter` as a named list of MXNDArrays (user iterators may give R arrays).
.weft_batch <- function(iter) {
  b <- iter$value()
  if (!is.list(b) || is.null(names(b))) {
    stop(sprintf("the data iterator's value() must give a named list (data, label, ...), got %s", class(b)[1]),
         call. = FALSE)
  }
  b <- b[!vapply(b, is.null, TRUE)]
  lapply(b, function(a) if (is.mx.ndarray(a)) a else mx.nd.array(a))
}

.weft_dim <- function(a) if (is.mx.ndarray(a)) dim(a) else if (is.null(dim(a))) length(a) else dim(a)

# The batch's field for each of `names`: fields go by name, and MXNet's "label" field
# stands for a single output (the label argument of the symbol) of another name.
.weft_fields <- function(b, names, outputs = character(0)) {
  out <- lapply(names, function(n) {
    v <- b[[n]]
    if (is.null(v) && n %in% outputs && length(outputs) == 1) v <- b$label
    if (is.null(v)) {
      stop(sprintf("the data iterator's batch has no field '%s' (it has: %s)", n, paste(names(b), collapse = ", ")),
           call. = FALSE)
    }
    v
  })
  stats::setNames(out, names)
}

# `a` (an R array whose last dim runs over samples) without its last samples beyond `keep`.
.weft_unpad <- function(a, keep) {
  d <- .weft_dim(a)
  if (length(d) == 1) return(as.vector(a)[seq_len(keep)])
  if (keep == d[length(d)]) return(array(a, d))
  array(array(a, c(prod(d[-length(d)]), d[length(d)]))[, seq_len(keep), drop = FALSE], c(d[-length(d)], keep))
}

# The model's inputs for an iterator's batch `b`: `input.names` when given; otherwise the
# batch's fields that are arguments of `symbol` but not its outputs (labels) or parameters;
# "data" when none is.
.weft_input_names <- function(symbol, b, input.names, exclude) {
  if (!is.null(input.names)) return(as.character(input.names))
  found <- setdiff(intersect(names(b), arguments(symbol)), exclude)
  if (length(found)) found else "data"
}

# Runs `symbol` forward (inference) over `iter` with `params`, calling fun(outputs as R
# arrays without padding, batch, samples kept) per batch. `inputs`: the names of the
# batch's fields to feed (NULL: every field that is an argument of the symbol and not a
# parameter).
.weft_forward_iter <- function(symbol, arg.params, aux.params, iter, ctx, inputs, fun) {
  first <- .weft_first_batch(iter)
  if (is.null(inputs)) {
    inputs <- setdiff(intersect(names(first), arguments(symbol)), c(names(arg.params), names(aux.params)))
    if (length(inputs) == 0) {
      stop(sprintf("the data iterator's fields (%s) name none of the model's inputs (%s)",
                   paste(names(first), collapse = ", "),
                   paste(setdiff(arguments(symbol), names(arg.params)), collapse = ", ")), call. = FALSE)
    }
  }
  shapes <- lapply(.weft_fields(first, inputs), dim)
  exec <- do.call(mx.simple.bind, c(list(symbol, ctx = ctx, grad.req = "null"), shapes))
  on.exit(exec$free())
  mx.exec.update.arg.arrays(exec, arg.params[intersect(names(arg.params), names(exec$arg.arrays))],
                            match.name = TRUE)
  if (length(exec$aux.arrays)) mx.exec.update.aux.arrays(exec, aux.params, match.name = TRUE)
  iter$reset()
  while (isTRUE(iter$iter.next())) {
    b <- .weft_batch(iter)
    fields <- .weft_fields(b, inputs)
    for (n in inputs) weft_ndarray_copy_to(fields[[n]], exec$arg.arrays[[n]])
    mx.exec.forward(exec, is.train = FALSE)
    d <- dim(fields[[1]])
    keep <- d[length(d)] - iter$num.pad()
    outs <- lapply(exec$outputs, function(o) {
      a <- as.array(o)
      d <- .weft_dim(a)
      if (length(d) == 1) a[seq_len(keep)] else array(a, c(prod(d[-length(d)]), d[length(d)]))[, seq_len(keep), drop = FALSE]
    })
    fun(outs, b, keep)
  }
  invisible(NULL)
}

.weft_copy_params <- function(arrays) lapply(arrays, function(a) mx.nd.copyto(a, weft_ndarray_get_context(a)))

# MXNet's array.layout for an R matrix X: "colmajor" (one sample per column, this package's
# convention), "rowmajor" (one sample per row, as data frames come: transposed here), or
# "auto": the orientation that matches `nsamples` (training: the labels' count) or that
# fits the model (`fits(features)`, prediction); colmajor when both do.
.weft_layout <- function(X, layout, nsamples = NULL, fits = NULL) {
  if (!is.matrix(X)) return(X)
  layout <- match.arg(layout, c("auto", "colmajor", "rowmajor"))
  if (layout == "auto") {
    col_ok <- if (!is.null(nsamples)) ncol(X) == nsamples else fits(nrow(X))
    row_ok <- if (!is.null(nsamples)) nrow(X) == nsamples else fits(ncol(X))
    if (!col_ok && !row_ok) {
      stop(sprintf("array.layout = \"auto\": a %d x %d matrix fits neither layout (%s)", nrow(X), ncol(X),
                   if (is.null(nsamples)) "the model's input size" else sprintf("%d samples", nsamples)), call. = FALSE)
    }
    layout <- if (col_ok) "colmajor" else "rowmajor"
  }
  if (layout == "rowmajor") t(X) else X
}

# One context: MXNet takes a list of them for data-parallel training on several devices,
# which this package does not do (a dist kvstore spreads work over processes instead).
.weft_one_ctx <- function(ctx, fun) {
  if (is.null(ctx)) return(mx.ctx.default())
  if (is.list(ctx) && !is.mx.context(ctx)) {
    if (length(ctx) != 1 || !is.mx.context(ctx[[1]])) {
      stop(sprintf("%s: ctx must be one context (or a list of one); got a list of %d", fun, length(ctx)), call. = FALSE)
    }
    ctx <- ctx[[1]]
  }
  if (!is.mx.context(ctx)) stop(sprintf("%s: ctx must be an MXContext, got %s", fun, class(ctx)[1]), call. = FALSE)
  ctx
}

# The contexts to train on: one context or a list of them. With several, training is data
# parallel as MXNet's: each batch is split over them (one executor each), their gradients
# are summed, and every copy of the weights takes the same update.
.weft_ctx_list <- function(ctx, fun) {
  if (is.null(ctx)) return(list(mx.ctx.default()))
  if (is.mx.context(ctx)) return(list(ctx))
  if (!is.list(ctx) || length(ctx) == 0 || !all(vapply(ctx, is.mx.context, TRUE))) {
    stop(sprintf("%s: ctx must be a context or a list of contexts, got %s", fun,
                 if (is.list(ctx)) sprintf("a list of %d (%s)", length(ctx), paste(vapply(ctx, function(c) class(c)[1], ""), collapse = ", "))
                 else class(ctx)[1]), call. = FALSE)
  }
  unname(ctx)
}

# MXNet's split of a batch of n samples over k devices: ceiling(n / k) samples each, the
# last slice smaller; each as c(begin, end), 0-based with end excluded.
.weft_batch_slices <- function(n, k, fun) {
  step <- ceiling(n / k)
  slices <- lapply(seq_len(k) - 1, function(i) c(min(i * step, n), min((i + 1) * step, n)))
  empty <- which(vapply(slices, function(s) s[2] <= s[1], TRUE))
  if (length(empty)) {
    stop(sprintf("%s: a batch of %d samples cannot be split over %d contexts (context %d would get none); use a larger array.batch.size or fewer contexts",
                 fun, n, k, empty[1]), call. = FALSE)
  }
  slices
}

# Adds every other context's gradients of `names` into the first context's (`grads`: one
# list of gradient arrays per context, the first on `ctx`).
.weft_sum_into_first <- function(grads, names, ctx) {
  for (g in grads[-1]) {
    for (n in names) mx.nd.elemwise.add(grads[[1]][[n]], mx.nd.copyto(g[[n]], ctx), out = grads[[1]][[n]])
  }
}

# The mean of one array per context, on `ctx` (a copy there when there is one context).
.weft_mean_on <- function(arrays, ctx) {
  if (length(arrays) == 1) return(mx.nd.copyto(arrays[[1]], ctx))
  Reduce(`+`, lapply(arrays, mx.nd.copyto, ctx = ctx)) / length(arrays)
}

# `a` (an MXNDArray whose last R dim runs over samples) cut to the samples of slice `s`.
.weft_slice_samples <- function(a, s, whole) if (whole) a else mx.nd.slice.axis(a, axis = 0, begin = s[1], end = s[2])

mx.model.FeedForward.create <- function(symbol, X, y = NULL, ctx = NULL, begin.round = 1, num.round = 10,
                                        optimizer = "sgd", initializer = mx.init.uniform(0.01), eval.data = NULL,
                                        eval.metric = NULL, epoch.end.callback = NULL,
                                        batch.end.callback = NULL, array.batch.size = 128, array.layout = "auto",
                                        kvstore = "local", verbose = TRUE, arg.params = NULL, aux.params = NULL,
                                        input.names = NULL, output.names = NULL, fixed.param = NULL,
                                        allow.extra.params = FALSE, metric_cpu = TRUE, ...) {
  fun <- "mx.model.FeedForward.create"
  ctxs <- .weft_ctx_list(ctx, fun)
  ndevice <- length(ctxs)
  ctx <- ctxs[[1]]
  if (is.matrix(X) && !is.null(y)) X <- .weft_layout(X, array.layout, nsamples = if (is.null(dim(y))) length(y) else rev(dim(y))[1])
  train <- .weft_as_iter(X, y, array.batch.size, TRUE)
  if (!is.null(eval.data)) {
    if (is.list(eval.data) && !is.object(eval.data) && is.matrix(eval.data$data) && !is.null(eval.data$label)) {
      eval.data$data <- .weft_layout(eval.data$data, array.layout, nsamples = length(eval.data$label))
    }
    eval.data <- .weft_as_iter(eval.data, NULL, array.batch.size, FALSE)
  }
  if (allow.extra.params) {
    arg.params <- arg.params[names(arg.params) %in% arguments(symbol)]
    aux.params <- aux.params[names(aux.params) %in% auxiliary.states(symbol)]
  } else {
    extra <- c(setdiff(names(arg.params), arguments(symbol)), setdiff(names(aux.params), auxiliary.states(symbol)))
    if (length(extra)) {
      stop(sprintf("%s: arg.params/aux.params name %s, which the symbol does not have (allow.extra.params = TRUE drops them)",
                   fun, paste(extra, collapse = ", ")), call. = FALSE)
    }
  }
  first <- .weft_first_batch(train)
  # Outputs (labels): output.names, or MXNet's default, the argument whose name ends in "label".
  label.names <- if (!is.null(output.names)) as.character(output.names) else .weft_label_name(symbol, input.names)
  data.names <- .weft_input_names(symbol, first, input.names, c(label.names, names(arg.params), names(aux.params)))
  fed <- c(data.names, label.names)
  missing <- setdiff(fed, arguments(symbol))
  if (length(missing)) {
    stop(sprintf("%s: the symbol has no argument %s (its arguments: %s)",
                 fun, paste(missing, collapse = ", "), paste(arguments(symbol), collapse = ", ")), call. = FALSE)
  }
  first.fields <- .weft_fields(first, fed, label.names)
  batch.size <- utils::tail(dim(first.fields[[1]]), 1)
  slices <- .weft_batch_slices(batch.size, ndevice, fun)
  if (verbose) message(sprintf("Start training with %d devices", ndevice))
  execs <- lapply(seq_len(ndevice), function(i) {
    shapes <- lapply(first.fields, function(f) {
      d <- dim(f)
      d[length(d)] <- slices[[i]][2] - slices[[i]][1]
      d
    })
    do.call(mx.simple.bind, c(list(symbol, ctx = ctxs[[i]], grad.req = "write",
                                   fixed.param = unique(c(fed, fixed.param))), shapes))
  })
  on.exit(for (e in execs) e$free())
  exec <- execs[[1]]
  param.names <- setdiff(names(exec$arg.arrays), fed)
  # Every executor starts from the same values: the given ones, or one draw of the initializer.
  for (n in param.names) {
    v <- if (!is.null(arg.params[[n]])) arg.params[[n]] else initializer(n, dim(exec$arg.arrays[[n]]), ctx)
    for (e in execs) mx.exec.update.arg.arrays(e, stats::setNames(list(v), n), match.name = TRUE)
  }
  for (n in names(exec$aux.arrays)) {
    v <- if (!is.null(aux.params[[n]])) aux.params[[n]] else initializer(n, dim(exec$aux.arrays[[n]]), ctx)
    for (e in execs) mx.exec.update.aux.arrays(e, stats::setNames(list(v), n), match.name = TRUE)
  }
  # fixed.param: kept at their initial values (no gradient, no update).
  trained <- setdiff(param.names, fixed.param)
  # A non-local store sums every worker's gradients; each worker then applies the same
  # update to the same weights (rank 0's initial values, which init gives every worker).
  kv <- if (inherits(kvstore, "MXKVStore")) kvstore else if (kvstore != "local") mx.kv.create(kvstore) else NULL
  workers <- 1
  if (!is.null(kv)) {
    kv$init(param.names, exec$arg.arrays[param.names])
    kv$pull(param.names, exec$arg.arrays[param.names])
    workers <- kv$num.workers
  }
  if (is.character(optimizer)) optimizer <- mx.opt.create(optimizer, rescale.grad = 1 / (batch.size * workers), ...)
  # One updater, on the first context's weights, for the gradients summed there; the other
  # contexts then take its weights (the same update as one updater per context would make).
  updater <- mx.opt.get.updater(optimizer, exec$arg.arrays[trained])
  # The metric compares the first output with the last output name's field (MXNet's choice).
  metric.label <- if (length(label.names)) label.names[length(label.names)] else NULL
  metric_update <- function(state, outs, b, keep) {
    lab <- if (is.null(metric.label)) b$label else .weft_fields(b, metric.label, label.names)[[1]]
    if (is.null(lab)) stop("eval.metric: the data iterator gives no labels", call. = FALSE)
    eval.metric$update(.weft_unpad(as.array(lab), keep), outs, state)
  }
  # The model's parameters: the weights (the same on every context) and the auxiliary
  # states (statistics each context gathered on its slices) averaged as MXNet does.
  extract <- function() {
    aux <- lapply(names(exec$aux.arrays), function(n) .weft_mean_on(lapply(execs, function(e) e$aux.arrays[[n]]), ctx))
    structure(list(symbol = symbol, arg.params = .weft_copy_params(exec$arg.arrays[param.names]),
                   aux.params = stats::setNames(aux, names(exec$aux.arrays))), class = "MXFeedForwardModel")
  }
  env <- new.env(parent = emptyenv())
  env$metric <- eval.metric
  model <- structure(list(symbol = symbol, arg.params = NULL, aux.params = NULL), class = "MXFeedForwardModel")
  for (iteration in seq(begin.round, num.round)) {
    train$reset()
    nbatch <- 0
    env$train.metric <- if (is.null(eval.metric)) NULL else eval.metric$init()
    while (isTRUE(train$iter.next())) {
      b <- .weft_batch(train)
      fields <- .weft_fields(b, fed, label.names)
      for (i in seq_len(ndevice)) {
        for (n in fed) weft_ndarray_copy_to(.weft_slice_samples(fields[[n]], slices[[i]], ndevice == 1), execs[[i]]$arg.arrays[[n]])
        mx.exec.forward(execs[[i]], is.train = TRUE)
        mx.exec.backward(execs[[i]])
      }
      if (ndevice > 1) .weft_sum_into_first(lapply(execs, function(e) e$grad.arrays), trained, ctx)
      if (!is.null(kv)) kv$pushpull(trained, exec$grad.arrays[trained], exec$grad.arrays[trained])
      updater(exec$arg.arrays[trained], exec$grad.arrays[trained])
      for (e in execs[-1]) for (n in trained) weft_ndarray_copy_to(exec$arg.arrays[[n]], e$arg.arrays[[n]])
      if (!is.null(eval.metric)) {
        keep <- batch.size - train$num.pad()
        pred <- do.call(cbind, lapply(seq_len(ndevice), function(i) {
          p <- as.array(execs[[i]]$outputs[[1]])
          n <- slices[[i]][2] - slices[[i]][1]
          array(p, c(length(p) / n, n))
        }))[, seq_len(keep), drop = FALSE]
        env$train.metric <- metric_update(env$train.metric, pred, b, keep)
      }
      nbatch <- nbatch + 1
      if (!is.null(batch.end.callback)) batch.end.callback(iteration, nbatch, env, verbose)
    }
    if (!is.null(eval.metric) && verbose) {
      r <- eval.metric$get(env$train.metric)
      message(sprintf("[%d] Train-%s=%f", iteration, r$name, r$value))
    }
    model <- extract()
    env$model <- model
    env$eval.metric <- NULL
    if (!is.null(eval.data) && !is.null(eval.metric)) {
      state <- eval.metric$init()
      .weft_forward_iter(symbol, model$arg.params, model$aux.params, eval.data, ctx, data.names,
                         function(outs, b, keep) state <<- metric_update(state, outs[[1]], b, keep))
      env$eval.metric <- state
      if (verbose) {
        r <- eval.metric$get(state)
        message(sprintf("[%d] Validation-%s=%f", iteration, r$name, r$value))
      }
    }
    if (!is.null(epoch.end.callback) && identical(epoch.end.callback(iteration, 0, env, verbose), FALSE)) break
  }
  model
}

.weft_label_name <- function(symbol, data.names) {
  args <- arguments(symbol)
  cand <- args[grepl("label$", args) & !(args %in% data.names)]
  if (length(cand) == 0) NULL else cand[1]
}

predict.MXFeedForwardModel <- function(object, X, ctx = NULL, array.batch.size = 128,
                                       array.layout = "auto", allow.extra.params = FALSE, ...) {
  ctx <- .weft_one_ctx(ctx, "predict")
  if (is.serialized(object)) object <- mx.unserialize(object)
  if (allow.extra.params) {
    object$arg.params <- object$arg.params[names(object$arg.params) %in% arguments(object$symbol)]
  }
  if (is.matrix(X)) {
    # A feature count fits when the parameters inferred for it have the model's shapes.
    fits <- function(features) {
      inferred <- tryCatch(mx.symbol.infer.shape(object$symbol, data = c(features, 1)), weft_error = function(e) NULL)
      !is.null(inferred) && all(vapply(names(object$arg.params), function(n) {
        identical(as.integer(inferred$arg.shapes[[n]]), as.integer(dim(object$arg.params[[n]])))
      }, TRUE))
    }
    X <- .weft_layout(X, array.layout, fits = fits)
  }
  iter <- .weft_as_iter(X, NULL, array.batch.size, FALSE)
  parts <- list()
  .weft_forward_iter(object$symbol, object$arg.params, object$aux.params, iter, ctx, NULL,
                     function(outs, b, keep) parts[[length(parts) + 1]] <<- outs[[1]])
  if (length(parts) && is.null(dim(parts[[1]]))) return(unlist(parts))
  do.call(cbind, parts)
}

print.MXFeedForwardModel <- function(x, ...) {
  if (is.serialized(x)) {
    cat(sprintf("<MXFeedForwardModel (serialized) parameters: %s>\n", paste(names(x$arg.params), collapse = ", ")))
    return(invisible(x))
  }
  cat(sprintf("<MXFeedForwardModel parameters: %s>\n", paste(names(x$arg.params), collapse = ", ")))
  invisible(x)
}

mx.model.save <- function(model, prefix, iteration) {
  model <- mx.unserialize(model)
  mx.symbol.save(model$symbol, sprintf("%s-symbol.json", prefix))
  prefixed <- function(p, kind) if (length(p)) stats::setNames(p, paste0(kind, names(p))) else list()
  params <- c(prefixed(model$arg.params, "arg:"), prefixed(model$aux.params, "aux:"))
  mx.nd.save(params, sprintf("%s-%04d.params", prefix, iteration))
  invisible(NULL)
}

mx.model.load <- function(prefix, iteration) {
  symbol <- mx.symbol.load(sprintf("%s-symbol.json", prefix))
  params <- mx.nd.load(sprintf("%s-%04d.params", prefix, iteration))
  kind <- sub(":.*", "", names(params))
  bad <- setdiff(kind, c("arg", "aux"))
  if (length(bad)) stop(sprintf("mx.model.load: parameter names must start with arg: or aux:, got %s",
                                paste(names(params)[kind %in% bad], collapse = ", ")), call. = FALSE)
  strip <- function(p) stats::setNames(p, sub("^[a-z]+:", "", names(p)))
  structure(list(symbol = symbol, arg.params = strip(params[kind == "arg"]), aux.params = strip(params[kind == "aux"])),
            class = "MXFeedForwardModel")
}

# A multi-layer perceptron: hidden_node sizes with `activation`, then out_node outputs
# with a softmax (or "logistic", "rmse") output layer, trained by mx.model.FeedForward.create.
mx.mlp <- function(data, label, hidden_node = 1, out_node, dropout = NULL, activation = "tanh",
                   out_activation = "softmax", ...) {
  act <- rep_len(activation, length(hidden_node))
  net <- mx.symbol.Variable("data")
  for (i in seq_along(hidden_node)) {
    net <- mx.symbol.FullyConnected(net, num_hidden = hidden_node[i], name = paste0("fc", i))
    net <- mx.symbol.Activation(net, act_type = act[i], name = paste0(act[i], i))
    if (!is.null(dropout)) net <- mx.symbol.Dropout(net, p = dropout, name = paste0("dropout", i))
  }
  net <- mx.symbol.FullyConnected(net, num_hidden = out_node, name = paste0("fc", length(hidden_node) + 1))
  out <- switch(out_activation,
                softmax = mx.symbol.SoftmaxOutput(net, name = "softmax"),
                logistic = mx.symbol.LogisticRegressionOutput(net, name = "logistic"),
                rmse = mx.symbol.LinearRegressionOutput(net, name = "rmse"),
                stop(sprintf("mx.mlp: unknown out_activation '%s'", out_activation), call. = FALSE))
  mx.model.FeedForward.create(out, X = data, y = label, ...)
}

# The parameters of `symbol` for the input and output shapes given (named lists of R dims):
# list(arg.params, aux.params), every argument but the inputs and outputs drawn by
# `initializer`.
mx.model.init.params <- function(symbol, input.shape, output.shape, initializer, ctx = mx.ctx.default()) {
  given <- c(as.list(input.shape), as.list(output.shape))
  shapes <- do.call(mx.symbol.infer.shape, c(list(symbol), given))
  if (is.null(shapes)) {
    stop(sprintf("mx.model.init.params: the shapes of %s do not determine every argument's shape",
                 paste(names(given), collapse = ", ")), call. = FALSE)
  }
  params <- shapes$arg.shapes[setdiff(names(shapes$arg.shapes), names(given))]
  list(arg.params = mx.init.create(initializer, params, ctx, skip.unknown = FALSE),
       aux.params = mx.init.create(initializer, shapes$aux.shapes, ctx, skip.unknown = FALSE))
}

# Models as plain R values, for save()/saveRDS() (MXNDArrays and symbols are handles into
# the engine, which do not survive a session): the symbol as JSON and the parameters as R
# arrays, marked is.serialized = TRUE.
is.serialized <- function(model) isTRUE(model[["is.serialized"]])

mx.serialize <- function(model) {
  if (is.serialized(model)) return(model)
  if (!inherits(model, "MXFeedForwardModel")) {
    stop(sprintf("mx.serialize: expected an MXFeedForwardModel, got %s", class(model)[1]), call. = FALSE)
  }
  structure(list(symbol_json = mx.symbol.tojson(model$symbol),
                 arg.params = lapply(model$arg.params, as.array),
                 aux.params = lapply(model$aux.params, as.array),
                 is.serialized = TRUE),
            class = "MXFeedForwardModel")
}

mx.unserialize <- function(model) {
  if (!is.serialized(model)) return(model)
  structure(list(symbol = mx.symbol.load.json(model$symbol_json),
                 arg.params = lapply(model$arg.params, mx.nd.array),
                 aux.params = lapply(model$aux.params, mx.nd.array)),
            class = "MXFeedForwardModel")
}
