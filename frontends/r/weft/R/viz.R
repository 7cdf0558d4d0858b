# graph.viz: MXNet's R package draws a symbol with DiagrammeR (an htmlwidget), which Debian
# does not package; this one writes the same kind of graph as Graphviz DOT text (one node
# per operator, edges from producer to consumer, labelled with shapes when `shape` is given)
# and renders it with Graphviz's `dot` into `file` when asked.

.weft_viz_fill <- function(op) {
  switch(op,
         FullyConnected = , Convolution = , Deconvolution = "#fb8072",
         Activation = , LeakyReLU = "#ffffb3",
         BatchNorm = , LayerNorm = , InstanceNorm = "#bebada",
         Pooling = "#80b1d3",
         Flatten = , Reshape = , Concat = , concat = "#fdb462",
         SoftmaxOutput = , LinearRegressionOutput = , LogisticRegressionOutput = ,
         MAERegressionOutput = , SVMOutput = , MakeLoss = "#b3de69",
         "#fccde5")
}

.weft_viz_shape <- function(op) if (op %in% c("Pooling", "Flatten", "Reshape", "Concat", "concat")) "oval" else "box"

# A node's label: its operator, its name, and the attributes that size it.
.weft_viz_label <- function(node) {
  a <- node$attrs
  if (is.null(a)) a <- node$attr
  tuple <- function(v) if (is.null(v)) NULL else paste(regmatches(v, gregexpr("[0-9]+", v))[[1]], collapse = "x")
  conv <- NULL
  if (!is.null(a$kernel)) conv <- paste(c(tuple(a$kernel), if (!is.null(a$stride)) paste("/", tuple(a$stride))), collapse = " ")
  detail <- c(a$num_hidden, a$act_type, a$pool_type, conv, a$num_filter)
  paste(c(node$op, node$name, if (length(detail)) paste(detail, collapse = ", ")), collapse = "\n")
}

.weft_dot_quote <- function(s) paste0("\"", gsub("\n", "\\\\n", gsub("\"", "\\\\\"", s, fixed = FALSE)), "\"")

graph.viz <- function(symbol, shape = NULL, direction = "TD", type = "graph", graph.width.px = NULL,
                      graph.height.px = NULL, file = NULL) {
  if (!is.mx.symbol(symbol)) stop(sprintf("graph.viz: expected an MXSymbol, got %s", class(symbol)[1]), call. = FALSE)
  if (!identical(type, "graph")) {
    stop(sprintf(paste("graph.viz: type = \"%s\" is not available: MXNet draws it with DiagrammeR/visNetwork,",
                       "which this package does not use; type = \"graph\" gives Graphviz DOT text"), type), call. = FALSE)
  }
  rankdir <- switch(direction, TD = , TB = "TB", LR = "LR", BT = "BT", RL = "RL",
                    stop(sprintf("graph.viz: direction must be \"TD\" or \"LR\" (or \"BT\", \"RL\"), got \"%s\"", direction),
                         call. = FALSE))
  g <- jsonlite::fromJSON(mx.symbol.tojson(symbol), simplifyVector = FALSE)
  nodes <- g$nodes
  ops <- vapply(nodes, function(n) n$op, "")
  heads <- vapply(g$heads, function(h) as.integer(h[[1]]), 1L) + 1L
  # Variables are left out, as in MXNet's drawing, unless they are outputs of the symbol.
  keep <- which(ops != "null" | seq_along(nodes) %in% heads)
  # Edge labels: the shapes of the internal outputs, when the input shapes are given.
  out.shapes <- NULL
  if (!is.null(shape)) {
    known <- if (is.list(shape)) shape else list(data = shape)
    inferred <- do.call(mx.symbol.infer.shape, c(list(internals(symbol)), known))
    if (is.null(inferred)) {
      stop(sprintf("graph.viz: the shapes given (%s) do not determine every shape of the symbol",
                   paste(names(known), collapse = ", ")), call. = FALSE)
    }
    out.shapes <- inferred$out.shapes
  }
  edge_label <- function(src, index) {
    if (is.null(out.shapes)) return(NULL)
    name <- nodes[[src]]$name
    s <- out.shapes[[paste0(name, "_output")]]
    if (is.null(s)) s <- out.shapes[[paste0(name, "_output", index)]]
    if (is.null(s)) s <- out.shapes[[name]]
    if (is.null(s)) NULL else paste(s, collapse = "x")
  }
  lines <- c("digraph mxnet_symbol {",
             sprintf("  graph [rankdir=%s%s];", rankdir,
                     if (!is.null(graph.width.px) && !is.null(graph.height.px))
                       sprintf(", size=\"%g,%g\"", graph.width.px / 72, graph.height.px / 72) else ""),
             "  node [style=filled, penwidth=2, fontcolor=black];")
  for (i in keep) {
    op <- if (ops[i] == "null") nodes[[i]]$name else ops[i]
    fill <- .weft_viz_fill(op)
    node <- nodes[[i]]
    node$op <- op
    lines <- c(lines, sprintf("  n%d [label=%s, shape=%s, color=\"%s\", fillcolor=\"%s\"];", i - 1L,
                              .weft_dot_quote(.weft_viz_label(node)), .weft_viz_shape(op), fill, fill))
  }
  for (i in keep) {
    for (inp in nodes[[i]]$inputs) {
      src <- as.integer(inp[[1]]) + 1L
      if (!(src %in% keep) || ops[src] == "null") next
      lab <- edge_label(src, as.integer(inp[[2]]))
      lines <- c(lines, sprintf("  n%d -> n%d%s;", src - 1L, i - 1L,
                                if (is.null(lab)) "" else sprintf(" [label=%s]", .weft_dot_quote(lab))))
    }
  }
  lines <- c(lines, "}")
  graph <- structure(list(dot = paste(lines, collapse = "\n"), file = NULL), class = "MXGraphViz")
  if (!is.null(file)) graph$file <- .weft_dot_render(graph$dot, file)
  graph
}

# Renders DOT text into `file` with Graphviz's dot, the format taken from its extension.
.weft_dot_render <- function(dot, file) {
  exe <- Sys.which("dot")
  if (!nzchar(exe)) {
    stop("graph.viz: rendering into a file needs Graphviz's `dot` program (Debian: graphviz), which is not on the PATH",
         call. = FALSE)
  }
  fmt <- tolower(tools::file_ext(file))
  if (!nzchar(fmt)) stop(sprintf("graph.viz: file '%s' has no extension to take the format from (svg, png, pdf, ...)", file),
                         call. = FALSE)
  src <- tempfile(fileext = ".dot")
  on.exit(unlink(src))
  writeLines(dot, src)
  out <- suppressWarnings(system2(exe, c(paste0("-T", fmt), "-o", shQuote(path.expand(file)), shQuote(src)),
                                  stdout = TRUE, stderr = TRUE))
  status <- attr(out, "status")
  if (!is.null(status) && status != 0) {
    stop(sprintf("graph.viz: dot -T%s failed: %s", fmt, paste(out, collapse = "\n")), call. = FALSE)
  }
  path.expand(file)
}

print.MXGraphViz <- function(x, ...) {
  cat(x$dot, "\n", sep = "")
  if (!is.null(x$file)) cat(sprintf("# rendered into %s\n", x$file))
  invisible(x)
}
