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
