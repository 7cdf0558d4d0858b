"""Progress of long-running work: Module.fit, the main job's example and im2rec draw a live
bar when standard output is a terminal (a pseudo-terminal here) and write MXNet-style
Speedometer lines otherwise."""
import os
import pty
import select
import subprocess
import sys
import textwrap

import pytest

import weft

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

FIT = textwrap.dedent("""
    import logging, sys
    import numpy as np
    import weft as mx
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")
    rng = np.random.RandomState(0)
    x = rng.randn(416, 6).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32)
    it = mx.io.NDArrayIter(x, y, batch_size=4)
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2), name="softmax")
    mod = mx.mod.Module(net)
    mod.fit(it, num_epoch=2, optimizer_params={"learning_rate": 0.1})
    print("fit done")
""")


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(weft.__file__))
    return env


def _run_on_terminal(args, timeout=300):
    """Runs args with a pseudo-terminal as stdout and returns everything written to it."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(args, stdout=slave, stderr=subprocess.PIPE, env=_env(), cwd=REPO)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], timeout)
        if not ready:
            proc.kill()
            pytest.fail("no output for %d s" % timeout)
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=timeout) == 0, proc.stderr.read().decode()
    return b"".join(chunks).decode(errors="replace")


def test_module_fit_draws_a_bar_on_a_terminal(tmp_path):
    script = tmp_path / "fit.py"
    script.write_text(FIT)
    out = _run_on_terminal([sys.executable, str(script)])
    assert "fit done" in out
    # One line per epoch redrawn in place, ended with the epoch's train metric.
    assert "\r" in out and "\x1b[K" in out
    # The first epoch learns how many batches there are; the second draws the bar against it.
    assert "Epoch 1/2  1 batches" in out and "Epoch 2/2  [===" in out
    assert "104/104" in out and "train-accuracy=" in out
    assert "Speed:" not in out


def test_module_fit_logs_speedometer_lines_elsewhere(tmp_path):
    script = tmp_path / "fit.py"
    script.write_text(FIT)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = [l for l in proc.stdout.splitlines() if "Speed:" in l]
    # 104 batches per epoch, a line every 50: batches 50 and 100 of each epoch.
    assert len(lines) == 4, proc.stdout
    assert lines[0].startswith("Epoch[0] Batch [0-50]") and "samples/sec" in lines[0] and "accuracy=" in lines[0]
    assert "\r" not in proc.stdout and "Epoch 1/2  " not in proc.stdout


def _image_folder(root, n):
    import numpy as np
    from weft.base import _api
    os.makedirs(os.path.join(root, "a"))
    for i in range(n):
        arr = (np.arange(8 * 8 * 3).reshape(8, 8, 3) * (i + 1) % 255).astype(np.uint8)
        handle = _api.weft_image_encode(weft.nd.array(arr, dtype="uint8"), ".png", 95, 0)
        try:
            with open(os.path.join(root, "a", "%02d.png" % i), "wb") as f:
                f.write(_api.weft_bytes_get(handle))
        finally:
            _api.weft_bytes_free(handle)


def test_im2rec_progress(tmp_path):
    root = str(tmp_path / "imgs")
    _image_folder(root, 20)
    prefix = str(tmp_path / "data")
    tool = os.path.join(REPO, "tools", "im2rec.py")
    subprocess.run([sys.executable, tool, "--list", "--recursive", prefix, root], check=True, env=_env(),
                   capture_output=True, timeout=300)
    log = subprocess.run([sys.executable, tool, prefix, root], capture_output=True, text=True, env=_env(), timeout=300)
    assert log.returncode == 0, log.stderr
    lines = [l for l in log.stdout.splitlines() if l.startswith("packed ")]
    assert [l.split()[1] for l in lines] == ["%d/20" % k for k in range(2, 21, 2)]
    term = _run_on_terminal([sys.executable, tool, prefix, root])
    assert "\r[" in term and "] 20/20 images" in term and "packed 2/20" not in term
