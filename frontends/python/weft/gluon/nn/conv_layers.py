"""Convolution and pooling layers, as MXNet 1.x's `gluon.nn.conv_layers`."""
from ..block import HybridBlock, _fixed_graph
from .activations import Activation

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose", "MaxPool1D",
           "MaxPool2D", "MaxPool3D", "AvgPool1D", "AvgPool2D", "AvgPool3D", "GlobalMaxPool1D", "GlobalMaxPool2D",
           "GlobalMaxPool3D", "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalAvgPool3D", "ReflectionPad2D"]


_LAYOUTS = {1: ("NCW", "NWC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def _check_layout(name, layout, n):
    if layout not in _LAYOUTS[n]:
        raise ValueError("%s: layout must be one of %s, got %r" % (name, ", ".join(_LAYOUTS[n]), layout))


def _tuple(value, n, what):
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    if len(value) != n:
        raise ValueError("%s: expected an int or %d values, got %s" % (what, n, value))
    return value


class _Conv(HybridBlock):
    def __init__(self, channels, kernel_size, strides, padding, dilation, groups, layout, in_channels=0,
                 activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros", op_name="Convolution",
                 adj=None, **kwargs):
        super().__init__(**kwargs)
        n = len(kernel_size)
        with self.name_scope():
            self._channels = channels
            self._in_channels = in_channels
            self._op_name = op_name
            self._kwargs = {"kernel": kernel_size, "stride": strides, "dilate": dilation, "pad": padding,
                            "num_filter": channels, "num_group": groups, "no_bias": not use_bias, "layout": layout}
            if adj is not None:
                self._kwargs["adj"] = adj
            _check_layout(type(self).__name__, layout, n)
            if in_channels and in_channels % groups:
                raise ValueError("%s: in_channels %d is not divisible by groups %d"
                                 % (type(self).__name__, in_channels, groups))
            if op_name == "Convolution":
                outer, inner = channels, in_channels // groups if in_channels else 0
            else:
                outer, inner = in_channels, channels // groups
            # The operator's weight layout follows the data's: channels last for NWC/NHWC/NDHWC.
            if layout[1] == "C":
                wshape = (outer, inner) + tuple(kernel_size)
            else:
                wshape = (outer,) + tuple(kernel_size) + (inner,)
            self.weight = self.params.get("weight", shape=wshape, init=weight_initializer, allow_deferred_init=True)
            self.bias = self.params.get("bias", shape=(channels,), init=bias_initializer,
                                        allow_deferred_init=True) if use_bias else None
            self.act = Activation(activation, prefix=activation + "_") if activation is not None else None

    def _alias(self):
        return "conv"

    @_fixed_graph
    def hybrid_forward(self, F, x, weight, bias=None):
        op = getattr(F, self._op_name)
        if bias is None:
            act = op(x, weight, name="fwd", **self._kwargs)
        else:
            act = op(x, weight, bias, name="fwd", **self._kwargs)
        return self.act(act) if self.act is not None else act

    def __repr__(self):
        # MXNet's layout: the channels come from the weight's shape (so the input channels
        # show once inferred), and only settings that differ from their defaults follow.
        # MXNet checks an attribute its transposed convolutions never set, so
        # output_padding is never shown.
        kw = self._kwargs
        n = len(kw["kernel"])
        s = "%s(%s -> %s, kernel_size=%s, stride=%s" % (type(self).__name__, self.weight.shape[1] or None,
                                                        self.weight.shape[0], kw["kernel"], kw["stride"])
        if kw["pad"] != (0,) * n:
            s += ", padding=%s" % (kw["pad"],)
        if kw["dilate"] != (1,) * n:
            s += ", dilation=%s" % (kw["dilate"],)
        if kw["num_group"] != 1:
            s += ", groups=%s" % kw["num_group"]
        if self.bias is None:
            s += ", bias=False"
        if self.act is not None:
            s += ", %s" % self.act
        return s + ")"


def _conv_class(n, layout, transpose):
    name = "Conv%dD%s" % (n, "Transpose" if transpose else "")

    def __init__(self, channels, kernel_size, strides=1, padding=0, *rest, **kwargs):
        if transpose:
            output_padding = rest[0] if rest else kwargs.pop("output_padding", 0)
            rest = rest[1:]
        names = ["dilation", "groups", "layout", "activation", "use_bias", "weight_initializer", "bias_initializer",
                 "in_channels"]
        opts = dict(zip(names, rest))
        opts.update(kwargs)
        dilation = opts.pop("dilation", 1)
        groups = opts.pop("groups", 1)
        lay = opts.pop("layout", layout)
        extra = {}
        if transpose:
            extra = {"op_name": "Deconvolution", "adj": _tuple(output_padding, n, name + " output_padding")}
        _Conv.__init__(self, channels, _tuple(kernel_size, n, name + " kernel_size"), _tuple(strides, n, name + " strides"),
                       _tuple(padding, n, name + " padding"), _tuple(dilation, n, name + " dilation"), groups, lay,
                       **extra, **opts)

    return type(name, (_Conv,), {"__init__": __init__, "__doc__": "%d-D %sconvolution (layout %s)."
                                 % (n, "transposed " if transpose else "", layout)})


Conv1D = _conv_class(1, "NCW", False)
Conv2D = _conv_class(2, "NCHW", False)
Conv3D = _conv_class(3, "NCDHW", False)
Conv1DTranspose = _conv_class(1, "NCW", True)
Conv2DTranspose = _conv_class(2, "NCHW", True)
Conv3DTranspose = _conv_class(3, "NCDHW", True)


class _Pooling(HybridBlock):
    def __init__(self, pool_size, strides, padding, ceil_mode, global_pool, pool_type, layout,
                 count_include_pad=None, **kwargs):
        super().__init__(**kwargs)
        if strides is None:
            strides = pool_size
        _check_layout(type(self).__name__, layout, len(pool_size))
        self._kwargs = {"kernel": pool_size, "stride": strides, "pad": padding, "global_pool": global_pool,
                        "pool_type": pool_type, "layout": layout,
                        "pooling_convention": "full" if ceil_mode else "valid"}
        if count_include_pad is not None:
            self._kwargs["count_include_pad"] = count_include_pad

    def _alias(self):
        return "pool"

    @_fixed_graph
    def hybrid_forward(self, F, x):
        return F.Pooling(x, name="fwd", **self._kwargs)

    def __repr__(self):
        return "%s(size=%s, stride=%s, padding=%s, ceil_mode=%s, global_pool=%s, pool_type=%s, layout=%s)" % (
            type(self).__name__, self._kwargs["kernel"], self._kwargs["stride"], self._kwargs["pad"],
            self._kwargs["pooling_convention"] == "full", self._kwargs["global_pool"], self._kwargs["pool_type"],
            self._kwargs["layout"])


def _pool_class(n, layout, pool_type, global_pool):
    name = "%s%sPool%dD" % ("Global" if global_pool else "", "Max" if pool_type == "max" else "Avg", n)

    if global_pool:
        def __init__(self, layout=layout, **kwargs):
            _Pooling.__init__(self, (1,) * n, None, (0,) * n, True, True, pool_type, layout, **kwargs)
    else:
        def build(self, pool_size, strides, padding, ceil_mode, layout, count_include_pad, kwargs):
            _Pooling.__init__(self, _tuple(pool_size, n, name + " pool_size"),
                              None if strides is None else _tuple(strides, n, name + " strides"),
                              _tuple(padding, n, name + " padding"), ceil_mode, False, pool_type, layout,
                              count_include_pad, **kwargs)

        # MXNet's positional orders differ between the classes: ceil_mode comes before layout
        # in MaxPool3D, AvgPool2D and AvgPool3D, after it in the others; average pooling ends
        # with count_include_pad.
        if pool_type == "avg" and n > 1:
            def __init__(self, pool_size=2, strides=None, padding=0, ceil_mode=False, layout=layout,
                         count_include_pad=True, **kwargs):
                build(self, pool_size, strides, padding, ceil_mode, layout, count_include_pad, kwargs)
        elif pool_type == "avg":
            def __init__(self, pool_size=2, strides=None, padding=0, layout=layout, ceil_mode=False,
                         count_include_pad=True, **kwargs):
                build(self, pool_size, strides, padding, ceil_mode, layout, count_include_pad, kwargs)
        elif n == 3:
            def __init__(self, pool_size=2, strides=None, padding=0, ceil_mode=False, layout=layout, **kwargs):
                build(self, pool_size, strides, padding, ceil_mode, layout, None, kwargs)
        else:
            def __init__(self, pool_size=2, strides=None, padding=0, layout=layout, ceil_mode=False, **kwargs):
                build(self, pool_size, strides, padding, ceil_mode, layout, None, kwargs)

    return type(name, (_Pooling,), {"__init__": __init__, "__doc__": "%s pooling over %d-D inputs." % (name, n)})


MaxPool1D = _pool_class(1, "NCW", "max", False)
MaxPool2D = _pool_class(2, "NCHW", "max", False)
MaxPool3D = _pool_class(3, "NCDHW", "max", False)
AvgPool1D = _pool_class(1, "NCW", "avg", False)
AvgPool2D = _pool_class(2, "NCHW", "avg", False)
AvgPool3D = _pool_class(3, "NCDHW", "avg", False)
GlobalMaxPool1D = _pool_class(1, "NCW", "max", True)
GlobalMaxPool2D = _pool_class(2, "NCHW", "max", True)
GlobalMaxPool3D = _pool_class(3, "NCDHW", "max", True)
GlobalAvgPool1D = _pool_class(1, "NCW", "avg", True)
GlobalAvgPool2D = _pool_class(2, "NCHW", "avg", True)
GlobalAvgPool3D = _pool_class(3, "NCDHW", "avg", True)


class ReflectionPad2D(HybridBlock):
    """Pads the last two axes by reflection."""

    def __init__(self, padding=0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(padding, int):
            padding = (0, 0, 0, 0, padding, padding, padding, padding)
        if len(padding) != 8:
            raise ValueError("ReflectionPad2D: expected an int or 8 pad widths, got %s" % (padding,))
        self._padding = tuple(padding)

    @_fixed_graph
    def hybrid_forward(self, F, x):
        return F.pad(x, mode="reflect", pad_width=self._padding)
