# Training and prediction with a feed-forward network, and checkpoints in the format of
# the Python front end: prefix-symbol.json and prefix-%04d.params with arg:/aux: keys.

.weft_as_iter <- function(X, y, batch.size, shuffle) {
  if (inherits(X, "MXDataIter")) return(X)
  if (is.list(X) && !is.null(X$data)) return(mx.io.arrayiter(X$data, X$label, batch.size, shuffle))
  mx.io.arrayiter(X, y, batch.size, shuffle)
}

# The first batch of `iter` (after a reset), to learn the input shapes.
.weft_first_batch <- function(iter) {
  iter$reset()
  if (!iter$iter.next()) stop("the data iterator gives no batch", call. = FALSE)
  iter$value()
}

.weft_label_name <- function(symbol, data.name) {
  args <- arguments(symbol)
  cand <- args[grepl("label$", args) & args != data.name]
  if (length(cand) == 0) NULL else cand[1]
}

# Runs `symbol` forward (inference) over `iter` with `params`, calling fun(outputs as R
# arrays without padding, batch) per batch.
.weft_forward_iter <- function(symbol, arg.params, aux.params, iter, ctx, data.name, fun) {
  first <- .weft_first_batch(iter)
  shapes <- list(dim(first$data))
  names(shapes) <- data.name
  exec <- do.call(mx.simple.bind, c(list(symbol, ctx = ctx, grad.req = "null"), shapes))
  on.exit(exec$free())
  mx.exec.update.arg.arrays(exec, arg.params[intersect(names(arg.params), names(exec$arg.arrays))],
                            match.name = TRUE)
  if (length(exec$aux.arrays)) mx.exec.update.aux.arrays(exec, aux.params, match.name = TRUE)
  iter$reset()
  while (iter$iter.next()) {
    b <- iter$value()
    weft_ndarray_copy_to(b$data, exec$arg.arrays[[data.name]])
    mx.exec.forward(exec, is.train = FALSE)
    keep <- dim(b$data)[length(dim(b$data))] - iter$num.pad()
    outs <- lapply(exec$outputs, function(o) {
      a <- as.array(o)
      d <- dim(a)
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

mx.model.FeedForward.create <- function(symbol, X, y = NULL, ctx = mx.ctx.default(), begin.round = 1, num.round = 10,
                                        optimizer = "sgd", initializer = mx.init.uniform(0.01), eval.data = NULL,
                                        eval.metric = NULL, epoch.end.callback = NULL,
                                        batch.end.callback = NULL, array.batch.size = 128, kvstore = "local",
                                        verbose = TRUE, arg.params = NULL, aux.params = NULL,
                                        input.names = "data", array.layout = "auto", ...) {
  if (is.matrix(X) && !is.null(y)) X <- .weft_layout(X, array.layout, nsamples = if (is.null(dim(y))) length(y) else rev(dim(y))[1])
  train <- .weft_as_iter(X, y, array.batch.size, TRUE)
  if (!is.null(eval.data)) eval.data <- .weft_as_iter(eval.data, NULL, array.batch.size, FALSE)
  first <- .weft_first_batch(train)
  batch.size <- dim(first$data)[length(dim(first$data))]
  data.name <- input.names
  label.name <- .weft_label_name(symbol, data.name)
  shapes <- list(dim(first$data))
  names(shapes) <- data.name
  if (!is.null(label.name)) shapes[[label.name]] <- dim(first$label)
  exec <- do.call(mx.simple.bind, c(list(symbol, ctx = ctx, grad.req = "write",
                                         fixed.param = c(data.name, label.name)), shapes))
  on.exit(exec$free())
  param.names <- setdiff(names(exec$arg.arrays), c(data.name, label.name))
  for (n in param.names) {
    v <- if (!is.null(arg.params[[n]])) arg.params[[n]] else initializer(n, dim(exec$arg.arrays[[n]]), ctx)
    mx.exec.update.arg.arrays(exec, stats::setNames(list(v), n), match.name = TRUE)
  }
  for (n in names(exec$aux.arrays)) {
    v <- if (!is.null(aux.params[[n]])) aux.params[[n]] else initializer(n, dim(exec$aux.arrays[[n]]), ctx)
    mx.exec.update.aux.arrays(exec, stats::setNames(list(v), n), match.name = TRUE)
  }
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
  updater <- mx.opt.get.updater(optimizer, exec$arg.arrays[param.names])
  env <- new.env(parent = emptyenv())
  env$metric <- eval.metric
  model <- structure(list(symbol = symbol, arg.params = NULL, aux.params = NULL), class = "MXFeedForwardModel")
  for (iteration in seq(begin.round, num.round)) {
    train$reset()
    nbatch <- 0
    env$train.metric <- if (is.null(eval.metric)) NULL else eval.metric$init()
    while (train$iter.next()) {
      b <- train$value()
      weft_ndarray_copy_to(b$data, exec$arg.arrays[[data.name]])
      if (!is.null(label.name)) weft_ndarray_copy_to(b$label, exec$arg.arrays[[label.name]])
      mx.exec.forward(exec, is.train = TRUE)
      mx.exec.backward(exec)
      if (!is.null(kv)) kv$pushpull(param.names, exec$grad.arrays[param.names], exec$grad.arrays[param.names])
      updater(exec$arg.arrays[param.names], exec$grad.arrays[param.names])
      if (!is.null(eval.metric)) {
        keep <- batch.size - train$num.pad()
        pred <- as.array(exec$outputs[[1]])
        pred <- array(pred, c(length(pred) / batch.size, batch.size))[, seq_len(keep), drop = FALSE]
        env$train.metric <- eval.metric$update(as.array(b$label)[seq_len(keep)], pred, env$train.metric)
      }
      nbatch <- nbatch + 1
      if (!is.null(batch.end.callback)) batch.end.callback(iteration, nbatch, env, verbose)
    }
    if (!is.null(eval.metric) && verbose) {
      r <- eval.metric$get(env$train.metric)
      message(sprintf("[%d] Train-%s=%f", iteration, r$name, r$value))
    }
    model$arg.params <- .weft_copy_params(exec$arg.arrays[param.names])
    model$aux.params <- .weft_copy_params(exec$aux.arrays)
    env$model <- model
    env$eval.metric <- NULL
    if (!is.null(eval.data) && !is.null(eval.metric)) {
      state <- eval.metric$init()
      .weft_forward_iter(symbol, model$arg.params, model$aux.params, eval.data, ctx, data.name,
                         function(outs, b, keep) {
                           state <<- eval.metric$update(as.array(b$label)[seq_len(keep)], outs[[1]], state)
                         })
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

predict.MXFeedForwardModel <- function(object, X, ctx = mx.ctx.default(), array.batch.size = 128,
                                       array.layout = "auto", ...) {
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
  .weft_forward_iter(object$symbol, object$arg.params, object$aux.params, iter, ctx, "data",
                     function(outs, b, keep) parts[[length(parts) + 1]] <<- outs[[1]])
  do.call(cbind, parts)
}

print.MXFeedForwardModel <- function(x, ...) {
  cat(sprintf("<MXFeedForwardModel parameters: %s>\n", paste(names(x$arg.params), collapse = ", ")))
  invisible(x)
}

mx.model.save <- function(model, prefix, iteration) {
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
