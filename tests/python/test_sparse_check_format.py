"""Sparse arrays made from parts that break their format: made as MXNet makes them, reported
by check_format at MXNet's two levels, and refused (with the fault named) by every path that
reads them, so no kernel reads such an array out of bounds."""
import pickle

import numpy as np
import pytest

import weft as mx
from weft import nd

# (what is wrong, parts, shape, level at which check_format finds it, error text)
CSR_FAULTS = [
    ("indptr past nnz", ([7.0, 8.0, 9.0], [0, 2, 1], [0, 5, 2, 3]), (3, 4), "full", "indptr must not decrease"),
    ("unsorted indices", ([7.0, 8.0, 9.0], [2, 1, 1], [0, 2, 2, 3]), (3, 4), "full",
     "column index must be strictly increasing"),
    ("indptr end", ([7.0, 8.0, 9.0], [1, 2, 1], [0, 2, 2, 4]), (3, 4), "full", "indptr must end at nnz = 3, got 4"),
    ("negative indptr", ([7.0, 8.0, 9.0], [0, 2, 1], [0, -2, 2, 3]), (3, 4), "full", "indptr must not decrease"),
    ("indptr start", ([7.0, 8.0], [0, 1], [1, 1, 2, 2]), (3, 4), "full", "indptr must start at 0, got 1"),
    ("column out of range", ([7.0], [4], [0, 1, 1, 1]), (3, 4), "full", r"column index 4 .* out of range \[0, 4\)"),
    ("negative column", ([7.0], [-1], [0, 1, 1, 1]), (3, 4), "full", r"column index -1 .* out of range"),
    ("indptr length", ([7.0], [0], [0, 1]), (3, 4), "shape", r"expected indptr of length 4 \(rows \+ 1\), got 2"),
    ("data and indices lengths", ([7.0, 8.0], [0], [0, 1, 1, 1]), (3, 4), "shape",
     "expected data and indices of one length"),
]

RSP_FAULTS = [
    ("row out of range", ([[1.0, 2.0], [3.0, 4.0]], [1, 4]), (3, 2), "full", r"row index 4 .* out of range \[0, 3\)"),
    ("unsorted rows", ([[1.0, 2.0], [3.0, 4.0]], [1, 0]), (3, 2), "full", "row index must be strictly increasing"),
    ("negative row", ([[1.0, 2.0], [3.0, 4.0]], [1, -2]), (3, 2), "full", r"row index -2 .* out of range"),
    ("repeated row", ([[1.0, 2.0], [3.0, 4.0]], [1, 1]), (3, 2), "full", "strictly increasing, got 1 then 1"),
    ("rows and indices lengths", ([[1.0, 2.0], [3.0, 4.0]], [1]), (3, 2), "shape",
     r"expected data of shape \(1,2\) \(one row per index\)"),
]

FAULTS = [("csr",) + f for f in CSR_FAULTS] + [("row_sparse",) + f for f in RSP_FAULTS]
IDS = ["%s: %s" % (f[0], f[1]) for f in FAULTS]


def _make(stype, parts, shape):
    if stype == "csr":
        return nd.sparse.csr_matrix(parts, shape=shape)
    return nd.sparse.row_sparse_array(parts, shape=shape)


@pytest.mark.parametrize("stype,why,parts,shape,level,text", FAULTS, ids=IDS)
def test_invalid_parts_make_an_array_check_format_reports(stype, why, parts, shape, level, text):
    a = _make(stype, parts, shape)
    assert a.stype == stype and a.shape == shape
    with pytest.raises(mx.base.MXNetError, match=text):
        a.check_format()
    with pytest.raises(mx.base.MXNetError, match=text):
        a.check_format(full_check=True)
    if level == "shape":
        with pytest.raises(mx.base.MXNetError, match=text):
            a.check_format(full_check=False)
    else:
        # MXNet's cheap check looks only at lengths: these faults pass it.
        a.check_format(full_check=False)
    # The parts themselves stay readable, as given.
    np.testing.assert_array_equal(a.data.asnumpy(), np.asarray(parts[0], dtype=np.float32))
    np.testing.assert_array_equal(a.indices.asnumpy(), parts[1])
    if stype == "csr":
        np.testing.assert_array_equal(a.indptr.asnumpy(), parts[2])


def _readers(tmp_path):
    """Every way of reading an array's contents, each as name -> function of the array."""
    dense = nd.ones((3, 4))
    rsp_weight = nd.ones((3, 2))

    def save(a):
        nd.save(str(tmp_path / "a.params"), {"a": a})

    def copyto_dense(a):
        a.copyto(nd.zeros(a.shape))

    def assign_into_sparse(a):
        target = nd.sparse.zeros(a.stype, a.shape)
        target[:] = a

    def kv_push(a):
        kv = mx.kv.create("local")
        kv.init("k", nd.zeros(a.shape))
        kv.push("k", a)

    def executor(a):
        x = mx.sym.Variable("x", stype=a.stype)
        ex = (x * 2).bind(mx.cpu(), {"x": a})
        ex.forward()

    return {
        "asnumpy": lambda a: a.asnumpy(),
        "tostype default": lambda a: a.tostype("default"),
        "tostype other": lambda a: a.tostype("row_sparse" if a.stype == "csr" else "csr"),
        "copy": lambda a: a.copy(),
        "copyto ctx": lambda a: a.copyto(mx.cpu()),
        "copyto dense": copyto_dense,
        "assign into sparse": assign_into_sparse,
        "astype": lambda a: a.astype("float64"),
        "save": save,
        "sparse kernel (unary)": lambda a: nd.sparse.abs(a),
        "sparse kernel (scalar)": lambda a: a * 2,
        "sparse kernel (binary)": lambda a: nd.sparse.elemwise_add(a, a),
        "sparse kernel (sum)": lambda a: nd.sparse.sum(a, axis=0),
        "sparse kernel (dot)": lambda a: nd.sparse.dot(a, nd.ones((a.shape[1], 2))),
        "dense fallback": lambda a: nd.exp(a),
        "with dense operand": lambda a: nd.elemwise_add(a, dense if a.shape == (3, 4) else rsp_weight),
        "cast_storage": lambda a: nd.cast_storage(a, "default"),
        "retain or slice": lambda a: (nd.sparse.retain(a, nd.array([0], dtype="int64")) if a.stype == "row_sparse"
                                      else nd.sparse.slice(a, begin=(0, 0), end=(2, 4))),
        "kvstore push": kv_push,
        "executor": executor,
        "pickle": lambda a: pickle.dumps(a),
        "compare with a number": lambda a: a > 0,
        "scipy or dense copy": lambda a: a.asscipy() if a.stype == "csr" else nd.array(a),
    }


READER_NAMES = sorted(_readers(None))


@pytest.mark.parametrize("reader", READER_NAMES)
@pytest.mark.parametrize("stype,why,parts,shape,level,text", FAULTS, ids=IDS)
def test_reading_an_invalid_array_raises_the_fault(tmp_path, reader, stype, why, parts, shape, level, text):
    a = _make(stype, parts, shape)
    with pytest.raises(mx.base.MXNetError, match=r"array is not valid \(.*" + text):
        _readers(tmp_path)[reader](a)
        mx.nd.waitall()
    # Nothing half-done was left behind: a valid array still works afterwards.
    ok = nd.sparse.csr_matrix(([1.0], [1], [0, 1, 1]), shape=(2, 3))
    np.testing.assert_array_equal(ok.asnumpy(), [[0, 1, 0], [0, 0, 0]])


def test_valid_parts_pass_both_checks():
    rng = np.random.RandomState(0)
    dense = rng.uniform(size=(5, 6)).astype(np.float32)
    dense[dense < 0.6] = 0
    for stype in ("csr", "row_sparse"):
        a = nd.array(dense).tostype(stype)
        a.check_format()
        a.check_format(full_check=False)
        nd.sparse.zeros(stype, (5, 6)).check_format()
    c = nd.sparse.csr_matrix(([1.0, 2.0, 3.0], [0, 3, 1], [0, 2, 2, 3]), shape=(3, 4))
    c.check_format()
    np.testing.assert_array_equal(c.asnumpy(), [[1, 0, 0, 2], [0, 0, 0, 0], [0, 3, 0, 0]])
    r = nd.sparse.row_sparse_array(([[1.0, 2.0]], [2]), shape=(3, 2))
    r.check_format()
    np.testing.assert_array_equal(r.asnumpy(), [[0, 0], [0, 0], [1, 2]])


def test_malformed_parts_are_still_refused_when_made():
    # What MXNet's constructors refuse (ValueError) is refused at once here too.
    with pytest.raises(ValueError, match="expected 1-D data, indices and indptr"):
        nd.sparse.csr_matrix(([[1.0]], [0], [0, 1]), shape=(1, 2))
    with pytest.raises(ValueError, match="indptr not empty"):
        nd.sparse.csr_matrix(([], [], []), shape=(0, 2))
    with pytest.raises(ValueError, match="1-D indices"):
        nd.sparse.row_sparse_array(([[1.0, 2.0]], [[0]]), shape=(3, 2))
    with pytest.raises(ValueError, match="no empty dimension"):
        nd.sparse.row_sparse_array((np.ones((1, 0)), [0]), shape=(3, 0))


def test_invalid_parts_from_the_c_api_checked_constructor_are_refused():
    # weft_ndarray_create_sparse still refuses them (front ends that want checked arrays).
    api = mx.base._api
    vals = nd.array([1.0, 2.0])
    bad = [nd.array([0, 2, 5], dtype="int64"), nd.array([0, 1], dtype="int64")]
    with pytest.raises(mx.base.MXNetError, match="indptr must end at nnz = 2, got 5"):
        api.weft_ndarray_create_sparse(2, (2, 3), vals, 2, bad)
    made = api.weft_ndarray_create_sparse_unchecked(2, (2, 3), vals, 2, bad)
    with pytest.raises(mx.base.MXNetError, match="indptr must end at nnz = 2, got 5"):
        api.weft_ndarray_check_format(made, True)


def test_unchecked_part_getter_refuses_a_part_out_of_range():
    a = nd.sparse.csr_matrix(([7.0], [9], [0, 1, 1]), shape=(2, 3))
    api = mx.base._api
    np.testing.assert_array_equal(nd.NDArray(api.weft_ndarray_get_sparse_part_unchecked(a, 1)).asnumpy(), [9])
    for part in (-2, 2):
        with pytest.raises(mx.base.MXNetError, match="auxiliary array index %d is out of range" % part):
            api.weft_ndarray_get_sparse_part_unchecked(a, part)
    with pytest.raises(mx.base.MXNetError, match=r"array is not valid \(csr: column index 9"):
        api.weft_ndarray_get_aux(a, 1)
