"""weft.lr_scheduler against hand-computed learning rates (MXNet 1.x's schedules)."""
import pytest

import weft as mx
from weft import lr_scheduler as lrs


def rates(sched, updates):
    return [sched(n) for n in updates]


def test_factor_scheduler_steps_and_floor():
    s = lrs.FactorScheduler(step=2, factor=0.5, base_lr=1.0)
    # Decays once num_update passes 2, 4, 6, ...
    assert rates(s, [1, 2, 3, 4, 5, 6, 7]) == pytest.approx([1, 1, 0.5, 0.5, 0.25, 0.25, 0.125])
    floor = lrs.FactorScheduler(step=2, factor=0.5, base_lr=1.0, stop_factor_lr=0.3)
    assert rates(floor, [1, 3, 5, 9]) == pytest.approx([1, 0.5, 0.3, 0.3])


def test_factor_scheduler_catches_up_when_resumed():
    s = lrs.FactorScheduler(step=10, factor=0.1, base_lr=1.0)
    # Update 35 is past 10, 20 and 30: three decays at once.
    assert s(35) == pytest.approx(1e-3)


@pytest.mark.parametrize("mode,expected", [("linear", [0.2, 0.4, 0.6, 0.8]), ("constant", [0.2, 0.2, 0.2, 0.2])])
def test_warmup(mode, expected):
    s = lrs.FactorScheduler(step=10, factor=0.1, base_lr=1.0, warmup_steps=4, warmup_begin_lr=0.2, warmup_mode=mode)
    assert rates(s, [0, 1, 2, 3]) == pytest.approx(expected)
    assert rates(s, [4, 10, 11]) == pytest.approx([1.0, 1.0, 0.1])


def test_multifactor_scheduler():
    s = lrs.MultiFactorScheduler(step=[2, 5], factor=0.1, base_lr=1.0)
    assert rates(s, [1, 2, 3, 5, 6, 100]) == pytest.approx([1, 1, 0.1, 0.1, 0.01, 0.01])
    assert s.count == 5 and s.cur_step_ind == 2
    warm = lrs.MultiFactorScheduler(step=[4], factor=0.5, base_lr=0.8, warmup_steps=2, warmup_begin_lr=0.4)
    assert rates(warm, [0, 1, 2, 4, 5]) == pytest.approx([0.4, 0.6, 0.8, 0.8, 0.4])


def test_poly_scheduler():
    s = lrs.PolyScheduler(max_update=10, base_lr=1.0, pwr=2)
    assert rates(s, [0, 5, 8, 10, 12]) == pytest.approx([1.0, 0.25, 0.04, 0.0, 0.0])
    # With warm-up: t and T are counted after it (T = 8); final_lr is the floor.
    w = lrs.PolyScheduler(max_update=10, base_lr=1.0, pwr=2, final_lr=0.1, warmup_steps=2)
    assert rates(w, [1, 2, 6, 10, 11]) == pytest.approx([0.5, 1.0, 0.325, 0.1, 0.1])
    linear = lrs.PolyScheduler(max_update=4, base_lr=2.0, pwr=1)
    assert rates(linear, [1, 2, 3]) == pytest.approx([1.5, 1.0, 0.5])


def test_cosine_scheduler():
    s = lrs.CosineScheduler(max_update=10, base_lr=2.0)
    assert rates(s, [0, 5, 10, 20]) == pytest.approx([2.0, 1.0, 0.0, 0.0])
    w = lrs.CosineScheduler(max_update=10, base_lr=2.0, final_lr=0.0, warmup_steps=5, warmup_begin_lr=0.5)
    # Warm-up 0.5 -> 2 over 5 steps, then half a cosine over the remaining 5:
    # at 8, 1 + cos(0.6 pi) = 0.690983.
    assert rates(w, [0, 2, 5, 8, 10]) == pytest.approx([0.5, 1.1, 2.0, 0.6909830056, 0.0])


def test_scheduler_drives_optimizer():
    sched = lrs.MultiFactorScheduler(step=[1, 2], factor=0.5, base_lr=1.0)
    opt = mx.optimizer.SGD(lr_scheduler=sched)
    upd = mx.optimizer.get_updater(opt)
    w = mx.nd.zeros((1,))
    for _ in range(3):
        upd(0, mx.nd.ones((1,)), w)
    # Rates 1, 0.5, 0.25 at updates 1, 2, 3.
    assert w.asnumpy()[0] == pytest.approx(-1.75)
    assert opt.learning_rate == pytest.approx(0.25)


def test_optimizer_learning_rate_replaces_base_lr_everywhere():
    sched = lrs.CosineScheduler(max_update=4, base_lr=1.0, warmup_steps=2)
    with pytest.warns(UserWarning):
        mx.optimizer.SGD(learning_rate=0.5, lr_scheduler=sched)
    assert rates(sched, [1, 2, 4]) == pytest.approx([0.25, 0.5, 0.0])


def test_scheduler_errors():
    with pytest.raises(ValueError, match="warmup_begin_lr"):
        lrs.FactorScheduler(step=1, base_lr=0.1, warmup_begin_lr=0.5)
    with pytest.raises(ValueError, match="warmup_mode must be 'linear' or 'constant', got 'cubic'"):
        lrs.FactorScheduler(step=1, warmup_mode="cubic")
    with pytest.raises(ValueError, match="warmup_steps must be 0 or positive, got -1"):
        lrs.CosineScheduler(max_update=3, warmup_steps=-1)
    with pytest.raises(ValueError, match="step must be at least 1"):
        lrs.FactorScheduler(step=0)
    with pytest.raises(ValueError, match="factor must be at most 1"):
        lrs.FactorScheduler(step=2, factor=2.0)
    with pytest.raises(ValueError, match="strictly increasing"):
        lrs.MultiFactorScheduler(step=[3, 3])
    with pytest.raises(ValueError, match="non-empty list"):
        lrs.MultiFactorScheduler(step=5)
    with pytest.raises(ValueError, match="max_update must be a positive int"):
        lrs.PolyScheduler(max_update=0)
    with pytest.raises(NotImplementedError):
        lrs.LRScheduler()(1)
