# MXKVStore: an environment with the store's methods, as in MXNet's R package. Keys are
# integers or strings; values and outputs are MXNDArrays, one per key (repeat a key to push
# several values of it: they are summed), or MXNet's list of such lists, one per device.

mx.kv.create <- function(type = "local") {
  handle <- weft_kvstore_create(type)
  kv <- new.env(parent = emptyenv())
  kv$handle <- handle
  kv$type <- type
  kv$rank <- weft_kvstore_get_rank(handle)
  kv$num.workers <- weft_kvstore_get_num_workers(handle)
  arrays <- function(values) if (inherits(values, "MXNDArray")) list(values) else unname(values)
  keys_of <- function(keys) as.character(keys)
  # MXNet's form for several devices: a list with one list per device, each holding one
  # array per key. Each key then goes once per device: pushed values are summed, and pulls
  # fill every device's array.
  per_key <- function(keys, values, what) {
    values <- arrays(values)
    nested <- length(values) > 0 && all(vapply(values, function(v) is.list(v) && !inherits(v, "MXNDArray"), TRUE))
    if (!nested) return(list(keys = keys_of(keys), values = values))
    sizes <- lengths(values)
    if (any(sizes != length(keys))) {
      d <- which(sizes != length(keys))[1]
      stop(sprintf("kvstore %s: device %d's list has %d arrays for %d keys", what, d, sizes[d], length(keys)),
           call. = FALSE)
    }
    list(keys = rep(keys_of(keys), times = length(values)), values = unlist(lapply(values, unname), recursive = FALSE))
  }
  kv$init <- function(keys, values) invisible(weft_kvstore_init(handle, keys_of(keys), arrays(values)))
  kv$push <- function(keys, values, priority = 0L) {
    v <- per_key(keys, values, "push")
    invisible(weft_kvstore_push(handle, v$keys, v$values, as.integer(priority)))
  }
  kv$pull <- function(keys, out.list, priority = 0L) {
    o <- per_key(keys, out.list, "pull")
    invisible(weft_kvstore_pull(handle, o$keys, o$values, as.integer(priority)))
  }
  kv$pushpull <- function(keys, values, out.list, priority = 0L) {
    v <- per_key(keys, values, "pushpull")
    o <- per_key(keys, out.list, "pushpull")
    invisible(weft_kvstore_pushpull(handle, v$keys, v$values, o$keys, o$values, as.integer(priority)))
  }
  kv$barrier <- function() invisible(weft_kvstore_barrier(handle))
  # fun(key, merged, stored) changes `stored` in place (with operators writing to out =
  # stored); key is the key's text.
  kv$set.updater <- function(fun) invisible(.Call(C_weft_r_kvstore_set_updater, handle, fun))
  # The optimizer (mx.opt.create) runs in the updater, with a state per key.
  kv$set.optimizer <- function(optimizer) {
    states <- new.env(parent = emptyenv())
    kv$set.updater(function(key, merged, stored) {
      if (!exists(key, envir = states, inherits = FALSE)) {
        assign(key, optimizer$create.state(key, stored), envir = states)
      }
      optimizer$update(key, stored, merged, get(key, envir = states))
    })
  }
  kv$free <- function() invisible(weft_kvstore_free(handle))
  class(kv) <- "MXKVStore"
  kv
}

print.MXKVStore <- function(x, ...) {
  cat(sprintf("<MXKVStore %s, rank %d of %d>\n", x$type, x$rank, x$num.workers))
  invisible(x)
}
