"""MXNet 1.9's `mx.contrib.text`: `vocab.Vocabulary` and `utils.count_tokens_from_str`.
(MXNet's `embedding` module, pretrained word vectors fetched from the network, is left out.)"""
from . import utils, vocab

__all__ = ["utils", "vocab"]
