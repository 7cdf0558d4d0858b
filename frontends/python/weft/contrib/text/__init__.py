"""MXNet 1.9's `mx.contrib.text`: `vocab.Vocabulary`, `utils.count_tokens_from_str` and
`embedding` (token embeddings: GloVe, fastText, custom files, composites)."""
from . import utils, vocab, embedding

__all__ = ["utils", "vocab", "embedding"]
