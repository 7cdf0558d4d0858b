"""mx.profiler: the Chrome trace of dump(), the statistics of dumps(), pause/resume, the
user objects (Domain, Task, Frame, Event, Counter, Marker), scope and set_config's errors."""
import json
import warnings

import numpy as np
import pytest

import weft as mx
from weft import profiler


@pytest.fixture
def trace_file(tmp_path):
    """A fresh profiler writing to a file of its own; stopped and emptied afterwards."""
    path = tmp_path / "trace.json"
    profiler.set_config(profile_all=True, filename=str(path), aggregate_stats=True, continuous_dump=False)
    yield path
    profiler.set_state("stop")
    profiler.dump(finished=True)
    profiler.set_config(aggregate_stats=False, continuous_dump=False)


def _load(path):
    with open(path) as f:
        return json.load(f)


def _ops(trace, name=None):
    return [e for e in trace["traceEvents"]
            if e.get("ph") == "X" and e.get("cat") == "operator" and (name is None or e["name"] == name)]


def _thread_names(trace):
    return {e["tid"]: e["args"]["name"] for e in trace["traceEvents"]
            if e.get("ph") == "M" and e["name"] == "thread_name"}


def test_trace_has_the_operators_run_with_times_threads_and_memory(trace_file):
    a = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    profiler.set_state("run")
    b = mx.nd.relu(a - 2)
    c = mx.nd.dot(b, b.T)
    big = mx.nd.ones((512, 512)) * 3  # large enough to run on an engine worker
    c.wait_to_read()
    big.wait_to_read()
    profiler.set_state("stop")
    np.testing.assert_allclose(c.asnumpy(), np.maximum(np.arange(6).reshape(2, 3) - 2, 0) @
                               np.maximum(np.arange(6).reshape(2, 3) - 2, 0).T)
    profiler.dump()
    trace = _load(trace_file)
    assert trace["displayTimeUnit"] == "ms"
    names = {e["name"] for e in _ops(trace)}
    for op in ("_minus_scalar", "relu", "dot", "_mul_scalar", "_ones"):
        assert op in names, (op, sorted(names))
    for e in _ops(trace):
        assert e["dur"] >= 0 and e["ts"] >= 0
        assert e["args"]["device"] == "cpu(0)"
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
    # The 1 MB output of `ones` was allocated for that call, and the trace says so.
    ones = _ops(trace, "_ones")
    assert any(e["args"]["bytes_allocated"] >= 512 * 512 * 4 for e in ones), ones
    # relu reads what _minus_scalar wrote: it cannot start before that ended.
    minus, relu = _ops(trace, "_minus_scalar")[0], _ops(trace, "relu")[0]
    assert relu["ts"] >= minus["ts"] + minus["dur"] - 1e-3
    threads = _thread_names(trace)
    for e in _ops(trace):
        assert e["tid"] in threads
    assert any("cpu worker" in n for n in threads.values()), threads
    assert any(e["name"] == "process_name" for e in trace["traceEvents"] if e["ph"] == "M")
    mem = [e for e in trace["traceEvents"] if e["ph"] == "C" and e["name"] == "Memory: cpu(0)"]
    assert mem and all(e["args"]["bytes_in_use"] >= 0 for e in mem)
    assert max(e["args"]["bytes_in_use"] for e in mem) >= 512 * 512 * 4


def test_executor_steps_are_named_by_their_graph_nodes(trace_file):
    x = mx.sym.var("x")
    y = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=4, name="fc_one"), act_type="relu", name="act_two")
    exe = y.simple_bind(mx.cpu(), x=(2, 3), grad_req="null")
    exe.arg_dict["x"][:] = 1
    exe.arg_dict["fc_one_weight"][:] = 0.5
    exe.arg_dict["fc_one_bias"][:] = 0
    profiler.set_state("run")
    out = exe.forward(is_train=False)[0].asnumpy()
    profiler.set_state("stop")
    np.testing.assert_allclose(out, np.full((2, 4), 1.5, np.float32))
    profiler.dump()
    names = {e["name"] for e in _ops(_load(trace_file))}
    assert "fc_one" in names or "act_two" in names, sorted(names)
    assert "FullyConnected" not in names


def test_symbolic_only_leaves_eager_calls_out(tmp_path):
    path = tmp_path / "sym.json"
    profiler.set_config(profile_symbolic=True, profile_imperative=False, profile_memory=False, profile_api=False,
                        filename=str(path), continuous_dump=False)
    try:
        x = mx.sym.var("x")
        exe = mx.sym.relu(x, name="sym_relu").simple_bind(mx.cpu(), x=(2, 2), grad_req="null")
        profiler.set_state("run")
        mx.nd.sigmoid(mx.nd.ones((2, 2))).wait_to_read()
        exe.forward()[0].wait_to_read()
        profiler.set_state("stop")
        profiler.dump()
        names = {e["name"] for e in _ops(_load(path))}
        assert "sym_relu" in names and "sigmoid" not in names, names
    finally:
        profiler.set_config(continuous_dump=False)


def test_dumps_lists_operators_with_counts_and_sorts(trace_file):
    a = mx.nd.ones((4, 4))
    profiler.set_state("run")
    for _ in range(3):
        a = mx.nd.sigmoid(a)
    for _ in range(5):
        a = mx.nd.exp(a * 0)
    a.wait_to_read()
    profiler.set_state("stop")
    table = profiler.dumps()
    assert "Profile Statistics" in table and "operator" in table
    rows = {line.split()[0]: line.split() for line in table.splitlines() if line.split()}
    assert rows["sigmoid"][1] == "3" and rows["exp"][1] == "5" and rows["_mul_scalar"][1] == "5"
    stats = json.loads(profiler.dumps(format="json", sort_by="count", ascending=True))
    assert stats["Unit"] == {"Time": "ms", "Memory": "kB"}
    ops = stats["Time"]["operator"]
    assert ops["sigmoid"]["Count"] == 3 and ops["exp"]["Count"] == 5
    for row in ops.values():
        assert row["Min"] <= row["Avg"] <= row["Max"] and row["Total"] >= row["Max"]
    counts = [row["Count"] for row in ops.values()]
    assert counts == sorted(counts)
    desc = list(json.loads(profiler.dumps(format="json", sort_by="count"))["Time"]["operator"].values())
    assert [r["Count"] for r in desc] == sorted(counts, reverse=True)
    assert "Memory: cpu(0)" in stats["Memory"]["Device Storage"]
    profiler.dumps(reset=True)
    assert "sigmoid" not in profiler.dumps()


def test_dumps_checks_its_arguments_and_needs_aggregate_stats(tmp_path):
    with pytest.raises(ValueError, match="format"):
        profiler.dumps(format="xml")
    with pytest.raises(ValueError, match="sort_by"):
        profiler.dumps(sort_by="name")
    profiler.set_config(filename=str(tmp_path / "p.json"), aggregate_stats=False, continuous_dump=False)
    with pytest.raises(mx.base.MXNetError, match="aggregate_stats"):
        profiler.dumps()


def test_pause_and_resume_exclude_what_runs_in_between(trace_file):
    a = mx.nd.ones((3, 3))
    profiler.set_state("run")
    mx.nd.sin(a).wait_to_read()
    profiler.pause()
    assert profiler.state() == "run"
    mx.nd.cos(a).wait_to_read()
    profiler.resume()
    mx.nd.tan(a).wait_to_read()
    profiler.set_state("stop")
    mx.nd.arcsin(a * 0).wait_to_read()
    profiler.dump()
    names = {e["name"] for e in _ops(_load(trace_file))}
    assert "sin" in names and "tan" in names
    assert "cos" not in names and "arcsin" not in names


def test_user_objects_appear_in_the_trace(trace_file):
    domain = profiler.Domain("my_domain")
    task = domain.new_task("my_task")
    frame = profiler.Frame(domain, "my_frame")
    event = profiler.Event("my_event")
    counter = domain.new_counter("my_counter", value=10)
    marker = domain.new_marker("my_marker")
    profiler.set_state("run")
    counter.set_value(10)
    task.start()
    with frame:
        event.start()
        mx.nd.ones((64, 64)).wait_to_read()
        event.stop()
    counter += 5
    counter -= 2
    counter.increment(4)
    counter.decrement()
    marker.mark("global")
    task.stop()
    assert counter.value == 16
    profiler.set_state("stop")
    profiler.dump()
    events = _load(trace_file)["traceEvents"]

    def phases(name):
        return [e for e in events if e["name"] == name]

    for name, cat in (("my_task", "my_domain"), ("my_frame", "my_domain"), ("my_event", "event")):
        b = [e for e in phases(name) if e["ph"] == "B"]
        e_ = [e for e in phases(name) if e["ph"] == "E"]
        assert len(b) == 1 and len(e_) == 1 and b[0]["cat"] == cat and b[0]["tid"] == e_[0]["tid"]
        assert b[0]["ts"] <= e_[0]["ts"]
    span = lambda n: (phases(n)[0]["ts"], [e for e in phases(n) if e["ph"] == "E"][0]["ts"])  # noqa: E731
    task_b, task_e = span("my_task")
    frame_b, frame_e = span("my_frame")
    event_b, event_e = span("my_event")
    assert task_b <= frame_b <= event_b <= event_e <= frame_e <= task_e
    ones = _ops({"traceEvents": events}, "_ones")
    assert ones and all(event_b <= o["ts"] and o["ts"] + o["dur"] <= event_e + 1e-3 for o in ones)
    values = [e["args"]["value"] for e in phases("my_counter") if e["ph"] == "C"]
    assert values == [10, 15, 13, 17, 16]
    marks = [e for e in phases("my_marker") if e["ph"] == "i"]
    assert len(marks) == 1 and marks[0]["s"] == "g" and task_b <= marks[0]["ts"] <= task_e
    stats = json.loads(profiler.dumps(format="json"))
    assert stats["Time"]["my_domain"]["my_task"]["Count"] == 1


def test_durations_must_pair_and_markers_take_known_scopes(trace_file):
    task = profiler.Task(profiler.Domain("d"), "t")
    with pytest.raises(mx.base.MXNetError, match="without start"):
        task.stop()
    task.start()
    with pytest.raises(mx.base.MXNetError, match="twice"):
        task.start()
    task.stop()
    with pytest.raises(mx.base.MXNetError, match="scope"):
        profiler.Marker(profiler.Domain("d"), "m").mark("galaxy")


def test_scope_prefixes_operator_names(trace_file):
    a = mx.nd.ones((2, 2))
    profiler.set_state("run")
    with profiler.scope("outer"):
        mx.nd.sqrt(a).wait_to_read()
        with profiler.scope("inner") as name:
            assert name == "outer:inner:"
            mx.nd.square(a).wait_to_read()
    mx.nd.abs(a).wait_to_read()
    profiler.set_state("stop")
    profiler.dump()
    names = {e["name"] for e in _ops(_load(trace_file))}
    assert {"outer:sqrt", "outer:inner:square", "abs"} <= names, names


def test_set_config_refuses_bad_keys_and_values():
    with pytest.raises(mx.base.MXNetError, match="unknown key 'profile_everything'"):
        profiler.set_config(profile_everything=True)
    with pytest.raises(mx.base.MXNetError, match="profile_memory"):
        profiler.set_config(profile_memory="maybe")
    with pytest.raises(mx.base.MXNetError, match="dump_period"):
        profiler.set_config(dump_period=-1)
    with pytest.raises(NotImplementedError):
        profiler.set_state("run", profile_process="server")
    with pytest.raises(ValueError, match="state"):
        profiler.set_state("go")


def test_deprecated_aliases_still_work(tmp_path):
    path = tmp_path / "old.json"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        profiler.profiler_set_config(mode="all", filename=str(path))
        profiler.profiler_set_state("run")
        mx.nd.ones((2, 2)).wait_to_read()
        profiler.profiler_set_state("stop")
    assert len([w for w in caught if issubclass(w.category, DeprecationWarning)]) == 3
    profiler.dump()
    assert _ops(_load(path), "_ones")
    profiler.set_config(continuous_dump=False)


def test_continuous_dump_writes_while_running(tmp_path):
    import time
    path = tmp_path / "live.json"
    profiler.set_config(profile_all=True, filename=str(path), continuous_dump=True, dump_period=0.05)
    try:
        profiler.set_state("run")
        mx.nd.ones((2, 2)).wait_to_read()
        deadline = time.time() + 10
        while not path.exists() and time.time() < deadline:
            time.sleep(0.02)
        assert _ops(_load(path), "_ones")
    finally:
        profiler.set_state("stop")
        profiler.dump(finished=True)
        profiler.set_config(continuous_dump=False)


def test_autostart_profiles_a_whole_run(tmp_path):
    import os
    import subprocess
    import sys
    env = dict(os.environ, MXNET_PROFILER_AUTOSTART="1", MXNET_PROFILER_MODE="1")
    code = "import weft as mx; mx.nd.ones((3, 3)).exp().wait_to_read()"
    subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path), env=env, check=True, timeout=120)
    names = {e["name"] for e in _ops(_load(tmp_path / "profile.json"))}
    assert "exp" in names, names
