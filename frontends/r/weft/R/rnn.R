# rnn.graph: MXNet's R symbol for a recurrent network over the fused RNN operator, with the
# argument names MXNet's R package gives (data, label, seq.mask, embed.weight,
# rnn.params.weight, rnn.state, rnn.state.cell, cls.weight, cls.bias), for mx.model.buckets.
rnn.graph <- function(num_rnn_layer, input_size = NULL, num_embed = NULL, num_hidden, num_decode, dropout = 0,
                      ignore_label = -1, bidirectional = FALSE, loss_output = NULL, config, cell_type,
                      masking = FALSE, output_last_state = FALSE, rnn.state = NULL, rnn.state.cell = NULL,
                      prefix = "") {
  config <- match.arg(config, c("seq-to-one", "one-to-one"))
  cell_type <- match.arg(cell_type, c("lstm", "gru", "rnn_tanh", "rnn_relu"))
  if (!is.null(loss_output)) loss_output <- match.arg(loss_output, c("softmax", "linear", "logistic", "MAE"))
  if (!is.null(num_embed) && is.null(input_size)) {
    stop("rnn.graph: num_embed needs input_size (the vocabulary size)", call. = FALSE)
  }
  data <- mx.symbol.Variable("data")
  label <- mx.symbol.Variable("label")
  seq.mask <- mx.symbol.Variable("seq.mask")
  if (!is.null(num_embed)) {
    data <- mx.symbol.Embedding(data = data, weight = mx.symbol.Variable("embed.weight"), input_dim = input_size,
                                output_dim = num_embed, name = "embed")
  }
  # The batch comes as (batch, time, features) in the engine's order; the RNN operator wants
  # time first.
  data <- mx.symbol.swapaxes(data = data, dim1 = 0, dim2 = 1, name = paste0(prefix, "swap_pre"))
  if (is.null(rnn.state)) rnn.state <- mx.symbol.Variable("rnn.state")
  if (cell_type == "lstm" && is.null(rnn.state.cell)) rnn.state.cell <- mx.symbol.Variable("rnn.state.cell")
  rnn <- mx.symbol.RNN(data = data, parameters = mx.symbol.Variable("rnn.params.weight"), state = rnn.state,
                       state_cell = if (cell_type == "lstm") rnn.state.cell else NULL, state_size = num_hidden,
                       num_layers = num_rnn_layer, bidirectional = bidirectional, mode = cell_type,
                       state_outputs = output_last_state, p = dropout, name = paste0(prefix, "RNN"))
  seq <- if (output_last_state) rnn[[1]] else rnn
  .weft_rnn_head(seq, label, seq.mask, config, masking, loss_output, num_decode, ignore_label,
                 mx.symbol.Variable("cls.weight"), mx.symbol.Variable("cls.bias"), prefix, "")
}

# The part of MXNet's RNN symbols after the recurrent layers: `seq` is (time, batch, hidden)
# in the engine's order. seq-to-one keeps each sequence's last step (its last unmasked one
# with masking), one-to-one every step (masked ones set to 0); then the decoding layer and
# the loss, if any. `node_prefix` goes before the names of the mask and loss nodes.
.weft_rnn_head <- function(seq, label, seq.mask, config, masking, loss_output, num_decode, ignore_label,
                           cls.weight, cls.bias, prefix, node_prefix) {
  loss <- function(x, lab) {
    if (is.null(loss_output)) return(x)
    decode <- mx.symbol.FullyConnected(data = x, weight = cls.weight, bias = cls.bias, num_hidden = num_decode,
                                       name = paste0(prefix, "decode"))
    name <- paste0(node_prefix, "loss")
    switch(loss_output,
           softmax = mx.symbol.SoftmaxOutput(data = decode, label = lab, use_ignore = ignore_label != -1,
                                             ignore_label = ignore_label, name = name),
           linear = mx.symbol.LinearRegressionOutput(data = decode, label = lab, name = name),
           logistic = mx.symbol.LogisticRegressionOutput(data = decode, label = lab, name = name),
           MAE = mx.symbol.MAERegressionOutput(data = decode, label = lab, name = name))
  }
  mask.name <- paste0(node_prefix, "mask")
  if (config == "seq-to-one") {
    last <- if (masking) {
      mx.symbol.SequenceLast(data = seq, sequence_length = seq.mask, use_sequence_length = TRUE, name = mask.name)
    } else {
      mx.symbol.SequenceLast(data = seq, use_sequence_length = FALSE, name = mask.name)
    }
    return(loss(last, label))
  }
  steps <- if (masking) {
    mx.symbol.SequenceMask(data = seq, sequence_length = seq.mask, use_sequence_length = TRUE, value = 0,
                           name = mask.name)
  } else {
    mx.symbol.identity(data = seq, name = mask.name)
  }
  steps <- mx.symbol.swapaxes(data = steps, dim1 = 0, dim2 = 1, name = paste0(prefix, "swap_post"))
  if (is.null(loss_output)) return(steps)
  # One prediction per step: (batch * time, hidden) against the labels flattened alike.
  loss(mx.symbol.reshape(data = steps, shape = c(0, -1), reverse = TRUE), mx.symbol.reshape(data = label, shape = -1))
}

# One step of an LSTM layer (MXNet's R cell: gates in, transform, forget, out) or of a GRU
# layer (update and reset gates, then the candidate); prev: NULL at the first step of a zero
# initial state, else list(h, c).
.weft_lstm_step <- function(x, prev, p, num_hidden, name) {
  gates <- mx.symbol.FullyConnected(data = x, weight = p$i2h.weight, bias = p$i2h.bias, num_hidden = 4 * num_hidden,
                                    name = paste0(name, ".i2h"))
  if (!is.null(prev)) {
    gates <- gates + mx.symbol.FullyConnected(data = prev$h, weight = p$h2h.weight, bias = p$h2h.bias,
                                              num_hidden = 4 * num_hidden, name = paste0(name, ".h2h"))
  }
  g <- mx.symbol.split(gates, num_outputs = 4, axis = 1, name = paste0(name, ".slice"))
  act <- function(s, type) mx.symbol.Activation(s, act_type = type)
  c <- act(g[[1]], "sigmoid") * act(g[[2]], "tanh")
  if (!is.null(prev)) c <- act(g[[3]], "sigmoid") * prev$c + c
  list(h = act(g[[4]], "sigmoid") * act(c, "tanh"), c = c)
}

.weft_gru_step <- function(x, prev, p, num_hidden, name) {
  gates <- mx.symbol.FullyConnected(data = x, weight = p$gates.i2h.weight, bias = p$gates.i2h.bias,
                                    num_hidden = 2 * num_hidden, name = paste0(name, ".gates.i2h"))
  if (!is.null(prev)) {
    gates <- gates + mx.symbol.FullyConnected(data = prev$h, weight = p$gates.h2h.weight, bias = p$gates.h2h.bias,
                                              num_hidden = 2 * num_hidden, name = paste0(name, ".gates.h2h"))
  }
  g <- mx.symbol.split(gates, num_outputs = 2, axis = 1, name = paste0(name, ".split"))
  update <- mx.symbol.Activation(g[[1]], act_type = "sigmoid")
  reset <- mx.symbol.Activation(g[[2]], act_type = "sigmoid")
  # With a zero state, the reset state is zeros of the gate's shape (the h2h weights still
  # take part, as in MXNet's cell).
  h.reset <- if (is.null(prev)) reset * 0 else prev$h * reset
  cand <- mx.symbol.Activation(
    mx.symbol.FullyConnected(data = x, weight = p$trans.i2h.weight, bias = p$trans.i2h.bias, num_hidden = num_hidden,
                             name = paste0(name, ".trans.i2h")) +
      mx.symbol.FullyConnected(data = h.reset, weight = p$trans.h2h.weight, bias = p$trans.h2h.bias,
                               num_hidden = num_hidden, name = paste0(name, ".trans.h2h")),
    act_type = "tanh")
  list(h = if (is.null(prev)) update * cand else prev$h + update * (cand - prev$h))
}

# rnn.graph.unroll: the same networks built from one cell per step and layer (lstm or gru),
# with MXNet's parameter names (l<i>.i2h.weight, ..., cls.weight), for a fixed seq_len.
rnn.graph.unroll <- function(num_rnn_layer, seq_len, input_size = NULL, num_embed = NULL, num_hidden, num_decode,
                             dropout = 0, ignore_label = -1, loss_output = NULL, init.state = NULL, config,
                             cell_type = "lstm", masking = FALSE, output_last_state = FALSE, prefix = "",
                             data_name = "data", label_name = "label") {
  config <- match.arg(config, c("seq-to-one", "one-to-one"))
  cell_type <- match.arg(cell_type, c("lstm", "gru"))
  if (!is.null(loss_output)) loss_output <- match.arg(loss_output, c("softmax", "linear", "logistic", "MAE"))
  if (!is.null(num_embed) && is.null(input_size)) {
    stop("rnn.graph.unroll: num_embed needs input_size (the vocabulary size)", call. = FALSE)
  }
  v <- function(n) mx.symbol.Variable(paste0(prefix, n))
  if (is.null(init.state) && output_last_state) {
    init.state <- lapply(seq_len(num_rnn_layer), function(i) {
      st <- list(h = mx.symbol.Variable(paste0("init_", prefix, i, "_h")))
      if (cell_type == "lstm") st$c <- mx.symbol.Variable(paste0("init_", prefix, i, "_c"))
      st
    })
  }
  names.lstm <- c("i2h.weight", "i2h.bias", "h2h.weight", "h2h.bias")
  names.gru <- c("gates.i2h.weight", "gates.i2h.bias", "gates.h2h.weight", "gates.h2h.bias",
                 "trans.i2h.weight", "trans.i2h.bias", "trans.h2h.weight", "trans.h2h.bias")
  params <- lapply(seq_len(num_rnn_layer), function(i) {
    nms <- if (cell_type == "lstm") names.lstm else names.gru
    stats::setNames(lapply(nms, function(n) v(paste0("l", i, ".", n))), nms)
  })
  step <- if (cell_type == "lstm") .weft_lstm_step else .weft_gru_step
  data <- mx.symbol.swapaxes(data = mx.symbol.Variable(data_name), dim1 = 0, dim2 = 1, name = paste0(prefix, "swap_pre"))
  if (!is.null(num_embed)) {
    data <- mx.symbol.Embedding(data = data, weight = v("embed.weight"), input_dim = input_size, output_dim = num_embed,
                                name = paste0(prefix, "embed"))
  }
  steps.in <- mx.symbol.split(data = data, num_outputs = seq_len, axis = 0, squeeze_axis = TRUE)
  states <- if (is.null(init.state)) vector("list", num_rnn_layer) else init.state
  hidden <- vector("list", seq_len)
  for (t in seq_len(seq_len)) {
    x <- if (seq_len == 1) steps.in else steps.in[[t]]
    for (i in seq_len(num_rnn_layer)) {
      if (dropout > 0 && i > 1) x <- mx.symbol.Dropout(data = x, p = dropout)
      states[i] <- list(step(x, states[[i]], params[[i]], num_hidden, paste0(prefix, "t", t, ".l", i)))
      x <- states[[i]]$h
    }
    hidden[[t]] <- x
  }
  seq <- mx.symbol.stack(data = hidden, axis = 0, num_args = seq_len, name = paste0(prefix, "concat"))
  out <- .weft_rnn_head(seq, mx.symbol.Variable(label_name), v("seq.mask"), config, masking, loss_output, num_decode,
                        ignore_label, v("cls.weight"), v("cls.bias"), prefix, prefix)
  if (!output_last_state) return(out)
  mx.symbol.Group(c(list(out), unlist(states, recursive = FALSE)))
}

# The first output of `model` over every batch of `infer.data` (an iterator such as
# mx.io.bucket.iter's, whose batches may differ in shape from bucket to bucket), joined along
# the last R dim without the padding samples. Arguments that are neither inputs nor
# parameters of the model (the initial RNN states) are 0.
mx.infer.rnn <- function(infer.data, model, ctx = mx.cpu()) {
  ctx <- .weft_one_ctx(ctx, "mx.infer.rnn")
  if (!.weft_is_iter_like(infer.data)) {
    stop(sprintf("mx.infer.rnn: expected a data iterator, got %s", class(infer.data)[1]), call. = FALSE)
  }
  if (is.serialized(model)) model <- mx.unserialize(model)
  symbol <- model$symbol
  args <- arguments(symbol)
  params <- model$arg.params[intersect(names(model$arg.params), args)]
  aux <- model$aux.params
  execs <- list()
  on.exit(for (e in execs) e$free())
  parts <- list()
  infer.data$reset()
  while (isTRUE(infer.data$iter.next())) {
    b <- .weft_batch(infer.data)
    inputs <- intersect(names(b), setdiff(args, names(params)))
    if (length(inputs) == 0) {
      stop(sprintf("mx.infer.rnn: the batch's fields (%s) name no input of the model", paste(names(b), collapse = ", ")),
           call. = FALSE)
    }
    key <- paste(vapply(inputs, function(n) paste(c(n, dim(b[[n]])), collapse = "x"), ""), collapse = "/")
    if (is.null(execs[[key]])) {
      shapes <- do.call(mx.symbol.infer.shape, c(list(symbol), lapply(b[inputs], dim)))
      if (is.null(shapes)) stop("mx.infer.rnn: the batch's shapes do not determine every argument's shape", call. = FALSE)
      zeros <- lapply(shapes$arg.shapes[setdiff(args, names(params))], function(s) mx.nd.zeros(s, ctx))
      execs[[key]] <- mx.symbol.bind(symbol, ctx, arg.arrays = c(zeros, params)[args],
                                     aux.arrays = aux[auxiliary.states(symbol)], grad.reqs = "null")
    }
    exec <- execs[[key]]
    for (n in inputs) weft_ndarray_copy_to(b[[n]], exec$arg.arrays[[n]])
    mx.exec.forward(exec, is.train = FALSE)
    out <- as.array(exec$outputs[[1]])
    d <- if (is.null(dim(out))) length(out) else dim(out)
    batch <- utils::tail(dim(b[[inputs[1]]]), 1)
    # The last dim holds `per` entries per sample (one per step for one-to-one networks);
    # padding samples are the batch's last ones.
    per <- d[length(d)] %/% batch
    keep <- d[length(d)] - infer.data$num.pad() * per
    parts[[length(parts) + 1]] <- matrix(out, ncol = d[length(d)])[, seq_len(keep), drop = FALSE]
    lead <- d[-length(d)]
  }
  infer.data$reset()
  if (length(parts) == 0) stop("mx.infer.rnn: the data iterator gives no batch", call. = FALSE)
  all <- do.call(cbind, parts)
  if (length(lead) == 0) as.vector(all) else array(all, c(lead, ncol(all)))
}

# One inference pass of `symbol` over `infer.data` with the states (or any other arguments)
# given in input.params, for generating step by step: every output of the last batch, as
# MXNDArrays (with a symbol that outputs its states, the states to give the next call).
mx.infer.rnn.one <- function(infer.data, symbol, arg.params, aux.params, input.params = NULL, ctx = mx.cpu()) {
  ctx <- .weft_one_ctx(ctx, "mx.infer.rnn.one")
  if (!.weft_is_iter_like(infer.data)) {
    stop(sprintf("mx.infer.rnn.one: expected a data iterator, got %s", class(infer.data)[1]), call. = FALSE)
  }
  args <- arguments(symbol)
  given <- c(arg.params[intersect(names(arg.params), args)], input.params)
  out <- NULL
  infer.data$reset()
  while (isTRUE(infer.data$iter.next())) {
    b <- .weft_batch(infer.data)
    out <- .weft_infer_once(symbol, b[intersect(names(b), setdiff(args, names(given)))], given, aux.params, ctx,
                            "mx.infer.rnn.one")
  }
  infer.data$reset()
  if (is.null(out)) stop("mx.infer.rnn.one: the data iterator gives no batch", call. = FALSE)
  out
}

# One inference pass of an unrolled symbol (rnn.graph.unroll with output_last_state) on the
# array `infer.data` (its data, also given as its label, as MXNet does), the init_* states
# from init_states (in the order of the symbol's init_* arguments; NULL: zeros of
# c(num_hidden, batch)): every output, as MXNDArrays.
mx.infer.rnn.one.unroll <- function(infer.data, symbol, num_hidden, arg.params, aux.params, init_states = NULL,
                                    ctx = mx.cpu()) {
  ctx <- .weft_one_ctx(ctx, "mx.infer.rnn.one.unroll")
  data <- if (is.mx.ndarray(infer.data)) infer.data else mx.nd.array(infer.data)
  args <- arguments(symbol)
  state.names <- args[startsWith(args, "init_")]
  batch <- utils::tail(dim(data), 1)
  if (is.null(init_states)) {
    init_states <- lapply(state.names, function(n) mx.nd.zeros(c(num_hidden, batch), ctx))
  } else if (length(init_states) != length(state.names)) {
    stop(sprintf("mx.infer.rnn.one.unroll: %d init_states given for the symbol's %d (%s)", length(init_states),
                 length(state.names), paste(state.names, collapse = ", ")), call. = FALSE)
  }
  init_states <- stats::setNames(init_states, state.names)
  inputs <- list(data = data, label = data)[intersect(c("data", "label"), args)]
  params <- arg.params[setdiff(intersect(names(arg.params), args), c(names(inputs), state.names))]
  .weft_infer_once(symbol, inputs, c(params, init_states), aux.params, ctx, "mx.infer.rnn.one.unroll")
}

# Binds `symbol` on the arrays given (inputs copied in), the remaining arguments at 0, runs it
# forward for inference and returns copies of its outputs.
.weft_infer_once <- function(symbol, inputs, given, aux.params, ctx, fun) {
  args <- arguments(symbol)
  if (length(inputs) == 0) stop(sprintf("%s: no input of the symbol in the data", fun), call. = FALSE)
  given <- lapply(given, function(v) if (is.mx.ndarray(v)) v else mx.nd.array(v, ctx))
  shapes <- do.call(mx.symbol.infer.shape, c(list(symbol), lapply(c(inputs, given), dim)))
  if (is.null(shapes)) {
    stop(sprintf("%s: the shapes of the data and of the arrays given (%s) do not determine every argument's shape",
                 fun, paste(names(given), collapse = ", ")), call. = FALSE)
  }
  arrays <- lapply(args, function(n) {
    v <- if (!is.null(inputs[[n]])) inputs[[n]] else given[[n]]
    if (is.null(v)) mx.nd.zeros(shapes$arg.shapes[[n]], ctx) else mx.nd.copyto(v, ctx)
  })
  names(arrays) <- args
  aux <- lapply(auxiliary.states(symbol), function(n) {
    if (!is.null(aux.params[[n]])) aux.params[[n]] else mx.nd.zeros(shapes$aux.shapes[[n]], ctx)
  })
  names(aux) <- auxiliary.states(symbol)
  exec <- mx.symbol.bind(symbol, ctx, arg.arrays = arrays, aux.arrays = aux, grad.reqs = "null")
  on.exit(exec$free())
  mx.exec.forward(exec, is.train = FALSE)
  lapply(exec$outputs, function(o) mx.nd.copyto(o, ctx))
}
