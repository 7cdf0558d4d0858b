"""The profiler's "Custom Operator" category (a custom operator's own time and the
operators it calls, as MXNet names them), counters in the aggregate statistics, and the
regression metrics on labels that broadcast against the predictions."""
import json

import numpy as np
import pytest

import weft as mx
from weft import profiler


class _Square(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        # An operator called inside the custom operator: profiled as "<op_type>::_zeros".
        mx.nd.zeros((4, 4)).wait_to_read()
        self.assign(out_data[0], req[0], in_data[0] * in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], 2 * in_data[0] * out_grad[0])


@mx.operator.register("ProfiledSquare")
class _SquareProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def list_arguments(self):
        return ["data"]

    def list_outputs(self):
        return ["output"]

    def infer_shape(self, in_shape):
        return [in_shape[0]], [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _Square()


@pytest.fixture
def aggregate(tmp_path):
    profiler.set_config(profile_all=True, filename=str(tmp_path / "trace.json"), aggregate_stats=True,
                        continuous_dump=False)
    profiler.dumps(reset=True)
    profiler.set_state("run")
    yield tmp_path / "trace.json"
    profiler.set_state("stop")
    profiler.dump(finished=True)
    profiler.set_config(aggregate_stats=False, continuous_dump=False)


def test_custom_operator_time_and_calls_have_their_category(aggregate):
    x = mx.nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type="ProfiledSquare")
    y.backward()
    mx.nd.waitall()
    np.testing.assert_allclose(x.grad.asnumpy(), [2.0, 4.0, 6.0])
    stats = json.loads(profiler.dumps(format="json"))["Time"]
    custom = stats["Custom Operator"]
    for name in ("ProfiledSquare::pure_python", "_backward_ProfiledSquare::pure_python", "ProfiledSquare::_zeros",
                 "ProfiledSquare::elemwise_mul", "ProfiledSquare::_mul_scalar"):
        assert name in custom, sorted(custom)
        assert custom[name]["Count"] >= 1 and custom[name]["Total"] >= 0
    # The Custom node itself stays an operator; what runs outside it is not renamed.
    assert "Custom" in stats["operator"]
    assert not any(k.startswith("ProfiledSquare") for k in stats["operator"])
    mx.nd.zeros((2,)).wait_to_read()
    profiler.set_state("stop")
    profiler.dump()
    trace = json.load(open(aggregate))
    cats = {e["name"]: e.get("cat") for e in trace["traceEvents"] if e.get("ph") == "X"}
    assert cats["ProfiledSquare::pure_python"] == "Custom Operator"
    assert cats["_zeros"] == "operator"


def test_custom_operator_in_an_executor_is_profiled_too(aggregate):
    a = mx.sym.var("a")
    exe = mx.sym.Custom(data=a, op_type="ProfiledSquare").bind(mx.cpu(), {"a": mx.nd.array([3.0])})
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), [9.0])
    mx.nd.waitall()
    custom = json.loads(profiler.dumps(format="json"))["Time"]["Custom Operator"]
    assert "ProfiledSquare::pure_python" in custom and "ProfiledSquare::_zeros" in custom


def test_counters_have_a_total_and_every_time_row_sorts(aggregate):
    domain = profiler.Domain("CounterDomain")
    counter = domain.new_counter("hits", value=3)
    counter.set_value(10)
    counter.increment(5)
    mx.nd.ones((3,)).wait_to_read()
    for by in ("total", "avg", "min", "max", "count"):
        for ascending in (False, True):
            stats = json.loads(profiler.dumps(format="json", sort_by=by, ascending=ascending))
            row = stats["Time"]["CounterDomain"]["hits"]
            assert row["Total"] == 3 + 10 + 15 and row["Min"] == 3 and row["Max"] == 15
            key = {"total": "Total", "avg": "Avg", "min": "Min", "max": "Max", "count": "Count"}[by]
            for rows in stats["Time"].values():
                values = [r[key] for r in rows.values()]
                assert values == sorted(values, reverse=not ascending)


def test_regression_metrics_broadcast_labels_against_predictions():
    labels = mx.nd.array([1.0, 0.0])
    preds = mx.nd.array([[1.0, 3.0, 0.0], [2.0, 0.0, -1.0]])
    diff = np.array([[0.0, 2.0, -1.0], [2.0, 0.0, -1.0]])
    for name, expect in (("mae", np.abs(diff).mean()), ("mse", (diff ** 2).mean()),
                         ("rmse", np.sqrt((diff ** 2).mean()))):
        metric = mx.metric.create(name)
        metric.update([labels], [preds])
        assert metric.get()[1] == pytest.approx(expect)
    with pytest.raises(ValueError, match="does not match"):
        mx.metric.MAE().update([mx.nd.array([1.0, 2.0])], [mx.nd.array([1.0, 2.0, 3.0])])
