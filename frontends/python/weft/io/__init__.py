"""Data iterators (MXNet's mx.io): DataDesc, DataBatch, DataIter, NDArrayIter, ResizeIter,
PrefetchingIter, and one constructor per iterator of the C++ registry (MNISTIter, CSVIter,
LibSVMIter, ImageRecordIter, ...), generated here from the registry with its documentation:

    it = weft.io.MNISTIter(image="train-images-idx3-ubyte.gz", label="train-labels-idx1-ubyte.gz",
                           batch_size=100, flat=True)
    for batch in it:
        batch.data[0], batch.label[0]
"""
from ..base import _api
from ..ndarray.ndarray import _param_str
from .io import (DataDesc, DataBatch, DataIter, NDArrayIter, ResizeIter, PrefetchingIter, MXDataIter,  # noqa: F401
                 LibSVMDataIter, _init_data)

__all__ = ["DataDesc", "DataBatch", "DataIter", "NDArrayIter", "ResizeIter", "PrefetchingIter", "MXDataIter"]


def _docstring(name, doc, params):
    lines = [doc.strip(), "", "Parameters", "----------"]
    for pname, ptype, default, pdoc, required in params:
        kind = ptype if required else "%s, optional, default=%s" % (ptype, default)
        lines.append("%s : %s" % (pname, kind))
        if pdoc:
            lines.append("    " + pdoc)
    lines.append("data_name : str, optional, default='data'")
    lines.append("    The name of the data array in provide_data.")
    lines.append("label_name : str, optional, default='softmax_label'")
    lines.append("    The name of the label array in provide_label.")
    lines += ["", "Returns", "-------", "MXDataIter", "    The iterator."]
    return "\n".join(lines)


def _make_creator(name):
    doc = _api.weft_dataiter_type_doc(name) or ""
    params = [tuple(_api.weft_dataiter_type_param(name, i)) for i in range(_api.weft_dataiter_type_num_params(name))]

    def creator(*args, **kwargs):
        if args:
            raise TypeError("%s takes keyword arguments only, got %d positional" % (name, len(args)))
        names = {k: kwargs.pop(k) for k in ("data_name", "label_name") if k in kwargs}
        keys = list(kwargs.keys())
        vals = [_param_str(kwargs[k]) for k in keys]
        handle = _api.weft_dataiter_create(name, len(keys), keys, vals)
        return (LibSVMDataIter if name == "LibSVMIter" else MXDataIter)(handle, **names)

    creator.__name__ = name
    creator.__qualname__ = name
    creator.__doc__ = _docstring(name, doc, params)
    return creator


def _populate():
    for i in range(_api.weft_dataiter_type_count()):
        name = _api.weft_dataiter_type_name(i)
        globals()[name] = _make_creator(name)
        __all__.append(name)


_populate()
