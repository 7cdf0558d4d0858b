"""WikiText-2 and WikiText-103 language-model data sets, as MXNet 1.9's
`gluon.contrib.data.text`, read from local files (nothing is downloaded)."""
import os
import zipfile

import numpy as np

from .... import ndarray as nd
from ...data.dataset import Dataset
from ...data.vision.datasets import data_dir
from ._vocab import Vocabulary, count_tokens_from_str

__all__ = ["WikiText2", "WikiText103"]

EOS_TOKEN = "<eos>"


class _WikiText(Dataset):
    """The token file of `segment` ('train', 'validation', 'test') under `root` (or inside
    the published zip archive there): each line's tokens plus '<eos>', indexed by `vocab`
    (by default one built from this file, '<eos>' reserved), cut into samples of `seq_len`
    tokens; the label of each token is the next one. Samples are (data, label), int32
    vectors of length seq_len; the tail that does not fill a sample is dropped."""

    _archive = None
    _files = {"train": "wiki.train.tokens", "validation": "wiki.valid.tokens", "test": "wiki.test.tokens"}

    def __init__(self, root, segment, vocab, seq_len):
        if segment not in self._files:
            raise ValueError("%s: segment must be one of %s, got %r" % (type(self).__name__, sorted(self._files),
                                                                         segment))
        if seq_len < 1:
            raise ValueError("%s: seq_len must be positive, got %r" % (type(self).__name__, seq_len))
        self._root = os.path.expanduser(root)
        self._segment = segment
        self._seq_len = seq_len
        self._vocab = vocab
        self._counter = None
        self._get_data()

    @property
    def vocabulary(self):
        return self._vocab

    @property
    def frequencies(self):
        return self._counter

    def _path(self):
        name = self._files[self._segment]
        path = os.path.join(self._root, name)
        if os.path.isfile(path):
            return path
        archive = os.path.join(self._root, self._archive)
        if os.path.isfile(archive):
            # MXNet unpacks the archive's files flat into root
            with zipfile.ZipFile(archive) as zf:
                for member in zf.namelist():
                    base = os.path.basename(member)
                    if base:
                        with zf.open(member) as src, open(os.path.join(self._root, base), "wb") as dst:
                            dst.write(src.read())
            if os.path.isfile(path):
                return path
        raise FileNotFoundError("%s: '%s' not found under '%s' (nor in %s there). Weft does not download data sets: "
                                "put the token files there or pass root=" % (type(self).__name__, name, self._root,
                                                                            self._archive))

    def _get_data(self):
        with open(self._path(), "r", encoding="utf8") as fin:
            content = fin.read()
        if self._counter is None:
            self._counter = count_tokens_from_str(content)
        if self._vocab is None:
            self._vocab = Vocabulary(counter=self._counter, reserved_tokens=[EOS_TOKEN])
        tokens = [t for line in content.splitlines() for t in (line.split() + [EOS_TOKEN] if line.split() else [])]
        ids = np.array(self._vocab.to_indices(tokens), dtype=np.int32)
        usable = (len(ids) - 1) // self._seq_len * self._seq_len
        self._data = nd.array(ids[:usable].reshape(-1, self._seq_len), dtype=np.int32)
        self._label = nd.array(ids[1:usable + 1].reshape(-1, self._seq_len), dtype=np.int32)

    def __getitem__(self, idx):
        return self._data[idx], self._label[idx]

    def __len__(self):
        return self._label.shape[0]


class WikiText2(_WikiText):
    """WikiText-2 (wiki.{train,valid,test}.tokens, or wikitext-2-v1.zip, under root)."""

    _archive = "wikitext-2-v1.zip"

    def __init__(self, root=os.path.join(data_dir(), "datasets", "wikitext-2"), segment="train", vocab=None,
                 seq_len=35):
        super(WikiText2, self).__init__(root, segment, vocab, seq_len)


class WikiText103(_WikiText):
    """WikiText-103 (wiki.{train,valid,test}.tokens, or wikitext-103-v1.zip, under root)."""

    _archive = "wikitext-103-v1.zip"

    def __init__(self, root=os.path.join(data_dir(), "datasets", "wikitext-103"), segment="train", vocab=None,
                 seq_len=35):
        super(WikiText103, self).__init__(root, segment, vocab, seq_len)
