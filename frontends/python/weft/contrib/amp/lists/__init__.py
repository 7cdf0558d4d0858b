"""Operator lists of automatic mixed precision, one module per low-precision type."""
from . import symbol_bf16, symbol_fp16  # noqa: F401
