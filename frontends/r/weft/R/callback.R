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

# A reference class, as MXNet's: mx.metric.logger$new() (or mx.metric.logger()) gives an
# object of class "mx.metric.logger" whose train and eval fields collect the values.
mx.metric.logger <- methods::setRefClass("mx.metric.logger", fields = list(train = "numeric", eval = "numeric"))

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

# Stops the training (returns FALSE) at an epoch's end when the training metric, or the
# validation metric, passes its threshold (below it, or above it when maximize), or when the
# validation metric was worse than the best so far for bad.steps epochs in a row. The best
# score and the run of bad epochs live in this callback (MXNet's keeps them in global
# variables) and restart at iteration 1.
mx.callback.early.stop <- function(train.metric = NULL, eval.metric = NULL, bad.steps = NULL, maximize = FALSE,
                                   verbose = FALSE) {
  if (!is.null(bad.steps) && (!is.numeric(bad.steps) || length(bad.steps) != 1 || is.na(bad.steps) || bad.steps < 1)) {
    stop(sprintf("mx.callback.early.stop: bad.steps must be NULL or one number of epochs >= 1, got %s",
                 paste(format(bad.steps), collapse = ", ")), call. = FALSE)
  }
  passed <- function(value, threshold) if (maximize) value > threshold else value < threshold
  best.score <- NULL
  bad.run <- 1
  stop.verbose <- verbose
  function(iteration, nbatch, env, verbose = stop.verbose) {
    if (!is.null(env$metric)) {
      if (!is.null(train.metric) && !is.null(env$train.metric) &&
          passed(env$metric$get(env$train.metric)$value, train.metric)) return(FALSE)
      if (!is.null(eval.metric) && !is.null(env$eval.metric) &&
          passed(env$metric$get(env$eval.metric)$value, eval.metric)) return(FALSE)
    }
    if (!is.null(bad.steps)) {
      if (iteration == 1 || is.null(best.score)) {
        best.score <<- if (maximize) -Inf else Inf
        bad.run <<- 1
      }
      if (!is.null(env$metric) && !is.null(env$eval.metric)) {
        value <- env$metric$get(env$eval.metric)$value
        worse <- if (maximize) value < best.score else value > best.score
        if (worse) {
          if (bad.run >= bad.steps) {
            if (verbose) message(sprintf("Best score=%g, iteration [%d]", best.score, iteration - bad.steps))
            return(FALSE)
          }
          bad.run <<- bad.run + 1
        } else {
          best.score <<- value
          bad.run <<- 1
        }
      }
    }
    TRUE
  }
}
