# Imperative gradients: mark arrays as variables, record operators on them, run backward.

mx.autograd.mark.variables <- function(variables, grad.reqs = "write") {
  if (inherits(variables, "MXNDArray")) variables <- list(variables)
  reqs <- rep_len(grad.reqs, length(variables))
  grads <- lapply(seq_along(variables), function(i) {
    if (reqs[i] == "null") NULL else mx.nd.zeros(dim(variables[[i]]), weft_ndarray_get_context(variables[[i]]),
                                                 mx.nd.dtype(variables[[i]]))
  })
  invisible(weft_autograd_mark_variables(unname(variables), reqs, grads))
}

# Evaluates `expr` with recording on (and training mode when train.mode), restoring both.
mx.autograd.record <- function(expr, train.mode = TRUE) {
  was_recording <- weft_autograd_set_is_recording(1L)
  was_training <- weft_set_is_training(as.integer(train.mode))
  on.exit({
    weft_autograd_set_is_recording(was_recording)
    weft_set_is_training(was_training)
  })
  expr
}

mx.autograd.backward <- function(heads, head.grads = NULL, retain.graph = FALSE, train.mode = TRUE) {
  if (inherits(heads, "MXNDArray")) heads <- list(heads)
  if (inherits(head.grads, "MXNDArray")) head.grads <- list(head.grads)
  invisible(weft_autograd_backward(unname(heads), head.grads, NULL, as.integer(retain.graph), 0L,
                                   as.integer(train.mode)))
}

mx.autograd.get.grad <- function(x) weft_ndarray_get_grad(x)

mx.autograd.is.recording <- function() weft_autograd_is_recording() == 1L
