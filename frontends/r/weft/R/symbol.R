# MXSymbol: an external pointer on a Weft symbol (a graph's outputs).

mx.symbol.Variable <- function(name, attr = NULL) {
  s <- weft_symbol_create_variable(name)
  for (k in names(attr)) weft_symbol_set_attr(s, k, .weft_plain_value(attr[[k]]))
  s
}

.weft_symbol_op <- function(op, inputs, params, count, name, attr) {
  if (!is.null(count)) inputs <- .weft_variadic(op, inputs, count)
  inputs <- inputs[!vapply(inputs, is.null, TRUE)]
  for (i in seq_along(inputs)) {
    if (!inherits(inputs[[i]], "MXSymbol")) {
      stop(sprintf("%s: input %s is a %s, not an MXSymbol", op, if (is.null(names(inputs))) i else names(inputs)[i],
                   class(inputs[[i]])[1]), call. = FALSE)
    }
  }
  if (!is.null(count)) params <- c(params, stats::setNames(as.character(length(inputs)), count))
  for (k in names(attr)) params <- c(params, stats::setNames(.weft_plain_value(attr[[k]]), k))
  s <- weft_symbol_create_atomic(.weft_op_handle(op), names(params), unname(params))
  arg_names <- if (is.null(count)) names(inputs) else NULL
  weft_symbol_compose(s, name, arg_names, unname(inputs))
  s
}

# A copy of `x` with some of its free arguments replaced by symbols, given by argument name
# (fc3_data = net); `name` names the result. `x` itself is left as it was.
mx.apply <- function(x, ..., name = NULL) {
  if (!inherits(x, "MXSymbol")) stop(sprintf("mx.apply: expected an MXSymbol, got %s", class(x)[1]), call. = FALSE)
  inputs <- list(...)
  if (length(inputs) && (is.null(names(inputs)) || any(names(inputs) == ""))) {
    stop("mx.apply: the symbols must be given by argument name", call. = FALSE)
  }
  for (n in names(inputs)) {
    if (!inherits(inputs[[n]], "MXSymbol")) {
      stop(sprintf("mx.apply: %s is a %s, not an MXSymbol", n, class(inputs[[n]])[1]), call. = FALSE)
    }
  }
  s <- weft_symbol_copy(x)
  weft_symbol_compose(s, name, names(inputs), unname(inputs))
  s
}

mx.symbol.Group <- function(...) {
  syms <- .weft_dots(...)
  weft_symbol_group(unname(syms))
}

.weft_names <- function(json) as.character(jsonlite::fromJSON(json))

arguments <- function(x) .weft_names(weft_symbol_list(x, 0L))
outputs <- function(x) .weft_names(weft_symbol_list(x, 1L))
auxiliary.states <- function(x) .weft_names(weft_symbol_list(x, 2L))
internals <- function(x) weft_symbol_get_internals(x)
children <- function(x) weft_symbol_get_children(x)

"[[.MXSymbol" <- function(x, i) {
  if (is.character(i)) {
    k <- match(i, outputs(x))
    if (is.na(k)) stop(sprintf("the symbol has no output named '%s'", i), call. = FALSE)
    i <- k
  }
  weft_symbol_get_output(x, as.integer(i) - 1L)
}

# The attributes of a one-output symbol's own node, as a named list of strings.
.weft_symbol_attributes <- function(x) {
  name <- weft_symbol_get_name(x)
  dict <- jsonlite::fromJSON(weft_symbol_attr_dict(x), simplifyVector = FALSE)
  attrs <- if (nzchar(name)) dict[[name]] else NULL
  if (is.null(attrs)) list() else lapply(attrs, as.character)
}

# MXNet's R symbols are reference objects with fields and methods (sym$arguments,
# sym$get.internals(), ...); these give the same on Weft's symbols.
"$.MXSymbol" <- function(x, name) {
  switch(name,
         arguments = arguments(x),
         outputs = outputs(x),
         auxiliary.states = auxiliary.states(x),
         attributes = .weft_symbol_attributes(x),
         get.internals = function() internals(x),
         get.children = function() children(x),
         get.output = function(index) x[[index]],
         as.json = function() mx.symbol.tojson(x),
         save = function(filename) mx.symbol.save(x, filename),
         debug.str = function() weft_symbol_debug_str(x),
         apply = function(kwargs) do.call(mx.apply, c(list(x), kwargs)),
         infer.shape = function(shapes) do.call(mx.symbol.infer.shape, c(list(x), shapes)),
         stop(sprintf("MXSymbol has no field or method '%s'", name), call. = FALSE))
}

# Only `attributes` can be set: each entry becomes an attribute of the symbol's node.
"$<-.MXSymbol" <- function(x, name, value) {
  if (!identical(name, "attributes")) stop(sprintf("MXSymbol: '%s' cannot be set", name), call. = FALSE)
  if (length(value) && (is.null(names(value)) || any(names(value) == ""))) {
    stop("MXSymbol: attributes must be a named list", call. = FALSE)
  }
  for (k in names(value)) weft_symbol_set_attr(x, k, .weft_plain_value(value[[k]]))
  x
}

print.MXSymbol <- function(x, ...) {
  if (isTRUE(.Call(C_weft_r_is_null_handle, x))) {
    cat("<MXSymbol, freed>\n")
  } else {
    cat(sprintf("<MXSymbol outputs: %s>\n", paste(outputs(x), collapse = ", ")))
  }
  invisible(x)
}

# Shapes in R's order (the reverse of Weft's), as the arrays that will hold them.
mx.symbol.infer.shape <- function(symbol, ...) {
  known <- list(...)
  res <- jsonlite::fromJSON(weft_symbol_infer_shape(symbol, .weft_shapes_json(known)), simplifyVector = FALSE)
  if (!isTRUE(res$complete)) return(NULL)
  conv <- function(shapes, names) {
    out <- lapply(shapes, function(s) rev(as.integer(unlist(s))))
    names(out) <- names
    out
  }
  list(arg.shapes = conv(res$arguments, arguments(symbol)),
       out.shapes = conv(res$outputs, outputs(symbol)),
       aux.shapes = conv(res$auxiliary, auxiliary.states(symbol)))
}

.weft_shapes_json <- function(shapes) {
  if (length(shapes) == 0) return("{}")
  if (is.null(names(shapes)) || any(names(shapes) == "")) stop("shapes must be given by input name", call. = FALSE)
  items <- vapply(names(shapes), function(n) {
    sprintf("%s: [%s]", jsonlite::toJSON(n, auto_unbox = TRUE),
            paste(sprintf("%.0f", rev(shapes[[n]])), collapse = ", "))
  }, "")
  paste0("{", paste(items, collapse = ", "), "}")
}

mx.symbol.save <- function(symbol, filename) invisible(weft_symbol_save_file(symbol, path.expand(filename)))
mx.symbol.load <- function(filename) weft_symbol_load_file(path.expand(filename))
mx.symbol.load.json <- function(json.str) weft_symbol_from_json(json.str)
mx.symbol.tojson <- function(symbol) weft_symbol_to_json(symbol)

Ops.MXSymbol <- function(e1, e2) {
  if (missing(e2)) {
    if (.Generic == "-") return(.weft_symbol_op("negative", list(data = e1), NULL, NULL, NULL, NULL))
    if (.Generic == "+") return(e1)
    stop(sprintf("unary %s is not defined for MXSymbol", .Generic), call. = FALSE)
  }
  both <- c("+" = "elemwise_add", "-" = "elemwise_sub", "*" = "elemwise_mul", "/" = "elemwise_div",
            "^" = "_power")
  right <- c("+" = "_plus_scalar", "-" = "_minus_scalar", "*" = "_mul_scalar", "/" = "_div_scalar",
             "^" = "_power_scalar")
  left <- c("+" = "_plus_scalar", "-" = "_rminus_scalar", "*" = "_mul_scalar", "/" = "_rdiv_scalar",
            "^" = "_rpower_scalar")
  if (!(.Generic %in% names(both))) stop(sprintf("%s is not defined for MXSymbol", .Generic), call. = FALSE)
  if (inherits(e1, "MXSymbol") && inherits(e2, "MXSymbol")) {
    return(.weft_symbol_op(both[[.Generic]], list(lhs = e1, rhs = e2), NULL, NULL, NULL, NULL))
  }
  if (inherits(e1, "MXSymbol") && is.numeric(e2) && length(e2) == 1) {
    return(.weft_symbol_op(right[[.Generic]], list(data = e1), c(scalar = .weft_number(e2)), NULL, NULL, NULL))
  }
  if (inherits(e2, "MXSymbol") && is.numeric(e1) && length(e1) == 1) {
    return(.weft_symbol_op(left[[.Generic]], list(data = e2), c(scalar = .weft_number(e1)), NULL, NULL, NULL))
  }
  stop(sprintf("%s: expected MXSymbols or a symbol and a number", .Generic), call. = FALSE)
}
