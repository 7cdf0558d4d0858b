"""weft.gluon.contrib.cnn (MXNet 1.9's gluon.contrib.cnn): deformable convolution layers."""
from . import conv_layers
from .conv_layers import DeformableConvolution, ModulatedDeformableConvolution

__all__ = conv_layers.__all__
