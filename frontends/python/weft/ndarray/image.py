"""weft.ndarray.image: MXNet's ndarray.image namespace, the image operators (registered as
`_image_<name>`) under their short names, as NDArray functions."""
from . import _ops

_ops.populate_namespace(globals(), "_image_")
