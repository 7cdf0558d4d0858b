"""weft.libinfo (MXNet's mxnet.libinfo): where the shared library and the C headers are,
and the version."""
import glob
import os
import sys

from .base import __version__  # noqa: F401

_HERE = os.path.dirname(os.path.abspath(__file__))


def find_lib_path(prefix="libweft"):
    """The paths of the shared library `prefix`.so* this package loads (it ships beside the
    Python files); RuntimeError when there is none."""
    found = sorted(p for p in glob.glob(os.path.join(_HERE, prefix + ".so*")) if os.path.isfile(p))
    if not found:
        raise RuntimeError("Cannot find the Weft library %s.so* in %s" % (prefix, _HERE))
    return found


def find_include_path():
    """The folder holding `weft/c_api.h`: the package's own include/, else the source tree
    of a build folder's package (build/python/weft), else the environment's include/."""
    candidates = [os.path.join(_HERE, "include"),
                  os.path.normpath(os.path.join(_HERE, "..", "..", "..", "c_api", "include")),
                  os.path.join(sys.prefix, "include")]
    for path in candidates:
        if os.path.isfile(os.path.join(path, "weft", "c_api.h")):
            return path
    raise RuntimeError("Cannot find the Weft headers (weft/c_api.h); looked in:\n" + "\n".join(candidates))
