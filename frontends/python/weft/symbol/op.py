"""weft.symbol.op (MXNet's mxnet.symbol.op): the Symbol function of every registered
operator under its public name (those without a leading underscore; all are in
weft.symbol._internal), the same function objects weft.sym holds. Imported by weft.symbol
after it generated them."""
from . import _ops

globals().update({name: fn for name, fn in _ops._functions.items() if not name.startswith("_")})
