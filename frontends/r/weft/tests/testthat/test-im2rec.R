# im2rec: MXNet's R function packing a list file's images into RecordIO.

# Writes R array `a` (R dims c(C, W, H), as an MXNDArray of Weft shape (H, W, C)) as a PNG.
.write_png <- function(a, path) {
  png <- weft:::weft_image_encode(mx.nd.array(a, dtype = "uint8"), ".png", 3L, 0L)
  writeBin(weft:::weft_bytes_get(png), path)
}

# All records of a RecordIO file, each as list(flag, label, id, labels, payload).
.read_records <- function(path) {
  r <- weft:::weft_recordio_reader_create(path)
  on.exit(weft:::weft_recordio_free(r))
  out <- list()
  repeat {
    b <- weft:::weft_recordio_read(r)
    if (is.null(b)) break
    bytes <- weft:::weft_bytes_get(b)
    flag <- readBin(bytes[1:4], "integer", size = 4, endian = "little")
    label <- readBin(bytes[5:8], "numeric", size = 4, endian = "little")
    id <- sum(as.numeric(bytes[9:16]) * 256^(0:7))
    start <- 25L + 4L * flag
    labels <- if (flag > 0) readBin(bytes[25:(start - 1L)], "numeric", n = flag, size = 4, endian = "little") else NULL
    out[[length(out) + 1L]] <- list(flag = flag, label = label, id = id, labels = labels,
                                    payload = bytes[start:length(bytes)])
  }
  out
}

.decode <- function(payload, flag = 1L) as.array(weft:::weft_image_decode(payload, flag, 1L))

test_that("im2rec packs a list file's images with their labels and ids, resized and cropped as MXNet's", {
  dir <- tempfile()
  dir.create(file.path(dir, "sub"), recursive = TRUE)
  set.seed(3)
  tall <- array(sample(0:255, 3 * 6 * 10, TRUE), c(3, 6, 10))   # W 6, H 10
  wide <- array(sample(0:255, 3 * 9 * 4, TRUE), c(3, 9, 4))     # W 9, H 4
  .write_png(tall, file.path(dir, "tall.png"))
  .write_png(wide, file.path(dir, "sub", "wide img.png"))
  lst <- file.path(dir, "all.lst")
  # Blank lines are skipped; a file name may hold spaces; ids may be large.
  writeLines(c("7\t1.5\ttall.png", "", "5000000000\t2\tsub/wide img.png"), lst)
  rec <- file.path(dir, "all.rec")
  expect_equal(im2rec(lst, dir, rec, encoding = ".png"), 2L)
  got <- .read_records(rec)
  expect_equal(length(got), 2L)
  expect_equal(c(got[[1]]$flag, got[[1]]$label, got[[1]]$id), c(0, 1.5, 7))
  expect_equal(c(got[[2]]$label, got[[2]]$id), c(2, 5e9))
  # PNG is lossless: the stored pixels are the source's (no new_size: the size is kept).
  expect_equal(.decode(got[[1]]$payload), tall)
  expect_equal(.decode(got[[2]]$payload), wide)

  # new_size resizes the shorter side (the longer in proportion, rounded down), with the
  # library's resize; center_crop first takes the centre square.
  im2rec(lst, dir, rec, new_size = 3L, encoding = ".png", inter_method = 2L)
  got <- .read_records(rec)
  expect_equal(dim(.decode(got[[1]]$payload)), c(3L, 3L, 5L))   # 6x10 -> 3x5
  expect_equal(dim(.decode(got[[2]]$payload)), c(3L, 6L, 3L))   # 9x4 -> 6x3 (27 / 4 = 6)
  want <- as.array(weft:::weft_image_resize(mx.nd.array(tall, dtype = "uint8"), 3L, 5L, 2L))
  expect_equal(.decode(got[[1]]$payload), want)
  im2rec(lst, dir, rec, new_size = 3L, center_crop = 1L, encoding = ".png")
  got <- .read_records(rec)
  square <- tall[, , 3:8]                                           # rows 2..7 of 10
  want <- as.array(weft:::weft_image_resize(mx.nd.array(square, dtype = "uint8"), 3L, 3L, 1L))
  expect_equal(.decode(got[[1]]$payload), want)
  expect_equal(dim(.decode(got[[2]]$payload)), c(3L, 3L, 3L))

  # Grey images, and files stored unchanged.
  im2rec(lst, dir, rec, color_mode = 0L, encoding = ".png")
  expect_equal(dim(.decode(.read_records(rec)[[1]]$payload, -1L)), c(1L, 6L, 10L))
  im2rec(lst, dir, rec, unchanged = 1L)
  expect_identical(.read_records(rec)[[2]]$payload,
                   readBin(file.path(dir, "sub", "wide img.png"), "raw", file.size(file.path(dir, "sub", "wide img.png"))))

  # The records are what ImageRecordIter reads (data.shape in R's order).
  im2rec(lst, dir, rec, new_size = 4L, center_crop = 1L, quality = 95L)
  it <- mx.io.ImageRecordIter(path.imgrec = rec, data.shape = c(4, 4, 3), batch.size = 2)
  expect_true(it$iter.next())
  expect_equal(dim(it$value()$data), c(4L, 4L, 3L, 2L))
  expect_equal(as.array(it$value()$label), c(1.5, 2))
})

test_that("im2rec packs several labels, splits the list into parts and names bad input", {
  dir <- tempfile()
  dir.create(dir)
  for (k in 1:4) .write_png(array(as.integer(k * 40), c(3, 4, 4)), file.path(dir, sprintf("i%d.png", k)))
  lst <- file.path(dir, "multi.lst")
  writeLines(sprintf("%d\t%d\t%d.5\ti%d.png", 0:3, 0:3, 10 + 0:3, 1:4), lst)
  rec <- file.path(dir, "multi.rec")
  im2rec(lst, dir, rec, label_width = 2L, pack_label = 1L, encoding = ".png")
  got <- .read_records(rec)
  expect_equal(vapply(got, function(r) r$flag, 0), rep(2, 4))
  expect_equal(got[[3]]$labels, c(2, 12.5))
  expect_equal(.decode(got[[3]]$payload), array(120L, c(3, 4, 4)))
  # Without pack_label only the first label goes in the header.
  im2rec(lst, dir, rec, label_width = 2L, encoding = ".png")
  expect_equal(vapply(.read_records(rec), function(r) r$label, 0), 0:3)

  # Two parts cover the list once, in order, in files named <rec>.part000 and .part001.
  im2rec(lst, dir, rec, label_width = 2L, nsplit = 2L, partid = 0L, encoding = ".png")
  im2rec(lst, dir, rec, label_width = 2L, nsplit = 2L, partid = 1L, encoding = ".png")
  ids <- c(vapply(.read_records(paste0(rec, ".part000")), function(r) r$id, 0),
           vapply(.read_records(paste0(rec, ".part001")), function(r) r$id, 0))
  expect_equal(ids, 0:3)
  expect_true(length(.read_records(paste0(rec, ".part000"))) %in% 1:3)

  # A root without its final "/" is taken as a folder.
  im2rec(lst, sub("/$", "", dir), rec, label_width = 2L, encoding = ".png")
  expect_equal(length(.read_records(rec)), 4L)

  expect_error(im2rec(lst, dir, rec, label_width = 3L), "fewer than label_width = 3 labels")
  expect_error(im2rec(lst, dir, rec, pack_label = 1L), "pack_label can only be used when label_width > 1")
  expect_error(im2rec(lst, dir, rec, color_mode = 2L), "color_mode must be -1, 0 or 1, got 2")
  expect_error(im2rec(lst, dir, rec, encoding = ".gif"), "encoding must be")
  expect_error(im2rec(lst, dir, rec, inter_method = 7L), "inter_method must be 0..4, 9 or 10, got 7")
  expect_error(im2rec(lst, dir, rec, nsplit = 2L, partid = 2L), "partid must be in \\[0, nsplit\\)")
  expect_error(im2rec(file.path(dir, "none.lst"), dir, rec), "none.lst' does not exist")
  writeLines("0\t1\tmissing.png", file.path(dir, "bad.lst"))
  expect_error(im2rec(file.path(dir, "bad.lst"), dir, rec), "missing.png' \\(line '0\t1\tmissing.png'")
  writeBin(as.raw(1:50), file.path(dir, "junk.png"))
  writeLines("0\t1\tjunk.png", file.path(dir, "junk.lst"))
  expect_error(im2rec(file.path(dir, "junk.lst"), dir, rec), class = "weft_error")
})
