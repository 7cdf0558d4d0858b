# mx.io.bucket.iter and mx.model.buckets: sequences of several lengths, one executor per
# length sharing the parameters.

bucket_data <- function(seed, n2, n3, vocab, w) {
  set.seed(seed)
  mk <- function(len, n) {
    d <- matrix(sample(vocab, len * n, TRUE) - 1, len)
    list(data = d, label = colSums(matrix(w[d + 1], len)))
  }
  list("2" = mk(2, n2), "3" = mk(3, n3))
}

test_that("mx.io.bucket.iter visits every batch of every bucket with its mask and padding", {
  buckets <- list("2" = list(data = matrix(c(1, 2, 3, 0, 5, 6), 2), label = c(10, 20, 30)),
                  "3" = list(data = matrix(c(1, 1, 0, 2, 2, 2), 3), label = c(40, 50)))
  it <- mx.io.bucket.iter(buckets, batch.size = 2)
  it$reset()
  seen <- list()
  while (it$iter.next()) {
    b <- it$value()
    seen[[length(seen) + 1]] <- list(bucket = names(it$bucketID), id = it$bucketID[[1]], pad = it$num.pad(),
                                     label = as.array(b$label), mask = as.array(b$seq.mask), dim = dim(b$data))
  }
  expect_equal(vapply(seen, function(s) s$bucket, ""), c("2", "2", "3"))
  expect_equal(vapply(seen, function(s) s$id, 1L), c(1L, 2L, 1L))
  expect_equal(vapply(seen, function(s) s$pad, 1L), c(0L, 1L, 0L))
  expect_equal(seen[[1]]$label, c(10, 20))
  expect_equal(seen[[2]]$label, c(30, 10))          # completed from the bucket's start
  expect_equal(seen[[1]]$mask, c(2, 1))             # the second sample holds one 0 (masked)
  expect_equal(seen[[3]]$mask, c(2, 3))
  expect_equal(seen[[3]]$dim, c(3L, 2L))
  sh <- mx.io.bucket.iter(buckets, batch.size = 1, shuffle = TRUE, seed = 4)
  sh$reset()
  labels <- c()
  while (sh$iter.next()) labels <- c(labels, as.array(sh$value()$label))
  expect_equal(sort(labels), c(10, 20, 30, 40, 50))
  expect_error(mx.io.bucket.iter(list(list(data = matrix(1), label = 1)), 1), "named by sequence length")
  expect_error(mx.io.bucket.iter(list("2" = list(data = matrix(1:4, 2), label = 1:3)), 1),
               "bucket '2' has 2 samples of data but 3 labels")
})

test_that("mx.model.buckets learns parameters shared by the buckets' executors", {
  vocab <- 6
  w <- c(0.5, -1, 2, 0.25, -0.75, 1.5)
  buckets <- bucket_data(1, 300, 200, vocab, w)
  data <- mx.symbol.Variable("data")
  emb <- mx.symbol.Embedding(data, input_dim = vocab, output_dim = 1, name = "emb")
  net <- mx.symbol.LinearRegressionOutput(mx.symbol.sum(emb, axis = 1), name = "lro")
  it <- mx.io.bucket.iter(buckets, batch.size = 25, shuffle = TRUE, seed = 2)
  ev <- mx.io.bucket.iter(bucket_data(2, 50, 50, vocab, w), batch.size = 25)
  mx.set.seed(3)
  logger <- mx.metric.logger()
  opt <- mx.opt.create("sgd", learning.rate = 0.1, momentum = 0.5, rescale.grad = 1 / 25)
  model <- mx.model.buckets(net, it, eval.data = ev, metric = mx.metric.rmse, num.round = 30,
                            optimizer = opt, initializer = mx.init.uniform(0.1), verbose = FALSE,
                            epoch.end.callback = mx.callback.log.train.metric(1, logger))
  expect_equal(names(model$arg.params), "emb_weight")
  expect_equal(as.numeric(as.array(model$arg.params$emb_weight)), w, tolerance = 1e-2)
  expect_lt(tail(logger$eval, 1), 0.02)
  # One symbol per bucket, with the optimizer given by name.
  mx.set.seed(3)
  per_bucket <- mx.model.buckets(list("2" = net, "3" = net), it, num.round = 30, optimizer = "sgd",
                                 learning.rate = 0.1, momentum = 0.5, initializer = mx.init.uniform(0.1),
                                 verbose = FALSE)
  expect_equal(as.numeric(as.array(per_bucket$arg.params$emb_weight)), w, tolerance = 1e-2)
  expect_error(mx.model.buckets(list("2" = net), it, num.round = 1, verbose = FALSE), "no symbol for bucket '3'")
  # Over two contexts each batch is split and the summed gradients give the same updates.
  fit <- function(ctx) {
    mx.set.seed(3)
    mx.model.buckets(net, mx.io.bucket.iter(buckets, batch.size = 25), num.round = 3, ctx = ctx,
                     optimizer = mx.opt.create("sgd", learning.rate = 0.1, momentum = 0.5, rescale.grad = 1 / 25),
                     initializer = mx.init.uniform(0.1), verbose = FALSE)
  }
  expect_equal(as.array(fit(list(mx.cpu(0), mx.cpu(1)))$arg.params$emb_weight),
               as.array(fit(mx.cpu())$arg.params$emb_weight), tolerance = 1e-5)
  # fixed.params keeps a parameter at its start.
  start <- list(emb_weight = mx.nd.array(matrix(0, 1, vocab)))
  fixed <- mx.model.buckets(net, it, num.round = 1, arg.params = start, fixed.params = "emb_weight",
                            verbose = FALSE)
  expect_equal(as.numeric(as.array(fixed$arg.params$emb_weight)), rep(0, vocab))
  expect_error(mx.model.buckets(net, it, kvstore = "dist_sync", verbose = FALSE), "only kvstore = \"local\"")
})
