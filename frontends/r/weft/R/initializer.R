# Initializers: function(name, shape, ctx) giving the MXNDArray of a parameter (shape in
# R's dim order). Biases and BatchNorm's beta and moving mean start at 0, gamma and moving
# variance at 1; weights are drawn by the engine's generators (mx.set.seed repeats them).

.weft_init_fixed <- function(name, shape, ctx) {
  if (grepl("(bias|beta|moving_mean)$", name)) return(mx.nd.zeros(shape, ctx))
  if (grepl("(gamma|moving_var)$", name)) return(mx.nd.ones(shape, ctx))
  NULL
}

mx.init.uniform <- function(scale) {
  function(name, shape, ctx = mx.ctx.default()) {
    fixed <- .weft_init_fixed(name, shape, ctx)
    if (!is.null(fixed)) fixed else mx.runif(shape, -scale, scale, ctx)
  }
}

mx.init.normal <- function(sd) {
  function(name, shape, ctx = mx.ctx.default()) {
    fixed <- .weft_init_fixed(name, shape, ctx)
    if (!is.null(fixed)) fixed else mx.rnorm(shape, 0, sd, ctx)
  }
}

# Glorot's scale: uniform or normal draws whose spread is sqrt(magnitude / fan).
mx.init.Xavier <- function(rnd_type = "uniform", factor_type = "avg", magnitude = 3) {
  function(name, shape, ctx = mx.ctx.default()) {
    fixed <- .weft_init_fixed(name, shape, ctx)
    if (!is.null(fixed)) return(fixed)
    # The fans of MXNet's R package: the last R dim (outputs: Weft's first axis) and the
    # product of the others (a convolution's inputs times its kernel). MXNet's Python
    # Xavier also multiplies the outputs by the kernel size; R users' models expect this one.
    fan_out <- shape[length(shape)]
    fan_in <- prod(shape[-length(shape)])
    factor <- switch(factor_type, avg = (fan_in + fan_out) / 2, "in" = fan_in, out = fan_out,
                     stop(sprintf("mx.init.Xavier: unknown factor_type '%s'", factor_type), call. = FALSE))
    scale <- sqrt(magnitude / factor)
    switch(rnd_type, uniform = mx.runif(shape, -scale, scale, ctx), gaussian = mx.rnorm(shape, 0, scale, ctx),
           stop(sprintf("mx.init.Xavier: unknown rnd_type '%s'", rnd_type), call. = FALSE))
  }
}

# The fixed start of a non-weight parameter (bias, gamma, beta, moving mean or variance);
# any other name is an error, or NULL with allow.unknown.
mx.init.internal.default <- function(name, shape, ctx = mx.ctx.default(), allow.unknown = FALSE) {
  fixed <- .weft_init_fixed(name, shape, ctx)
  if (is.null(fixed) && !allow.unknown) {
    # The message starts as MXNet's R package words it, misspelling included: scripts and
    # tests written for it match that text.
    stop(sprintf("Unkown initialization pattern for  %s (mx.init.internal.default: expected a name ending in %s)",
                 name, "bias, gamma, beta, moving_mean or moving_var"), call. = FALSE)
  }
  fixed
}

# A named list of the arrays that `initializer` gives for each entry of `shape.array` (a
# named list of dims in R's order); entries it gives NULL for are dropped with skip.unknown.
mx.init.create <- function(initializer, shape.array, ctx = mx.ctx.default(), skip.unknown = TRUE) {
  if (length(shape.array) == 0) return(list())
  if (is.null(names(shape.array)) || any(names(shape.array) == "")) {
    stop("mx.init.create: shape.array must be a list of dims named by parameter", call. = FALSE)
  }
  out <- lapply(names(shape.array), function(n) initializer(n, shape.array[[n]], ctx))
  names(out) <- names(shape.array)
  if (skip.unknown) out <- out[!vapply(out, is.null, TRUE)]
  out
}
