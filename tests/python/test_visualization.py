"""mx.viz: print_summary's table and plot_network's picture of LeNet and ResNet-18, and
tools/plot_symbol.py rendering a saved symbol."""
import os
import re
import subprocess
import sys

import pytest

import weft as mx

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def lenet():
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(5, 5), num_filter=20, name="conv1")
    net = mx.sym.Activation(net, act_type="tanh", name="tanh1")
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool1")
    net = mx.sym.Convolution(net, kernel=(5, 5), num_filter=50, name="conv2")
    net = mx.sym.BatchNorm(net, name="bn2")
    net = mx.sym.Activation(net, act_type="relu", name="relu2")
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="avg", name="pool2")
    net = mx.sym.FullyConnected(mx.sym.Flatten(net, name="flat"), num_hidden=500, name="fc1")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def resnet18():
    net = mx.gluon.model_zoo.vision.get_model("resnet18_v1")
    net.initialize()
    net(mx.nd.zeros((1, 3, 224, 224)))  # the first forward fixes the deferred shapes
    return net, net(mx.sym.Variable("data"))


def summary_of(sym, shape, capsys):
    mx.viz.print_summary(sym, shape=shape)
    return capsys.readouterr().out


def table_rows(text):
    """{layer name: (type, output shape, params)} of print_summary's rows."""
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^(\S+)\((\w+)\)\s+(\S*)\s+(\d+)\s", line)
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3), int(m.group(4)))
    return rows


def test_lenet_summary_counts_each_layer_and_the_total(capsys):
    out = summary_of(lenet(), {"data": (64, 1, 28, 28)}, capsys)
    rows = table_rows(out)
    assert rows["data"] == ("null", "1x28x28", 0)
    assert rows["conv1"] == ("Convolution", "20x24x24", 20 * 1 * 5 * 5 + 20)
    assert rows["pool1"] == ("Pooling", "20x12x12", 0)
    assert rows["conv2"] == ("Convolution", "50x8x8", 50 * 20 * 25 + 50)
    assert rows["bn2"] == ("BatchNorm", "50x8x8", 2 * 50)  # gamma and beta; the running statistics are state
    assert rows["fc1"] == ("FullyConnected", "500", 800 * 500 + 500)
    assert rows["fc2"] == ("FullyConnected", "10", 500 * 10 + 10)
    assert "conv1_weight" not in rows and "bn2_moving_mean" not in rows
    total = 520 + 25050 + 100 + 400500 + 5010
    assert "Total params: %d" % total in out
    # The column headers and MXNet's rules between rows.
    assert out.splitlines()[1].startswith("Layer (type)") and "Output Shape" in out and "Previous Layer" in out
    fc1_line = next(line for line in out.splitlines() if line.startswith("fc1(FullyConnected)"))
    assert fc1_line.rstrip().endswith("flat")


def test_summary_without_shapes_lists_the_layers(capsys):
    out = summary_of(lenet(), None, capsys)
    assert "conv1(Convolution)" in out and "Total params: 0" in out


def test_resnet18_summary_total_is_its_trainable_parameters(capsys):
    net, sym = resnet18()
    out = summary_of(sym, {"data": (1, 3, 224, 224)}, capsys)
    trainable = sum(p.data().size for p in net.collect_params().values() if p.grad_req != "null")
    assert trainable == 11689512
    assert "Total params: %d" % trainable in out
    rows = table_rows(out)
    dense = [v for v in rows.values() if v[0] == "FullyConnected"]
    assert dense == [("FullyConnected", "1000", 512 * 1000 + 1000)]


def node_names(dot):
    return set(re.findall(r'^\s*"?([\w.]+)"? \[', dot.source, re.M))


def test_lenet_picture_has_one_box_per_layer_and_labelled_edges():
    dot = mx.viz.plot_network(lenet(), shape={"data": (64, 1, 28, 28)})
    assert node_names(dot) == {"data", "conv1", "tanh1", "pool1", "conv2", "bn2", "relu2", "pool2", "flat", "fc1",
                               "fc2", "softmax_label", "softmax"}
    src = dot.source
    assert re.search(r'conv1 \[label="Convolution\\n5x5/1, 20".*fillcolor="#fb8072"', src)
    assert re.search(r'pool2 \[label="Pooling\\navg, 2x2/2x2".*fillcolor="#80b1d3"', src)
    assert re.search(r'data \[label=data .*shape=oval', src)
    # Edges run from each reader to what it reads, labelled with the value's shape.
    assert re.search(r'conv2 -> pool1 \[label="20x12x12" arrowtail=open dir=back\]', src)
    assert re.search(r'fc1 -> flat \[label=800', src)


def test_weights_are_drawn_on_request():
    shown = node_names(mx.viz.plot_network(lenet(), hide_weights=False))
    assert {"conv1_weight", "conv1_bias", "bn2_gamma", "bn2_moving_var"} <= shown


def test_resnet18_picture_renders_every_layer(tmp_path):
    net, sym = resnet18()
    dot = mx.viz.plot_network(sym, shape={"data": (1, 3, 224, 224)}, save_format="svg")
    names = node_names(dot)
    convs = [n for n in names if "conv" in n]
    assert len(convs) == 20  # 17 of the residual path, 3 downsampling shortcuts
    assert not any(n.endswith(("_weight", "_gamma", "_running_mean")) for n in names)
    path = dot.render(filename=str(tmp_path / "resnet18"), cleanup=True)
    svg = open(path).read()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    for conv in convs:
        assert ">%s<" % conv in svg or conv in svg


def test_plot_symbol_tool_renders_a_saved_symbol(tmp_path):
    sym_file = tmp_path / "lenet-symbol.json"
    lenet().save(str(sym_file))
    out = tmp_path / "lenet.svg"
    r = subprocess.run([sys.executable, os.path.join(REPO, "tools", "plot_symbol.py"), str(sym_file), "-o", str(out),
                        "--shape", "data=1,1,28,28", "--summary"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "Total params: 431180" in r.stdout
    assert "<svg" in out.read_text() and "Convolution" in out.read_text()
    assert sorted(os.listdir(tmp_path)) == ["lenet-symbol.json", "lenet.svg"]


def test_bad_arguments_are_clear():
    with pytest.raises(TypeError, match="expected a Symbol"):
        mx.viz.plot_network("not a symbol")
    with pytest.raises(mx.base.WeftError):
        mx.viz.print_summary(lenet(), shape={"data": (64, 3, 2, 2)})


def test_repeated_names_warn_and_unique_names_do_not():
    import warnings
    net = mx.sym.FullyConnected(mx.sym.var("data"), name="fc", num_hidden=4)
    net = mx.sym.FullyConnected(mx.sym.Activation(net, act_type="relu", name="r"), name="fc", num_hidden=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mx.viz.plot_network(net, shape={"data": (3, 5)})
    msgs = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(msgs) == 1
    assert msgs[0].endswith("Repeated names: fc,fc_bias,fc_weight")
    ok = mx.sym.FullyConnected(mx.sym.var("data"), name="fc1", num_hidden=4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mx.viz.plot_network(ok, shape={"data": (3, 5)})
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]
