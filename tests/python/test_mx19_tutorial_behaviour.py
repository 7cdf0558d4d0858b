"""Behaviour MXNet 1.9.1's Python tutorials show and rely on, checked against MXNet's sources
(what a script run with `import weft as mx` prints or gets back)."""
import numpy as np
import pytest

from weft import nd
from weft.gluon import nn


def test_block_repr_lists_block_attributes_as_mxnet():
    class Leaf(nn.Block):
        def forward(self, x):
            return x

    class Outer(nn.Block):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.body = nn.Dense(3, in_units=2)
            self.scale = 2.0

        def forward(self, x):
            return self.body(x) * self.scale

    # A block without block attributes still shows the two lines around its (empty) body.
    assert repr(Leaf()) == "Leaf(\n\n)"
    assert repr(Outer()) == "Outer(\n  (body): Dense(2 -> 3, linear)\n)"
    seq = nn.Sequential()
    assert repr(seq) == "Sequential(\n\n)"
    seq.add(Leaf(), nn.Dense(4, activation="relu"))
    assert repr(seq).splitlines() == ["Sequential(", "  (0): Leaf(", "  ", "  )",
                                      "  (1): Dense(None -> 4, Activation(relu))", ")"]


def test_conv_and_pool_repr_as_mxnet():
    conv = nn.Conv2D(6, 5, activation="relu")
    assert repr(conv) == "Conv2D(None -> 6, kernel_size=(5, 5), stride=(1, 1), Activation(relu))"
    odd = nn.Conv2D(16, 3, strides=2, padding=1, dilation=2, groups=2, use_bias=False, in_channels=4)
    assert repr(odd) == ("Conv2D(2 -> 16, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), dilation=(2, 2), "
                         "groups=2, bias=False)")
    # The input channels show once the first call has inferred them.
    conv.initialize()
    conv(nd.ones((1, 3, 8, 8)))
    assert repr(conv).startswith("Conv2D(3 -> 6,")
    assert repr(nn.MaxPool2D(2, 2)) == ("MaxPool2D(size=(2, 2), stride=(2, 2), padding=(0, 0), ceil_mode=False, "
                                        "global_pool=False, pool_type=max, layout=NCHW)")
    assert repr(nn.GlobalAvgPool1D()) == ("GlobalAvgPool1D(size=(1,), stride=(1,), padding=(0,), ceil_mode=True, "
                                          "global_pool=True, pool_type=avg, layout=NCW)")


def test_basic_layer_reprs_as_mxnet():
    assert repr(nn.Dense(5, activation="tanh", in_units=3)) == "Dense(3 -> 5, Activation(tanh))"
    assert repr(nn.Dropout(0.5)) == "Dropout(p = 0.5, axes=())"
    assert repr(nn.BatchNorm()) == ("BatchNorm(axis=1, eps=1e-05, momentum=0.9, fix_gamma=False, "
                                    "use_global_stats=False, in_channels=None)")
    assert repr(nn.BatchNorm(in_channels=4, scale=False)).endswith("fix_gamma=True, use_global_stats=False, "
                                                                   "in_channels=4)")
    assert repr(nn.LayerNorm(in_channels=6)) == "LayerNorm(eps=1e-05, axis=-1, center=True, scale=True, in_channels=6)"
    assert repr(nn.InstanceNorm()) == "InstanceNorm(eps=1e-05, axis=1, center=True, scale=False, in_channels=0)"
    assert repr(nn.GroupNorm(2)) == "GroupNorm(eps=1e-05, num_groups=2, center=True, scale=True)"
    assert repr(nn.Embedding(10, 4)) == "Embedding(10 -> 4, float32)"
    assert repr(nn.Flatten()) == "Flatten"
    assert repr(nn.LeakyReLU(0.1)) == "LeakyReLU(0.1)"
    assert repr(nn.HybridLambda("tanh")) == "HybridLambda(tanh)"

    def double(x):
        return x * 2

    assert repr(nn.Lambda(double)) == "Lambda(double)"
    assert repr(nn.Lambda("relu")) == "Lambda(relu)"


def test_constant_repr_as_mxnet():
    class WithConstant(nn.Block):
        def __init__(self, **kwargs):
            super().__init__(prefix="wc_", **kwargs)
            self.table = self.params.get_constant("table", nd.ones((2, 3)))

    assert repr(WithConstant().table) == "Constant wc_table (shape=(2, 3), dtype=float32)"
    assert repr(WithConstant().params).splitlines() == ["wc_ (", "  Constant wc_table (shape=(2, 3), dtype=float32)",
                                                        ")"]


def test_loading_parameters_of_other_names_raises_what_mxnet_scripts_catch(tmp_path):
    src = nn.Dense(3, in_units=2, prefix="model0_")
    src.initialize()
    path = str(tmp_path / "model.params")
    src.collect_params().save(path)
    dst = nn.Dense(3, in_units=2, prefix="model1_")
    # MXNet asserts: scripts catch AssertionError (or any Exception) and print the message,
    # which names the missing parameter and what the file holds.
    with pytest.raises(AssertionError) as err:
        dst.collect_params().load(path)
    assert isinstance(err.value, ValueError)
    assert "Parameter 'model1_weight' is missing in file: %s" % path in str(err.value)
    assert "'model0_weight', 'model0_bias'" in str(err.value)
    assert "same prefix" in str(err.value)
    # A file holding more than the dict: refused, or skipped with ignore_extra.
    small = nn.Dense(3, in_units=2, use_bias=False, prefix="model0_")
    with pytest.raises(AssertionError, match="Parameter 'model0_bias' loaded from file: .* is not present"):
        small.collect_params().load(path)
    small.collect_params().load(path, ignore_extra=True)
    np.testing.assert_array_equal(small.weight.data().asnumpy(), src.weight.data().asnumpy())

    # Block.load_parameters (structural names): the missing name and the file's names.
    net = nn.HybridSequential(prefix="a_")
    with net.name_scope():
        net.add(nn.Dense(3, in_units=2), nn.Dense(1, in_units=3))
    net.initialize()
    saved = str(tmp_path / "net.params")
    net.save_parameters(saved)
    bigger = nn.HybridSequential(prefix="b_")
    with bigger.name_scope():
        bigger.add(nn.Dense(3, in_units=2), nn.Dense(1, in_units=3), nn.Dense(2, in_units=1))
    with pytest.raises(AssertionError, match=r"Parameter '2.weight' is missing in file '.*net.params', which "
                                             r"contains parameters: '0.weight', '0.bias', '1.weight', '1.bias'"):
        bigger.load_parameters(saved)
    one = nn.HybridSequential(prefix="c_")
    with one.name_scope():
        one.add(nn.Dense(3, in_units=2))
    # An extra parameter is a plain ValueError there, as in MXNet.
    with pytest.raises(ValueError, match="Parameter '1.weight' loaded from file .* is not present") as extra:
        one.load_parameters(saved)
    assert not isinstance(extra.value, AssertionError)


def test_ndarray_dtype_is_numpy_scalar_type_as_mxnet():
    a = nd.array([1, 2, 3])
    b = nd.array([1, 2, 3], dtype=np.int32)
    c = nd.array([1.2, 2.3], dtype=np.float16)
    # MXNet gives numpy's scalar types, which print as <class 'numpy.float32'>.
    assert (a.dtype, b.dtype, c.dtype) == (np.float32, np.int32, np.float16)
    assert a.dtype is np.float32 and b.dtype is np.int32 and c.dtype is np.float16
    assert "Data type: {}".format(nd.zeros((2,), dtype="uint8").dtype) == "Data type: <class 'numpy.uint8'>"
    assert nd.ones((1,), dtype="int64").dtype is np.int64
    assert nd.ones((1,), dtype="bool").dtype is np.bool_
    assert nd.sparse.zeros("csr", (2, 2)).dtype is np.float32
    # bfloat16 has no numpy scalar type: MXNet's structured dtype, as before.
    assert nd.ones((2,)).astype("bfloat16").dtype == nd.bfloat16
    # The types work wherever a dtype is taken.
    assert nd.zeros((2,), dtype=b.dtype).dtype is np.int32
    assert a.astype(c.dtype).dtype is np.float16
    assert np.zeros(2, dtype=c.dtype).dtype == np.float16
    with pytest.raises(TypeError, match="only integer NDArrays can be used as an index, got float32"):
        [0, 1][nd.array([1.0])]
    assert [0, 1][nd.array([1], dtype="int32")] == 1


def test_squeezenet_fire_module_repr_lists_its_branches():
    from weft.gluon.model_zoo import vision
    lines = repr(vision.squeezenet1_0()).splitlines()
    start = next(i for i, line in enumerate(lines) if "HybridConcurrent(" in line)
    # Both expand branches (1x1 and 3x3 convolutions) show inside it.
    assert lines[start + 1].strip() == "(0): HybridSequential("
    assert "kernel_size=(1, 1)" in lines[start + 2]
    branch = next(i for i in range(start + 2, len(lines)) if lines[i].strip() == "(1): HybridSequential(")
    assert "kernel_size=(3, 3)" in lines[branch + 1] and "padding=(1, 1)" in lines[branch + 1]
