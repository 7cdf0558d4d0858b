"""weft.contrib.amp: automatic mixed precision (float16, bfloat16), as MXNet's mx.contrib.amp."""
from .amp import *  # noqa: F401,F403
from . import lists  # noqa: F401
from .loss_scaler import LossScaler  # noqa: F401
