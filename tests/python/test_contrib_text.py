"""weft.contrib.text.embedding: token embeddings from files written here (custom, and GloVe /
fastText files placed under embedding_root as MXNet's would be), composites over a
vocabulary, lookups and updates, and the errors when a pretrained file is missing."""
import collections
import hashlib
import os
import zipfile

import numpy as np
import pytest

import weft as mx
from weft.contrib.text import embedding, vocab

VECS = {"the": [0.5, 0.25, -0.75], "cat": [1.0, -1.0, 0.5], "Sat": [2.0, 0.0, -2.0], "mat": [0.0, 4.0, 1.5]}


def write_vectors(path, rows, delim=" ", header=None):
    with open(path, "w", encoding="utf8") as f:
        if header:
            f.write(header + "\n")
        for token, vec in rows:
            f.write(delim.join([token] + ["%r" % v for v in vec]) + "\n")
    return str(path)


def sha1(path):
    with open(path, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()


def test_custom_embedding_lookup(tmp_path):
    path = write_vectors(tmp_path / "v.txt", list(VECS.items()), delim="\t")
    emb = embedding.CustomEmbedding(path, elem_delim="\t")
    assert emb.vec_len == 3 and len(emb) == 5
    assert emb.idx_to_token == ["<unk>", "the", "cat", "Sat", "mat"]
    assert emb.token_to_idx["mat"] == 4
    want = np.array([[0, 0, 0]] + list(VECS.values()), dtype=np.float32)
    np.testing.assert_array_equal(emb.idx_to_vec.asnumpy(), want)
    np.testing.assert_array_equal(emb.get_vecs_by_tokens("cat").asnumpy(), VECS["cat"])
    got = emb.get_vecs_by_tokens(["mat", "dog", "sat"]).asnumpy()
    np.testing.assert_array_equal(got, [VECS["mat"], [0, 0, 0], [0, 0, 0]])
    got = emb.get_vecs_by_tokens(["SAT", "Sat", "THE"], lower_case_backup=True).asnumpy()
    np.testing.assert_array_equal(got, [[0, 0, 0], VECS["Sat"], VECS["the"]])
    assert emb.to_indices(["cat", "dog"]) == [2, 0]


def test_unknown_token_vector_from_file_or_init(tmp_path):
    rows = [("<unk>", [9.0, 8.0, 7.0])] + list(VECS.items())
    emb = embedding.CustomEmbedding(write_vectors(tmp_path / "u.txt", rows))
    np.testing.assert_array_equal(emb.get_vecs_by_tokens("nothing").asnumpy(), [9, 8, 7])
    assert emb.idx_to_token[0] == "<unk>" and len(emb) == 5
    emb = embedding.CustomEmbedding(write_vectors(tmp_path / "v.txt", list(VECS.items())), init_unknown_vec=mx.nd.ones)
    np.testing.assert_array_equal(emb.idx_to_vec[0].asnumpy(), [1, 1, 1])
    emb = embedding.CustomEmbedding(str(tmp_path / "u.txt"), unknown_token="?")
    # "<unk>" is then an ordinary token and "?" gets init_unknown_vec's zeros
    assert emb.idx_to_token[:2] == ["?", "<unk>"]
    np.testing.assert_array_equal(emb.get_vecs_by_tokens("<unk>").asnumpy(), [9, 8, 7])
    np.testing.assert_array_equal(emb.get_vecs_by_tokens("zzz").asnumpy(), [0, 0, 0])


def test_file_format_warnings_and_errors(tmp_path):
    rows = list(VECS.items()) + [("cat", [5.0, 5.0, 5.0])]
    with pytest.warns(UserWarning, match="repeats token 'cat'"):
        emb = embedding.CustomEmbedding(write_vectors(tmp_path / "d.txt", rows))
    np.testing.assert_array_equal(emb.get_vecs_by_tokens("cat").asnumpy(), VECS["cat"])
    with pytest.warns(UserWarning, match="header"):
        emb = embedding.CustomEmbedding(write_vectors(tmp_path / "h.txt", list(VECS.items()), header="4 3"))
    assert len(emb) == 5
    bad = write_vectors(tmp_path / "b.txt", [("a", [1.0, 2.0]), ("b", [1.0, 2.0, 3.0])])
    with pytest.raises(ValueError, match="token 'b' has 3 values, the tokens before it 2"):
        embedding.CustomEmbedding(bad)
    with pytest.raises(ValueError, match="not a file"):
        embedding.CustomEmbedding(str(tmp_path / "absent.txt"))
    (tmp_path / "n.txt").write_text("a 1.0 x\n")
    with pytest.raises(ValueError, match="line 1 .* not a number"):
        embedding.CustomEmbedding(str(tmp_path / "n.txt"))


def test_embedding_over_vocabulary_and_reserved(tmp_path):
    path = write_vectors(tmp_path / "v.txt", list(VECS.items()))
    counter = collections.Counter(["cat", "cat", "dog", "the", "the", "the"])
    voc = vocab.Vocabulary(counter, reserved_tokens=["<pad>"])
    emb = embedding.CustomEmbedding(path, vocabulary=voc, init_unknown_vec=mx.nd.ones)
    assert emb.idx_to_token == voc.idx_to_token == ["<unk>", "<pad>", "the", "cat", "dog"]
    assert emb.reserved_tokens == ["<pad>"]
    want = np.array([[1, 1, 1], [1, 1, 1], VECS["the"], VECS["cat"], [1, 1, 1]], dtype=np.float32)
    np.testing.assert_array_equal(emb.idx_to_vec.asnumpy(), want)
    # reserved tokens without a vector in the file get zeros when the file is indexed as a whole
    emb2 = embedding.CustomEmbedding(path, reserved_tokens=["<pad>"])
    assert emb2.idx_to_token[:2] == ["<unk>", "<pad>"] and emb2.idx_to_vec.shape == (6, 3)
    np.testing.assert_array_equal(emb2.get_vecs_by_tokens("<pad>").asnumpy(), [0, 0, 0])
    np.testing.assert_array_equal(emb2.get_vecs_by_tokens("mat").asnumpy(), VECS["mat"])


def test_composite_embedding(tmp_path):
    a = embedding.CustomEmbedding(write_vectors(tmp_path / "a.txt", list(VECS.items())))
    b = embedding.CustomEmbedding(write_vectors(tmp_path / "b.txt", [("cat", [7.0, 7.0]), ("dog", [3.0, 4.0])]),
                                  init_unknown_vec=mx.nd.ones)
    voc = vocab.Vocabulary(collections.Counter(["dog", "cat", "cat", "mat"]))
    comp = embedding.CompositeEmbedding(voc, [a, b])
    assert comp.vec_len == 5 and comp.idx_to_token == ["<unk>", "cat", "dog", "mat"]
    want = np.array([[0, 0, 0, 1, 1],
                     VECS["cat"] + [7, 7],
                     [0, 0, 0, 3, 4],
                     VECS["mat"] + [1, 1]], dtype=np.float32)
    np.testing.assert_array_equal(comp.idx_to_vec.asnumpy(), want)
    single = embedding.CompositeEmbedding(voc, b)
    assert single.vec_len == 2
    with pytest.raises(TypeError, match="Vocabulary"):
        embedding.CompositeEmbedding(["cat"], a)
    with pytest.raises(TypeError, match="token embeddings"):
        embedding.CompositeEmbedding(voc, [a, "b"])


def test_update_token_vectors(tmp_path):
    emb = embedding.CustomEmbedding(write_vectors(tmp_path / "v.txt", list(VECS.items())))
    emb.update_token_vectors("cat", mx.nd.array([3, 3, 3]))
    emb.update_token_vectors(["the", "mat"], mx.nd.array([[1, 2, 3], [4, 5, 6]]))
    emb.update_token_vectors(["<unk>"], mx.nd.array([[-1, -1, -1]]))
    want = np.array([[-1, -1, -1], [1, 2, 3], [3, 3, 3], VECS["Sat"], [4, 5, 6]], dtype=np.float32)
    np.testing.assert_array_equal(emb.idx_to_vec.asnumpy(), want)
    np.testing.assert_array_equal(emb.get_vecs_by_tokens("unseen").asnumpy(), [-1, -1, -1])
    with pytest.raises(ValueError, match="token 'dog' is unknown.*'<unk>'"):
        emb.update_token_vectors("dog", mx.nd.array([1, 2, 3]))
    with pytest.raises(ValueError, match=r"expected new_vectors of shape \(2, 3\)"):
        emb.update_token_vectors(["the", "cat"], mx.nd.array([1, 2, 3]))
    with pytest.raises(TypeError, match="NDArray"):
        emb.update_token_vectors("the", [1, 2, 3])


def test_registry_and_pretrained_names():
    names = embedding.get_pretrained_file_names()
    assert {"glove", "fasttext"} <= set(names)
    assert "glove.6B.50d.txt" in names["glove"] and "wiki.simple.vec" in names["fasttext"]
    assert len(embedding.get_pretrained_file_names("glove")) == 10
    assert "crawl-300d-2M.vec" in embedding.get_pretrained_file_names("fasttext")
    with pytest.raises(KeyError, match="no token embedding named 'word2vec'"):
        embedding.get_pretrained_file_names("word2vec")
    with pytest.raises(KeyError, match="no token embedding named"):
        embedding.create("word2vec")
    with pytest.raises(KeyError, match="no pretrained file 'glove.7B.txt'"):
        embedding.create("GloVe", pretrained_file_name="glove.7B.txt")

    @embedding.register
    class MyEmbed(embedding._TokenEmbedding):
        pretrained_file_name_sha1 = {"mine.txt": "0" * 40}

        def __init__(self, scale=1):
            super(MyEmbed, self).__init__()
            self.scale = scale

    made = embedding.create("myembed", scale=3)
    assert isinstance(made, MyEmbed) and made.scale == 3
    assert embedding.get_pretrained_file_names("myembed") == ["mine.txt"]
    with pytest.raises(TypeError, match="_TokenEmbedding"):
        embedding.register(dict)


def test_pretrained_glove_from_local_file(tmp_path, monkeypatch):
    folder = tmp_path / "glove"
    folder.mkdir()
    path = write_vectors(folder / "glove.6B.50d.txt", list(VECS.items()))
    monkeypatch.setitem(embedding.GloVe.pretrained_file_name_sha1, "glove.6B.50d.txt", sha1(path))
    emb = embedding.create("glove", pretrained_file_name="glove.6B.50d.txt", embedding_root=str(tmp_path))
    assert isinstance(emb, embedding.GloVe) and emb.vec_len == 3
    np.testing.assert_array_equal(emb.get_vecs_by_tokens("mat").asnumpy(), VECS["mat"])
    voc = vocab.Vocabulary(collections.Counter(["mat", "zebra"]))
    emb = embedding.GloVe("glove.6B.50d.txt", embedding_root=str(tmp_path), vocabulary=voc)
    assert emb.idx_to_token == ["<unk>", "mat", "zebra"]
    np.testing.assert_array_equal(emb.idx_to_vec.asnumpy(), [[0, 0, 0], VECS["mat"], [0, 0, 0]])


def test_pretrained_fasttext_from_local_archive(tmp_path, monkeypatch):
    folder = tmp_path / "fasttext"
    folder.mkdir()
    vec = write_vectors(tmp_path / "wiki.simple.vec", list(VECS.items()), header="4 3")
    archive = str(folder / "wiki.simple.zip")
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(vec, "wiki.simple.vec")
    monkeypatch.setitem(embedding.FastText.pretrained_file_name_sha1, "wiki.simple.vec", sha1(vec))
    monkeypatch.setitem(embedding.FastText.pretrained_archive_name_sha1, "wiki.simple.zip", sha1(archive))
    # no network: the archive is there, so nothing is fetched
    monkeypatch.setenv("MXNET_GLUON_REPO", "file://" + str(tmp_path / "no-such-server") + "/")
    with pytest.warns(UserWarning, match="header"):
        emb = embedding.FastText(embedding_root=str(tmp_path))
    assert os.path.isfile(str(folder / "wiki.simple.vec"))
    np.testing.assert_array_equal(emb.get_vecs_by_tokens("Sat").asnumpy(), VECS["Sat"])


def test_pretrained_missing_names_the_url(tmp_path, monkeypatch):
    repo = "file://" + str(tmp_path / "no-such-server") + "/"
    monkeypatch.setenv("MXNET_GLUON_REPO", repo)
    with pytest.raises(RuntimeError) as err:
        embedding.GloVe("glove.twitter.27B.25d.txt", embedding_root=str(tmp_path))
    msg = str(err.value)
    assert repo + "gluon/embeddings/glove/glove.twitter.27B.zip" in msg
    assert "is absent" in msg and os.path.join(str(tmp_path), "glove") in msg
    # a file that is there but is not MXNet's is named as such
    folder = tmp_path / "fasttext"
    folder.mkdir()
    write_vectors(folder / "wiki.en.vec", list(VECS.items()))
    with pytest.raises(RuntimeError, match=r"different SHA-1 .* %sgluon/embeddings/fasttext/wiki\.en\.zip"
                       % repo.replace(".", r"\.")):
        embedding.create("fasttext", pretrained_file_name="wiki.en.vec", embedding_root=str(tmp_path))
    assert embedding.GloVe._get_pretrained_file_url("glove.840B.300d.txt") == \
        repo + "gluon/embeddings/glove/glove.840B.300d.zip"
    monkeypatch.delenv("MXNET_GLUON_REPO")
    assert embedding.FastText._get_pretrained_file_url("crawl-300d-2M.vec").startswith(
        "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/gluon/embeddings/fasttext/crawl-300d-2M.zip")


def test_archive_member_outside_folder_is_refused(tmp_path, monkeypatch):
    folder = tmp_path / "fasttext"
    folder.mkdir()
    archive = str(folder / "wiki.simple.zip")
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("../evil.vec", "a 1 2\n")
    monkeypatch.setitem(embedding.FastText.pretrained_archive_name_sha1, "wiki.simple.zip", sha1(archive))
    with pytest.raises(ValueError, match="outside its folder"):
        embedding.FastText(embedding_root=str(tmp_path))
    assert not (tmp_path / "evil.vec").exists()


def test_namespace():
    assert mx.contrib.text.embedding is embedding
    assert embedding.TokenEmbedding is embedding._TokenEmbedding
    assert issubclass(embedding.GloVe, vocab.Vocabulary)
