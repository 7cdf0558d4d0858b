"""Bucketed sentence data, as MXNet 1.x's `mx.rnn.io`."""
import bisect
import random
import warnings

import numpy as np

from .. import ndarray
from ..io import DataBatch, DataDesc, DataIter

__all__ = ["encode_sentences", "BucketSentenceIter"]


def encode_sentences(sentences, vocab=None, invalid_label=-1, invalid_key="\n", start_label=0, unknown_token=None):
    """(sentences as lists of indices, vocabulary). Without `vocab` one is built, words
    numbered from `start_label` in order of appearance (skipping `invalid_label`, which
    `invalid_key` holds). With `vocab`, an unknown word is an error unless `unknown_token`
    is given; it then takes that token's index (added to the vocabulary if new)."""
    new_vocab = vocab is None
    if new_vocab:
        vocab = {invalid_key: invalid_label}
    idx = start_label
    encoded = []
    for sentence in sentences:
        coded = []
        for word in sentence:
            if word not in vocab:
                if not new_vocab and not unknown_token:
                    raise ValueError("encode_sentences: unknown token %r (give unknown_token= to map unknown words)"
                                     % (word,))
                if unknown_token:
                    word = unknown_token
                if word not in vocab:
                    if idx == invalid_label:
                        idx += 1
                    vocab[word] = idx
                    idx += 1
            coded.append(vocab[word])
        encoded.append(coded)
    return encoded, vocab


class BucketSentenceIter(DataIter):
    """Batches of encoded sentences padded with `invalid_label` to the smallest bucket
    length that holds them; the label of each step is the next token (the last step's is
    `invalid_label`). Each batch comes from one bucket (its `bucket_key`); sentences longer
    than the largest bucket are dropped. Without `buckets`, every length with at least
    `batch_size` sentences is one. `layout` 'NT' gives (batch, length) arrays, 'TN'
    (length, batch). Batches and the sentences within buckets are shuffled at each reset."""

    def __init__(self, sentences, batch_size, buckets=None, invalid_label=-1, data_name="data",
                 label_name="softmax_label", dtype="float32", layout="NT"):
        super(BucketSentenceIter, self).__init__(batch_size)
        if layout not in ("NT", "TN"):
            raise ValueError("BucketSentenceIter: layout must be 'NT' (batch major) or 'TN' (time major), got %r"
                             % (layout,))
        if not buckets:
            counts = np.bincount([len(s) for s in sentences])
            buckets = [length for length, n in enumerate(counts) if n >= batch_size]
        buckets = sorted(buckets)
        if not buckets:
            raise ValueError("BucketSentenceIter: no bucket (no sentence length has %d sentences); give buckets="
                             % batch_size)
        rows = [[] for _ in buckets]
        used = [False] * len(buckets)
        discarded = 0
        for sentence in sentences:
            b = bisect.bisect_left(buckets, len(sentence))
            if b == len(buckets):
                discarded += 1
                continue
            used[b] = True
            row = np.full((buckets[b],), invalid_label, dtype=dtype)
            row[:len(sentence)] = sentence
            rows[b].append(row)
        if discarded:
            warnings.warn("BucketSentenceIter: discarded %d sentences longer than the largest bucket (%d)"
                          % (discarded, buckets[-1]))
        self.buckets = [length for length, u in zip(buckets, used) if u]
        self.data = [np.asarray(r, dtype=dtype) for r in rows if r]
        self.batch_size = batch_size
        self.data_name = data_name
        self.label_name = label_name
        self.dtype = dtype
        self.invalid_label = invalid_label
        self.layout = layout
        self.major_axis = layout.find("N")
        self.default_bucket_key = max(self.buckets)
        shape = (batch_size, self.default_bucket_key) if self.major_axis == 0 else (self.default_bucket_key,
                                                                                     batch_size)
        self.provide_data = [DataDesc(name=data_name, shape=shape, layout=layout)]
        self.provide_label = [DataDesc(name=label_name, shape=shape, layout=layout)]
        self.idx = [(i, j) for i, bucket in enumerate(self.data)
                    for j in range(0, len(bucket) - batch_size + 1, batch_size)]
        self.curr_idx = 0
        self.nddata = []
        self.ndlabel = []
        self.reset()

    def reset(self):
        self.curr_idx = 0
        random.shuffle(self.idx)
        for bucket in self.data:
            np.random.shuffle(bucket)
        self.nddata = []
        self.ndlabel = []
        for bucket in self.data:
            label = np.empty_like(bucket)
            label[:, :-1] = bucket[:, 1:]
            label[:, -1] = self.invalid_label
            self.nddata.append(ndarray.array(bucket, dtype=self.dtype))
            self.ndlabel.append(ndarray.array(label, dtype=self.dtype))

    def next(self):
        if self.curr_idx == len(self.idx):
            raise StopIteration
        i, j = self.idx[self.curr_idx]
        self.curr_idx += 1
        data = self.nddata[i][j:j + self.batch_size]
        label = self.ndlabel[i][j:j + self.batch_size]
        if self.major_axis == 1:
            data, label = data.T, label.T
        return DataBatch([data], [label], pad=0, bucket_key=self.buckets[i],
                         provide_data=[DataDesc(name=self.data_name, shape=data.shape, layout=self.layout)],
                         provide_label=[DataDesc(name=self.label_name, shape=label.shape, layout=self.layout)])
