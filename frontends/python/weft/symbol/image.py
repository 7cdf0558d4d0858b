"""weft.symbol.image: MXNet's symbol.image namespace, the image operators (registered as
`_image_<name>`) under their short names, as Symbol functions."""
from . import _ops

_ops.populate_namespace(globals(), "_image_")
