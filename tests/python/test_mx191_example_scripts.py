"""Behaviours that MXNet 1.9.1's example scripts (its example/ folder) rely on, found by
running those scripts under Weft; each test checks its behaviour against values computed
here."""
import ctypes
import json

import numpy as np
import pytest

import weft as mx
from weft import nd


def _ops(text):
    return [n["op"] for n in json.loads(text)["nodes"]]


def _half_precision_net():
    data, w = mx.sym.var("data"), mx.sym.var("w")
    fc = mx.sym.FullyConnected(mx.sym.amp_cast(data, dtype="float16", name="data_half"),
                               mx.sym.amp_cast(w, dtype="float16", name="w_half"),
                               num_hidden=3, no_bias=True, name="fc")
    return mx.sym.amp_cast(fc, dtype="float32", name="fc_single")


def test_symbol_save_and_tojson_leave_out_amp_casts_unless_asked(tmp_path):
    # MXNet's Symbol.save/tojson(remove_amp_cast=True): the mixed-precision casts are left
    # out by default; scripts pass remove_amp_cast=False to keep them.
    net = _half_precision_net()
    assert _ops(net.tojson()) == ["null", "null", "FullyConnected"]
    assert _ops(net.tojson(remove_amp_cast=False)) == ["null", "amp_cast", "null", "amp_cast", "FullyConnected",
                                                       "amp_cast"]
    net.save(str(tmp_path / "plain.json"))
    net.save(str(tmp_path / "cast.json"), remove_amp_cast=False)
    plain, cast = mx.sym.load(str(tmp_path / "plain.json")), mx.sym.load(str(tmp_path / "cast.json"))
    assert _ops(plain.tojson(remove_amp_cast=False)) == ["null", "null", "FullyConnected"]
    assert _ops(cast.tojson(remove_amp_cast=False)).count("amp_cast") == 3

    rng = np.random.RandomState(0)
    x, w = rng.rand(2, 5) + 1 / 3, rng.rand(3, 5) + 1 / 7
    single = plain.eval(data=nd.array(x), w=nd.array(w))[0]
    np.testing.assert_allclose(single.asnumpy(), x @ w.T, rtol=1e-6)
    half = cast.eval(data=nd.array(x), w=nd.array(w))[0]
    assert half.dtype == np.float32
    x16, w16 = x.astype(np.float16).astype(np.float64), w.astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(half.asnumpy(), x16 @ w16.T, rtol=2e-3)
    assert np.abs(half.asnumpy() - single.asnumpy()).max() > 1e-4


def test_checkpoints_and_exports_keep_amp_casts_only_when_asked(tmp_path):
    net = _half_precision_net()
    w = nd.array(np.ones((3, 5)))
    mx.model.save_checkpoint(str(tmp_path / "a"), 0, net, {"w": w}, {})
    mx.model.save_checkpoint(str(tmp_path / "b"), 0, net, {"w": w}, {}, remove_amp_cast=False)
    assert "amp_cast" not in _ops((tmp_path / "a-symbol.json").read_text())
    assert _ops((tmp_path / "b-symbol.json").read_text()).count("amp_cast") == 3


def test_symbol_without_casts_saves_the_same_either_way(tmp_path):
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    assert net.tojson() == net.tojson(remove_amp_cast=False)
    net.save(str(tmp_path / "a.json"))
    net.save(str(tmp_path / "b.json"), remove_amp_cast=False)
    assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()


def test_base_lib_imports_and_says_which_mxnet_functions_weft_lacks():
    # Scripts written for MXNet import _LIB beside check_call (example/quantization,
    # example/ssd), often without calling it.
    from weft.base import _LIB, check_call  # pylint: disable=unused-import
    major, minor, patch, abi = (ctypes.c_int() for _ in range(4))
    _LIB.weft_get_version(ctypes.byref(major), ctypes.byref(minor), ctypes.byref(patch), ctypes.byref(abi))
    assert "%d.%d.%d" % (major.value, minor.value, patch.value) == mx.base._library_version()
    assert not hasattr(_LIB, "MXSymbolSaveToFile")
    with pytest.raises(AttributeError, match=r"_LIB\.MXNDArrayCreate: .*MXNet's C API.*weft_\*"):
        _LIB.MXNDArrayCreate  # pylint: disable=pointless-statement
