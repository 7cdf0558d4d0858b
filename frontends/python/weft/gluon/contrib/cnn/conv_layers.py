"""Deformable convolutions as Gluon layers (MXNet 1.9's gluon.contrib.cnn.conv_layers).

Each layer holds two convolutions: a plain one over the input that predicts, per output
position, a (dy, dx) offset for every kernel tap (and, for the modulated form, a mask), and
the deformable convolution (`_contrib_DeformableConvolution` /
`_contrib_ModulatedDeformableConvolution`) that samples the input at the shifted taps. The
offset convolution's weights start at zero, so a new layer is a plain convolution until
training moves them. Parameter names follow MXNet (`offset_weight`, `offset_bias`,
`deformable_conv_weight`, `deformable_conv_bias`), so MXNet's saved parameters load.
"""
import numbers

from ...block import HybridBlock, _fixed_graph
from ...nn.activations import Activation

__all__ = ["DeformableConvolution", "ModulatedDeformableConvolution"]


def _pair(value):
    return (value,) * 2 if isinstance(value, numbers.Integral) else tuple(value)


class _DeformableBase(HybridBlock):
    """What both layers share: the arguments, the two convolutions' parameters."""

    _modulated = False

    def __init__(self, channels, kernel_size=(1, 1), strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
                 num_deformable_group=1, layout="NCHW", use_bias=True, in_channels=0, activation=None,
                 weight_initializer=None, bias_initializer="zeros", offset_weight_initializer="zeros",
                 offset_bias_initializer="zeros", offset_use_bias=True, op_name=None, adj=None, prefix=None,
                 params=None):
        super().__init__(prefix=prefix, params=params)
        name = type(self).__name__
        if layout != "NCHW":
            # MXNet's layer accepts NHWC in its check but its operator computes NCHW only.
            raise ValueError("%s: only the NCHW layout is supported, got %r" % (name, layout))
        kernel_size, strides, padding, dilation = (_pair(v) for v in (kernel_size, strides, padding, dilation))
        if len(kernel_size) != 2:
            raise ValueError("%s: expected a 2-D kernel_size, got %s" % (name, kernel_size))
        if in_channels and in_channels % groups:
            raise ValueError("%s: in_channels %d is not divisible by groups %d" % (name, in_channels, groups))
        self._channels = channels
        self._in_channels = in_channels
        self._op_name = op_name or name
        taps = kernel_size[0] * kernel_size[1] * num_deformable_group
        # The offset convolution predicts 2 values per tap (3 with the mask of the modulated form).
        offset_channels = (3 if self._modulated else 2) * taps
        self._offset_split = 2 * taps
        self._kwargs_offset = {"kernel": kernel_size, "stride": strides, "dilate": dilation, "pad": padding,
                               "num_filter": offset_channels, "num_group": groups, "no_bias": not offset_use_bias,
                               "layout": layout}
        self._kwargs_deformable_conv = {"kernel": kernel_size, "stride": strides, "dilate": dilation, "pad": padding,
                                        "num_filter": channels, "num_group": groups,
                                        "num_deformable_group": num_deformable_group, "no_bias": not use_bias,
                                        "layout": layout}
        if adj:
            self._kwargs_offset["adj"] = adj
            self._kwargs_deformable_conv["adj"] = adj
        per_group = in_channels // groups if in_channels else 0
        with self.name_scope():
            self.offset_weight = self.params.get("offset_weight", shape=(offset_channels, per_group) + kernel_size,
                                                 init=offset_weight_initializer, allow_deferred_init=True)
            self.offset_bias = self.params.get("offset_bias", shape=(offset_channels,), init=offset_bias_initializer,
                                               allow_deferred_init=True) if offset_use_bias else None
            self.deformable_conv_weight = self.params.get("deformable_conv_weight",
                                                          shape=(channels, per_group) + kernel_size,
                                                          init=weight_initializer, allow_deferred_init=True)
            self.deformable_conv_bias = self.params.get("deformable_conv_bias", shape=(channels,),
                                                        init=bias_initializer,
                                                        allow_deferred_init=True) if use_bias else None
            self.act = Activation(activation, prefix=activation + "_") if activation else None

    def _offsets(self, F, x, offset_weight, offset_bias):
        extra = () if offset_bias is None else (offset_bias,)
        return F.Convolution(x, offset_weight, *extra, cudnn_off=True, **self._kwargs_offset)

    def _finish(self, act):
        return self.act(act) if self.act is not None else act

    def __repr__(self):
        kw = self._kwargs_deformable_conv
        text = "%s(%s -> %s, kernel_size=%s, stride=%s" % (type(self).__name__, self._in_channels or None,
                                                           self._channels, kw["kernel"], kw["stride"])
        if kw["pad"] != (0, 0):
            text += ", padding=%s" % (kw["pad"],)
        if kw["dilate"] != (1, 1):
            text += ", dilation=%s" % (kw["dilate"],)
        if kw["num_group"] != 1:
            text += ", groups=%s" % kw["num_group"]
        if self.deformable_conv_bias is None:
            text += ", bias=False"
        if self.act is not None:
            text += ", %s" % self.act
        return text + ")"


class DeformableConvolution(_DeformableBase):
    """2-D deformable convolution (Dai et al., 2017): each kernel tap samples the input,
    bilinearly, at its regular position plus an offset that a plain convolution of the
    input predicts (offset_weight/offset_bias, zero-initialised).

    Arguments as MXNet 1.9.1's: channels, kernel_size, strides, padding, dilation, groups,
    num_deformable_group (groups of input channels sharing one offset field), layout
    ('NCHW'), use_bias, in_channels (0: from the first input), activation, the four
    initializers, offset_use_bias, op_name, adj, prefix, params."""

    @_fixed_graph
    def hybrid_forward(self, F, x, offset_weight, deformable_conv_weight, offset_bias=None,
                       deformable_conv_bias=None):
        offset = self._offsets(F, x, offset_weight, offset_bias)
        extra = {} if deformable_conv_bias is None else {"bias": deformable_conv_bias}
        act = F.contrib.DeformableConvolution(data=x, offset=offset, weight=deformable_conv_weight, name="fwd",
                                              **extra, **self._kwargs_deformable_conv)
        return self._finish(act)

    def _alias(self):
        return "deformable_conv"


class ModulatedDeformableConvolution(_DeformableBase):
    """2-D modulated deformable convolution (Deformable ConvNets v2, Zhu et al., 2019): as
    DeformableConvolution, and each sample is also scaled by a mask that the offset
    convolution predicts as well (2 * sigmoid, so 1 while the offset weights are zero).
    Same arguments as DeformableConvolution."""

    _modulated = True

    @_fixed_graph
    def hybrid_forward(self, F, x, offset_weight, deformable_conv_weight, offset_bias=None,
                       deformable_conv_bias=None):
        offset = self._offsets(F, x, offset_weight, offset_bias)
        shifts = F.slice_axis(offset, axis=1, begin=0, end=self._offset_split)
        mask = F.sigmoid(F.slice_axis(offset, axis=1, begin=self._offset_split, end=None)) * 2
        extra = {} if deformable_conv_bias is None else {"bias": deformable_conv_bias}
        act = F.contrib.ModulatedDeformableConvolution(data=x, offset=shifts, mask=mask,
                                                       weight=deformable_conv_weight, name="fwd", **extra,
                                                       **self._kwargs_deformable_conv)
        return self._finish(act)

    def _alias(self):
        return "modulated_deformable_conv"
