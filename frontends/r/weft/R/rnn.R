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
  loss <- function(x, lab) {
    if (is.null(loss_output)) return(x)
    decode <- mx.symbol.FullyConnected(data = x, weight = mx.symbol.Variable("cls.weight"),
                                       bias = mx.symbol.Variable("cls.bias"), num_hidden = num_decode,
                                       name = paste0(prefix, "decode"))
    switch(loss_output,
           softmax = mx.symbol.SoftmaxOutput(data = decode, label = lab, use_ignore = ignore_label != -1,
                                             ignore_label = ignore_label, name = "loss"),
           linear = mx.symbol.LinearRegressionOutput(data = decode, label = lab, name = "loss"),
           logistic = mx.symbol.LogisticRegressionOutput(data = decode, label = lab, name = "loss"),
           MAE = mx.symbol.MAERegressionOutput(data = decode, label = lab, name = "loss"))
  }
  if (config == "seq-to-one") {
    # The output of each sequence's last step (its last unmasked one with masking).
    last <- if (masking) {
      mx.symbol.SequenceLast(data = seq, sequence_length = seq.mask, use_sequence_length = TRUE, name = "mask")
    } else {
      mx.symbol.SequenceLast(data = seq, use_sequence_length = FALSE, name = "mask")
    }
    return(loss(last, label))
  }
  steps <- if (masking) {
    mx.symbol.SequenceMask(data = seq, sequence_length = seq.mask, use_sequence_length = TRUE, value = 0, name = "mask")
  } else {
    mx.symbol.identity(data = seq, name = "mask")
  }
  steps <- mx.symbol.swapaxes(data = steps, dim1 = 0, dim2 = 1, name = paste0(prefix, "swap_post"))
  if (is.null(loss_output)) return(steps)
  # One prediction per step: (batch * time, hidden) against the labels flattened alike.
  loss(mx.symbol.reshape(data = steps, shape = c(-1, 0), reverse = TRUE), mx.symbol.reshape(data = label, shape = -1))
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
