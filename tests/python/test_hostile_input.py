"""Hostile input (issue 22's cases): every one is a clear error in a process whose address
space is capped at 4 GiB, never a crash, a hang or an attempt to allocate gigabytes; long
graphs are freed without recursion; files a user keeps are written atomically."""
import json
import os
import signal
import struct
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import weft as mx

HERE = os.path.dirname(os.path.abspath(__file__))

# Runs `body` in a fresh interpreter limited to 4 GiB of address space; returns (exit code,
# output). The body prints RESULT lines the tests read.
PRELUDE = textwrap.dedent("""
    import json, os, resource, struct, sys
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    import weft as mx
    def report(fn):
        try:
            fn()
            print("RESULT ok")
        except Exception as e:
            print("RESULT", type(e).__name__, str(e).replace(chr(10), " "))
""")


def run_capped(body, tmp_path, env=None, timeout=120):
    script = tmp_path / "case.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    full_env = dict(os.environ)
    full_env.update(env or {})
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=timeout,
                       env=full_env)
    return r.returncode, r.stdout + r.stderr


def result_line(out):
    lines = [line for line in out.splitlines() if line.startswith("RESULT")]
    assert lines, "no RESULT line; the process printed:\n" + out[-3000:]
    return lines[-1]


def test_a_shape_whose_size_overflows_is_an_error(tmp_path):
    rc, out = run_capped("""
        report(lambda: mx.nd.empty((1 << 62, 4))[1000].asnumpy())
        report(lambda: mx.nd.zeros((1 << 40, 1 << 30)))
        """, tmp_path)
    assert rc == 0, out
    lines = [line for line in out.splitlines() if line.startswith("RESULT")]
    assert len(lines) == 2
    for line in lines:
        assert "WeftValueError" in line and "more elements than a 64-bit size can count" in line, line


def test_reshape_to_an_overflowing_shape_is_an_error():
    a = mx.nd.array(np.zeros((0,), np.float32))
    with pytest.raises(mx.base.WeftError, match="overflows a 64-bit size|more elements than a 64-bit size"):
        a.reshape((1 << 62, 8, -1))


def test_mnist_header_whose_dims_overflow_is_an_error(tmp_path):
    (tmp_path / "img").write_bytes(struct.pack(">IIII", 0x803, 16, 0xFFFFFFFF, 0xFFFFFFFF))
    (tmp_path / "lbl").write_bytes(struct.pack(">II", 0x801, 16) + bytes(16))
    rc, out = run_capped("""
        report(lambda: mx.io.MNISTIter(image="img", label="lbl", batch_size=1))
        """, tmp_path)
    assert rc == 0, out
    line = result_line(out)
    assert "WeftValueError" in line and "the header of image file 'img'" in line and "overflows" in line, line


def test_a_gzip_bomb_stops_at_the_decompressed_limit(tmp_path):
    import gzip
    # 64 MiB of zeros compress to about 64 KiB; with a 1 MiB limit the read stops early.
    with gzip.open(tmp_path / "img.gz", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, 1, 8192, 8192) + bytes(8192 * 8192))
    (tmp_path / "lbl").write_bytes(struct.pack(">II", 0x801, 1) + bytes(1))
    rc, out = run_capped("""
        report(lambda: mx.io.MNISTIter(image="img.gz", label="lbl", batch_size=1))
        """, tmp_path, env={"WEFT_LIMIT_DECOMPRESSED_BYTES": str(1 << 20)})
    assert rc == 0, out
    line = result_line(out)
    assert "decompressed bytes, over the limit of 1048576" in line, line
    assert "WEFT_LIMIT_DECOMPRESSED_BYTES" in line and "img.gz" in line, line


def test_symbol_json_nested_200000_deep_is_an_error(tmp_path):
    rc, out = run_capped("""
        depth = 200000
        text = ('{"nodes":[{"op":"null","name":"x","inputs":' + '[' * depth + ']' * depth +
                '}],"arg_nodes":[0],"heads":[[0,0,0]]}')
        report(lambda: mx.sym.load_json(text))
        """, tmp_path)
    assert rc == 0, out
    line = result_line(out)
    assert "WeftValueError" in line and "levels of JSON nesting, over the limit of 512" in line, line
    assert "WEFT_LIMIT_JSON_DEPTH" in line


def test_concat_claiming_two_billion_inputs_fails_before_allocating(tmp_path):
    text = json.dumps({"nodes": [{"op": "null", "name": "x", "inputs": []},
                                 {"op": "Concat", "name": "c", "attrs": {"num_args": str(2 ** 31 - 1)},
                                  "inputs": [[0, 0, 0]]}],
                       "arg_nodes": [0], "heads": [[1, 0, 0]], "attrs": {"mxnet_version": ["int", 10901]}})
    assert len(text) < 250
    rc, out = run_capped("report(lambda: mx.sym.load_json(%r))\n" % text, tmp_path)
    assert rc == 0, out
    line = result_line(out)
    assert "WeftValueError" in line and "node 1 ('c')" in line and "2147483647 operator inputs" in line, line
    assert "WEFT_LIMIT_VARIADIC_INPUTS" in line
    # Under the limit, the claim is checked against the inputs the file lists.
    small = text.replace(str(2 ** 31 - 1), "1000")
    with pytest.raises(mx.base.WeftError, match="takes 1000 inputs, got 1"):
        mx.sym.load_json(small)


def jpeg_header(width, height):
    """A JPEG whose header (tables, frame and scan) claims width x height, with no image data."""
    dqt = b"\xff\xdb" + struct.pack(">HB", 67, 0) + bytes([1] * 64)
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + b"\x01\x11\x00\x02\x11\x00\x03\x11\x00"
    dht = b"\xff\xc4" + struct.pack(">HB", 20, 0x00) + bytes([1] + [0] * 15) + bytes([0])
    dht += b"\xff\xc4" + struct.pack(">HB", 20, 0x10) + bytes([1] + [0] * 15) + bytes([0])
    sos = b"\xff\xda" + struct.pack(">HB", 12, 3) + b"\x01\x00\x02\x00\x03\x00" + b"\x00\x3f\x00"
    return b"\xff\xd8" + dqt + sof + dht + sos + bytes(16) + b"\xff\xd9"


def png_header(width, height, pixels=b""):
    """An RGB PNG of width x height whose image data is `pixels` (rows with their filter byte)."""
    import zlib

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(pixels)) + chunk(b"IEND", b"")


@pytest.mark.parametrize("kind", ["jpeg", "png"])
def test_an_image_header_claiming_65500_squared_pixels_fails_before_allocating(tmp_path, kind):
    data = jpeg_header(65500, 65500) if kind == "jpeg" else png_header(65500, 65500)
    assert len(data) < 200
    (tmp_path / "img").write_bytes(data)
    rc, out = run_capped("""
        data = open("img", "rb").read()
        report(lambda: mx.image.imdecode(data))
        """, tmp_path)
    assert rc == 0, out
    line = result_line(out)
    assert "WeftValueError" in line and "65500x65500" in line, line
    assert "4290250000 pixels, over the limit of 268435456" in line and "WEFT_LIMIT_IMAGE_PIXELS" in line, line


def test_image_limit_follows_its_variable(tmp_path):
    (tmp_path / "img").write_bytes(png_header(50, 40, (b"\x00" + bytes(50 * 3)) * 40))
    rc, out = run_capped("""
        data = open("img", "rb").read()
        report(lambda: print(mx.image.imdecode(data).shape))
        """, tmp_path, env={"WEFT_LIMIT_IMAGE_PIXELS": "1999"})
    assert "2000 pixels, over the limit of 1999" in result_line(out)
    rc, out = run_capped("""
        data = open("img", "rb").read()
        report(lambda: print(mx.image.imdecode(data).shape))
        """, tmp_path, env={"WEFT_LIMIT_IMAGE_PIXELS": "2000"})
    assert "(40, 50, 3)" in out and result_line(out) == "RESULT ok"


def test_a_malformed_limit_variable_is_named(tmp_path):
    rc, out = run_capped("""
        report(lambda: mx.sym.load_json('{"nodes":[],"arg_nodes":[],"heads":[]}'))
        """, tmp_path, env={"WEFT_LIMIT_JSON_DEPTH": "lots"})
    line = result_line(out)
    assert "WEFT_LIMIT_JSON_DEPTH: expected a positive integer, got 'lots'" in line, line


def test_a_million_node_symbol_and_autograd_chain_are_freed_without_recursion(tmp_path):
    rc, out = run_capped("""
        import weft as mx
        def symbol_chain():
            x = mx.sym.Variable("x")
            for _ in range(1000000):
                x = mx.sym.relu(x)
            del x
        def autograd_chain():
            x = mx.nd.ones((1,))
            x.attach_grad()
            with mx.autograd.record():
                y = x
                for _ in range(300000):
                    y = y * 1.0
            del y
        report(symbol_chain)
        report(autograd_chain)
        """, tmp_path, timeout=300)
    assert rc == 0, out
    assert [line for line in out.splitlines() if line.startswith("RESULT")] == ["RESULT ok", "RESULT ok"], out


SAVER = textwrap.dedent("""
    import sys
    import numpy as np
    import weft as mx
    path = sys.argv[1]
    # Alternate two values, each written whole; report each completed save.
    arrays = [mx.nd.full((8 << 20,), v) for v in (1.0, 2.0)]
    i = 0
    while True:
        mx.nd.save(path, {"w": arrays[i % 2]})
        print("saved", i % 2 + 1, flush=True)
        i += 1
""")


def test_a_save_killed_midway_leaves_the_previous_file_intact(tmp_path):
    path = tmp_path / "model.params"
    mx.nd.save(str(path), {"w": mx.nd.full((8 << 20,), 1.0)})
    saver = tmp_path / "saver.py"
    saver.write_text(SAVER)
    rng = np.random.RandomState(0)
    for _ in range(5):
        p = subprocess.Popen([sys.executable, str(saver), str(path)], stdout=subprocess.PIPE, text=True)
        p.stdout.readline()  # one complete save, so the kill lands in a later one
        time.sleep(rng.uniform(0.0, 0.2))
        p.send_signal(signal.SIGKILL)
        p.wait()
        loaded = mx.nd.load(str(path))["w"].asnumpy()
        assert loaded.shape == (8 << 20,)
        assert loaded[0] in (1.0, 2.0) and (loaded == loaded[0]).all()


def test_symbol_json_and_trainer_states_are_written_through_a_renamed_temporary(tmp_path, monkeypatch):
    net = mx.gluon.nn.Dense(3, in_units=2)
    net.initialize()
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    with mx.autograd.record():
        loss = net(mx.nd.ones((4, 2))).sum()
    loss.backward()
    trainer.step(4)
    renamed = []
    real_replace = os.replace

    def spy(src, dst):
        renamed.append((os.path.basename(src), os.path.basename(dst)))
        return real_replace(src, dst)
    monkeypatch.setattr(os, "replace", spy)
    trainer.save_states(str(tmp_path / "t.states"))
    assert renamed and renamed[0][1] == "t.states" and renamed[0][0].startswith("t.states.tmp.")
    mx.sym.Variable("x").save(str(tmp_path / "s.json"))
    assert sorted(os.listdir(tmp_path)) == ["s.json", "t.states"]


def test_states_through_a_link_or_into_a_pipe_keep_the_link_and_the_pipe(tmp_path):
    import threading
    net = mx.gluon.nn.Dense(3, in_units=2)
    net.initialize()
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    real, link = tmp_path / "real.states", tmp_path / "link.states"
    real.write_bytes(b"old")
    os.symlink(real, link)
    trainer.save_states(str(link))
    assert os.path.islink(link) and real.read_bytes() != b"old"
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    trainer.save_states(str(fifo))
    reader.join()
    assert got[0] == real.read_bytes() and __import__("stat").S_ISFIFO(os.stat(fifo).st_mode)
    # The C library's writer follows the same rules.
    fifo2 = tmp_path / "pipe2"
    os.mkfifo(fifo2)
    got2 = []
    reader = threading.Thread(target=lambda: got2.append(open(fifo2, "rb").read()))
    reader.start()
    mx.nd.save(str(fifo2), {"w": mx.nd.ones((2,))})
    reader.join()
    assert mx.nd.load_frombuffer(got2[0])["w"].asnumpy().tolist() == [1.0, 1.0]
    assert sorted(os.listdir(tmp_path)) == ["link.states", "pipe", "pipe2", "real.states"]


def test_a_save_into_a_missing_folder_names_the_file(tmp_path):
    target = str(tmp_path / "no" / "such" / "x.params")
    with pytest.raises(mx.base.WeftError, match="cannot write file '.*x.params'"):
        mx.nd.save(target, {"w": mx.nd.ones((2,))})


def train_steps(net, trainer, batches):
    losses = []
    for x, y in batches:
        with mx.autograd.record():
            loss = mx.gluon.loss.SoftmaxCrossEntropyLoss()(net(x), y).mean()
        loss.backward()
        trainer.step(1)
        losses.append(float(loss.asscalar()))
    return losses


@pytest.mark.parametrize("optimizer,params", [("sgd", {"learning_rate": 0.1, "momentum": 0.9}),
                                              ("adam", {"learning_rate": 0.01})])
def test_resuming_from_a_checkpoint_continues_exactly(tmp_path, optimizer, params):
    rng = np.random.RandomState(1)
    batches = [(mx.nd.array(rng.randn(16, 10), dtype="float32"), mx.nd.array(rng.randint(0, 4, 16), dtype="float32"))
               for _ in range(10)]

    def make():
        mx.random.seed(7)
        net = mx.gluon.nn.HybridSequential()
        net.add(mx.gluon.nn.Dense(12, activation="relu"), mx.gluon.nn.Dense(4))
        net.initialize(mx.init.Xavier())
        net(batches[0][0])
        return net, mx.gluon.Trainer(net.collect_params(), optimizer, dict(params))

    net, trainer = make()
    straight = train_steps(net, trainer, batches)

    net, trainer = make()
    first = train_steps(net, trainer, batches[:4])
    net.save_parameters(str(tmp_path / "p.params"))
    trainer.save_states(str(tmp_path / "t.states"))

    net2, trainer2 = make()
    net2.load_parameters(str(tmp_path / "p.params"))
    trainer2.load_states(str(tmp_path / "t.states"))
    resumed = first + train_steps(net2, trainer2, batches[4:])
    assert resumed == straight


def test_arange_of_an_infinite_range_is_an_error():
    import pytest
    import weft as mx
    with pytest.raises(mx.base.MXNetError, match="more than an array can hold"):
        mx.nd.arange(float("inf"))
    with pytest.raises(mx.base.MXNetError, match="more than an array can hold"):
        mx.nd.arange(0, 1e30, repeat=2)
    assert mx.nd.arange(0, 3).shape == (3,)


def test_float_results_saturate_in_integer_outputs():
    # A result computed in floating point and stored into an integer array saturates at the
    # type's ends (and NaN gives 0) instead of an undefined conversion (op_util.h's Store).
    img = mx.nd.array(np.full((2, 2, 3), 250), dtype="uint8")
    for alpha in ((10.0, 10.0, 10.0), (-100.0, -100.0, -100.0)):
        ref = mx.nd.image.adjust_lighting(img.astype("float32"), alpha=alpha).asnumpy()
        got = mx.nd.image.adjust_lighting(img, alpha=alpha).asnumpy()
        np.testing.assert_array_equal(got, np.clip(ref, 0, 255).astype(np.uint8))
    big = mx.nd.array([100, -100, 5], dtype="int32")
    np.testing.assert_array_equal(mx.nd.exp(big).asnumpy(), [2**31 - 1, 0, 148])


def test_fill_values_saturate_in_integer_outputs():
    # Parameters that give a value to write (full's value, Pad's constant_value,
    # SequenceMask's value, slice assignment's scalar) convert saturating too: full(-1) as
    # uint8 was an undefined conversion found by fuzz_c_api (regression_full_out_of_dtype_range).
    np.testing.assert_array_equal(mx.nd.full((3,), -1, dtype="uint8").asnumpy(), [0, 0, 0])
    np.testing.assert_array_equal(mx.nd.full((2,), 1e10, dtype="int32").asnumpy(), [2**31 - 1] * 2)
    np.testing.assert_array_equal(mx.nd.full((2,), float("nan"), dtype="int8").asnumpy(), [0, 0])
    x = mx.nd.ones((1, 1, 2, 2), dtype="int32")
    padded = mx.nd.Pad(x, mode="constant", pad_width=(0, 0, 0, 0, 1, 1, 1, 1), constant_value=-1e12).asnumpy()
    assert padded[0, 0, 0, 0] == -2**31 and padded[0, 0, 1, 1] == 1
    seq = mx.nd.ones((3, 2), dtype="int8")
    masked = mx.nd.SequenceMask(seq, mx.nd.array([1, 2]), use_sequence_length=True, value=-1000).asnumpy()
    np.testing.assert_array_equal(masked, [[1, 1], [-128, 1], [-128, -128]])
    a = mx.nd.zeros((2, 3), dtype="uint8")
    b = mx.nd._internal._slice_assign_scalar(a, scalar=300, begin=(0, 0), end=(1, 3))
    np.testing.assert_array_equal(b.asnumpy(), [[255, 255, 255], [0, 0, 0]])


def test_float_indices_past_int64_convert_saturating():
    # Index and label values read from float arrays convert saturating (NaN as 0): an
    # SVMOutput label of 5e201 was an undefined conversion found by fuzz_c_api
    # (regression_svm_label_out_of_range); one_hot, batch_take, ravel/unravel, index_copy and
    # topk's backward read their indices the same way.
    huge = mx.nd.array([1e30, -1e30, float("nan")])
    np.testing.assert_array_equal(mx.nd.one_hot(huge, depth=3).asnumpy(), [[0, 0, 0], [0, 0, 0], [1, 0, 0]])
    a = mx.nd.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    np.testing.assert_array_equal(mx.nd.batch_take(a, huge).asnumpy(), [3, 4, 7])
    x = mx.nd.array([[0.5, -0.5], [1.0, 2.0]])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.SVMOutput(x, mx.nd.array([5e201, 0]), margin=1.0, use_linear=True)
    y.backward()
    # The first row's label names no class, so every class counts as a wrong one.
    assert np.isfinite(x.grad.asnumpy()).all()
    assert (x.grad.asnumpy()[0] > 0).all()


def test_tile_with_reps_past_int64_is_an_error():
    with pytest.raises(mx.base.MXNetError, match="output axis 0.*overflows"):
        mx.nd.tile(mx.nd.ones((3,)), reps=(2**63 - 1,)).wait_to_read()
