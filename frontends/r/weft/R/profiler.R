# MXNet's R profiler functions over the engine's profiler (see docs/frontends/r.md): the
# configuration keys are those of MXNet's profiler (weft_profiler_set_config in c_api.h).

MX.PROF.STATE <- list(STOP = 0L, RUN = 1L)

# params: a named list, e.g. list(filename = "profile.json", profile_all = TRUE); dots in
# names become underscores, as MXNet's R package does.
mx.profiler.config <- function(params) {
  if (!is.list(params) || (length(params) && (is.null(names(params)) || any(names(params) == "")))) {
    stop("mx.profiler.config: params must be a list of key = value pairs (e.g. list(filename = \"profile.json\"))",
         call. = FALSE)
  }
  keys <- gsub(".", "_", names(params), fixed = TRUE)
  vals <- vapply(params, function(v) {
    if (is.character(v)) path.expand(v) else .weft_plain_value(v)
  }, "")
  invisible(weft_profiler_set_config(keys, unname(vals)))
}

mx.profiler.state <- function(state = MX.PROF.STATE$STOP) {
  if (!(length(state) == 1 && state %in% unlist(MX.PROF.STATE))) {
    stop(sprintf("mx.profiler.state: state must be MX.PROF.STATE$RUN (1) or MX.PROF.STATE$STOP (0), got %s",
                 paste(format(state), collapse = ", ")), call. = FALSE)
  }
  invisible(weft_profiler_set_state(as.integer(state)))
}
