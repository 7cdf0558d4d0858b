"""How the Estimator runs one batch: BatchProcessor.fit_batch and evaluate_batch (subclass
it to change a step, e.g. for several inputs)."""
from .... import autograd
from ...utils import split_and_load

__all__ = ["BatchProcessor"]


class BatchProcessor(object):
    """The default step: a batch is (data, label), split over the estimator's contexts along
    `batch_axis`; fit_batch records net and loss and back-propagates (the Trainer step is
    GradientUpdateHandler's); evaluate_batch runs val_net and val_loss."""

    def _get_data_and_label(self, batch, ctx, batch_axis=0):
        data = split_and_load(batch[0], ctx_list=ctx, batch_axis=batch_axis)
        label = split_and_load(batch[1], ctx_list=ctx, batch_axis=batch_axis)
        return data, label

    def evaluate_batch(self, estimator, val_batch, batch_axis=0):
        """(data, label, pred, loss) of one validation batch, each a list over contexts."""
        data, label = self._get_data_and_label(val_batch, estimator.context, batch_axis)
        pred = [estimator.val_net(x) for x in data]
        loss = [estimator.val_loss(p, y) for p, y in zip(pred, label)]
        return data, label, pred, loss

    def fit_batch(self, estimator, train_batch, batch_axis=0):
        """(data, label, pred, loss) of one training batch, after backward."""
        data, label = self._get_data_and_label(train_batch, estimator.context, batch_axis)
        with autograd.record():
            pred = [estimator.net(x) for x in data]
            loss = [estimator.loss(p, y) for p, y in zip(pred, label)]
        for one in loss:
            one.backward()
        return data, label, pred, loss
