"""Which operators automatic mixed precision runs in bfloat16 on the CPU.

bfloat16 keeps float32's exponent range, so only precision is at stake: the compute-bound
layers (convolution, matrix products) gain from it; operators that reduce many values or
exponentiate (softmax, the norms, the losses) stay float32; operators that only move or
compare data run in whatever type reaches them. Names missing from this build's registry
are dropped when the lists are read (see amp._registered).
"""

# Run in bfloat16: every floating input is cast to bfloat16.
BF16_FUNCS = [
    'Convolution',
    'FullyConnected',
]

# Run in the type of their input: no cast is inserted. (Activation, a conditional float32
# operator below, is in no other list, as in MXNet: unless its act_type says float32 it runs
# as its input comes.)
BF16_FP32_FUNCS = [
    'relu', 'sigmoid', 'tanh', 'softsign', 'abs', 'sqrt', 'square', 'clip',
    'BatchNorm', 'Pooling', 'Concat', 'concat', 'Flatten', 'flatten', 'Reshape', 'reshape', 'reshape_like',
    'Dropout', 'LRN', 'BlockGrad', 'stop_gradient', 'identity', '_copy', 'Cast', 'cast',
    'expand_dims', 'squeeze', 'transpose', 'SwapAxis', 'swapaxes', 'slice', 'slice_axis',
    'slice_like', 'SliceChannel', 'split', 'tile', 'repeat', 'flip', 'reverse', 'Pad', 'pad',
    'Crop', 'crop', 'UpSampling', 'depth_to_space', 'space_to_depth', 'zeros_like', 'ones_like',
    'take', 'pick', 'gather_nd', 'one_hot', 'broadcast_to', 'broadcast_like', 'broadcast_axis',
    'max', 'min', 'argmax', 'argmin', 'argmax_channel', 'shape_array', 'size_array',
    'negative', 'sign', 'round', 'rint', 'floor', 'ceil', 'trunc', 'fix',
    '_plus_scalar', '_minus_scalar', '_rminus_scalar', '_mul_scalar', '_div_scalar',
    '_maximum_scalar', '_minimum_scalar', 'shuffle', '_shuffle',
    'sgd_update', 'sgd_mom_update', 'adam_update', 'mp_sgd_update', 'mp_sgd_mom_update',
    'multi_all_finite', 'all_finite',
]

# Parameters of an operator that stay float32 when its data runs in bfloat16, by input
# position ('' marks the data input, which takes the bf16 data as it comes).
BF16_USE_FP32_PARAMS = {
    'BatchNorm': ['', 'gamma', 'beta', 'moving_mean', 'moving_var'],
}

# Run in float32: their inputs are cast to float32.
FP32_FUNCS = [
    'softmax', 'log_softmax', 'softmin', 'Softmax', 'SoftmaxActivation', 'SoftmaxOutput',
    'LayerNorm', 'InstanceNorm', 'GroupNorm', 'L2Normalization', 'norm',
    'LinearRegressionOutput', 'LogisticRegressionOutput', 'MAERegressionOutput', 'SVMOutput',
    'MakeLoss', 'make_loss', 'ctc_loss', 'CTCLoss',
    'exp', 'expm1', 'log', 'log2', 'log10', 'log1p', 'reciprocal', 'rsqrt', 'cbrt', 'rcbrt',
    '_power', '_power_scalar', '_rpower_scalar', 'broadcast_power', 'erf', 'erfinv', 'gamma',
    'gammaln', 'sin', 'cos', 'tan', 'arcsin', 'arccos', 'arctan', 'sinh', 'cosh', 'arcsinh',
    'arccosh', 'arctanh', 'degrees', 'radians', '_rdiv_scalar',
    'sum', 'sum_axis', 'nansum', 'prod', 'nanprod', 'mean', 'moments', 'topk', 'sort', 'argsort',
    'Deconvolution', 'RNN', 'Embedding', 'ROIPooling', 'BilinearSampler', 'GridGenerator',
    'SpatialTransformer', 'SequenceMask', 'SequenceLast', 'SequenceReverse',
    '_linalg_gemm', '_linalg_gemm2', '_linalg_potrf', '_linalg_potri', '_linalg_trmm',
    '_linalg_trsm', '_linalg_syrk', '_linalg_gelqf', '_linalg_inverse', '_linalg_det',
    '_linalg_slogdet', '_linalg_sumlogdiag',
]

# Run in float32 only for these parameter values: (operator, parameter, values).
CONDITIONAL_FP32_FUNCS = [
    ('Activation', 'act_type', ['softrelu']),
    ('LeakyReLU', 'act_type', ['elu', 'selu']),
]

# Take several floating inputs that must agree: an amp_multicast brings them all to the
# widest type present.
WIDEST_TYPE_CASTS = [
    'elemwise_add', 'elemwise_sub', 'elemwise_mul', 'elemwise_div',
    '_plus', '_Plus', '_minus', '_Minus', '_sub', '_mul', '_Mul', '_div', '_Div', '_mod',
    '_maximum', '_minimum', '_equal', '_not_equal', '_greater', '_greater_equal', '_lesser',
    '_lesser_equal', '_logical_and', '_logical_or', '_logical_xor', '_grad_add',
    'broadcast_add', 'broadcast_plus', 'broadcast_sub', 'broadcast_minus', 'broadcast_mul',
    'broadcast_div', 'broadcast_mod', 'broadcast_maximum', 'broadcast_minimum',
    'broadcast_equal', 'broadcast_not_equal', 'broadcast_greater', 'broadcast_greater_equal',
    'broadcast_lesser', 'broadcast_lesser_equal', 'broadcast_logical_and',
    'broadcast_logical_or', 'broadcast_logical_xor', 'broadcast_hypot',
    'add_n', 'ElementWiseSum', 'dot', 'batch_dot', 'stack', 'where', 'Correlation',
]

# Output (loss) operators whose gradient scale the dynamic loss scaler multiplies.
LOSS_OUTPUT_FUNCTIONS = [
    'SoftmaxOutput', 'LinearRegressionOutput', 'LogisticRegressionOutput', 'MAERegressionOutput',
]
