"""Learning-rate schedules, as MXNet 1.x's ``mx.lr_scheduler``.

A scheduler is called with the number of updates done so far and returns the learning
rate to use. Every scheduler can start with a warm-up of ``warmup_steps`` updates during
which the rate rises linearly from ``warmup_begin_lr`` to ``base_lr`` (``warmup_mode=
'linear'``) or stays at ``warmup_begin_lr`` (``'constant'``)::

    sched = weft.lr_scheduler.FactorScheduler(step=100, factor=0.5, base_lr=0.1)
    opt = weft.optimizer.SGD(lr_scheduler=sched)

The optimizer overwrites ``base_lr`` with its own ``learning_rate`` when both are given.
"""
import logging
import math

__all__ = ["LRScheduler", "FactorScheduler", "MultiFactorScheduler", "PolyScheduler", "CosineScheduler"]


class LRScheduler(object):
    """Base class: holds ``base_lr`` and the warm-up; subclasses define ``__call__``.

    Parameters
    ----------
    base_lr : float
        The rate after warm-up (before any decay).
    warmup_steps : int
        Number of updates the warm-up lasts.
    warmup_begin_lr : float
        The rate at update 0 of the warm-up.
    warmup_mode : {'linear', 'constant'}
        How the rate moves during warm-up.
    """

    def __init__(self, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0, warmup_mode="linear"):
        if not isinstance(warmup_steps, int):
            raise TypeError("warmup_steps must be an int, got %r" % (warmup_steps,))
        if warmup_steps < 0:
            raise ValueError("warmup_steps must be 0 or positive, got %d" % warmup_steps)
        if warmup_begin_lr > base_lr:
            raise ValueError("warmup_begin_lr (%g) must not exceed base_lr (%g)" % (warmup_begin_lr, base_lr))
        if warmup_mode not in ("linear", "constant"):
            raise ValueError("warmup_mode must be 'linear' or 'constant', got %r" % (warmup_mode,))
        self.base_lr = base_lr
        self.warmup_steps = warmup_steps
        self.warmup_begin_lr = warmup_begin_lr
        self.warmup_final_lr = base_lr
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update):
        """The rate at update ``num_update`` (< warmup_steps) of the warm-up."""
        if num_update >= self.warmup_steps:
            raise ValueError("update %d is past the warm-up of %d steps" % (num_update, self.warmup_steps))
        if self.warmup_mode == "constant":
            return self.warmup_begin_lr
        span = self.warmup_final_lr - self.warmup_begin_lr
        return self.warmup_begin_lr + span * float(num_update) / float(self.warmup_steps)

    def __call__(self, num_update):
        raise NotImplementedError("%s must define __call__(num_update)" % type(self).__name__)


class FactorScheduler(LRScheduler):
    """Multiplies the rate by ``factor`` every ``step`` updates, never going below
    ``stop_factor_lr``: lr = base_lr * factor ** floor((num_update - 1) / step) for
    num_update >= 1.

    The state moves forward only, so calls must come with non-decreasing ``num_update``
    (as an optimizer makes them).
    """

    def __init__(self, step, factor=1, stop_factor_lr=1e-8, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode="linear"):
        super(FactorScheduler, self).__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise ValueError("step must be at least 1 update, got %r" % (step,))
        if factor > 1.0:
            raise ValueError("factor must be at most 1 for the rate to decrease, got %r" % (factor,))
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        # A loop, not a test: a run resumed at a later update catches up on every decay.
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr = max(self.base_lr * self.factor, self.stop_factor_lr)
            logging.info("Update[%d]: learning rate is now %0.5e", num_update, self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiplies the rate by ``factor`` once each update number in the increasing list
    ``step`` has been passed."""

    def __init__(self, step, factor=1, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0, warmup_mode="linear"):
        super(MultiFactorScheduler, self).__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, list) or not step:
            raise ValueError("step must be a non-empty list of update numbers, got %r" % (step,))
        for i, s in enumerate(step):
            if s < 1:
                raise ValueError("every step must be at least 1 update, got %r" % (s,))
            if i and s <= step[i - 1]:
                raise ValueError("step must be strictly increasing, got %r" % (step,))
        if factor > 1.0:
            raise ValueError("factor must be at most 1 for the rate to decrease, got %r" % (factor,))
        self.step = step
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind < len(self.step) and num_update > self.step[self.cur_step_ind]:
            self.count = self.step[self.cur_step_ind]
            self.cur_step_ind += 1
            self.base_lr *= self.factor
            logging.info("Update[%d]: learning rate is now %0.5e", num_update, self.base_lr)
        return self.base_lr


class PolyScheduler(LRScheduler):
    """Polynomial decay from base_lr to final_lr over max_update updates (counted after
    the warm-up): lr = final_lr + (base_lr - final_lr) * (1 - t / T) ** pwr, where
    t = num_update - warmup_steps and T = max_update - warmup_steps; final_lr afterwards."""

    def __init__(self, max_update, base_lr=0.01, pwr=2, final_lr=0, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode="linear"):
        super(PolyScheduler, self).__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(max_update, int) or max_update < 1:
            raise ValueError("max_update must be a positive int, got %r" % (max_update,))
        self.power = pwr
        self.base_lr_orig = self.base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            frac = float(num_update - self.warmup_steps) / float(self.max_steps)
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * pow(1.0 - frac, self.power)
        return self.base_lr


class CosineScheduler(LRScheduler):
    """Half-cosine decay from base_lr to final_lr over max_update updates (counted after
    the warm-up): lr = final_lr + (base_lr - final_lr) * (1 + cos(pi * t / T)) / 2;
    final_lr afterwards."""

    def __init__(self, max_update, base_lr=0.01, final_lr=0, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode="linear"):
        super(CosineScheduler, self).__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(max_update, int) or max_update < 1:
            raise ValueError("max_update must be a positive int, got %r" % (max_update,))
        self.base_lr_orig = base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            frac = float(num_update - self.warmup_steps) / float(self.max_steps)
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * (1.0 + math.cos(math.pi * frac)) / 2.0
        return self.base_lr
