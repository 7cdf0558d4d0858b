"""MXNet 1.9's contrib.text vocabulary/token counting and gluon.contrib.data's WikiText data
sets, read from local token files (or the zip archive), against hand-built expectations."""
import collections
import zipfile

import numpy as np
import pytest

import weft as mx
from weft.contrib.text import utils, vocab
from weft.gluon.contrib.data import WikiText2, WikiText103


def test_count_tokens():
    c = utils.count_tokens_from_str(" Life is great ! \n life is good . \n", " ", "\n", True)
    assert c == collections.Counter({"life": 2, "is": 2, "great": 1, "!": 1, "good": 1, ".": 1})
    c2 = utils.count_tokens_from_str("*a*b*\n*a*", r"\*", "\n", counter_to_update=collections.Counter({"a": 1}))
    assert c2 == collections.Counter({"a": 3, "b": 1})


def test_vocabulary_order_caps_and_lookup():
    counter = collections.Counter({"b": 3, "a": 3, "c": 2, "d": 1, "<pad>": 5})
    v = vocab.Vocabulary(counter, reserved_tokens=["<pad>"])
    assert v.idx_to_token == ["<unk>", "<pad>", "a", "b", "c", "d"]   # frequency, then token order
    v2 = vocab.Vocabulary(counter, most_freq_count=2, min_freq=2, unknown_token="?")
    assert v2.idx_to_token == ["?", "<pad>", "a"] and len(v2) == 3
    assert v.to_indices(["c", "zzz"]) == [4, 0] and v.to_indices("a") == 2
    assert v.to_tokens([5, 1]) == ["d", "<pad>"] and v.to_tokens(3) == "b"
    with pytest.raises(ValueError, match="invalid"):
        v.to_tokens(6)
    with pytest.raises(ValueError, match="duplicates"):
        vocab.Vocabulary(reserved_tokens=["x", "x"])
    with pytest.raises(ValueError, match="unknown token"):
        vocab.Vocabulary(reserved_tokens=["<unk>"])


TEXT = " = Title = \n\n the cat sat \n the dog \n"


def _expected(seq_len):
    tokens = ["=", "Title", "=", "<eos>", "the", "cat", "sat", "<eos>", "the", "dog", "<eos>"]
    counter = collections.Counter(["=", "Title", "=", "the", "cat", "sat", "the", "dog"])
    v = vocab.Vocabulary(counter, reserved_tokens=["<eos>"])
    ids = np.array(v.to_indices(tokens))
    n = (len(ids) - 1) // seq_len * seq_len
    return v, ids[:n].reshape(-1, seq_len), ids[1:n + 1].reshape(-1, seq_len)


def test_wikitext2_from_token_file(tmp_path):
    (tmp_path / "wiki.valid.tokens").write_text(TEXT, encoding="utf8")
    ds = WikiText2(root=str(tmp_path), segment="validation", seq_len=3)
    v, data, label = _expected(3)
    assert ds.vocabulary.idx_to_token == v.idx_to_token
    assert ds.frequencies["the"] == 2
    assert len(ds) == 3
    for i in range(3):
        d, l = ds[i]
        np.testing.assert_array_equal(d.asnumpy(), data[i])
        np.testing.assert_array_equal(l.asnumpy(), label[i])
    # a given vocabulary is used as it is
    fixed = vocab.Vocabulary(collections.Counter({"the": 1}), reserved_tokens=["<eos>"])
    ds2 = WikiText2(root=str(tmp_path), segment="validation", vocab=fixed, seq_len=5)
    assert ds2.vocabulary is fixed
    np.testing.assert_array_equal(ds2[0][0].asnumpy(), [0, 0, 0, 1, 2])


def test_wikitext103_from_archive_and_errors(tmp_path):
    with zipfile.ZipFile(str(tmp_path / "wikitext-103-v1.zip"), "w") as zf:
        zf.writestr("wikitext-103/wiki.test.tokens", TEXT)
    ds = WikiText103(root=str(tmp_path), segment="test", seq_len=2)
    _, data, _ = _expected(2)
    assert len(ds) == 5
    np.testing.assert_array_equal(ds[4][0].asnumpy(), data[4])
    with pytest.raises(FileNotFoundError, match="wiki.train.tokens' not found"):
        WikiText103(root=str(tmp_path / "none"))
    with pytest.raises(ValueError, match="segment"):
        WikiText2(root=str(tmp_path), segment="dev")
    assert mx.contrib.text.vocab.Vocabulary is vocab.Vocabulary
