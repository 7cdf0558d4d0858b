# Optimizers as in MXNet's R package: a list of create.state(index, weight) and
# update(index, weight, grad, state), which changes weight (and state) in place with the
# engine's update operators.

mx.opt.sgd <- function(learning.rate = 0.01, momentum = 0, wd = 0, rescale.grad = 1, clip_gradient = -1,
                       lr_scheduler = NULL) {
  # The operators and their parameter strings are found once: update runs for every weight
  # at every step, and goes straight to the generated routine (which checks the handles).
  keys <- c("lr", "wd", "rescale_grad", "clip_gradient")
  vals <- c(.weft_number(learning.rate), .weft_number(wd), .weft_number(rescale.grad), .weft_number(clip_gradient))
  mom_keys <- c(keys, "momentum")
  mom_vals <- c(vals, .weft_number(momentum))
  sgd <- .weft_op_handle("sgd_update")
  sgd_mom <- .weft_op_handle("sgd_mom_update")
  sched <- .weft_lr_state(learning.rate)
  list(
    create.state = function(index, weight) {
      if (momentum == 0) NULL else .weft_state_zeros(weight)
    },
    update = function(index, weight, grad, state) {
      if (!is.null(lr_scheduler)) {
        vals[1] <- mom_vals[1] <- .weft_number(.weft_scheduled_lr(sched, lr_scheduler, index))
      }
      if (is.null(state)) {
        weft_imperative_invoke(sgd, list(weight, grad), keys, vals, list(weight))
      } else {
        weft_imperative_invoke(sgd_mom, list(weight, grad, state), mom_keys, mom_vals, list(weight))
      }
      invisible(weight)
    })
}

# MXNet's R optimizers keep their learning rate in an environment (lr, count, num_update)
# that a scheduler (mx.lr_scheduler.*) reads and changes before each weight's update.
.weft_lr_state <- function(learning.rate) {
  env <- new.env(parent = emptyenv())
  env$lr <- learning.rate
  env$count <- 0
  env$num_update <- 0
  env
}

# The learning rate for this update of weight `index`: the scheduler runs first, then the
# update count advances as in MXNet's R package: a weight's first update counts 0, each later
# one 1 more, and num_update is the largest count of any weight (so it lags the batch count
# by one, and the weights updated after the first within a batch see it one higher).
.weft_scheduled_lr <- function(env, lr_scheduler, index) {
  lr_scheduler(env)
  lr <- env$lr
  key <- paste0("ik", index)
  if (is.null(env[[key]])) {
    env[[key]] <- 0
  } else {
    env[[key]] <- env[[key]] + 1
    env$num_update <- max(env$num_update, env[[key]])
  }
  lr
}

# An optimizer state array: zeros of the weight's dims on the weight's context.
.weft_state_zeros <- function(weight) mx.nd.zeros(dim(weight), weft_ndarray_get_context(weight))

# The parameters every update operator takes, as the engine parses them.
.weft_opt_common <- function(wd, rescale.grad, clip_gradient) {
  c(wd = .weft_number(wd), rescale_grad = .weft_number(rescale.grad), clip_gradient = .weft_number(clip_gradient))
}

# RMSProp (Tieleman and Hinton); centered = TRUE is Graves' variant, which also tracks the
# mean gradient and keeps a momentum (gamma2) on the step.
mx.opt.rmsprop <- function(learning.rate = 0.002, centered = TRUE, gamma1 = 0.95, gamma2 = 0.9, epsilon = 1e-4,
                           wd = 0, rescale.grad = 1, clip_gradient = -1, lr_scheduler = NULL) {
  sched <- .weft_lr_state(learning.rate)
  params <- c(lr = .weft_number(learning.rate), gamma1 = .weft_number(gamma1), epsilon = .weft_number(epsilon),
              .weft_opt_common(wd, rescale.grad, clip_gradient))
  if (centered) params <- c(params, gamma2 = .weft_number(gamma2))
  list(
    create.state = function(index, weight) {
      if (centered) {
        list(n = .weft_state_zeros(weight), g = .weft_state_zeros(weight), delta = .weft_state_zeros(weight))
      } else {
        list(n = .weft_state_zeros(weight))
      }
    },
    update = function(index, weight, grad, state) {
      if (!is.null(lr_scheduler)) params["lr"] <- .weft_number(.weft_scheduled_lr(sched, lr_scheduler, index))
      if (centered) {
        .weft_nd_invoke("rmspropalex_update", list(weight, grad, state$n, state$g, state$delta), params, NULL, weight)
      } else {
        .weft_nd_invoke("rmsprop_update", list(weight, grad, state$n), params, NULL, weight)
      }
      invisible(weight)
    })
}

mx.opt.adagrad <- function(learning.rate = 0.05, epsilon = 1e-8, wd = 0, rescale.grad = 1, clip_gradient = -1,
                           lr_scheduler = NULL) {
  sched <- .weft_lr_state(learning.rate)
  params <- c(lr = .weft_number(learning.rate), epsilon = .weft_number(epsilon),
              .weft_opt_common(wd, rescale.grad, clip_gradient))
  list(
    create.state = function(index, weight) list(history = .weft_state_zeros(weight)),
    update = function(index, weight, grad, state) {
      if (!is.null(lr_scheduler)) params["lr"] <- .weft_number(.weft_scheduled_lr(sched, lr_scheduler, index))
      .weft_nd_invoke("adagrad_update", list(weight, grad, state$history), params, NULL, weight)
      invisible(weight)
    })
}

# AdaDelta (Zeiler) has no learning rate: the step is scaled by the running RMS of past steps.
mx.opt.adadelta <- function(rho = 0.9, epsilon = 1e-5, wd = 0, rescale.grad = 1, clip_gradient = -1) {
  params <- c(rho = .weft_number(rho), epsilon = .weft_number(epsilon), .weft_opt_common(wd, rescale.grad, clip_gradient))
  list(
    create.state = function(index, weight) list(acc_g = .weft_state_zeros(weight), acc_delta = .weft_state_zeros(weight)),
    update = function(index, weight, grad, state) {
      .weft_nd_invoke("adadelta_update", list(weight, grad, state$acc_g, state$acc_delta), params, NULL, weight)
      invisible(weight)
    })
}

# Nesterov's accelerated gradient; with momentum 0 it is plain SGD.
mx.opt.nag <- function(learning.rate = 0.01, momentum = 0, wd = 0, rescale.grad = 1, clip_gradient = -1,
                       lr_scheduler = NULL) {
  sched <- .weft_lr_state(learning.rate)
  params <- c(lr = .weft_number(learning.rate), momentum = .weft_number(momentum),
              .weft_opt_common(wd, rescale.grad, clip_gradient))
  list(
    create.state = function(index, weight) list(mom = .weft_state_zeros(weight)),
    update = function(index, weight, grad, state) {
      if (!is.null(lr_scheduler)) params["lr"] <- .weft_number(.weft_scheduled_lr(sched, lr_scheduler, index))
      .weft_nd_invoke("nag_mom_update", list(weight, grad, state$mom), params, NULL, weight)
      invisible(weight)
    })
}

# As MXNet's R package: each step is the adam_update operator at the learning rate as given,
# without Adam's bias corrections (MXNet's Python optimizer folds them into the rate; its R
# package does not, so step t is (1 - beta1^t) / sqrt(1 - beta2^t) times larger, 3.16 at
# the first with the defaults, and scripts tuned with it expect that).
mx.opt.adam <- function(learning.rate = 0.001, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8, wd = 0,
                        rescale.grad = 1, clip_gradient = -1, lr_scheduler = NULL) {
  sched <- .weft_lr_state(learning.rate)
  list(
    create.state = function(index, weight) list(mean = .weft_state_zeros(weight), var = .weft_state_zeros(weight)),
    update = function(index, weight, grad, state) {
      lr <- if (is.null(lr_scheduler)) learning.rate else .weft_scheduled_lr(sched, lr_scheduler, index)
      .weft_nd_invoke("adam_update", list(weight, grad, state$mean, state$var),
                      c(lr = .weft_number(lr), beta1 = .weft_number(beta1), beta2 = .weft_number(beta2),
                        epsilon = .weft_number(epsilon), wd = .weft_number(wd),
                        rescale_grad = .weft_number(rescale.grad), clip_gradient = .weft_number(clip_gradient)),
                      NULL, weight)
      invisible(weight)
    })
}

mx.opt.create <- function(name, ...) {
  switch(name,
         sgd = mx.opt.sgd(...),
         adam = mx.opt.adam(...),
         rmsprop = mx.opt.rmsprop(...),
         adagrad = mx.opt.adagrad(...),
         adadelta = mx.opt.adadelta(...),
         nag = mx.opt.nag(...),
         stop(sprintf("mx.opt.create: unknown optimizer '%s' (expected sgd, adam, rmsprop, adagrad, adadelta or nag)",
                      name), call. = FALSE))
}

# A function(weights, grads) that updates every weight (lists of MXNDArrays, NULL
# gradients skipped) in place, keeping each weight's optimizer state, and returns the list
# of the updated weights (NULL where the gradient was NULL), as MXNet's updater does, so
# that mx.exec.update.arg.arrays(exec, updated, skip.null = TRUE) works after it. `ctx` is
# accepted for MXNet's signature only: each state lives on its weight's context, where the
# update operator needs it.
mx.opt.get.updater <- function(optimizer, weights, ctx = NULL) {
  states <- lapply(seq_along(weights), function(i) {
    if (is.null(weights[[i]])) NULL else optimizer$create.state(i, weights[[i]])
  })
  function(weights, grads) {
    updated <- vector("list", length(weights))
    names(updated) <- names(weights)
    for (i in seq_along(weights)) {
      if (is.null(grads[[i]])) next
      # States are arrays or environments, which update changes in place.
      optimizer$update(i, weights[[i]], grads[[i]], states[[i]])
      updated[[i]] <- weights[[i]]
    }
    invisible(updated)
  }
}
