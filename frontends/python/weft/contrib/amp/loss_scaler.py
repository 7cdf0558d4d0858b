"""Dynamic loss scaling for automatic mixed precision."""
import logging

from ... import autograd, ndarray


class LossScaler:
    """Keeps the loss scale: halved after a step whose gradients overflowed (the step is
    skipped), doubled after scale_seq_len clean steps, up to max_loss_scale."""

    def __init__(self, init_scale=2.**16, max_loss_scale=2.**24, scale_seq_len=2000):
        self._loss_scale = float(init_scale)
        self._next_loss_scale = self._loss_scale
        self._max_loss_scale = float(max_loss_scale)
        self._scale_seq_len = scale_seq_len
        self._unskipped = 0

    @property
    def loss_scale(self):
        return self._loss_scale

    def has_overflow(self, params):
        """Whether any gradient of params holds inf or NaN; moves the scale for the next step."""
        grads = [g for p in params if p.grad_req != "null" and p._grad is not None for g in p.list_grad()]
        finite = True
        if grads:
            with autograd.pause():
                flag = ndarray.ones((1,), ctx=grads[0].context)
                # multi_all_finite takes a bounded number of arrays per call.
                for k in range(0, len(grads), 200):
                    chunk = [g.as_in_context(flag.context) for g in grads[k:k + 200]]
                    ndarray.multi_all_finite(*chunk, num_arrays=len(chunk), init_output=False, out=flag)
                finite = bool(flag.asnumpy()[0])
        self._loss_scale = self._next_loss_scale
        if not finite:
            self._next_loss_scale = self._loss_scale / 2.
            self._unskipped = 0
            logging.info("AMP: decreasing loss scale to %f", self._next_loss_scale)
        else:
            self._unskipped += 1
            if self._unskipped == self._scale_seq_len:
                self._unskipped = 0
                self._next_loss_scale = min(self._max_loss_scale, self._loss_scale * 2.)
                logging.info("AMP: increasing loss scale to %f", self._next_loss_scale)
        return not finite
