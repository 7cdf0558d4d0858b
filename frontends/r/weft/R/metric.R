# Evaluation metrics: list(init(), update(label, pred, state), get(state)) over R values
# (label a vector, pred a matrix with one column per sample), as in MXNet's R package.

mx.metric.custom <- function(name, feval) {
  list(
    init = function() c(0, 0),
    update = function(label, pred, state) c(state[1] + feval(label, pred), state[2] + 1),
    get = function(state) list(name = name, value = state[1] / state[2]))
}

# Counts correct predictions, so that batches of any size weigh by their samples.
mx.metric.accuracy <- list(
  init = function() c(0, 0),
  update = function(label, pred, state) {
    label <- as.numeric(label)
    pred <- if (is.null(dim(pred)) || nrow(pred) == 1) round(as.numeric(pred)) else max.col(t(pred)) - 1
    c(state[1] + sum(pred == label), state[2] + length(label))
  },
  get = function(state) list(name = "accuracy", value = state[1] / state[2]))

mx.metric.rmse <- mx.metric.custom("rmse", function(label, pred) sqrt(mean((as.numeric(label) - as.numeric(pred))^2)))

mx.metric.mse <- mx.metric.custom("mse", function(label, pred) mean((as.numeric(label) - as.numeric(pred))^2))
mx.metric.mae <- mx.metric.custom("mae", function(label, pred) mean(abs(as.numeric(label) - as.numeric(pred))))
mx.metric.rmsle <- mx.metric.custom("rmsle", function(label, pred) {
  sqrt(mean((log1p(as.numeric(pred)) - log1p(as.numeric(label)))^2))
})

# The mean negative log of the probability given to each sample's class, with probabilities
# kept off 0 and 1. One probability per label (a logistic output, the case of MXNet's logloss)
# is the probability of class 1 (binary cross-entropy); otherwise pred holds one column of
# class probabilities per sample.
mx.metric.logloss <- mx.metric.custom("logloss", function(label, pred) {
  label <- as.numeric(label)
  if (is.null(dim(pred)) || nrow(pred) == 1 || length(pred) == length(label)) {
    p <- pmin(pmax(as.numeric(pred), 1e-15), 1 - 1e-15)
    return(-mean(label * log(p) + (1 - label) * log(1 - p)))
  }
  pred <- as.matrix(pred)
  p <- pred[cbind(as.integer(label) + 1L, seq_len(ncol(pred)))]
  -mean(log(pmax(p, 1e-15)))
})

# Language-model perplexity of a batch: exp of the mean negative log probability given to
# each sample's class (pred: one column of class probabilities per sample), samples whose
# label is mask_element left out; batches are averaged as every custom metric's are.
mx.metric.Perplexity <- mx.metric.custom("Perplexity", function(label, pred, mask_element = -1) {
  label <- as.numeric(label)
  pred <- as.matrix(pred)
  keep <- which(label != mask_element)
  p <- pred[cbind(as.integer(label[keep]) + 1L, keep)]
  exp(-sum(log(p)) / length(keep))
})

# The share of samples whose class (label, from 0) is among the top_k largest entries of
# their column of pred (one column of class scores per sample).
mx.metric.top_k_accuracy <- mx.metric.custom("top_k_accuracy", function(label, pred, top_k = 5) {
  label <- as.integer(as.numeric(label))
  pred <- as.matrix(pred)
  k <- min(top_k, nrow(pred))
  hits <- vapply(seq_len(ncol(pred)), function(j) {
    (label[j] + 1L) %in% order(pred[, j], decreasing = TRUE)[seq_len(k)]
  }, TRUE)
  mean(hits)
})

# Accuracy of a logistic (one probability per label) output: a probability above 0.5 is
# class 1. MXNet names it "accuracy" too.
mx.metric.logistic_acc <- mx.metric.custom("accuracy", function(label, pred) {
  mean(as.numeric(label) == as.numeric(as.numeric(pred) > 0.5))
})
