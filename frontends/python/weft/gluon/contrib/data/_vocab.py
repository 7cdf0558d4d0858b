"""Token counting and vocabularies, as MXNet 1.9's `contrib.text.utils` and
`contrib.text.vocab` (re-exported by weft.contrib.text; here so that the WikiText data sets
of gluon.contrib.data can use them under the layer rules)."""
import collections
import re

UNKNOWN_IDX = 0


def count_tokens_from_str(source_str, token_delim=" ", seq_delim="\n", to_lower=False, counter_to_update=None):
    """A collections.Counter of the tokens of `source_str`, split at the regular expressions
    `token_delim` and `seq_delim` (empty pieces dropped), lower-cased with `to_lower`; added
    to `counter_to_update` (and returned) when given."""
    tokens = [t for t in re.split(token_delim + "|" + seq_delim, source_str) if t]
    if to_lower:
        tokens = [t.lower() for t in tokens]
    if counter_to_update is None:
        return collections.Counter(tokens)
    counter_to_update.update(tokens)
    return counter_to_update


class CheckError(ValueError, AssertionError):
    """An argument that MXNet 1.9's text API refuses with an assert: a ValueError that is
    also an AssertionError, so that code catching either keeps working."""


class Vocabulary(object):
    """Token <-> index: index 0 is `unknown_token`, then `reserved_tokens` in order, then the
    keys of `counter` (a collections.Counter) by descending frequency, ties in token order,
    keeping those seen at least `min_freq` times and at most `most_freq_count` of them."""

    def __init__(self, counter=None, most_freq_count=None, min_freq=1, unknown_token="<unk>", reserved_tokens=None):
        if min_freq <= 0:
            raise CheckError("Vocabulary: min_freq must be positive, got %r" % (min_freq,))
        if reserved_tokens is not None:
            if unknown_token in reserved_tokens:
                raise CheckError("Vocabulary: reserved_tokens cannot contain the unknown token %r" % (unknown_token,))
            if len(set(reserved_tokens)) != len(reserved_tokens):
                raise CheckError("Vocabulary: reserved_tokens has duplicates: %r" % (reserved_tokens,))
        self._unknown_token = unknown_token
        self._reserved_tokens = list(reserved_tokens) if reserved_tokens is not None else None
        self._idx_to_token = [unknown_token] + (self._reserved_tokens or [])
        self._token_to_idx = {t: i for i, t in enumerate(self._idx_to_token)}
        if counter is not None:
            if not isinstance(counter, collections.Counter):
                raise ValueError("Vocabulary: counter must be a collections.Counter, got %s" % type(counter).__name__)
            special = set(self._idx_to_token)
            cap = len(special) + (len(counter) if most_freq_count is None else most_freq_count)
            for token, freq in sorted(sorted(counter.items()), key=lambda kv: kv[1], reverse=True):
                if freq < min_freq or len(self._idx_to_token) == cap:
                    break
                if token not in special:
                    self._token_to_idx[token] = len(self._idx_to_token)
                    self._idx_to_token.append(token)

    def __len__(self):
        return len(self._idx_to_token)

    @property
    def token_to_idx(self):
        return self._token_to_idx

    @property
    def idx_to_token(self):
        return self._idx_to_token

    @property
    def unknown_token(self):
        return self._unknown_token

    @property
    def reserved_tokens(self):
        return self._reserved_tokens

    def to_indices(self, tokens):
        """The index of a token (a str), or the list of indices of a list; unknown tokens map to 0."""
        if not isinstance(tokens, list):
            return self._token_to_idx.get(tokens, UNKNOWN_IDX)
        return [self._token_to_idx.get(t, UNKNOWN_IDX) for t in tokens]

    def to_tokens(self, indices):
        """The token of an index, or the list of tokens of a list of indices."""
        single = not isinstance(indices, list)
        out = []
        for idx in ([indices] if single else indices):
            if not isinstance(idx, int) or not 0 <= idx < len(self._idx_to_token):
                raise ValueError("Vocabulary: token index %r is invalid (the vocabulary has %d tokens)"
                                 % (idx, len(self._idx_to_token)))
            out.append(self._idx_to_token[idx])
        return out[0] if single else out
