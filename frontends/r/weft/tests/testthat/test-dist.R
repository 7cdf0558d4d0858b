test_that("a dist_sync job of R workers sums their pushes (tools/launch.py, 2 workers, 1 server)", {
  skip_unless_long()
  launch <- Sys.getenv("WEFT_LAUNCH")
  if (launch == "" || !file.exists(launch)) skip("WEFT_LAUNCH does not name tools/launch.py")
  py <- python_or_skip()
  out <- tempfile("dist")
  dir.create(out)
  worker <- normalizePath(test_path("dist_worker.R"))
  rscript <- file.path(R.home("bin"), "Rscript")
  log <- suppressWarnings(system2(py, c(launch, "-n", "2", "-s", "1", "--grace", "10", rscript, "--vanilla", worker, out),
                                  stdout = TRUE, stderr = TRUE, timeout = 120,
                                  env = c("WEFT_KVSTORE_HEARTBEAT_TIMEOUT=10", "OMP_NUM_THREADS=1")))
  status <- attr(log, "status")
  expect_true(is.null(status) || status == 0, info = paste(log, collapse = "\n"))
  ranks <- c()
  for (r in 0:1) {
    f <- file.path(out, sprintf("worker-%d.params", r))
    expect_true(file.exists(f), info = paste(log, collapse = "\n"))
    got <- mx.nd.load(f)
    ranks <- c(ranks, as.array(got$info)[1])
    expect_equal(as.array(got$info)[2], 2)
    expect_equal(as.array(got$small), matrix(3, 3, 2))               # 1 + 2
    expect_equal(as.array(got$big_sum), 3 * 1000 * 1200)
    expect_equal(as.array(got$pushpull), c(1, 2, 3, 4) * 3)
  }
  expect_equal(sort(ranks), c(0, 1))
  # Both workers trained the same weights (summed gradients, rank 0's initial values), away
  # from the 0.01-scale initial draws.
  w <- lapply(0:1, function(r) mx.nd.load(file.path(out, sprintf("worker-%d.params", r))))
  expect_equal(as.array(w[[1]]$fc_weight), as.array(w[[2]]$fc_weight), tolerance = 1e-6)
  expect_equal(as.array(w[[1]]$fc_bias), as.array(w[[2]]$fc_bias), tolerance = 1e-6)
  expect_gt(max(abs(as.array(w[[1]]$fc_weight))), 0.1)
})
