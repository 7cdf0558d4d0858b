# im2rec: packs the images of a list file into a RecordIO file, as MXNet's R package does
# (its `im2rec`, with the same arguments and defaults), through the library's decoder,
# resizer, encoder and RecordIO writer.

# The 8 little-endian bytes of a non-negative whole number below 2^53.
.weft_u64_bytes <- function(x) as.raw(floor(x / 256^(0:7)) %% 256)

# MXNet's image-record header: flag (uint32), label (float32), id and id2 (uint64).
.weft_irheader <- function(flag, label, id) {
  c(writeBin(as.integer(flag), raw(), size = 4L, endian = "little"),
    writeBin(as.numeric(label), raw(), size = 4L, endian = "little"),
    .weft_u64_bytes(id), .weft_u64_bytes(0))
}

# MXNet's inter_method: 0..4 as OpenCV's, 9 auto (bicubic to enlarge, area to shrink,
# else bilinear), 10 one of 0..4 at random (R's generator, so set.seed repeats it).
.weft_inter_method <- function(method, old_w, old_h, new_w, new_h) {
  if (method == 9L) {
    if (new_w > old_w && new_h > old_h) return(2L)
    if (new_w < old_w && new_h < old_h) return(3L)
    return(1L)
  }
  if (method == 10L) return(sample.int(5L, 1L) - 1L)
  method
}

# Which lines of the list file are part `partid` of `nsplit`: the file is cut into nsplit
# equal byte ranges and a line goes with the range its first byte falls in.
.weft_lst_part <- function(lines, nsplit, partid) {
  if (nsplit == 1L) return(lines)
  starts <- c(0, cumsum(nchar(lines, type = "bytes") + 1))[seq_along(lines)]
  total <- sum(nchar(lines, type = "bytes") + 1)
  step <- ceiling(total / nsplit)
  lines[starts >= partid * step & starts < (partid + 1) * step]
}

im2rec <- function(image_lst, root, output_rec, label_width = 1L, pack_label = 0L, new_size = -1L,
                   nsplit = 1L, partid = 0L, center_crop = 0L, quality = 95L, color_mode = 1L,
                   unchanged = 0L, inter_method = 1L, encoding = ".jpg") {
  whole <- function(x, what) {
    if (!is.numeric(x) || length(x) != 1L || is.na(x) || x != round(x)) {
      stop(sprintf("im2rec: %s must be one whole number, got %s", what, deparse(x)), call. = FALSE)
    }
    as.integer(x)
  }
  label_width <- whole(label_width, "label_width")
  pack_label <- whole(pack_label, "pack_label")
  new_size <- whole(new_size, "new_size")
  nsplit <- whole(nsplit, "nsplit")
  partid <- whole(partid, "partid")
  quality <- whole(quality, "quality")
  color_mode <- whole(color_mode, "color_mode")
  inter_method <- whole(inter_method, "inter_method")
  if (!color_mode %in% c(-1L, 0L, 1L)) stop("im2rec: color_mode must be -1, 0 or 1, got ", color_mode, call. = FALSE)
  if (!is.character(encoding) || length(encoding) != 1L || !encoding %in% c(".jpg", ".png")) {
    stop("im2rec: encoding must be \".jpg\" or \".png\", got ", deparse(encoding), call. = FALSE)
  }
  if (label_width < 1L) stop("im2rec: label_width must be at least 1, got ", label_width, call. = FALSE)
  if (label_width <= 1L && pack_label) stop("im2rec: pack_label can only be used when label_width > 1", call. = FALSE)
  if (nsplit < 1L || partid < 0L || partid >= nsplit) {
    stop(sprintf("im2rec: partid must be in [0, nsplit), got partid = %d, nsplit = %d", partid, nsplit), call. = FALSE)
  }
  if (!inter_method %in% c(0:4, 9L, 10L)) {
    stop("im2rec: inter_method must be 0..4, 9 or 10, got ", inter_method, call. = FALSE)
  }
  # As MXNet: a PNG's "quality" is its zlib level, 3 when a JPEG quality was left.
  if (encoding == ".png" && quality > 9L) quality <- 3L
  image_lst <- path.expand(image_lst)
  root <- path.expand(root)
  # MXNet appends the file name to root as it is; a root without its final "/" would name
  # files that do not exist, so the separator is added.
  if (nzchar(root) && !grepl("/$", root)) root <- paste0(root, "/")
  output_rec <- path.expand(output_rec)
  if (!file.exists(image_lst)) stop("im2rec: the list file '", image_lst, "' does not exist", call. = FALSE)
  lines <- .weft_lst_part(readLines(image_lst, warn = FALSE), nsplit, partid)
  out_path <- if (nsplit == 1L) output_rec else sprintf("%s.part%03d", output_rec, partid)
  rec <- weft_recordio_writer_create(out_path)
  on.exit(weft_recordio_free(rec))
  started <- Sys.time()
  count <- 0L
  for (line in lines) {
    rest <- line
    # The next whitespace-separated field of the line, or NA when there is none.
    field <- function() {
      m <- regexpr("^[[:space:]]*[^[:space:]]+", rest)
      if (m == -1L) return(NA_character_)
      tok <- trimws(regmatches(rest, m))
      rest <<- substring(rest, attr(m, "match.length") + 1L)
      tok
    }
    id <- suppressWarnings(as.numeric(field()))
    labels <- suppressWarnings(as.numeric(field()))
    # As MXNet: a line that does not start with an index and a label (a blank one) is skipped.
    if (is.na(id) || is.na(labels)) next
    if (id < 0 || id != round(id)) {
      stop(sprintf("im2rec: '%s' in %s: the index must be a non-negative whole number", line, image_lst),
           call. = FALSE)
    }
    for (k in seq_len(label_width - 1L)) {
      v <- suppressWarnings(as.numeric(field()))
      if (is.na(v)) {
        stop(sprintf("im2rec: '%s' in %s has fewer than label_width = %d labels; is label_width right?",
                     line, image_lst, label_width), call. = FALSE)
      }
      labels <- c(labels, v)
    }
    fname <- sub("[[:space:][:cntrl:]]+$", "", sub("^[[:space:]]+", "", rest))
    path <- paste0(root, fname)
    if (!file.exists(path)) {
      stop(sprintf("im2rec: '%s' (line '%s' of %s) does not exist", path, line, image_lst), call. = FALSE)
    }
    bytes <- readBin(path, "raw", file.size(path))
    if (unchanged != 1L) {
      img <- weft_image_decode(bytes, color_mode, 0L)
      hwc <- .weft_shape(img)
      h <- hwc[1]
      w <- hwc[2]
      if (new_size > 0L) {
        if (center_crop) {
          if (h > w) {
            img <- mx.nd.slice.axis(img, axis = 0L, begin = (h - w) %/% 2L, end = (h - w) %/% 2L + w)
            h <- w
          } else {
            img <- mx.nd.slice.axis(img, axis = 1L, begin = (w - h) %/% 2L, end = (w - h) %/% 2L + h)
            w <- h
          }
        }
        # The shorter side becomes new_size, the longer one in proportion (rounded down).
        size <- if (h > w) c(new_size, (h * new_size) %/% w) else c((new_size * w) %/% h, new_size)
        if (!identical(as.numeric(size), as.numeric(c(w, h)))) {
          img <- weft_image_resize(img, size[1], size[2], .weft_inter_method(inter_method, w, h, size[1], size[2]))
        }
      }
      encoded <- weft_image_encode(img, encoding, quality, 1L)
      bytes <- weft_bytes_get(encoded)
      weft_bytes_free(encoded)
    }
    record <- c(.weft_irheader(if (pack_label) label_width else 0L, labels[1], id),
                if (pack_label) writeBin(labels, raw(), size = 4L, endian = "little"),
                bytes)
    weft_recordio_write(rec, record)
    count <- count + 1L
    if (count %% 1000L == 0L) {
      message(sprintf("im2rec: %d images packed, %.1f s", count,
                      as.numeric(difftime(Sys.time(), started, units = "secs"))))
    }
  }
  invisible(count)
}
