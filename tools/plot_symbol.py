#!/usr/bin/env python3
"""Renders a saved symbol JSON (`prefix-symbol.json`) as a picture with mx.viz.plot_network.

    .venv/bin/python tools/plot_symbol.py model-symbol.json -o model.svg
    .venv/bin/python tools/plot_symbol.py model-symbol.json -o model.png --shape data=1,3,224,224

The format comes from the output's extension (svg, png, pdf, ...); --shape labels the edges
with shapes; --show-weights draws the weight and bias variables too; --summary also prints
mx.viz.print_summary's table (which needs --shape for shapes and counts).
"""
import argparse
import os
import sys


def parse_shape(text):
    name, _, dims = text.partition("=")
    if not name or not dims:
        raise argparse.ArgumentTypeError("expected NAME=D0,D1,..., got '%s'" % text)
    try:
        return name, tuple(int(d) for d in dims.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError("expected integer dims in '%s'" % text) from None


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("symbol", help="a symbol JSON file")
    ap.add_argument("-o", "--output", required=True, help="the picture to write (.svg, .png, .pdf, ...)")
    ap.add_argument("--shape", type=parse_shape, action="append", default=[], help="an input's shape, NAME=D0,D1,...")
    ap.add_argument("--show-weights", action="store_true", help="draw the weight, bias and statistics variables")
    ap.add_argument("--summary", action="store_true", help="also print the layer table")
    args = ap.parse_args(argv)

    import weft as mx
    sym = mx.sym.load(args.symbol)
    shapes = dict(args.shape) or None
    if args.summary:
        mx.viz.print_summary(sym, shape=shapes)
    stem, ext = os.path.splitext(args.output)
    if not ext:
        ap.error("the output needs an extension that names the format (.svg, .png, .pdf, ...)")
    dot = mx.viz.plot_network(sym, title=os.path.basename(stem), save_format=ext[1:], shape=shapes,
                              hide_weights=not args.show_weights)
    written = dot.render(filename=stem, cleanup=True)
    if written != args.output:
        os.replace(written, args.output)
    print("wrote", args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
