"""Checks the C prediction example against the Python path.

    check_predict.py PREDICT_BINARY LIBRARY WORK_DIR

Builds a LeNet (with batch norm, so that auxiliary states travel too) in Gluon, exports it,
runs the example on a random batch (whole outputs, a reshaped batch of one, and a partial
output) and compares every printed value with what Weft's Python front end computes; then
calls the API's error paths through ctypes on LIBRARY (the one the binary links).
Exits 77 (ctest's skip) when this interpreter cannot import weft.
"""
import ctypes
import os
import subprocess
import sys

import numpy as np



def lenet():
    from weft.gluon import nn
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, kernel_size=5, activation='tanh'),
            nn.BatchNorm(),
            nn.MaxPool2D(pool_size=2, strides=2),
            nn.Conv2D(16, kernel_size=5, activation='tanh'),
            nn.MaxPool2D(pool_size=2, strides=2),
            nn.Flatten(),
            nn.Dense(64, activation='tanh'),
            nn.Dense(10))
    return net


def run(binary, *args):
    res = subprocess.run([binary, *args], capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"check_predict: {binary} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
    rows = {}
    shapes = {}
    for line in res.stdout.splitlines():
        words = line.split()
        if words[1] == 'row':
            rows.setdefault(words[0], []).append([float(w) for w in words[3:]])
        elif words[1] == 'shape':
            shapes[words[0]] = tuple(int(w) for w in words[2:])
    return shapes, {k: np.array(v, dtype=np.float32) for k, v in rows.items()}


def expect_close(what, got, want):
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-6):
        sys.exit(f"check_predict: {what}: C gave\n{got}\nPython gave\n{want}")


WEFT_ERR_VALUE, WEFT_ERR_SHAPE, WEFT_ERR_NOT_FOUND, WEFT_ERR_HANDLE = 1, 4, 6, 10


class Context(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


def check_errors(library, sym_file, params_file):
    """Bad calls give the documented status and a message naming what was wrong."""
    lib = ctypes.CDLL(library)
    lib.weft_get_last_error.restype = ctypes.c_char_p
    json = open(sym_file, 'rb').read()
    params = open(params_file, 'rb').read()
    I64 = ctypes.c_int64
    keys = (ctypes.c_char_p * 1)(b'data')
    indptr = (I64 * 2)(0, 4)
    shape = (I64 * 4)(2, 1, 28, 28)
    cpu = Context(1, 0)

    def create(json_text, keys_, params_=params):
        pred = ctypes.c_void_p()
        st = lib.weft_pred_create(json_text, params_, ctypes.c_size_t(len(params_)), cpu, 1, keys_, indptr, shape,
                                  ctypes.byref(pred))
        return st, pred

    def expect(status, want, pattern):
        msg = lib.weft_get_last_error().decode()
        if status != want or pattern not in msg:
            sys.exit(f"check_predict: expected status {want} and '{pattern}', got {status}: {msg}")

    st, _ = create(json, (ctypes.c_char_p * 1)(b'nosuch'))
    expect(st, WEFT_ERR_NOT_FOUND, "input 'nosuch' is not an argument")
    st, _ = create(json, keys, params[:len(params) // 2])
    expect(st, 5, "params")  # WEFT_ERR_IO: a truncated file
    st, _ = create(b'{"nodes": [', keys)
    expect(st, WEFT_ERR_VALUE, "symbol_json")
    st, _ = create(json, keys, b'')
    expect(st, WEFT_ERR_NOT_FOUND, "is neither an input nor in the params")
    st, pred = create(json, keys)
    expect(st, 0, "")

    nd = ctypes.c_void_p()
    length = ctypes.c_int()
    expect(lib.weft_ndlist_create(params, ctypes.c_size_t(len(params)), ctypes.byref(nd), ctypes.byref(length)), 0, "")
    key = ctypes.c_char_p()
    ndim = ctypes.c_int()
    dims = ctypes.POINTER(I64)()
    expect(lib.weft_ndlist_get(nd, 0, ctypes.byref(key), None, ctypes.byref(dims), ctypes.byref(ndim)), 0, "")
    if not key.value.startswith((b'arg:', b'aux:')) or ndim.value < 1:
        sys.exit(f"check_predict: weft_ndlist_get gave key {key.value} and ndim {ndim.value}")
    expect(lib.weft_ndlist_get(nd, length.value, None, None, None, None), 3, "out of range")
    expect(lib.weft_pred_forward(nd), WEFT_ERR_HANDLE, "weft_ndlist_t")
    expect(lib.weft_ndlist_free(nd), 0, "")
    expect(lib.weft_ndlist_get(nd, 0, None, None, None, None), WEFT_ERR_HANDLE, "already freed")
    expect(lib.weft_ndlist_create(params, ctypes.c_size_t(len(params) - 3), ctypes.byref(nd), ctypes.byref(length)),
           5, "buffer")
    buf = (ctypes.c_float * 10)()
    expect(lib.weft_pred_set_input(pred, b'data', buf, ctypes.c_size_t(10)), WEFT_ERR_SHAPE, "1568 values")
    expect(lib.weft_pred_set_input(pred, b'other', buf, ctypes.c_size_t(10)), WEFT_ERR_NOT_FOUND, "'other'")
    expect(lib.weft_pred_forward(pred), 0, "")
    expect(lib.weft_pred_get_output(pred, 0, buf, ctypes.c_size_t(10)), WEFT_ERR_SHAPE, "room for 10")
    expect(lib.weft_pred_get_output(pred, 1, buf, ctypes.c_size_t(20)), 3, "out of range")  # WEFT_ERR_INDEX

    # Growing the batch (2 -> 6) gives the inputs new memory; the result equals a predictor
    # made for 6 from the start.
    grown = ctypes.c_void_p()
    big = (I64 * 4)(6, 1, 28, 28)
    expect(lib.weft_pred_reshape(pred, 1, keys, indptr, big, ctypes.byref(grown)), 0, "")
    direct = ctypes.c_void_p()
    expect(lib.weft_pred_create(json, params, ctypes.c_size_t(len(params)), cpu, 1, keys, indptr, big,
                                ctypes.byref(direct)), 0, "")
    x = np.random.default_rng(3).standard_normal(6 * 28 * 28).astype(np.float32)
    xp = x.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
    results = []
    for each in (grown, direct):
        expect(lib.weft_pred_set_input(each, b'data', xp, ctypes.c_size_t(x.size)), 0, "")
        expect(lib.weft_pred_forward(each), 0, "")
        out = np.empty(60, dtype=np.float32)
        expect(lib.weft_pred_get_output(each, 0, out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                                        ctypes.c_size_t(60)), 0, "")
        results.append(out)
    expect_close('batch grown by reshape', results[0], results[1])
    expect(lib.weft_pred_free(grown), 0, "")
    expect(lib.weft_pred_free(direct), 0, "")

    expect(lib.weft_pred_free(pred), 0, "")
    expect(lib.weft_pred_forward(pred), WEFT_ERR_HANDLE, "already freed")
    expect(lib.weft_pred_free(None), 0, "")
    expect(lib.weft_pred_forward(None), WEFT_ERR_HANDLE, "NULL")


def main():
    binary, library, work = sys.argv[1], sys.argv[2], sys.argv[3]
    global mx
    try:
        import weft as mx
    except ImportError as e:
        print(f"check_predict: skipped, weft does not import here: {e}")
        sys.exit(77)
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(7)
    net = lenet()
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(rng.standard_normal((4, 1, 28, 28)).astype(np.float32))
    # A few training-mode passes move the batch norm's running statistics off their defaults.
    for _ in range(2):
        with mx.autograd.record():
            net(x)
    net.hybridize()
    want = net(x).asnumpy()
    prefix = os.path.join(work, 'lenet')
    net.export(prefix)
    sym_file, params_file = prefix + '-symbol.json', prefix + '-0000.params'
    input_file = os.path.join(work, 'input.nd')
    mx.nd.save(input_file, [x])

    shapes, rows = run(binary, sym_file, params_file, input_file)
    expect_close('whole batch', rows['batch'], want)
    expect_close('batch of one after reshape', rows['single'], want[:1])
    if shapes['single'] != (1, 10):
        sys.exit(f"check_predict: reshaped output shape {shapes['single']}, expected (1, 10)")

    # A partial output: the first dense layer's, computed in Python by binding that output.
    sym = mx.sym.load(sym_file)
    internals = sym.get_internals()
    name = next(n for n in internals.list_outputs() if 'dense0' in n and n.endswith('_output'))
    saved = mx.nd.load(params_file)
    args = {k[4:]: v for k, v in saved.items() if k.startswith('arg:')}
    aux = {k[4:]: v for k, v in saved.items() if k.startswith('aux:')}
    part = internals[name]
    args = {k: v for k, v in args.items() if k in part.list_arguments()}
    args['data'] = x
    exe = part.bind(mx.cpu(), args, aux_states={k: v for k, v in aux.items() if k in part.list_auxiliary_states()})
    want_part = exe.forward(is_train=False)[0].asnumpy()
    _, rows = run(binary, sym_file, params_file, input_file, name[:-len('_output')])
    expect_close(f'partial output {name}', rows['batch'], want_part)
    # In a process of its own: a second copy of libweft (the one weft imported is the
    # package's) cannot be loaded beside the first (its static TLS).
    res = subprocess.run([sys.executable, __file__, '--errors', library, sym_file, params_file])
    if res.returncode != 0:
        sys.exit(f"check_predict: the error-path checks on {library} failed")
    print(f"check_predict: {binary} matches Python on {want.shape} and {want_part.shape} outputs")


if __name__ == '__main__':
    if sys.argv[1] == '--errors':
        check_errors(*sys.argv[2:5])
    else:
        main()
