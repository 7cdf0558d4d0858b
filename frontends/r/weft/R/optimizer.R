# Optimizers as in MXNet's R package: a list of create.state(index, weight) and
# update(index, weight, grad, state), which changes weight (and state) in place with the
# engine's update operators.

mx.opt.sgd <- function(learning.rate = 0.01, momentum = 0, wd = 0, rescale.grad = 1, clip.gradient = -1) {
  # The operators and their parameter strings are found once: update runs for every weight
  # at every step, and goes straight to the generated routine (which checks the handles).
  keys <- c("lr", "wd", "rescale_grad", "clip_gradient")
  vals <- c(.weft_number(learning.rate), .weft_number(wd), .weft_number(rescale.grad), .weft_number(clip.gradient))
  mom_keys <- c(keys, "momentum")
  mom_vals <- c(vals, .weft_number(momentum))
  sgd <- .weft_op_handle("sgd_update")
  sgd_mom <- .weft_op_handle("sgd_mom_update")
  list(
    create.state = function(index, weight) {
      if (momentum == 0) NULL else mx.nd.zeros(dim(weight), weft_ndarray_get_context(weight))
    },
    update = function(index, weight, grad, state) {
      if (is.null(state)) {
        weft_imperative_invoke(sgd, list(weight, grad), keys, vals, list(weight))
      } else {
        weft_imperative_invoke(sgd_mom, list(weight, grad, state), mom_keys, mom_vals, list(weight))
      }
      invisible(weight)
    })
}

mx.opt.adam <- function(learning.rate = 0.001, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8, wd = 0,
                        rescale.grad = 1, clip.gradient = -1) {
  list(
    create.state = function(index, weight) {
      ctx <- weft_ndarray_get_context(weight)
      list(mean = mx.nd.zeros(dim(weight), ctx), var = mx.nd.zeros(dim(weight), ctx), t = 0)
    },
    update = function(index, weight, grad, state) {
      state$t <- state$t + 1
      # The bias corrections of Adam folded into the step size, as MXNet's optimizer does.
      lr <- learning.rate * sqrt(1 - beta2^state$t) / (1 - beta1^state$t)
      .weft_nd_invoke("adam_update", list(weight, grad, state$mean, state$var),
                      c(lr = .weft_number(lr), beta1 = .weft_number(beta1), beta2 = .weft_number(beta2),
                        epsilon = .weft_number(epsilon), wd = .weft_number(wd),
                        rescale_grad = .weft_number(rescale.grad), clip_gradient = .weft_number(clip.gradient)),
                      NULL, weight)
      invisible(weight)
    })
}

mx.opt.create <- function(name, ...) {
  switch(name,
         sgd = mx.opt.sgd(...),
         adam = mx.opt.adam(...),
         stop(sprintf("mx.opt.create: unknown optimizer '%s' (expected sgd or adam)", name), call. = FALSE))
}

# A function(weights, grads) that updates every weight (named lists of MXNDArrays, NULL
# gradients skipped) in place, keeping each weight's optimizer state.
mx.opt.get.updater <- function(optimizer, weights) {
  states <- lapply(seq_along(weights), function(i) optimizer$create.state(i, weights[[i]]))
  function(weights, grads) {
    for (i in seq_along(weights)) {
      if (is.null(grads[[i]])) next
      st <- states[[i]]
      optimizer$update(i, weights[[i]], grads[[i]], st)
      if (is.list(st)) states[[i]] <<- st
    }
    invisible(weights)
  }
}
