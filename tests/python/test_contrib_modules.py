"""mx.contrib's smaller modules: the old operator namespaces (contrib.nd, contrib.sym), the
first autograd interface (contrib.autograd), DataLoaderIter (contrib.io) and the TensorBoard
callback (contrib.tensorboard)."""
import glob
import os
import struct

import numpy as np
import pytest

import weft as mx
from weft.contrib import tensorboard as tb


def _contrib_op_names():
    from weft.ndarray import _ops
    return {f[len("_contrib_"):] for f in _ops._functions if f.startswith("_contrib_")}


def test_old_namespaces_hold_every_contributed_operator():
    names = _contrib_op_names()
    assert {"box_nms", "ROIAlign", "Proposal", "quantize_v2"} <= names
    for n in names:
        assert getattr(mx.contrib.nd, n) is getattr(mx.nd.contrib, n)
        assert getattr(mx.contrib.sym, n) is getattr(mx.sym.contrib, n)
    assert mx.contrib.ndarray is mx.contrib.nd and mx.contrib.symbol is mx.contrib.sym


def test_old_namespace_operators_compute():
    boxes = mx.nd.array([[0, 0, 2, 2], [1, 1, 3, 3]])
    np.testing.assert_allclose(mx.contrib.nd.box_iou(boxes, boxes).asnumpy(),
                               [[1, 1 / 7], [1 / 7, 1]], rtol=1e-6)
    s = mx.contrib.sym.box_iou(mx.sym.var("a"), mx.sym.var("b"))
    out = s.eval(a=boxes, b=boxes)[0]
    np.testing.assert_allclose(out.asnumpy(), [[1, 1 / 7], [1 / 7, 1]], rtol=1e-6)


def test_set_is_training_switches_training_and_recording():
    assert not mx.autograd.is_training() and not mx.autograd.is_recording()
    assert mx.contrib.autograd.set_is_training(True) is False
    try:
        assert mx.autograd.is_training() and mx.autograd.is_recording()
    finally:
        assert mx.contrib.autograd.set_is_training(False) is True
    assert not mx.autograd.is_training() and not mx.autograd.is_recording()


def test_sections_nest_and_restore():
    with mx.contrib.autograd.train_section():
        assert mx.autograd.is_recording() and mx.autograd.is_training()
        with mx.contrib.autograd.test_section():
            assert not mx.autograd.is_recording() and not mx.autograd.is_training()
            # Dropout passes its input through outside training mode.
            x = mx.nd.ones((50,))
            np.testing.assert_array_equal(mx.nd.Dropout(x, p=0.5).asnumpy(), np.ones(50))
        assert mx.autograd.is_recording() and mx.autograd.is_training()
    assert not mx.autograd.is_recording() and not mx.autograd.is_training()


def test_grad_and_loss_and_grad():
    x = mx.nd.array([[1.0, -2.0], [3.0, 0.5]])
    y = mx.nd.array([[2.0, 1.0], [-1.0, 4.0]])

    def f(a, b):
        return (a * a * b).sum()

    grads, loss = mx.contrib.autograd.grad_and_loss(f)(x, y)
    xn, yn = x.asnumpy(), y.asnumpy()
    np.testing.assert_allclose(loss.asnumpy(), [(xn * xn * yn).sum()], rtol=1e-6)
    np.testing.assert_allclose(grads[0].asnumpy(), 2 * xn * yn, rtol=1e-6)
    np.testing.assert_allclose(grads[1].asnumpy(), xn * xn, rtol=1e-6)
    only_b = mx.contrib.autograd.grad(f, argnum=1)(x, y)
    assert len(only_b) == 1
    np.testing.assert_allclose(only_b[0].asnumpy(), xn * xn, rtol=1e-6)
    both = mx.contrib.autograd.grad(f, argnum=[1, 0])(x, y)
    np.testing.assert_allclose(both[1].asnumpy(), 2 * xn * yn, rtol=1e-6)
    with pytest.raises(TypeError, match="must be NDArrays"):
        mx.contrib.autograd.grad(f)(x, 3.0)


def test_backward_with_out_grads_and_mark_variables():
    x = mx.nd.array([1.0, 2.0, 3.0])
    gx = mx.nd.zeros((3,))
    mx.contrib.autograd.mark_variables([x], [gx])
    with mx.contrib.autograd.train_section():
        y = x * x
    mx.contrib.autograd.backward([y], [mx.nd.array([1.0, 0.5, -1.0])])
    np.testing.assert_allclose(gx.asnumpy(), [2.0, 2.0, -6.0])
    with pytest.raises(TypeError, match="list or tuple"):
        mx.contrib.autograd.backward(y)
    with pytest.raises(ValueError, match="same length"):
        mx.contrib.autograd.backward([y], [])


def _loader(n, batch):
    data = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    label = np.arange(n, dtype=np.float32)
    ds = mx.gluon.data.ArrayDataset(mx.nd.array(data), mx.nd.array(label))
    return mx.gluon.data.DataLoader(ds, batch_size=batch), data, label


def test_dataloader_iter_batches_and_padding():
    loader, data, label = _loader(10, 4)
    it = mx.contrib.io.DataLoaderIter(loader, dtype="float16")
    assert it.provide_data[0].name == "data" and it.provide_data[0].shape == (4, 3)
    assert it.provide_label[0].name == "softmax_label" and it.provide_label[0].shape == (4,)
    for epoch in range(2):
        batches = list(it)
        assert [b.pad for b in batches] == [0, 0, 2]
        for i, b in enumerate(batches):
            assert b.data[0].dtype == np.float16 and b.data[0].shape == (4, 3)
            n = 4 - b.pad
            np.testing.assert_array_equal(b.data[0].asnumpy()[:n], data[4 * i:4 * i + n])
            np.testing.assert_array_equal(b.label[0].asnumpy()[:n], label[4 * i:4 * i + n])
            np.testing.assert_array_equal(b.data[0].asnumpy()[n:], 0)
        it.reset()


def test_dataloader_iter_trains_a_module():
    rng = np.random.RandomState(0)
    x = rng.randn(64, 5).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.float32)
    loader = mx.gluon.data.DataLoader(mx.gluon.data.ArrayDataset(mx.nd.array(x), mx.nd.array(y)), batch_size=16)
    it = mx.contrib.io.DataLoaderIter(loader)
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2), name="softmax")
    mod = mx.mod.Module(net, context=mx.cpu())
    mod.fit(it, num_epoch=30, optimizer="sgd", optimizer_params={"learning_rate": 0.5},
            initializer=mx.init.Xavier())
    assert mod.score(it, "acc")[0][1] > 0.9


def test_dataloader_iter_refuses_what_is_not_pairs():
    with pytest.raises(ValueError, match="no batch"):
        mx.contrib.io.DataLoaderIter([])
    with pytest.raises(ValueError, match=r"\(data, label\) pairs"):
        mx.contrib.io.DataLoaderIter([mx.nd.ones((2, 2))])


def test_crc32c_matches_the_standard_check_value():
    assert tb.crc32c(b"123456789") == 0xE3069283
    assert tb.crc32c(b"") == 0


def _event_classes():
    # Event and Summary declared here from TensorFlow's event.proto field numbers, so the
    # file is decoded by the protobuf library, not by the writer's own code.
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="weft_test_event.proto", package="weft_test")
    value = fdp.message_type.add(name="Value")
    value.field.add(name="tag", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    value.field.add(name="simple_value", number=2, type=F.TYPE_FLOAT, label=F.LABEL_OPTIONAL)
    summary = fdp.message_type.add(name="Summary")
    summary.field.add(name="value", number=1, type=F.TYPE_MESSAGE, type_name=".weft_test.Value",
                      label=F.LABEL_REPEATED)
    event = fdp.message_type.add(name="Event")
    event.field.add(name="wall_time", number=1, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    event.field.add(name="step", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    event.field.add(name="file_version", number=3, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    event.field.add(name="summary", number=5, type=F.TYPE_MESSAGE, type_name=".weft_test.Summary",
                    label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    desc = pool.FindMessageTypeByName("weft_test.Event")
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(desc)
    return message_factory.MessageFactory(pool).GetPrototype(desc)


def _read_records(path):
    raw = open(path, "rb").read()
    out, pos = [], 0

    def masked(b):
        c = tb.crc32c(b)
        return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF

    while pos < len(raw):
        header = raw[pos:pos + 8]
        (n,) = struct.unpack("<Q", header)
        assert struct.unpack("<I", raw[pos + 8:pos + 12])[0] == masked(header)
        body = raw[pos + 12:pos + 12 + n]
        assert struct.unpack("<I", raw[pos + 12 + n:pos + 16 + n])[0] == masked(body)
        out.append(body)
        pos += 16 + n
    return out


def test_log_metrics_callback_writes_tensorboard_scalars(tmp_path):
    pytest.importorskip("google.protobuf")
    Event = _event_classes()
    cb = mx.contrib.tensorboard.LogMetricsCallback(str(tmp_path / "train"), prefix="train")
    metric = mx.metric.Accuracy()
    metric.update([mx.nd.array([0, 1, 1, 0])], [mx.nd.array([[1, 0], [0, 1], [1, 0], [1, 0]])])
    for epoch in range(3):
        cb(mx.model.BatchEndParam(epoch=epoch, nbatch=1, eval_metric=metric, locals=None))
    cb(mx.model.BatchEndParam(epoch=3, nbatch=1, eval_metric=None, locals=None))
    files = glob.glob(os.path.join(str(tmp_path / "train"), "events.out.tfevents.*"))
    assert len(files) == 1
    events = [Event.FromString(r) for r in _read_records(files[0])]
    assert events[0].file_version == "brain.Event:2"
    scalars = [(e.step, v.tag, v.simple_value) for e in events[1:] for v in e.summary.value]
    assert scalars == [(0, "train-accuracy", 0.75), (1, "train-accuracy", 0.75), (2, "train-accuracy", 0.75)]
    assert all(e.wall_time > 1.6e9 for e in events)


def test_summary_writer_negative_steps_and_close(tmp_path):
    Event = _event_classes()
    with tb.SummaryWriter(str(tmp_path)) as w:
        w.add_scalar("loss", -1.5, global_step=-3)
        w.add_scalar("loss", 2.25, global_step=1 << 40)
    events = [Event.FromString(r) for r in _read_records(w.path)]
    assert [(e.step, e.summary.value[0].simple_value) for e in events[1:]] == [(-3, -1.5), (1 << 40, 2.25)]
    with pytest.raises(ValueError, match="after close"):
        w.add_scalar("loss", 1.0)
