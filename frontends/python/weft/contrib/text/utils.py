"""count_tokens_from_str (MXNet 1.9's `mx.contrib.text.utils`)."""
from ...gluon.contrib.data._vocab import count_tokens_from_str

__all__ = ["count_tokens_from_str"]
