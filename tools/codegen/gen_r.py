"""The R package's generated files (frontends/r/weft/), from the registry and c_api.h.

  src/raw.c, src/raw.h   one registered .Call routine per C API function: R values in,
                         the function's out-parameters back as R values, a failed status
                         raised as an R condition (weft_r_raise, in src/glue.c)
  R/raw.R                an R wrapper per routine (internal; the hand-written R layer uses them)
  R/ops.R                mx.nd.<op> and mx.symbol.<op> for every user-facing operator
  R/iterators.R          mx.io.<Iter> for every registered data iterator
  man/op-*.Rd, man/iter-*.Rd   their help pages

How each C parameter travels is decided from its C type alone (see _classify), so that a
new function in the header reaches R without a hand-written line. Functions taking C
callbacks or DLPack tensors have no generic R form: they are left to src/glue.c.
"""
import re

from generate import GENERATED_MARK

PKG = "frontends/r/weft/"

# Handle type -> the R class of its external pointers. A handle type with a weft_<kind>_free
# gets a finalizer calling it; the others (operators) belong to the library.
HANDLE_CLASSES = {
    "weft_ndarray_t": "MXNDArray",
    "weft_symbol_t": "MXSymbol",
    "weft_executor_t": "weft_executor",
    "weft_kvstore_t": "weft_kvstore",
    "weft_dataiter_t": "weft_dataiter",
    "weft_ndarray_list_t": "weft_ndarray_list",
    "weft_bytes_t": "weft_bytes",
    "weft_recordio_t": "weft_recordio",
    "weft_op_t": "weft_op",
    "weft_profile_domain_t": "weft_profile_domain",
    "weft_profile_duration_t": "weft_profile_duration",
    "weft_profile_counter_t": "weft_profile_counter",
}
NOT_GENERATED = {"weft_get_last_error"}  # read by weft_r_raise itself
# Handles an out-list points at that the caller already owns: weft_imperative_invoke
# writes into `given` and returns those very handles.
BORROWED_OUTPUTS = {"weft_imperative_invoke": "given"}
# Operators that are executor internals or gradients: no user-facing function.
INTERNAL_OPS = {"_dnnl_region", "_dnnl_train_region", "_fused_pointwise", "_CrossDeviceCopy"}
R_RESERVED = {"if", "else", "repeat", "while", "function", "for", "next", "break", "TRUE", "FALSE",
              "NULL", "Inf", "NaN", "NA", "in", "NA_integer_", "NA_real_", "NA_character_"}


def _c_comment():
    return "/* " + GENERATED_MARK + " */\n"


def _r_comment():
    return "# " + GENERATED_MARK + "\n"


def _rd_comment():
    return "% " + GENERATED_MARK + "\n"


# ----------------------------------------------------------------------------- raw layer

def _handle_type(ctype):
    base = re.sub(r"\bconst\b", "", ctype).replace("*", "").strip()
    return base if base in HANDLE_CLASSES else None


def _classify(fn):
    """How each parameter of `fn` travels: a list of dicts with 'kind' and details, or None
    when the function has a parameter without a generic R form."""
    ps = fn.params
    out = []
    i = 0
    while i < len(ps):
        p = ps[i]
        t = p.ctype
        nxt = ps[i + 1] if i + 1 < len(ps) else None
        h = _handle_type(t)
        if t in ("int", "int32_t") and p.name.startswith("num") and nxt is not None and nxt.ctype.endswith("const*"):
            # A count: the length of the array parameters that follow it.
            members = []
            j = i + 1
            while j < len(ps) and (ps[j].ctype.endswith("const*")) and not ps[j].ctype.endswith("const**"):
                members.append(ps[j].name)
                j += 1
            out.append(dict(kind="count", name=p.name, members=members))
        elif t in ("int", "int32_t") and p.name == "ndim" and out and out[-1]["kind"] == "int64_vec":
            out.append(dict(kind="count", name=p.name, members=[out[-1]["name"]]))
        elif t in ("int", "int32_t"):
            out.append(dict(kind="int", name=p.name))
        elif t in ("int64_t", "size_t") and out and out[-1]["kind"] == "raw_in":
            out.append(dict(kind="raw_size", name=p.name, of=out[-1]["name"]))
        elif t in ("int64_t", "size_t"):
            out.append(dict(kind="double", name=p.name, ctype=t))
        elif t == "weft_context_t":
            out.append(dict(kind="ctx", name=p.name))
        elif t == "weft_context_t*":
            out.append(dict(kind="ctx_out", name=p.name))
        elif t == "const char*":
            out.append(dict(kind="str", name=p.name))
        elif t == "const char* const*":
            out.append(dict(kind="str_vec", name=p.name))
        elif t == "const int64_t*":
            out.append(dict(kind="int64_vec", name=p.name))
        elif t == "const void*" and nxt is not None and nxt.ctype == "size_t":
            out.append(dict(kind="raw_in", name=p.name))
        elif t == "void*" and nxt is not None and nxt.ctype == "size_t":
            out.append(dict(kind="raw_out", name=p.name, size=nxt.name))
            out.append(dict(kind="double", name=nxt.name, ctype="size_t"))
            i += 1
        elif t == "const void**" and nxt is not None and nxt.ctype == "size_t*":
            out.append(dict(kind="bytes_out", name=p.name, size=nxt.name))
            i += 1
        elif t == "int64_t*" and nxt is not None and nxt.name == "capacity":
            out.append(dict(kind="dims_out", name=p.name, capacity=nxt.name))
            out.append(dict(kind="int", name=nxt.name))
            i += 1
        elif t in ("int*", "int64_t*", "size_t*") and nxt is not None and nxt.ctype.endswith("* const**"):
            ht = _handle_type(nxt.ctype)
            out.append(dict(kind="handle_list_out", name=nxt.name, count=p.name, htype=ht))
            i += 1
        elif t in ("int*", "int64_t*", "size_t*"):
            out.append(dict(kind="scalar_out", name=p.name, ctype=t[:-1]))
        elif t == "const char**":
            out.append(dict(kind="str_out", name=p.name))
        elif h and t.endswith("* const*"):
            out.append(dict(kind="handle_vec", name=p.name, htype=h, const=t.startswith("const")))
        elif h and t.endswith("**") and p.name == "out":
            out.append(dict(kind="handle_out", name=p.name, htype=h, const=t.startswith("const")))
        elif h and t.endswith("**"):
            # An array the function fills with one new handle per input (weft_imperative_gradient's
            # in_grads), sized by its num_inputs count.
            sized = [c for c in out if c["kind"] == "count" and c["name"] == "num_inputs"]
            if not sized:
                return None
            out.append(dict(kind="handle_array_out", name=p.name, htype=h, count="num_inputs"))
        elif h and t.endswith("*"):
            out.append(dict(kind="handle", name=p.name, htype=h, const=t.startswith("const")))
        else:
            return None
        i += 1
    return out


def _ctype_of_handle(htype, const):
    return ("const " if const else "") + htype + "*"


def _r_key(name):
    """`name` as a name in an R call (backquoted where R would not read it as one)."""
    if re.match(r"^[A-Za-z.][A-Za-z0-9._]*$", name) and name not in R_RESERVED:
        return name
    return "`%s`" % name


def _r_arg(name):
    return name + "_" if name in R_RESERVED else name


def _gen_routine(fn, spec):
    """The C text of one .Call routine."""
    r_args = [c for c in spec if c["kind"] in ("int", "double", "ctx", "str", "str_vec", "int64_vec",
                                               "raw_in", "handle", "handle_vec")]
    lines = ["SEXP weft_r_%s(%s) {" % (fn.name[len("weft_"):], ", ".join("SEXP s_" + c["name"] for c in r_args)
                                       or "void")]
    call = []
    outs = []
    counts = {c["name"]: c for c in spec if c["kind"] == "count"}
    for c in spec:
        k, n = c["kind"], c["name"]
        if k == "count":
            lines.append("  int %s = -1;" % n)
            call.append(n)
        elif k == "int":
            lines.append("  int %s = weft_r_int(s_%s, \"%s\");" % (n, n, n))
            call.append(n)
        elif k == "double":
            lines.append("  %s %s = (%s)weft_r_double(s_%s, \"%s\");" % (c["ctype"], n, c["ctype"], n, n))
            call.append(n)
        elif k == "ctx":
            lines.append("  weft_context_t %s = weft_r_context(s_%s);" % (n, n))
            call.append(n)
        elif k == "ctx_out":
            lines.append("  weft_context_t %s = {0, 0};" % n)
            call.append("&" + n)
            outs.append((n, "weft_r_context_value(%s)" % n))
        elif k == "str":
            lines.append("  const char* %s = weft_r_string_or_null(s_%s, \"%s\");" % (n, n, n))
            call.append(n)
        elif k == "str_vec":
            lines.append("  int len_%s = 0;" % n)
            lines.append("  const char* const* %s = weft_r_strings(s_%s, &len_%s, \"%s\");" % (n, n, n, n))
            call.append(n)
        elif k == "int64_vec":
            lines.append("  int len_%s = 0;" % n)
            lines.append("  const int64_t* %s = weft_r_int64s(s_%s, &len_%s, \"%s\");" % (n, n, n, n))
            call.append(n)
        elif k == "raw_in":
            lines.append("  const void* %s = weft_r_raw(s_%s, \"%s\");" % (n, n, n))
            call.append(n)
        elif k == "raw_size":
            lines.append("  size_t %s = (size_t)XLENGTH(s_%s);" % (n, c["of"]))
            call.append(n)
        elif k == "raw_out":
            lines.append("  SEXP r_%s = NULL;" % n)
            lines.append("  void* %s = NULL;" % n)
            call.append(n)
        elif k == "bytes_out":
            lines.append("  const void* %s = NULL;" % n)
            lines.append("  size_t %s = 0;" % c["size"])
            call += [ "&" + n, "&" + c["size"]]
            outs.append((n, "weft_r_raw_value(%s, %s)" % (n, c["size"])))
        elif k == "dims_out":
            lines.append("  int64_t* %s = NULL;" % n)
            call.append(n)
        elif k == "scalar_out":
            lines.append("  %s %s = 0;" % (c["ctype"], n))
            call.append("&" + n)
            conv = "ScalarInteger(%s)" % n if c["ctype"] in ("int", "int32_t") else "ScalarReal((double)%s)" % n
            outs.append((n, conv))
        elif k == "str_out":
            lines.append("  const char* %s = NULL;" % n)
            call.append("&" + n)
            outs.append((n, "weft_r_string_value(%s)" % n))
        elif k == "handle":
            lines.append("  %s %s = (%s)weft_r_handle(s_%s, \"%s\", \"%s\");"
                         % (_ctype_of_handle(c["htype"], c["const"]), n, _ctype_of_handle(c["htype"], c["const"]),
                            n, c["htype"], n))
            call.append(n)
        elif k == "handle_vec":
            lines.append("  int len_%s = 0;" % n)
            lines.append("  %s* const* %s = (%s* const*)weft_r_handles(s_%s, &len_%s, \"%s\", \"%s\");"
                         % (c["htype"], n, c["htype"], n, n, c["htype"], n))
            call.append(n)
        elif k == "handle_out":
            lines.append("  %s %s = NULL;" % (_ctype_of_handle(c["htype"], c["const"]), n))
            call.append("&" + n)
            outs.append((n, "weft_r_wrap_%s((%s*)%s)" % (c["htype"][len("weft_"):-2], c["htype"], n)))
        elif k == "handle_list_out":
            lines.append("  int %s = 0;" % c["count"])
            lines.append("  %s* const* %s = NULL;" % (c["htype"], n))
            call += ["&" + c["count"], "&" + n]
            borrowed = BORROWED_OUTPUTS.get(fn.name)
            if borrowed:
                wrap = "(%s > 0 ? R_NilValue : weft_r_wrap_%s_many(%s, %s))" % (
                    _borrowed_count(spec, borrowed), c["htype"][len("weft_"):-2], n, c["count"])
            else:
                wrap = "weft_r_wrap_%s_many(%s, %s)" % (c["htype"][len("weft_"):-2], n, c["count"])
            outs.append((n, wrap))
        elif k == "handle_array_out":
            lines.append("  %s** %s = NULL;" % (c["htype"], n))
            call.append(n)
            outs.append((n, "weft_r_wrap_%s_many(%s, %s)" % (c["htype"][len("weft_"):-2], n, c["count"])))
        else:
            raise AssertionError(k)
    # Counts: the length of their first non-NULL member; the others must agree.
    for cname, c in counts.items():
        for m in c["members"]:
            lines.append("  weft_r_count(&%s, len_%s, Rf_isNull(s_%s), \"%s\", \"%s\");" % (cname, m, m, cname, m))
        lines.append("  if (%s < 0) %s = 0;" % (cname, cname))
    # Buffers sized by the call's arguments, allocated once those are known.
    for c in spec:
        if c["kind"] == "raw_out":
            lines.append("  r_%s = PROTECT(Rf_allocVector(RAWSXP, (R_xlen_t)%s));" % (c["name"], c["size"]))
            lines.append("  %s = RAW(r_%s);" % (c["name"], c["name"]))
        elif c["kind"] == "dims_out":
            lines.append("  %s = (int64_t*)R_alloc(capacity > 0 ? (size_t)capacity : 1, sizeof(int64_t));"
                         % c["name"])
        elif c["kind"] == "handle_array_out":
            lines.append("  %s = (%s**)R_alloc(%s > 0 ? (size_t)%s : 1, sizeof(%s*));"
                         % (c["name"], c["htype"], c["count"], c["count"], c["htype"]))
    if fn.ret == "weft_status_t":
        lines.append("  weft_status_t status = %s(%s);" % (fn.name, ", ".join(call)))
        lines.append("  if (status != WEFT_OK) weft_r_raise(status, \"%s\");" % fn.name)
    else:
        raise AssertionError(fn.name)
    for c in spec:
        if c["kind"] == "raw_out":
            outs.append((c["name"], "r_%s" % c["name"]))
        elif c["kind"] == "dims_out":
            outs.append((c["name"], "weft_r_int64_value(%s, capacity)" % c["name"]))
    nprot = sum(1 for c in spec if c["kind"] == "raw_out")
    if not outs:
        if nprot:
            lines.append("  UNPROTECT(%d);" % nprot)
        lines.append("  return R_NilValue;")
    elif len(outs) == 1:
        lines.append("  SEXP result = PROTECT(%s);" % outs[0][1])
        lines.append("  UNPROTECT(%d);" % (nprot + 1))
        lines.append("  return result;")
    else:
        lines.append("  SEXP result = PROTECT(Rf_allocVector(VECSXP, %d));" % len(outs))
        lines.append("  SEXP names = PROTECT(Rf_allocVector(STRSXP, %d));" % len(outs))
        for idx, (n, conv) in enumerate(outs):
            lines.append("  SET_VECTOR_ELT(result, %d, %s);" % (idx, conv))
            lines.append("  SET_STRING_ELT(names, %d, Rf_mkChar(\"%s\"));" % (idx, n))
        lines.append("  Rf_setAttrib(result, R_NamesSymbol, names);")
        lines.append("  UNPROTECT(%d);" % (nprot + 2))
        lines.append("  return result;")
    lines.append("}")
    return "\n".join(lines), [c["name"] for c in r_args]


def _borrowed_count(spec, member):
    for c in spec:
        if c["kind"] == "count" and member in c["members"]:
            return c["name"]
    raise AssertionError(member)


def _raw_layer(header):
    handles = [h for h in header.handles if h in HANDLE_CLASSES]
    missing = sorted(set(header.handles) - set(HANDLE_CLASSES))
    if missing:
        raise RuntimeError("gen_r: handle types without an R class: %s" % ", ".join(missing))
    routines = []
    skipped = []
    for fn in header.functions:
        if fn.name in NOT_GENERATED:
            continue
        spec = _classify(fn)
        if spec is None:
            skipped.append(fn.name)
            continue
        routines.append((fn, spec))

    h = [_c_comment(),
         "/* The generated .Call routines' shared helpers: handle wrapping (one function per",
         " * handle type) and the registration table, which src/init.c joins with its own. */",
         "#ifndef WEFT_R_RAW_H_", "#define WEFT_R_RAW_H_", "",
         "#include <R.h>", "#include <Rinternals.h>", "#include <R_ext/Rdynload.h>",
         "#include <weft/c_api.h>", "",
         "#define WEFT_R_NUM_RAW_ROUTINES %d" % len(routines),
         "extern const R_CallMethodDef weft_r_raw_routines[];", ""]
    for ht in handles:
        short = ht[len("weft_"):-2]
        h.append("SEXP weft_r_wrap_%s(%s* handle);" % (short, ht))
        h.append("SEXP weft_r_wrap_%s_many(%s* const* handles, int n);" % (short, ht))
    h.append("")
    h.append("/* Helpers defined in glue.c. */")
    h += ["void weft_r_raise(weft_status_t status, const char* function);",
          "int weft_r_int(SEXP x, const char* what);",
          "double weft_r_double(SEXP x, const char* what);",
          "weft_context_t weft_r_context(SEXP x);",
          "SEXP weft_r_context_value(weft_context_t ctx);",
          "const char* weft_r_string_or_null(SEXP x, const char* what);",
          "const char* const* weft_r_strings(SEXP x, int* len, const char* what);",
          "const int64_t* weft_r_int64s(SEXP x, int* len, const char* what);",
          "const void* weft_r_raw(SEXP x, const char* what);",
          "void* weft_r_handle(SEXP x, const char* type, const char* what);",
          "void* const* weft_r_handles(SEXP x, int* len, const char* type, const char* what);",
          "void weft_r_count(int* count, int len, int is_null, const char* count_name, const char* member);",
          "SEXP weft_r_raw_value(const void* data, size_t size);",
          "SEXP weft_r_string_value(const char* s);",
          "SEXP weft_r_int64_value(const int64_t* v, int n);",
          "SEXP weft_r_wrap(void* handle, const char* type, const char* r_class, R_CFinalizer_t finalizer);",
          "", "#endif", ""]

    c = [_c_comment(),
         "/* One .Call routine per function of c_api.h; see tools/codegen/gen_r.py for how each",
         " * C parameter type travels. Skipped (callbacks, DLPack; src/glue.c covers what R needs): %s. */"
         % ", ".join(skipped),
         "#include \"raw.h\"", ""]
    for ht in handles:
        short = ht[len("weft_"):-2]
        free_fn = "weft_%s_free" % short
        has_free = any(f.name == free_fn for f in header.functions)
        if has_free:
            c.append("static void weft_r_finalize_%s(SEXP ptr) {" % short)
            c.append("  %s* handle = (%s*)R_ExternalPtrAddr(ptr);" % (ht, ht))
            c.append("  if (handle != NULL) {")
            c.append("    R_ClearExternalPtr(ptr);")
            c.append("    %s(handle);" % free_fn)
            c.append("  }")
            c.append("}")
        c.append("SEXP weft_r_wrap_%s(%s* handle) {" % (short, ht))
        c.append("  return weft_r_wrap(handle, \"%s\", \"%s\", %s);"
                 % (ht, HANDLE_CLASSES[ht], "weft_r_finalize_%s" % short if has_free else "NULL"))
        c.append("}")
        c.append("SEXP weft_r_wrap_%s_many(%s* const* handles, int n) {" % (short, ht))
        c.append("  SEXP list = PROTECT(Rf_allocVector(VECSXP, n));")
        c.append("  for (int i = 0; i < n; ++i) {")
        c.append("    if (handles[i] != NULL) SET_VECTOR_ELT(list, i, weft_r_wrap_%s(handles[i]));" % short)
        c.append("  }")
        c.append("  UNPROTECT(1);")
        c.append("  return list;")
        c.append("}")
        c.append("")
    # A freed handle's routine clears the external pointer, so that a later use is the
    # library's handle error, never a use after free.
    table = []
    r_lines = [_r_comment(),
               "# Internal wrappers of the generated .Call routines (src/raw.c), one per C API",
               "# function: arguments are the C function's inputs without the counts (taken from the",
               "# lengths of the vectors they count), results its out-parameters (a list when several).",
               ""]
    for fn, spec in routines:
        body, args = _gen_routine(fn, spec)
        free_target = None
        if fn.name.endswith("_free") and len(spec) == 1 and spec[0]["kind"] == "handle":
            free_target = spec[0]["name"]
            body = body.replace("  weft_status_t status =",
                                "  if (TYPEOF(s_%s) == EXTPTRSXP) R_ClearExternalPtr(s_%s);\n  weft_status_t status ="
                                % (free_target, free_target), 1)
        c.append(body)
        c.append("")
        short = fn.name[len("weft_"):]
        table.append("  {\"C_weft_%s\", (DL_FUNC)&weft_r_%s, %d}," % (short, short, len(args)))
        r_args = [_r_arg(a) for a in args]
        r_lines.append("%s <- function(%s) .Call(C_weft_%s%s)" % (
            fn.name, ", ".join(r_args), short, "".join(", " + a for a in r_args)))
    c.append("const R_CallMethodDef weft_r_raw_routines[] = {")
    c += table
    c.append("  {NULL, NULL, 0}")
    c.append("};")
    return {PKG + "src/raw.h": "\n".join(h), PKG + "src/raw.c": "\n".join(c) + "\n",
            PKG + "R/raw.R": "\n".join(r_lines) + "\n"}


# ----------------------------------------------------------------------------- operators

def _op_r_name(name):
    if name.startswith("_"):
        return "internal." + name[1:].replace("_", ".")
    return name.replace("_", ".")


def _sym_mxnet_name(name):
    """MXNet's R package keeps an operator's underscores in its mx.symbol.<name> functions
    (mx.symbol.sum_axis) while its mx.nd.<name> ones turn them into dots; the symbolic
    functions get that name too, as an alias of the dotted one. Internal operators keep
    only mx.symbol.internal.<name>."""
    return _op_r_name(name) if name.startswith("_") else name


def _user_ops(registry):
    for op in registry["operators"]:
        if op["name"].startswith("_backward_") or op["name"] in INTERNAL_OPS:
            continue
        yield op


def _shape_typed(ptype):
    return ptype.startswith("Shape") or ptype.startswith("tuple")


def _rd_escape(text):
    text = text.replace("\\", "\\\\").replace("%", "\\%").replace("{", "\\{").replace("}", "\\}")
    return text


def _rd_text(text):
    """Registry prose as Rd paragraphs."""
    paras = [p.strip() for p in re.split(r"\n\s*\n", text or "") if p.strip()]
    return "\n\n".join(_rd_escape(" ".join(p.split())) for p in paras)


def _signature(op):
    """(R arguments of the generated functions, [(r name, core name, kind, shape-typed)])."""
    variadic = any(i["type"].endswith("[]") for i in op["inputs"])
    taken = {"out", "name", "attr"}
    items = []
    if not variadic:
        for inp in op["inputs"]:
            rn = _r_arg(inp["name"])
            while rn in taken:
                rn += "_"
            taken.add(rn)
            items.append((rn, inp["name"], "input", False, inp))
    for p in op["params"]:
        if p["name"] == op["key_var_num_args"]:
            continue
        rn = _r_arg(p["name"])
        if rn in taken:
            continue
        taken.add(rn)
        items.append((rn, p["name"], "required" if p["required"] else "param", _shape_typed(p["type"]), p))
    return variadic, items


def _param_exprs(items):
    parts = []
    for rn, core, kind, shaped, _ in items:
        if kind == "input":
            continue
        conv = ".weft_shape_param" if shaped else ".weft_param"
        parts.append("%s = %s(%s)" % (_r_key(core), conv, rn))
    return "c(%s)" % ", ".join(parts)


def _formals(variadic, items, tail):
    f = ["..."] if variadic else []
    for rn, _, kind, _, _ in items:
        f.append(rn if kind == "required" else "%s = NULL" % rn)
    if _dotted(variadic, items):
        f.append("...")
    return ", ".join(f + tail)


def _dotted(variadic, items):
    """Whether the functions also take parameters by MXNet's dotted names (no.bias for
    no_bias) in a `...` after the named ones: MXNet's R package turns the dots of every
    parameter name into underscores. Variadic operators already use `...` for inputs."""
    return not variadic and any("_" in rn for rn, _, kind, _, _ in items if kind != "input")


def _ops(registry):
    r = [_r_comment(),
         "# Every user-facing operator of the registry, imperative (mx.nd.*) and symbolic",
         "# (mx.symbol.*). Parameters left NULL keep the operator's default; a vector parameter",
         "# is a tuple given in R's order (reversed for the engine, as MXNet's R package does),",
         "# see docs/frontends/r.md.", ""]
    files = {}
    seen_r = {}
    seen_rd = {}
    for op in _user_ops(registry):
        variadic, items = _signature(op)
        count_key = op["key_var_num_args"]
        names = [op["name"]] + op["aliases"]
        params = _param_exprs(items)
        inputs = [rn for rn, _, kind, _, _ in items if kind == "input"]
        core_inputs = [core for _, core, kind, _, _ in items if kind == "input"]
        nd_formals = _formals(variadic, items, ["out = NULL"])
        sym_formals = _formals(variadic, items, ["name = NULL", "attr = NULL"])
        dotted = _dotted(variadic, items)
        if variadic:
            nd_inputs = ".weft_dots(...)"
            sym_inputs = ".weft_dots(...)"
        else:
            nd_inputs = "list(%s)" % ", ".join(inputs)
            sym_inputs = "list(%s)" % ", ".join("%s = %s" % (_r_key(core), rn) for rn, core in zip(inputs, core_inputs))
        count = '"%s"' % count_key if count_key else "NULL"
        usage = []
        for n in names:
            rname = _op_r_name(n)
            for prefix in ("mx.nd.", "mx.symbol."):
                key = prefix + rname
                if key in seen_r:
                    raise RuntimeError("gen_r: %s names both %s and %s" % (key, seen_r[key], op["name"]))
                seen_r[key] = op["name"]
            r.append("mx.nd.%s <- function(%s) {" % (rname, nd_formals))
            if dotted:
                r.append("  .weft_dotted_args(environment(), list(...), \"mx.nd.%s\")" % rname)
            r.append("  .weft_nd_invoke(\"%s\", %s, %s, %s, out)" % (op["name"], nd_inputs, params, count))
            r.append("}")
            r.append("mx.symbol.%s <- function(%s) {" % (rname, sym_formals))
            if dotted:
                r.append("  .weft_dotted_args(environment(), list(...), \"mx.symbol.%s\")" % rname)
            r.append("  .weft_symbol_op(\"%s\", %s, %s, %s, name, attr)" % (op["name"], sym_inputs, params, count))
            r.append("}")
            sym_name = _sym_mxnet_name(n)
            if sym_name != rname:
                seen_r["mx.symbol." + sym_name] = op["name"]
                r.append("mx.symbol.%s <- mx.symbol.%s" % (sym_name, rname))
            r.append("")
            usage.append("mx.nd.%s(%s)" % (rname, nd_formals))
            usage.append("mx.symbol.%s(%s)" % (rname, sym_formals))
        # The help page, shared by the imperative and symbolic functions and the aliases.
        rdname = "op-" + op["name"].lstrip("_")
        low = rdname.lower()
        if low in seen_rd:
            rdname += "-" + str(sum(1 for k in seen_rd if k.startswith(low)))
        seen_rd[rdname.lower()] = True
        title = (op["doc"] or op["name"]).strip().splitlines()[0].rstrip(".")
        rd = [_rd_comment(),
              "\\name{%s}" % rdname]
        for n in names:
            rd.append("\\alias{mx.nd.%s}" % _op_r_name(n))
            rd.append("\\alias{mx.symbol.%s}" % _op_r_name(n))
            if _sym_mxnet_name(n) != _op_r_name(n):
                rd.append("\\alias{mx.symbol.%s}" % _sym_mxnet_name(n))
        rd.append("\\title{%s}" % _rd_escape("Operator %s: %s" % (op["name"], title)))
        rd.append("\\usage{")
        rd += usage
        rd.append("}")
        rd.append("\\arguments{")
        if variadic:
            rd.append("\\item{\\dots}{The input arrays (mx.nd) or symbols (mx.symbol), or one list of them.%s}"
                      % (" The count parameter %s is filled in." % count_key if count_key else ""))
        if dotted:
            rd.append("\\item{\\dots}{Parameters by MXNet's dotted names (%s for %s).}"
                      % tuple(_rd_escape(x) for x in next((rn.replace("_", "."), rn) for rn, _, kind, _, _ in items
                                                          if kind != "input" and "_" in rn)))
        for rn, core, kind, shaped, meta in items:
            if kind == "input":
                desc = "Input %s (an MXNDArray for mx.nd, an MXSymbol for mx.symbol). %s" % (core, meta.get("doc", ""))
            else:
                req = "required" if meta["required"] else "optional, default %s" % (meta["default"] or '""')
                desc = "%s (%s; %s). %s" % (core, meta["type"], req, meta.get("doc", ""))
            rd.append("\\item{%s}{%s}" % (rn, _rd_escape(" ".join(desc.split()))))
        rd.append("\\item{out}{mx.nd only: an MXNDArray (or a list, one per output) to write the result into.}")
        rd.append("\\item{name}{mx.symbol only: the name of the node (made from the operator's name when NULL).}")
        rd.append("\\item{attr}{mx.symbol only: a named list of attributes for the node.}")
        rd.append("}")
        rd.append("\\value{mx.nd: an MXNDArray, or a list of them for several outputs. "
                  "mx.symbol: an MXSymbol.}")
        rd.append("\\description{")
        rd.append(_rd_text(op["doc"]) or _rd_escape(op["name"]))
        if len(names) > 1:
            rd.append("")
            rd.append("Also available as %s." % ", ".join(_rd_escape(n) for n in names[1:]))
        mx_names = [_sym_mxnet_name(n) for n in names if _sym_mxnet_name(n) != _op_r_name(n)]
        if mx_names:
            rd.append("")
            rd.append(_rd_escape("The symbolic functions are also mx.symbol.%s, with the operator's own "
                                 "underscores, as MXNet's R package names them." % ", mx.symbol.".join(mx_names)))
        rd.append("}")
        rd.append("\\keyword{internal}" if op["name"].startswith("_") else "\\keyword{models}")
        files[PKG + "man/%s.Rd" % rdname] = "\n".join(rd) + "\n"
    files[PKG + "R/ops.R"] = "\n".join(r)
    return files


def _iterators(registry):
    r = [_r_comment(),
         "# A constructor per registered data iterator: mx.io.<Name>(...) with the iterator's",
         "# parameters by name (batch.size or batch_size), see docs/frontends/r.md.", ""]
    files = {}
    for it in registry["data_iterators"]:
        shaped = [p["name"] for p in it["params"] if _shape_typed(p["type"])]
        r.append("mx.io.%s <- function(...) {" % it["name"])
        r.append("  .weft_iter_create(\"%s\", list(...), c(%s))" % (it["name"], ", ".join('"%s"' % s for s in shaped)))
        r.append("}")
        r.append("")
        rd = [_rd_comment(),
              "\\name{mx.io.%s}" % it["name"],
              "\\alias{mx.io.%s}" % it["name"],
              "\\title{%s}" % _rd_escape("Data iterator %s: %s" % (it["name"], it["doc"].strip().splitlines()[0].rstrip("."))),
              "\\usage{", "mx.io.%s(...)" % it["name"], "}",
              "\\arguments{",
              "\\item{\\dots}{The iterator's parameters by name (dots or underscores: batch.size or batch_size):",
              "\\describe{"]
        for p in it["params"]:
            req = "required" if p["required"] else "optional, default %s" % (p["default"] or '""')
            rd.append("\\item{%s}{%s}" % (_rd_escape(p["name"]),
                                         _rd_escape(" ".join(("%s; %s. %s" % (p["type"], req, p["doc"])).split()))))
        rd += ["}", "}", "}",
               "\\value{An MXDataIter: \\code{reset()}, \\code{iter.next()}, \\code{value()} (a list of data "
               "and label), \\code{num.pad()}; see \\code{\\link{mx.io.arrayiter}}.}",
               "\\description{", _rd_text(it["doc"]), "}", "\\keyword{datasets}"]
        files[PKG + "man/iter-%s.Rd" % it["name"]] = "\n".join(rd) + "\n"
    files[PKG + "R/iterators.R"] = "\n".join(r)
    return files


def _operator_list(registry):
    """docs/frontends/r_operators.md: every generated R function with its operator's summary."""
    lines = ["<!-- " + GENERATED_MARK + " -->", "",
             "# R operator reference",
             "",
             "Every operator of the registry as `mx.nd.<name>` (imperative) and `mx.symbol.<name>`",
             "(symbolic); `?mx.nd.<name>` in R shows its parameters. A vector parameter is a tuple",
             "given in R's order (reversed for the engine, as MXNet's R package does), see [r.md](r.md).",
             "",
             "| R name | operator | summary |",
             "|---|---|---|"]
    for op in _user_ops(registry):
        names = [op["name"]] + op["aliases"]
        summary = (op["doc"] or "").strip().splitlines()[0] if (op["doc"] or "").strip() else ""
        lines.append("| %s | `%s` | %s |" % (", ".join("`%s`" % _op_r_name(n) for n in names), op["name"],
                                             summary.replace("|", "\\|")))
    lines += ["", "## Data iterators", "", "| R function | summary |", "|---|---|"]
    for it in registry["data_iterators"]:
        lines.append("| `mx.io.%s(...)` | %s |" % (it["name"], it["doc"].strip().splitlines()[0].replace("|", "\\|")))
    return {"docs/frontends/r_operators.md": "\n".join(lines) + "\n"}


def generate(registry, header):
    files = {}
    files.update(_operator_list(registry))
    files.update(_raw_layer(header))
    files.update(_ops(registry))
    files.update(_iterators(registry))
    abi = ["%s" % _r_comment(),
           "# The ABI version of c_api.h this package was generated for (checked in .onLoad).",
           ".weft_abi_version <- %dL" % header.abi_version,
           ".weft_header_version <- \"%s\"" % header.version, "",
           "# Status codes by value (errors carry the name), dtype codes by name (c_api.h's enums).",
           ".weft_status_names <- c(%s)" % ", ".join('"%s" = %dL' % (k, v) for k, v in header.enums["weft_status_t"]),
           ".weft_dtype_codes <- c(%s)" % ", ".join('%s = %dL' % (k[len("WEFT_DTYPE_"):].lower(), v)
                                                     for k, v in header.enums["weft_dtype_t"]), ""]
    files[PKG + "R/version.R"] = "\n".join(abi)
    return files
