"""weft.image: MXNet 1.9's `mx.image` package: decoding, resizing, the classification
augmenters and ImageIter (`image.py`), the detection augmenters and ImageDetIter
(`detection.py`, also reachable as `det`)."""
from . import image
from .image import *  # noqa: F401,F403
from .image import __all__ as _image_all
from . import detection
from . import detection as det  # noqa: F401
from .detection import *  # noqa: F401,F403
from .detection import __all__ as _detection_all

__all__ = list(_image_all) + list(_detection_all)
