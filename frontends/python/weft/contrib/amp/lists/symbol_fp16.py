"""Which operators automatic mixed precision runs in float16.

float16's narrow exponent range makes more operators unsafe than in bfloat16 (anything
that sums or exponentiates many values can overflow), so float16 keeps the compute-bound
layers in float16 and sends everything numerically delicate to float32. Names missing
from this build's registry are dropped when the lists are read (see amp._registered).
"""
from . import symbol_bf16 as _bf16

# Run in float16: every floating input is cast to float16.
FP16_FUNCS = ['Convolution', 'Deconvolution', 'FullyConnected', 'RNN']

# Run in the type of their input (data movement, comparisons, optimizer updates). BatchNorm
# is not among them: it takes float32 statistics with bfloat16 data only, so with float16
# it runs in float32.
FP16_FP32_FUNCS = [name for name in _bf16.BF16_FP32_FUNCS if name not in FP16_FUNCS and name != 'BatchNorm'] + [
    'Embedding', 'SequenceMask', 'SequenceLast', 'SequenceReverse', 'ROIPooling',
    'BilinearSampler', 'GridGenerator', 'SpatialTransformer',
]

# Run in float32: reductions, exponentials, normalisations and losses.
FP32_FUNCS = [name for name in _bf16.FP32_FUNCS if name not in FP16_FUNCS and name not in FP16_FP32_FUNCS] + [
    'BatchNorm']

CONDITIONAL_FP32_FUNCS = list(_bf16.CONDITIONAL_FP32_FUNCS)

WIDEST_TYPE_CASTS = list(_bf16.WIDEST_TYPE_CASTS)

LOSS_OUTPUT_FUNCTIONS = list(_bf16.LOSS_OUTPUT_FUNCTIONS)
