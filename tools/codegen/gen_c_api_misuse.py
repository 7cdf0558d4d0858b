"""Writes tests/cpp/c_api_misuse_test.cc: every weft_* function of c_api.h and of
c_predict_api.h (the prediction API, a public header of its own) called with one
argument spoiled at a time (DESIGN.md idea 6: a bad argument is an error status, never a
crash).

Each parameter is classified by its C type and name (handle, array of handles and its
count, string, out-pointer, byte buffer and its size, context, callback, ...). A call
passes valid values for every parameter (fixtures from tests/cpp/c_api_misuse_fixtures.h)
except the one a case spoils:
  - a handle: NULL, freed, of another kind, or a forged pointer   -> WEFT_ERR_HANDLE
  - an array of handles: NULL, or an element NULL/freed/other kind -> error / WEFT_ERR_HANDLE
  - a count: -1, WEFT_MAX_COUNT + 1 (WEFT_MAX_NDIM + 1 for ranks), INT_MAX -> error (an
    output capacity only -1: the library writes at most what it has, so a large one is fine)
  - a byte size: 2^62 (over WEFT_MAX_BUFFER_BYTES); its buffer NULL -> error
  - an out-pointer, a string, a callback: NULL                     -> error
  - an index: -1 and INT_MAX; an enum or dtype code: 999; a context: unknown device type
    or id -1                                                       -> error
and the error message must name the spoiled parameter. Where the header documents that
NULL is accepted (*_free, "Any out-pointer may be NULL", the entries of NULLABLE below),
the case expects what is documented instead.

A parameter this module cannot classify, or a function whose valid call it cannot build,
stops the generator with an error: a new C API function cannot escape the test.
"""
import os
import re

import c_header
from generate import GENERATED_MARK, REPO

OUTPUT = "tests/cpp/c_api_misuse_test.cc"
PREDICT_HEADER = "c_api/include/weft/c_predict_api.h"

# Functions without parameters have nothing to spoil. run_scheduler would serve a job.
NO_PARAMS = {
    "weft_get_last_error": "takes nothing; the test reads it after every case",
    "weft_wait_all": "takes nothing",
    "weft_kvstore_run_scheduler": "takes nothing (and would run a distributed job's scheduler)",
    "weft_before_fork": "takes nothing (and would stop the engine's threads until weft_after_fork)",
    "weft_custom_op_stop_releases": "takes nothing (and would leak every later custom operator)",
    "weft_engine_wait_for_room": "takes nothing (and returns at once when the engine has room)",
}

# Functions whose every argument is valid whatever its value.
ANY_VALUE = {"weft_random_seed": "every int64 is a seed",
             "weft_after_fork": "every int is a flag (and outside a fork the call does nothing)",
             "weft_profiler_set_paused": "any int is a flag (0 resumes, else pauses)",
             "weft_profiler_dump": "any int is a flag (non-zero: the final dump)"}

# What fixture a live handle of each kind comes from; freed ones are fx.freed_<kind>.
KINDS = ["ndarray", "ndarray_list", "bytes", "symbol", "executor", "kvstore", "dataiter", "recordio", "op",
         "profile_domain", "profile_duration", "profile_counter", "predictor", "ndlist"]
# The function that frees a handle kind, where it is not weft_<kind>_free.
FREE_FN = {"predictor": "weft_pred_free"}

# Plain int parameters and the value of a valid call.
INT_VALUES = {
    "flag": "1", "to_rgb": "1", "is_bgr": "0", "quality": "3", "width": "2", "height": "2", "interp": "1",
    "head": "0", "priority": "0", "is_label": "0", "is_train": "0", "is_training": "0", "is_recording": "0",
    "retain_graph": "0", "create_graph": "0", "monitor_all": "0", "partial_shaping": "0", "allow_up_sizing": "0",
    "in_child": "0", "dev": "0",
    "paused": "0", "finished": "0", "reset": "0", "ascending": "0", "full_check": "1",
    # -1 (the values) and 0.. (aux arrays) are parts; a part out of range is refused by the core
    # (tests/python/test_sparse_check_format.py).
    "part": "0",
    # The segment of the fixture's cpu_shared array: these are looked up, not range-checked,
    # so the misuse cases of a wrong process or descriptor are hand-written
    # (tests/cpp/shared_memory_test.cc).
    "shared_pid": "fx.shared_pid", "shared_id": "fx.shared_id",
}
# Plain int values of a valid call that differ by function: the graph must survive the
# backward for the next case.
INT_BY_FN = {("weft_autograd_backward", "retain_graph"): "1"}
# int parameters that pick from a closed set: a valid value, and 999 must be refused.
ENUMS = {"dtype": "WEFT_DTYPE_FLOAT32", "stype": "1", "kind": "0", "stat": "0", "state": "WEFT_PROFILER_STOP", "format": "0",
         "sort_by": "0", "mode": "0"}
INT64_VALUES = {"begin": "0", "end": "1", "index": "0", "pos": "0", "seed": "42", "value": "1", "delta": "1",
                "byte_offset": "0"}
# Opaque user pointers passed back to callbacks: any value is valid.
OPAQUE = {"user", "user_data"}

# Strings of a valid call, by parameter name; STRINGS_BY_FN overrides per function.
STRINGS = {
    "json": "fx.symbol_json.c_str()", "key": '"__tag__"', "value": '"1"', "format": '".png"',
    "known": '"{}"', "dtypes": '"{}"', "group2ctx": '"{}"', "grad_req": '"write"', "type": '"local"',
    "iter": '"CSVIter"', "shapes": r'"{\"x\": [2, 3]}"', "scope": '"process"',
    "symbol_json": "fx.symbol_json.c_str()", "backend": '"MKLDNN"',
}
STRINGS_BY_FN = {
    ("weft_ndarray_save", "fname"): 'fx.Tmp("saved.params").c_str()',
    ("weft_ndarray_load", "fname"): "fx.params_path.c_str()",
    ("weft_op_get", "name"): '"_plus_scalar"',
    ("weft_symbol_create_variable", "name"): '"x"',
    ("weft_symbol_compose", "name"): '"c"',
    ("weft_symbol_save_file", "path"): 'fx.Tmp("saved.json").c_str()',
    ("weft_symbol_load_file", "path"): "fx.json_path.c_str()",
    ("weft_symbol_infer_type", "known"): r'"{\"x\": 0}"',
    ("weft_recordio_writer_create", "path"): 'fx.Tmp("new.rec").c_str()',
    ("weft_recordio_reader_create", "path"): "fx.rec_path.c_str()",
    ("weft_dataiter_type_doc", "name"): '"CSVIter"',
    ("weft_dataiter_type_num_params", "name"): '"CSVIter"',
    ("weft_dataiter_create", "name"): '"CSVIter"',
    ("weft_autograd_record_function", "name"): '"f"',
    ("weft_set_last_error", "message"): '"x"',
    ("weft_custom_op_register", "op_type"): '"misuse_custom_op"',
    ("weft_library_load", "path"): "WEFT_TEST_OPLIB",
    ("weft_library_op_name", "path"): "WEFT_TEST_OPLIB",
    ("weft_profile_domain_create", "name"): '"misuse"',
    ("weft_profile_task_create", "name"): '"t"',
    ("weft_profile_frame_create", "name"): '"f"',
    ("weft_profile_event_create", "name"): '"e"',
    ("weft_profile_counter_create", "name"): '"c"',
    ("weft_profile_marker", "name"): '"m"',
    ("weft_kvstore_pull_rows", "key_name"): '"3"',
    ("weft_pred_set_input", "key"): '"x"',
}

# The elements of each array parameter in a valid call (default: one live handle of the
# array's kind); an empty list makes the count 0 and the array NULL.
ARRAYS = {
    ("weft_imperative_invoke", "keys"): ['"scalar"'], ("weft_imperative_invoke", "vals"): ['"1"'],
    ("weft_imperative_invoke", "given"): [],
    ("weft_imperative_gradient", "keys"): ['"scalar"'], ("weft_imperative_gradient", "vals"): ['"1"'],
    ("weft_symbol_create_atomic", "keys"): ['"scalar"'], ("weft_symbol_create_atomic", "vals"): ['"1"'],
    ("weft_symbol_compose", "arg_names"): ['"data"'], ("weft_symbol_compose", "args"): ["fx.NewVariable()"],
    ("weft_ndarray_save", "names"): ['"a"'], ("weft_ndarray_save_to_bytes", "names"): ['"a"'],
    ("weft_executor_bind", "args"): ["fx.exec_arg"], ("weft_executor_bind", "arg_grads"): ["fx.exec_grad"],
    ("weft_executor_bind", "grad_req"): ['"write"'], ("weft_executor_bind", "aux"): [],
    ("weft_executor_bind_ex", "args"): ["fx.exec_arg"], ("weft_executor_bind_ex", "arg_grads"): ["fx.exec_grad"],
    ("weft_executor_bind_ex", "grad_req"): ['"write"'], ("weft_executor_bind_ex", "aux"): [],
    ("weft_executor_invoke", "bound_inputs"): ["fx.exec_arg"],
    ("weft_executor_invoke", "input_grads"): ["fx.exec_grad"],
    ("weft_autograd_mark_variables", "vars"): ["fx.ag_mark"], ("weft_autograd_mark_variables", "grads"): ["fx.ag_grad"],
    ("weft_autograd_mark_variables", "grad_reqs"): ['"write"'],
    ("weft_autograd_backward", "heads"): ["fx.ag_head"], ("weft_autograd_backward", "variables"): ["fx.ag_var"],
    ("weft_kvstore_init", "key_names"): ['"3"'], ("weft_kvstore_push", "key_names"): ['"3"'],
    ("weft_kvstore_pull", "key_names"): ['"3"'], ("weft_kvstore_pushpull", "key_names"): ['"3"'],
    ("weft_kvstore_pushpull", "pull_key_names"): ['"3"'],
    ("weft_kvstore_set_gradient_compression", "keys"): ['"type"'],
    ("weft_kvstore_set_gradient_compression", "vals"): ['"2bit"'],
    ("weft_dataiter_create", "keys"): ['"data_csv"', '"data_shape"', '"batch_size"'],
    ("weft_dataiter_create", "vals"): ["fx.csv_path.c_str()", '"(3,)"', '"2"'],
    # A valid configuration that records nothing the suite would notice.
    ("weft_ndarray_create_sparse", "aux"): ["fx.rsp_indices"],
    ("weft_ndarray_create_sparse_unchecked", "aux"): ["fx.rsp_indices"],
    ("weft_profiler_set_config", "keys"): ['"aggregate_stats"'],
    ("weft_profiler_set_config", "vals"): ['"False"'],
    # The predictor's one input x of shape (2, 3); its graph's node is named "plus".
    ("weft_pred_create", "input_keys"): ['"x"'], ("weft_pred_create_partial_out", "input_keys"): ['"x"'],
    ("weft_pred_create_partial_out", "output_keys"): ['"plus"'], ("weft_pred_reshape", "input_keys"): ['"x"'],
}
# int64 arrays read by a function (not governed by one count), by parameter name: the
# prediction API's input shapes in CSR form, for the one input x of shape (2, 3).
INT64_ARRAYS = {"input_shape_indptr": ["0", "2"], "input_shape_data": ["2", "3"]}
# Handles of a valid call other than the kind's fixture.
HANDLES_BY_FN = {
    ("weft_symbol_compose", "sym"): "fx.NewAtomic()",
    ("weft_ndarray_get_sparse_values", "arr"): "fx.rsp",
    ("weft_ndarray_get_aux", "arr"): "fx.rsp",
    ("weft_ndarray_get_sparse_part_unchecked", "arr"): "fx.rsp",
    ("weft_ndarray_check_format", "arr"): "fx.rsp",
    ("weft_ndarray_sparse_assign", "dst"): "fx.rsp",
    ("weft_ndarray_sparse_assign", "src"): "fx.rsp",
    ("weft_image_encode", "img"): "fx.image",
    ("weft_image_resize", "img"): "fx.image",
    ("weft_recordio_write", "rec"): "fx.recordio_writer",
    ("weft_ndarray_get_shared_mem", "arr"): "fx.shared",
}
# Byte buffers a function reads (data, size) or writes (data, nbytes) in a valid call.
BUFFERS_IN = {
    "weft_ndarray_copy_from_host": "std::string(24, '\\0')",
    "weft_ndarray_load_from_bytes": "fx.params_bytes",
    "weft_ndarray_load_raw_bytes": "fx.raw_bytes",
    "weft_image_decode": "fx.png_bytes",
    "weft_recordio_write": 'std::string("abc")',
    "weft_kvstore_send_command_to_servers": 'std::string("cmd")',
    "weft_pred_create": "fx.params_bytes", "weft_pred_create_partial_out": "fx.params_bytes",
    "weft_ndlist_create": "fx.params_bytes",
}
BUFFERS_OUT = {"weft_ndarray_copy_to_host": 24, "weft_dataiter_get_index": 16}
# Float buffers (the prediction API's inputs and outputs, sized in elements): how many
# floats a valid call passes (the predictor's input and output are (2, 3)).
FLOAT_BUFFERS = {"weft_pred_set_input": 6, "weft_pred_get_output": 6}

# Array parameters whose count is not the nearest count parameter before them (or, when
# none comes before, after them).
COUNT_OF = {("weft_imperative_gradient", "in_grads"): "num_inputs"}
# Outputs that are arrays the caller provides (the count says how long).
OUT_ARRAYS = {("weft_imperative_gradient", "in_grads")}

# Documented NULLs. (function, parameter) -> (expected, where it is documented, a phrase
# that documentation must hold); "param[]" is an element of an array parameter. Any
# out-pointer of the functions of ANY_OUT_NULL may be NULL, and every *_free accepts NULL
# (the header's preamble).
NULLABLE = {
    ("weft_set_is_training", "out"): ("kOk", "weft_set_is_training", "when `out` is not NULL"),
    ("weft_autograd_set_is_recording", "out"): ("kOk", "weft_autograd_set_is_recording", "when `out` is not NULL"),
    ("weft_ndarray_save", "names"): ("kOk", "weft_ndarray_save", "NULL for an unnamed list"),
    ("weft_ndarray_save_to_bytes", "names"): ("kOk", "weft_ndarray_save", "NULL for an unnamed list"),
    ("weft_symbol_compose", "name"): ("kOk", "weft_symbol_compose", "may be NULL"),
    ("weft_symbol_compose", "arg_names"): ("kOk", "weft_symbol_compose", "arg_names NULL"),
    ("weft_symbol_infer_shape", "known"): ("kOk", "weft_symbol_infer_shape", "NULL or"),
    ("weft_symbol_infer_type", "known"): ("kOk", "weft_symbol_infer_type", "NULL or"),
    ("weft_executor_bind", "arg_grads"): ("kOk", "weft_executor_bind", "arg_grads (may be NULL"),
    ("weft_executor_bind", "arg_grads[]"): ("kOk", "weft_executor_bind", "NULL where no gradient"),
    ("weft_executor_bind", "grad_req"): ("kOk", "weft_executor_bind", "grad_req (may be"),
    ("weft_executor_bind_ex", "arg_grads"): ("kOk", "weft_executor_bind", "arg_grads (may be NULL"),
    ("weft_executor_bind_ex", "arg_grads[]"): ("kOk", "weft_executor_bind", "NULL where no gradient"),
    ("weft_executor_bind_ex", "grad_req"): ("kOk", "weft_executor_bind", "grad_req (may be"),
    ("weft_executor_bind_ex", "group2ctx"): ("kOk", "weft_executor_bind_ex", "group2ctx (NULL"),
    ("weft_executor_simple_bind", "group2ctx"): ("kOk", "weft_executor_bind_ex", "group2ctx (NULL"),
    ("weft_executor_simple_bind", "dtypes"): ("kOk", "weft_executor_simple_bind", "`dtypes` (NULL"),
    ("weft_executor_simple_bind", "grad_req"): ("kOk", "weft_executor_simple_bind", "grad_req: NULL"),
    ("weft_executor_invoke", "input_grads[]"): ("kOk", "weft_executor_invoke", "NULL entries: no gradient"),
    ("weft_executor_set_monitor_callback", "callback"): ("kOk", "weft_executor_monitor_fn",
                                                         "callback NULL removes"),
    ("weft_autograd_backward", "head_grads"): ("kOk", "weft_autograd_backward", "head_grads is NULL"),
    ("weft_autograd_backward", "head_grads[]"): ("kOk", "weft_autograd_backward", "NULL meaning ones"),
    ("weft_autograd_mark_variables", "grads[]"): ("kOk", "weft_autograd_mark_variables", "an entry may be NULL"),
    ("weft_autograd_record_function", "release"): ("kOk", "weft_autograd_release_fn", "may be NULL"),
    ("weft_kvstore_set_updater", "updater"): ("kOk", "weft_kvstore_set_updater", "NULL removes it"),
    ("weft_set_last_error", "message"): ("kOk", "weft_set_last_error", "`message` NULL sets"),
    # A local store has no server loop to run, as documented: any status.
    ("weft_kvstore_run_server", "controller"): ("kAny", "weft_kvstore_run_server", "controller may be NULL"),
}
# A documented NULL that is valid only together with other arguments: what they become in
# that case (a gradient array left out must not be asked for by grad_req).
# Each value: parameter -> (expression, how the case's label shows it).
NULL_WITH = {
    ("weft_executor_bind", "arg_grads"): {"grad_req": ("nullptr", "NULL")},
    ("weft_executor_bind", "arg_grads[]"): {"grad_req": ("nullptr", "NULL")},
    ("weft_executor_bind_ex", "arg_grads"): {"grad_req": ("nullptr", "NULL")},
    ("weft_executor_bind_ex", "arg_grads[]"): {"grad_req": ("nullptr", "NULL")},
    ("weft_autograd_mark_variables", "grads[]"): {"grad_reqs": ('std::vector<const char*>{"null"}.data()',
                                                                "{null}")},
}
ANY_OUT_NULL = {
    "weft_get_version": "weft_get_version",
    "weft_op_get_input": "weft_op_get_num_inputs",
    "weft_op_get_param": "weft_op_get_num_params",
    "weft_dataiter_type_param": "weft_dataiter_type_num_params",
    "weft_dataiter_get_desc": "weft_dataiter_get_num_descs",
    "weft_ndlist_get": "weft_ndlist_get",
}
# The valid callbacks (tests/cpp/c_api_misuse_fixtures.h).
CALLBACKS = {
    "weft_autograd_backward_fn": "BackwardFn", "weft_autograd_release_fn": "ReleaseFn",
    "weft_executor_monitor_fn": "MonitorFn", "weft_kvstore_updater_t": "UpdaterFn",
    "weft_kvstore_controller_t": "ControllerFn", "weft_custom_creator_fn": "CustomCreatorFn",
    "weft_block_enter_t": "BlockEnterFn", "weft_block_leave_t": "BlockLeaveFn",
}

COUNT_NAME = re.compile(r"^(num|num_\w+|ndim|capacity)$")
HANDLE_TYPE = re.compile(r"^(const )?weft_(\w+)_t\*$")
HANDLE_ARRAY = re.compile(r"^weft_(\w+)_t\* const\*$")
HANDLE_OUT = re.compile(r"^(const )?weft_(\w+)_t\*\*$")


class GenError(Exception):
    pass


class Role:
    """How one parameter is filled in a valid call and what spoiling it means."""

    def __init__(self, kind, **kw):
        self.kind = kind
        self.__dict__.update(kw)


def _classify(fn, p, header):
    """The Role of parameter p of function fn; a GenError for anything unknown."""
    t, n, where = p.ctype, p.name, "%s(%s %s)" % (fn.name, p.ctype, p.name)
    m = HANDLE_TYPE.match(t)
    if m and "weft_%s_t" % m.group(2) in header.handles:
        kind = m.group(2)
        if kind not in KINDS:
            raise GenError("%s: no fixture for handles of kind %s (add it to KINDS and the fixtures)" % (where, kind))
        return Role("handle", handle=kind, ctype=t)
    m = HANDLE_ARRAY.match(t)
    if m and "weft_%s_t" % m.group(1) in header.handles:
        return Role("handle_array", handle=m.group(1))
    if t == "const char* const*":
        return Role("string_array")
    if t == "int" and COUNT_NAME.match(n):
        return Role("count")
    if t == "int" and n in ("i", "index"):
        return Role("index")
    if t == "int" and n in ENUMS:
        return Role("enum", value=ENUMS[n])
    if t == "int" and n in INT_VALUES:
        return Role("value", value=INT_BY_FN.get((fn.name, n), INT_VALUES[n]))
    if t == "int64_t" and n in INT64_VALUES:
        return Role("value", value=INT64_VALUES[n])
    if t == "const int64_t*" and n == "shape":
        return Role("shape")
    if t == "int64_t*" and n == "dims":
        return Role("dims")
    if t == "weft_context_t":
        return Role("context")
    if (t == "const void*" and n in ("data", "params")) or (t == "const float*" and n == "data"):
        return Role("buffer_in")
    if t in ("void*", "float*") and n == "data":
        return Role("buffer_out")
    if t == "const int64_t*" and n in INT64_ARRAYS:
        return Role("int64_array", value=INT64_ARRAYS[n])
    if t == "void*" and n in OPAQUE:
        return Role("opaque")
    if t == "size_t" and n in ("size", "nbytes", "params_size"):
        return Role("size")
    if t == "const char*":
        return Role("string")
    if t in header.callbacks:
        if t not in CALLBACKS:
            raise GenError("%s: no valid callback of type %s in the fixtures (add it to CALLBACKS)" % (where, t))
        return Role("callback", value=CALLBACKS[t])
    if t == "struct DLManagedTensor*":
        return Role("dlpack_in")
    m = HANDLE_OUT.match(t)
    if m and "weft_%s_t" % m.group(2) in header.handles:
        if (fn.name, n) in OUT_ARRAYS:
            return Role("out_array", handle=m.group(2))
        if n != "out":
            raise GenError("%s: a handle out-pointer not named 'out'; say in OUT_ARRAYS whether it is an array" % where)
        return Role("out", decl="%s %s = nullptr;" % (t[:-1], "%s"), release=True)
    if t == "weft_ndarray_t* const**":
        return Role("out_handles")
    if t in ("int*", "int64_t*", "size_t*"):
        return Role("out", decl="%s %s = 0;" % (t[:-1], "%s"), release=False)
    if t in ("const char**", "const void**", "const int64_t**", "const float**"):
        return Role("out", decl="%s %s = nullptr;" % (t[:-1], "%s"), release=False)
    if t == "weft_context_t*":
        return Role("out", decl="weft_context_t %s{};", release=False)
    if t == "struct DLManagedTensor**":
        return Role("out", decl="DLManagedTensor* %s = nullptr;", release=True)
    raise GenError("%s: the misuse generator does not know how to fill this parameter; teach "
                   "tools/codegen/gen_c_api_misuse.py its valid value and its misuse cases" % where)


def _pair_counts(fn, roles):
    """Maps every array-like parameter to its count parameter, and checks each count
    governs something."""
    names = [p.name for p in fn.params]
    counts = [i for i, p in enumerate(fn.params) if roles[p.name].kind == "count"]
    governed = {names[i]: [] for i in counts}
    for i, p in enumerate(fn.params):
        r = roles[p.name]
        if r.kind not in ("handle_array", "string_array", "shape", "dims", "out_array"):
            continue
        if (fn.name, p.name) in COUNT_OF:
            c = COUNT_OF[(fn.name, p.name)]
        else:
            before = [j for j in counts if j < i]
            after = [j for j in counts if j > i]
            if not before and not after:
                raise GenError("%s: array parameter %s has no count parameter" % (fn.name, p.name))
            c = names[before[-1]] if before else names[after[0]]
        r.count = c
        governed[c].append(p.name)
    for c, arrays in governed.items():
        if not arrays:
            raise GenError("%s: count parameter %s governs no array parameter" % (fn.name, c))
        roles[c].arrays = arrays
        roles[c].is_rank = c == "ndim"
        roles[c].is_capacity = c == "capacity"
    # A byte size belongs to the buffer right before it.
    for i, p in enumerate(fn.params):
        r = roles[p.name]
        if r.kind in ("buffer_in", "buffer_out"):
            if i + 1 >= len(fn.params) or roles[names[i + 1]].kind != "size":
                raise GenError("%s: buffer %s is not followed by its size" % (fn.name, p.name))
            r.size = names[i + 1]
            roles[names[i + 1]].buffer = p.name
    for p in fn.params:
        if roles[p.name].kind == "size" and not hasattr(roles[p.name], "buffer"):
            raise GenError("%s: size %s follows no buffer" % (fn.name, p.name))
    # The outputs handed out as an array come with an int* count right before them.
    for i, p in enumerate(fn.params):
        if roles[p.name].kind == "out_handles":
            if i == 0 or fn.params[i - 1].ctype != "int*":
                raise GenError("%s: %s is not preceded by its int* count" % (fn.name, p.name))
            roles[p.name].count = names[i - 1]


class Call:
    """A valid call of one function: declarations, one expression per parameter, and what
    to release after it."""

    def __init__(self, fn, roles):
        self.fn = fn
        self.roles = roles
        self.decls = []
        self.exprs = {}
        self.after = []
        self.elems = {}
        for p in fn.params:
            self._fill(p, roles[p.name])

    def _fill(self, p, r):
        fn, n, v = self.fn.name, p.name, "a_" + p.name
        if r.kind == "handle":
            if (fn, n) in HANDLES_BY_FN:
                self.exprs[n] = HANDLES_BY_FN[(fn, n)]
            else:
                self.exprs[n] = "fx.%s" % r.handle
        elif r.kind in ("handle_array", "string_array"):
            if (fn, n) in ARRAYS:
                elems = ARRAYS[(fn, n)]
            elif r.kind == "handle_array":
                elems = ["fx.%s" % r.handle]
            else:
                raise GenError("%s: no valid strings for array %s (add them to ARRAYS)" % (fn, n))
            self.elems[n] = elems
            ctype = "weft_%s_t*" % r.handle if r.kind == "handle_array" else "const char*"
            if elems:
                self.decls.append("%s %s[] = {%s};" % (ctype, v, ", ".join(elems)))
                self.exprs[n] = v
            else:
                self.exprs[n] = "nullptr"
        elif r.kind == "count":
            self.exprs[n] = None  # set once the arrays are known
        elif r.kind == "index":
            self.exprs[n] = "0"
        elif r.kind in ("enum", "value", "callback"):
            self.exprs[n] = r.value
        elif r.kind == "shape":
            self.decls.append("int64_t %s[] = {2, 3};" % v)
            self.exprs[n] = v
            self.elems[n] = ["2", "3"]
        elif r.kind == "dims":
            self.decls.append("int64_t %s[8] = {};" % v)
            self.exprs[n] = v
            self.elems[n] = ["0"] * 8
        elif r.kind == "context":
            self.exprs[n] = "weft_context_t{WEFT_DEVICE_CPU, 0}"
        elif r.kind in ("buffer_in", "buffer_out") and fn in FLOAT_BUFFERS:
            self.decls.append("std::vector<float> %s(%d, 1.0f);" % (v, FLOAT_BUFFERS[fn]))
            self.exprs[n] = "%s.data()" % v
        elif r.kind == "int64_array":
            self.decls.append("int64_t %s[] = {%s};" % (v, ", ".join(r.value)))
            self.exprs[n] = v
        elif r.kind == "buffer_in":
            if fn not in BUFFERS_IN:
                raise GenError("%s: no valid input bytes for %s (add them to BUFFERS_IN)" % (fn, n))
            self.decls.append("const std::string %s = %s;" % (v, BUFFERS_IN[fn]))
            self.exprs[n] = "%s.data()" % v
        elif r.kind == "buffer_out":
            if fn not in BUFFERS_OUT:
                raise GenError("%s: no output buffer size for %s (add it to BUFFERS_OUT)" % (fn, n))
            self.decls.append("std::vector<char> %s(%d);" % (v, BUFFERS_OUT[fn]))
            self.exprs[n] = "%s.data()" % v
        elif r.kind == "size":
            buf = "a_" + r.buffer
            self.exprs[n] = "%s.size()" % buf
        elif r.kind == "opaque":
            self.exprs[n] = "nullptr"
        elif r.kind == "string":
            if (fn, n) in STRINGS_BY_FN:
                self.exprs[n] = STRINGS_BY_FN[(fn, n)]
            elif n in STRINGS:
                self.exprs[n] = STRINGS[n]
            else:
                raise GenError("%s: no valid string for %s (add it to STRINGS or STRINGS_BY_FN)" % (fn, n))
        elif r.kind == "dlpack_in":
            self.decls.append("DLManagedTensor* %s = fx.NewTensor();" % v)
            self.exprs[n] = v
            # The library owns the tensor only when the call succeeds.
            self.after.append("if (st != WEFT_OK) Release(%s);" % v)
        elif r.kind == "out":
            self.decls.append(r.decl % v)
            self.exprs[n] = "&" + v
            if r.release:
                self.after.append("Release(%s);" % v)
        elif r.kind == "out_handles":
            self.decls.append("weft_ndarray_t* const* %s = nullptr;" % v)
            self.exprs[n] = "&" + v
            self.after.append("if (st == WEFT_OK) ReleaseAll(a_%s, %s);" % (r.count, v))
        elif r.kind == "out_array":
            self.exprs[n] = v
            self.after.append("if (st == WEFT_OK) ReleaseAll(static_cast<int>(std::size(%s)), %s);" % (v, v))
        else:
            raise GenError("%s: unhandled role %s of %s" % (fn, r.kind, n))

    def finish(self):
        for p in self.fn.params:
            r = self.roles[p.name]
            if r.kind == "count":
                lens = {len(self.elems[a]) for a in r.arrays if a in self.elems}
                out_arrays = [a for a in r.arrays if self.roles[a].kind == "out_array"]
                if r.is_capacity:
                    lens = {8}
                if len(lens) != 1:
                    raise GenError("%s: the arrays of %s have different lengths in the valid call" % (self.fn.name,
                                                                                                      p.name))
                k = lens.pop()
                self.exprs[p.name] = str(k)
                for a in out_arrays:
                    self.decls.append("weft_ndarray_t* a_%s[%d] = {};" % (a, max(k, 1)))


def _want_null(fn, pname, docs):
    """The expected result of NULL for pname: "kOk"/"kAny" when documented, else None."""
    if fn.name.endswith("_free") and len(fn.params) == 1:
        return "kOk"
    key = (fn.name, pname)
    if key in NULLABLE:
        want, doc_fn, phrase = NULLABLE[key]
        if phrase not in docs.get(doc_fn, ""):
            raise GenError("%s: NULLABLE says %s may be NULL per the documentation of %s, which lacks %r"
                           % (fn.name, pname, doc_fn, phrase))
        return want
    return None


def _with(fn, key, spoiled):
    """spoiled, plus what NULL_WITH says the other arguments become for this case."""
    return dict(spoiled, **{k: v[0] for k, v in NULL_WITH.get((fn.name, key), {}).items()})


def _with_label(fn, key):
    extra = NULL_WITH.get((fn.name, key), {})
    return "".join(" and %s = %s" % (k, v[1]) for k, v in sorted(extra.items()))


def _cases(fn, roles, call, header, docs):
    """(label, {param: spoiled expression}, want, names, category) for every misuse case of fn."""
    cases = []
    freeable = {k for k in KINDS if any(f.name == FREE_FN.get(k, "weft_%s_free" % k) for f in header.functions)}

    def wrong(kind):
        return "fx.symbol" if kind == "ndarray" else "fx.ndarray"

    for p in fn.params:
        r, n = roles[p.name], p.name
        cast = lambda expr, t: "reinterpret_cast<%s>(%s)" % (t, expr)  # noqa: E731
        if r.kind == "handle":
            t = r.ctype
            null_want = _want_null(fn, n, docs) or "kHandle"
            cases.append(("%s = NULL" % n, {n: "nullptr"}, null_want, [n], "NULL handle"))
            if r.handle in freeable:
                cases.append(("%s = a freed handle" % n, {n: "fx.freed_%s" % r.handle}, "kHandle", [n], "freed handle"))
            cases.append(("%s = a handle of another kind" % n, {n: cast(wrong(r.handle), t)}, "kHandle", [n],
                          "wrong-kind handle"))
            cases.append(("%s = a forged pointer" % n, {n: cast("&forged", t)}, "kHandle", [n], "forged handle"))
        elif r.kind == "handle_array":
            elems = call.elems[n]
            if not elems:
                continue
            want = _want_null(fn, n, docs) or "kError"
            cases.append(("%s = NULL with %s = %d%s" % (n, r.count, len(elems), _with_label(fn, n)),
                          _with(fn, n, {n: "nullptr"}), want, [n, r.count], "NULL array"))
            t = "weft_%s_t*" % r.handle
            rest = elems[1:]

            def arr(first):
                return "std::vector<%s>{%s}.data()" % (t, ", ".join([first] + rest))

            elem_want = _want_null(fn, n + "[]", docs) or "kHandle"
            cases.append(("%s[0] = NULL%s" % (n, _with_label(fn, n + "[]")), _with(fn, n + "[]", {n: arr("nullptr")}),
                          elem_want, [n], "NULL handle"))
            if r.handle in freeable:
                cases.append(("%s[0] = a freed handle" % n, {n: arr("fx.freed_%s" % r.handle)}, "kHandle", [n],
                              "freed handle"))
            cases.append(("%s[0] = a handle of another kind" % n, {n: arr(cast(wrong(r.handle), t))}, "kHandle",
                          [n], "wrong-kind handle"))
        elif r.kind == "string_array":
            elems = call.elems[n]
            if not elems:
                continue
            want = _want_null(fn, n, docs) or "kError"
            cases.append(("%s = NULL with %s = %d" % (n, r.count, len(elems)), {n: "nullptr"}, want, [n, r.count],
                          "NULL array"))
            arr = "std::vector<const char*>{%s}.data()" % ", ".join(["nullptr"] + elems[1:])
            cases.append(("%s[0] = NULL" % n, {n: arr}, "kError", [n], "NULL string"))
        elif r.kind == "count":
            # The count itself must be named: an error about an element (arrays[1]) would mean
            # the library read past the array before checking the count.
            names = [n]
            cases.append(("%s = -1" % n, {n: "-1"}, "kError", names, "negative count"))
            if not r.is_capacity:
                bound = "WEFT_MAX_NDIM" if r.is_rank else "WEFT_MAX_COUNT"
                cases.append(("%s = %s + 1" % (n, bound), {n: "%s + 1" % bound}, "kError", names, "oversized count"))
                cases.append(("%s = INT_MAX" % n, {n: "INT_MAX"}, "kError", names, "oversized count"))
        elif r.kind == "int64_array":
            cases.append(("%s = NULL" % n, {n: "nullptr"}, "kError", [n], "NULL array"))
        elif r.kind in ("shape", "dims"):
            cases.append(("%s = NULL with %s = %s" % (n, r.count, call.exprs[r.count]), {n: "nullptr"}, "kError",
                          [n, r.count], "NULL array"))
        elif r.kind == "out_array":
            cases.append(("%s = NULL" % n, {n: "nullptr"}, "kError", [n], "NULL out-pointer"))
        elif r.kind == "index":
            cases.append(("%s = -1" % n, {n: "-1"}, "kError", ["index"], "bad index"))
            cases.append(("%s = INT_MAX" % n, {n: "INT_MAX"}, "kError", ["index"], "bad index"))
        elif r.kind == "enum":
            cases.append(("%s = 999" % n, {n: "999"}, "kError", [n], "bad enum value"))
        elif r.kind == "context":
            cases.append(("%s of device type 99" % n, {n: "weft_context_t{99, 0}"}, "kError", [], "bad context"))
            cases.append(("%s of device id -1" % n, {n: "weft_context_t{WEFT_DEVICE_CPU, -1}"}, "kError", [],
                          "bad context"))
        elif r.kind in ("buffer_in", "buffer_out"):
            cases.append(("%s = NULL" % n, {n: "nullptr"}, "kError", [n], "NULL buffer"))
        elif r.kind == "size":
            cases.append(("%s = 2^62" % n, {n: "size_t{1} << 62"}, "kError", [n], "oversized byte size"))
        elif r.kind in ("string", "callback", "dlpack_in", "out", "out_handles"):
            want = _want_null(fn, n, docs)
            if want is None and r.kind in ("out", "out_handles") and fn.name in ANY_OUT_NULL:
                doc_fn = ANY_OUT_NULL[fn.name]
                if not re.search(r"out-pointer.*may be NULL", docs.get(doc_fn, ""), re.S):
                    raise GenError("%s: ANY_OUT_NULL names %s, whose documentation does not say that any "
                                   "out-pointer may be NULL" % (fn.name, doc_fn))
                want = "kOk"
            cat = {"string": "NULL string", "callback": "NULL callback", "dlpack_in": "NULL DLPack tensor"}.get(
                r.kind, "NULL out-pointer")
            cases.append(("%s = NULL" % n, {n: "nullptr"}, want or "kError", [n], cat))
    return cases


def _render_case(fn, call, label, spoiled, want, names):
    args = []
    for p in fn.params:
        args.append(spoiled.get(p.name, call.exprs[p.name]))
    lines = ["  {  // %s" % label]
    lines += ["    " + d for d in call.decls]
    call_line = "    const weft_status_t st = %s(%s);" % (fn.name, ", ".join(args))
    if len(call_line) > 118:
        call_line = "    const weft_status_t st = %s(\n        %s);" % (fn.name, ",\n        ".join(args))
    lines.append(call_line)
    lines.append('    Check(st, Want::%s, "%s", "%s",\n          {%s});'
                 % (want, fn.name, label.replace('"', '\\"'), ", ".join('"%s"' % x for x in names)))
    lines += ["    " + a for a in call.after]
    lines.append("  }")
    return lines


def _with_predict_api(header):
    """header plus the functions and handle types of c_predict_api.h."""
    predict = c_header.parse(os.path.join(REPO, PREDICT_HEADER))
    return header._replace(functions=header.functions + predict.functions,
                           handles=sorted(set(header.handles) | set(predict.handles)),
                           callbacks=dict(header.callbacks, **predict.callbacks))


def generate(registry, header):
    del registry  # the C API alone decides the cases
    header = _with_predict_api(header)
    docs = {f.name: f.doc for f in header.functions}
    docs.update({name: cb.doc for name, cb in header.callbacks.items()})
    for h in header.handles:
        kind = h[len("weft_"):-len("_t")]
        if kind not in KINDS:
            raise GenError("handle type %s has no fixture (add it to KINDS and c_api_misuse_fixtures.h)" % h)
    body = []
    stats = {}
    total = 0
    covered = 0
    for fn in header.functions:
        if not fn.params:
            if fn.name not in NO_PARAMS:
                raise GenError("%s takes no parameter: say why it has no misuse case in NO_PARAMS" % fn.name)
            continue
        if fn.ret != "weft_status_t":
            raise GenError("%s returns %s, not weft_status_t" % (fn.name, fn.ret))
        roles = {p.name: _classify(fn, p, header) for p in fn.params}
        _pair_counts(fn, roles)
        call = Call(fn, roles)
        call.finish()
        cases = _cases(fn, roles, call, header, docs)
        if not cases:
            if fn.name not in ANY_VALUE:
                raise GenError("%s: no misuse case could be made; if every value of its parameters is valid, say so "
                               "in ANY_VALUE" % fn.name)
            continue
        covered += 1
        body.append("TEST_F(CApiMisuse, %s) {" % fn.name)
        body.append("  Fixtures& fx = *fx_;")
        body.append("  int forged = 0;")
        body.append("  (void)forged;")
        for label, spoiled, want, names, cat in cases:
            body += _render_case(fn, call, label, spoiled, want, names)
            key = cat + {"kOk": " (documented: OK)", "kAny": " (documented: any status)"}.get(want, "")
            stats[key] = stats.get(key, 0) + 1
            total += 1
        body.append("}")
        body.append("")

    head = [
        "// " + GENERATED_MARK,
        "// The C API misuse test (tools/codegen/gen_c_api_misuse.py): each case spoils one argument",
        "// of an otherwise valid call and checks the status and that the error message names the",
        "// argument. %d functions, %d calls:" % (covered, total),
    ]
    head += ["//   %5d %s" % (v, k) for k, v in sorted(stats.items())]
    head += [
        "// Without a case: %s (no parameters), %s (any value is valid)." % (
            ", ".join(sorted(NO_PARAMS)), ", ".join(sorted(ANY_VALUE))),
        "#include <gtest/gtest.h>",
        "",
        "#include <climits>",
        "#include <cstdint>",
        "#include <iterator>",
        "#include <string>",
        "#include <vector>",
        "",
        '#include "tests/cpp/c_api_misuse_fixtures.h"',
        '#include "weft/c_api.h"',
        '#include "weft/c_predict_api.h"',
        '#include "weft/dlpack.h"',
        "",
        "namespace weft_misuse {",
        "namespace {",
        "",
        "class CApiMisuse : public ::testing::Test {",
        " protected:",
        "  static void SetUpTestSuite() {",
        "    fx_ = new Fixtures();",
        "    fx_->Build();",
        "    built_ = !::testing::Test::HasFailure();",
        "  }",
        "  static void TearDownTestSuite() {",
        "    fx_->Destroy();",
        "    delete fx_;",
        "    fx_ = nullptr;",
        "  }",
        '  void SetUp() override { ASSERT_TRUE(built_) << "the fixtures of the misuse test could not be built"; }',
        "",
        "  static Fixtures* fx_;",
        "  static bool built_;",
        "};",
        "",
        "Fixtures* CApiMisuse::fx_ = nullptr;",
        "bool CApiMisuse::built_ = false;",
        "",
    ]
    tail = ["}  // namespace", "}  // namespace weft_misuse", ""]
    return {OUTPUT: "\n".join(head + body + tail)}
