# MXKVStore: an environment with the store's methods, as in MXNet's R package. Keys are
# integers or strings; values and outputs are MXNDArrays, one per key (repeat a key to push
# several values of it: they are summed).

mx.kv.create <- function(type = "local") {
  handle <- weft_kvstore_create(type)
  kv <- new.env(parent = emptyenv())
  kv$handle <- handle
  kv$type <- type
  kv$rank <- weft_kvstore_get_rank(handle)
  kv$num.workers <- weft_kvstore_get_num_workers(handle)
  arrays <- function(values) if (inherits(values, "MXNDArray")) list(values) else unname(values)
  keys_of <- function(keys) as.character(keys)
  kv$init <- function(keys, values) invisible(weft_kvstore_init(handle, keys_of(keys), arrays(values)))
  kv$push <- function(keys, values, priority = 0L) {
    invisible(weft_kvstore_push(handle, keys_of(keys), arrays(values), as.integer(priority)))
  }
  kv$pull <- function(keys, out.list, priority = 0L) {
    invisible(weft_kvstore_pull(handle, keys_of(keys), arrays(out.list), as.integer(priority)))
  }
  kv$pushpull <- function(keys, values, out.list, priority = 0L) {
    invisible(weft_kvstore_pushpull(handle, keys_of(keys), arrays(values), keys_of(keys), arrays(out.list),
                                    as.integer(priority)))
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
