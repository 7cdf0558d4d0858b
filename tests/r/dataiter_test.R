# The data iterators through the R binding's generated functions: a CSV file read back
# batch by batch, and errors carrying Weft's message.
# Usage: Rscript dataiter_test.R <folder of the built binding>
binding_dir <- commandArgs(trailingOnly = TRUE)[1]
source(file.path(binding_dir, "ndarray.R"))
suppressMessages(weft_load(binding_dir))

check <- function(ok, what) if (!isTRUE(ok)) stop(what)
expect_error_naming <- function(expr, word) {
  message <- tryCatch({ expr; NULL }, error = function(e) conditionMessage(e))
  if (is.null(message) || !grepl(word, message, fixed = TRUE)) {
    stop(sprintf("expected an error naming '%s', got: %s", word, if (is.null(message)) "none" else message))
  }
}

csv <- tempfile(fileext = ".csv")
writeLines(c("1,2,3", "4,5,6", "7,8,9", "10,11,12"), csv)
it <- weft_dataiter_create("CSVIter", 3L, c("data_csv", "data_shape", "batch_size"), c(csv, "(3,)", "2"))[[2]]
values <- c()
batches <- 0L
while (weft_dataiter_next(it)[[2]] == 1L) {
  data <- weft_dataiter_get_data(it, 0L)[[2]]
  check(identical(nd_shape(data), c(2, 3)), "each batch holds 2 rows of 3")
  check(identical(weft_dataiter_get_pad(it)[[2]], 0L), "no padding")
  values <- c(values, nd_values(data))
  nd_free(data)
  batches <- batches + 1L
}
check(batches == 2L, sprintf("expected 2 batches, got %d", batches))
check(identical(values, as.double(1:12)), sprintf("values read back: %s", paste(values, collapse = ", ")))
invisible(weft_dataiter_reset(it))
check(weft_dataiter_next(it)[[2]] == 1L, "a reset starts a new epoch")
invisible(weft_dataiter_free(it))

expect_error_naming(weft_dataiter_create("CSVIter", 3L, c("data_csv", "data_shape", "batch_size"),
                                         c("/no/such/file.csv", "(3,)", "2")), "/no/such/file.csv")
expect_error_naming(weft_dataiter_create("NoSuchIter", 0L, character(0), character(0)), "NoSuchIter")
cat("R data iterator test passed\n")
