read_idx <- function(path, n) {
  con <- gzfile(path, "rb")
  on.exit(close(con))
  magic <- readBin(con, "integer", 1, size = 4, endian = "big")
  dims <- readBin(con, "integer", magic %% 256, size = 4, endian = "big")
  per <- if (length(dims) > 1) prod(dims[-1]) else 1
  as.integer(readBin(con, "raw", per * n))
}

test_that("CSVIter reads batches of rows, pads the last one and reports bad files", {
  f <- tempfile(fileext = ".csv")
  writeLines(c("1,2,3", "4,5,6", "7,8,9"), f)
  l <- tempfile(fileext = ".csv")
  writeLines(c("0", "1", "2"), l)
  it <- mx.io.CSVIter(data.csv = f, data.shape = 3, label.csv = l, batch.size = 2)
  expect_true(it$iter.next())
  b <- it$value()
  expect_equal(as.array(b$data), matrix(1:6, 3) + 0)
  expect_equal(as.array(b$label), c(0, 1))
  expect_equal(it$num.pad(), 0L)
  expect_true(it$iter.next())
  expect_equal(it$num.pad(), 1L)
  expect_equal(as.array(it$value()$data)[, 1], c(7, 8, 9))
  expect_false(it$iter.next())
  it$reset()
  expect_true(it$iter.next())
  it$free()
  err <- tryCatch(mx.io.CSVIter(data.csv = "/no/such.csv", data.shape = 3, batch.size = 2), error = function(e) e)
  expect_s3_class(err, "weft_error")
  expect_match(conditionMessage(err), "/no/such.csv", fixed = TRUE)
  expect_error(mx.io.CSVIter(data.csv = f, data.shape = 3, batch.size = 0), "batch_size")
  # A key the iterator does not know is ignored (with a warning on stderr), as MXNet's iterators do.
  extra <- mx.io.CSVIter(data.csv = f, data.shape = 3, batch.size = 2, bogus = 1)
  expect_true(extra$iter.next())
  expect_equal(as.array(extra$value()$data), matrix(1:6, 3) + 0)
  extra$free()
  expect_error(mx.io.CSVIter(f), "by name")
})

test_that("MNISTIter gives Fashion-MNIST's pixels (scaled by 1/256) and labels", {
  d <- fashion_dir()
  img <- file.path(d, "t10k-images-idx3-ubyte.gz")
  lab <- file.path(d, "t10k-labels-idx1-ubyte.gz")
  it <- mx.io.MNISTIter(image = img, label = lab, batch.size = 5, flat = TRUE, shuffle = FALSE, silent = TRUE)
  expect_true(it$iter.next())
  b <- it$value()
  expect_equal(dim(b$data), c(784L, 5L))
  expect_equal(as.array(b$data), matrix(read_idx(img, 5), 784) / 256)
  expect_equal(as.array(b$label), c(read_idx(lab, 5) + 0))
  it4 <- mx.io.MNISTIter(image = img, label = lab, batch_size = 2, flat = FALSE, shuffle = FALSE, silent = TRUE)
  it4$iter.next()
  expect_equal(dim(it4$value()$data), c(28L, 28L, 1L, 2L))
})

test_that("ImageRecordIter decodes records written through the C API", {
  mx.set.seed(1)
  set.seed(1)
  imgs <- lapply(1:3, function(k) array(sample(0:255, 3 * 4 * 5, TRUE), c(3, 4, 5)))  # HWC (5,4,3)
  rec <- tempfile(fileext = ".rec")
  w <- weft:::weft_recordio_writer_create(rec)
  for (k in 1:3) {
    png <- weft:::weft_image_encode(mx.nd.array(imgs[[k]], dtype = "uint8"), ".png", 3L, 0L)
    # The image record header: flag (uint32), label (float32), id and id2 (uint64).
    header <- c(writeBin(0L, raw(), size = 4, endian = "little"),
                writeBin(as.numeric(k * 10), raw(), size = 4, endian = "little"),
                writeBin(c(as.integer(k), 0L, 0L, 0L), raw(), size = 4, endian = "little"))
    weft:::weft_recordio_write(w, c(header, weft:::weft_bytes_get(png)))
  }
  weft:::weft_recordio_free(w)
  it <- mx.io.ImageRecordIter(path.imgrec = rec, data.shape = c(4, 5, 3), batch.size = 2)
  expect_true(it$iter.next())
  b <- it$value()
  expect_equal(dim(b$data), c(4L, 5L, 3L, 2L))  # data.shape in R's order: NCHW (2, 3, 5, 4)
  expect_equal(as.array(b$label), c(10, 20))
  x <- as.array(b$data)
  expect_equal(x[, , , 1], aperm(imgs[[1]], c(2, 3, 1)) + 0)
  expect_equal(x[, , , 2], aperm(imgs[[2]], c(2, 3, 1)) + 0)
  expect_true(it$iter.next())
  expect_equal(it$num.pad(), 1L)
  expect_false(it$iter.next())
  expect_error(mx.io.ImageRecordIter(path.imgrec = tempfile(), data.shape = c(4, 5, 3), batch.size = 2),
               class = "weft_error")
})

test_that("arrayiter batches the last dim, pads as MXNet's R package and shuffles", {
  x <- matrix(1:10, 2)   # 5 samples
  y <- c(0, 1, 2, 3, 4)
  it <- mx.io.arrayiter(x, y, batch.size = 2)
  got <- list()
  pads <- c()
  it$reset()
  while (it$iter.next()) {
    b <- it$value()
    got[[length(got) + 1]] <- as.array(b$label)
    pads <- c(pads, it$num.pad())
    expect_equal(dim(b$data), c(2L, 2L))
  }
  # The short last batch keeps what the batch before held in its empty place (sample 4).
  expect_equal(unlist(got), c(0, 1, 2, 3, 4, 3))
  expect_equal(pads, c(0, 0, 1))
  # MXNet's own R test: 100 samples in batches of 30 count the samples 71-90 twice.
  y100 <- round((1:100) / 10)
  it100 <- mx.io.arrayiter(matrix(1:10000, 100, 100), y100, batch.size = 30)
  counts <- rep(0, 11)
  it100$reset()
  while (it100$iter.next()) for (v in as.array(it100$value()$label)) counts[v + 1] <- counts[v + 1] + 1
  expect_equal(counts, tabulate(c(y100, y100[71:90]) + 1, 11))
  # One short batch: nothing held before it, so zeros.
  one <- mx.io.arrayiter(matrix(1:6, 2), c(7, 8, 9), batch.size = 5)
  expect_true(one$iter.next())
  expect_equal(as.array(one$value()$data), cbind(matrix(1:6, 2), 0, 0) + 0)
  expect_equal(as.array(one$value()$label), c(7, 8, 9, 0, 0))
  expect_equal(one$num.pad(), 2L)
  expect_false(one$iter.next())
  # Shuffled from the start, before any reset.
  set.seed(5)
  first <- mx.io.arrayiter(matrix(1:40, 1), 1:40, batch.size = 40, shuffle = TRUE)
  first$iter.next()
  expect_false(identical(as.array(first$value()$label), as.numeric(1:40)))
  expect_equal(sort(as.array(first$value()$label)), as.numeric(1:40))
  sh <- mx.io.arrayiter(x, y, batch.size = 5, shuffle = TRUE)
  set.seed(3)
  sh$reset()
  sh$iter.next()
  b <- sh$value()
  lab <- as.array(b$label)
  expect_equal(sort(as.numeric(lab)), y)
  expect_equal(as.array(b$data), x[, lab + 1] + 0)
  a3 <- mx.io.arrayiter(array(1:24, c(2, 3, 4)), batch.size = 3)
  a3$reset()
  a3$iter.next()
  expect_equal(as.array(a3$value()$data), array(1:18, c(2, 3, 3)) + 0)
  expect_error(mx.io.arrayiter(x, 1:3), "5 samples of data but 3 labels")
})

test_that("mx.io.extract joins every batch's field without the padding", {
  x <- matrix(1:14, 2)                   # 7 samples of 2 features
  it <- mx.io.arrayiter(x, label = 10 * (1:7), batch.size = 3)
  d <- mx.io.extract(it, "data")
  expect_equal(dim(d), c(2L, 7L))
  expect_equal(as.array(d), x + 0)
  expect_equal(as.array(mx.io.extract(it, "label")), 10 * (1:7))
  expect_error(mx.io.extract(it, "weights"), "the iterator gives no 'weights'")
  expect_error(mx.io.extract(list(), "data"), "expected a data iterator .* got list")
  # Its MXNDArrays feed an array iterator again (MXNet's demo predicts on them), shuffled too.
  again <- mx.io.arrayiter(d, mx.io.extract(it, "label"), batch.size = 7, shuffle = TRUE)
  again$reset()
  expect_true(again$iter.next())
  b <- again$value()
  expect_equal(sort(as.array(b$label)), 10 * (1:7))
  expect_equal(as.array(b$data)[1, ], 2 * as.array(b$label) / 10 - 1)
  expect_equal(as.array(d[, 2:3, drop = FALSE]), x[, 2:3] + 0)
})
