# Learning-rate schedulers as in MXNet's R package: function(optimizerEnv), called by an
# optimizer before each weight's update, reading num_update, count and lr from the
# environment and writing back the lr (and its own counters) when it changes it.

.weft_check_factor <- function(who, factor_val) {
  if (!is.numeric(factor_val) || length(factor_val) != 1 || is.na(factor_val) || factor_val > 1) {
    stop(sprintf("%s: factor_val must be one number no more than 1 (so that the rate goes down), got %s",
                 who, paste(format(factor_val), collapse = ", ")), call. = FALSE)
  }
}

# Floors the reduced rate at stop_factor_lr and says so when verbose.
.weft_reduced_lr <- function(lr, factor_val, stop_factor_lr, num_update, verbose) {
  lr <- lr * factor_val
  if (lr < stop_factor_lr) {
    lr <- stop_factor_lr
    if (verbose) message(sprintf("Update[%d]: the learning rate reached its floor %g and stays there",
                                 as.integer(num_update), lr))
  } else if (verbose) {
    message(sprintf("Update[%d]: learning rate changed to %g", as.integer(num_update), lr))
  }
  lr
}

# Multiplies the rate by factor_val each time the update count passes another `step` updates.
mx.lr_scheduler.FactorScheduler <- function(step, factor_val, stop_factor_lr = 1e-8, verbose = TRUE) {
  if (!is.numeric(step) || length(step) != 1 || is.na(step) || step < 1) {
    stop(sprintf("mx.lr_scheduler.FactorScheduler: step must be one number of updates >= 1, got %s",
                 paste(format(step), collapse = ", ")), call. = FALSE)
  }
  .weft_check_factor("mx.lr_scheduler.FactorScheduler", factor_val)
  function(optimizerEnv) {
    if (optimizerEnv$num_update > optimizerEnv$count + step) {
      optimizerEnv$count <- optimizerEnv$count + step
      optimizerEnv$lr <- .weft_reduced_lr(optimizerEnv$lr, factor_val, stop_factor_lr,
                                          optimizerEnv$num_update, verbose)
    }
    invisible(NULL)
  }
}

# Multiplies the rate by factor_val as the update count passes each of the increasing
# update counts in `step`, one reduction per call.
mx.lr_scheduler.MultiFactorScheduler <- function(step, factor_val, stop_factor_lr = 1e-8, verbose = TRUE) {
  if (!is.numeric(step) || length(step) == 0 || anyNA(step) || any(step < 1) || is.unsorted(step)) {
    stop(sprintf("mx.lr_scheduler.MultiFactorScheduler: step must be non-decreasing update counts >= 1, got %s",
                 paste(format(step), collapse = ", ")), call. = FALSE)
  }
  .weft_check_factor("mx.lr_scheduler.MultiFactorScheduler", factor_val)
  function(optimizerEnv) {
    i <- if (is.null(optimizerEnv$cur_step_ind)) 1 else optimizerEnv$cur_step_ind
    # MXNet's R scheduler stops before the last entry of step (it tests i < length(step));
    # every entry is used here, as MXNet's Python MultiFactorScheduler and its doc intend.
    if (i <= length(step) && optimizerEnv$num_update > step[i]) {
      optimizerEnv$count <- step[i]
      optimizerEnv$cur_step_ind <- i + 1
      optimizerEnv$lr <- .weft_reduced_lr(optimizerEnv$lr, factor_val, stop_factor_lr,
                                          optimizerEnv$num_update, verbose)
    }
    invisible(NULL)
  }
}
