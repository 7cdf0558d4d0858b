"""A training loop with event handlers, as MXNet 1.9's `gluon.contrib.estimator`:
`Estimator(net, loss, ...).fit(train_data, val_data, epochs=...)` and `.evaluate(val_data)`,
extended by handlers for the events train begin/end, epoch begin/end and batch begin/end."""
from . import batch_processor, estimator, event_handler
from .batch_processor import *  # noqa: F401,F403
from .estimator import *  # noqa: F401,F403
from .event_handler import *  # noqa: F401,F403

__all__ = batch_processor.__all__ + estimator.__all__ + event_handler.__all__
