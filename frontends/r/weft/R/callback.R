# Callbacks of mx.model.FeedForward.create: function(iteration, nbatch, env, verbose),
# where env holds model, metric and train.metric (and eval.metric at epoch ends); a
# callback returning FALSE stops the training.

mx.callback.log.train.metric <- function(period, logger = NULL) {
  function(iteration, nbatch, env, verbose = TRUE) {
    if (nbatch %% period == 0 && !is.null(env$metric)) {
      result <- env$metric$get(env$train.metric)
      if (nbatch != 0 && verbose) message(sprintf("Batch [%d] Train-%s=%f", nbatch, result$name, result$value))
      if (!is.null(logger)) {
        logger$train <- c(logger$train, result$value)
        if (!is.null(env$eval.metric)) logger$eval <- c(logger$eval, env$metric$get(env$eval.metric)$value)
      }
    }
    TRUE
  }
}

mx.callback.save.checkpoint <- function(prefix, period = 1) {
  function(iteration, nbatch, env, verbose = TRUE) {
    if (iteration %% period == 0) {
      mx.model.save(env$model, prefix, iteration)
      if (verbose) message(sprintf("Model checkpoint saved to %s-%04d.params", prefix, iteration))
    }
    TRUE
  }
}

mx.metric.logger <- function() {
  logger <- new.env(parent = emptyenv())
  logger$train <- c()
  logger$eval <- c()
  logger
}

# Reports every `frequency` batches how many samples per second went through since the
# last report (or since the epoch's first batch), with the training metric when there is one.
mx.callback.log.speedometer <- function(batch.size, frequency = 50) {
  last <- NULL
  function(iteration, nbatch, env, verbose = TRUE) {
    now <- Sys.time()
    # A batch count that went down is a new epoch: time from its first batch.
    if (is.null(last) || nbatch < last$nbatch) {
      last <<- list(time = now, nbatch = nbatch)
      return(TRUE)
    }
    if (nbatch %% frequency == 0 && nbatch > last$nbatch) {
      secs <- max(as.double(difftime(now, last$time, units = "secs")), 1e-9)
      msg <- sprintf("Batch [%d] Speed: %.2f samples/sec", nbatch, (nbatch - last$nbatch) * batch.size / secs)
      if (!is.null(env$metric) && !is.null(env$train.metric)) {
        r <- env$metric$get(env$train.metric)
        msg <- sprintf("%s Train-%s=%f", msg, r$name, r$value)
      }
      if (verbose) message(msg)
      last <<- list(time = now, nbatch = nbatch)
    }
    TRUE
  }
}
