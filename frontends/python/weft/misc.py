"""weft.misc (MXNet's mxnet.misc): the first learning-rate schedulers, called with the
iteration count. weft.lr_scheduler holds the ones the optimizers use."""
import logging
import math


class LearningRateScheduler:
    """Base class: an instance called with an iteration count returns the learning rate;
    `base_lr` (0.01) is the rate it starts from."""

    def __init__(self):
        self.base_lr = 0.01

    def __call__(self, iteration):
        raise NotImplementedError("must override this")


class FactorScheduler(LearningRateScheduler):
    """base_lr * factor ** floor(iteration / step): the rate shrinks by `factor` every
    `step` iterations (logged when it changes)."""

    def __init__(self, step, factor=0.1):
        super().__init__()
        if step < 1:
            raise ValueError("Schedule step must be greater or equal than 1 round")
        if factor >= 1.0:
            raise ValueError("Factor must be less than 1 to make lr reduce")
        self.step = step
        self.factor = factor
        self.old_lr = self.base_lr
        self.init = False

    def __call__(self, iteration):
        if not self.init:
            # base_lr may have been set after construction: it is read at the first call.
            self.init = True
            self.old_lr = self.base_lr
        lr = self.base_lr * math.pow(self.factor, int(iteration / self.step))
        if lr != self.old_lr:
            self.old_lr = lr
            logging.info("At Iteration [%d]: Swith to new learning rate %.5f", iteration, lr)
        return lr
