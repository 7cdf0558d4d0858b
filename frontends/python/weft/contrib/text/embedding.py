"""Token embeddings, as MXNet 1.9's `mx.contrib.text.embedding`: a Vocabulary whose every
index also has a vector (`idx_to_vec`, an NDArray of shape (len(vocabulary), vec_len)).

Vectors come from a text file of lines `token v1 v2 ... vk` (`CustomEmbedding`), from the
pretrained GloVe and fastText files (`GloVe`, `FastText`, or `create(name, ...)`), or are
concatenated from several embeddings over one vocabulary (`CompositeEmbedding`). Index 0 is
the unknown token: its vector is the file's when the file has the unknown token, otherwise
`init_unknown_vec(shape=vec_len)`.

Pretrained files are looked for at `embedding_root/<glove|fasttext>/<file name>` (an archive
of MXNet's there is unpacked first) and checked against MXNet's SHA-1. A file that is absent
is downloaded from MXNet's server ($MXNET_GLUON_REPO overrides it) through
`gluon.utils.download`; where there is no network that fails with an error that names the
URL and where to put the file by hand.
"""
import io
import logging
import os
import tarfile
import warnings
import zipfile

import numpy as np

from ... import base
from ... import ndarray as nd
from ...gluon.utils import check_sha1, download
from . import _pretrained
from .vocab import Vocabulary
from ...gluon.contrib.data._vocab import CheckError

__all__ = ["register", "create", "get_pretrained_file_names", "GloVe", "FastText", "CustomEmbedding",
           "CompositeEmbedding", "TokenEmbedding"]

UNKNOWN_IDX = 0

_REGISTRY = {}


def register(embedding_cls):
    """Class decorator: makes `embedding_cls` (a _TokenEmbedding subclass) known to create()
    and get_pretrained_file_names() under its lower-cased class name."""
    if not (isinstance(embedding_cls, type) and issubclass(embedding_cls, _TokenEmbedding)):
        raise TypeError("embedding.register: expected a subclass of _TokenEmbedding, got %r" % (embedding_cls,))
    name = embedding_cls.__name__.lower()
    if name in _REGISTRY and _REGISTRY[name] is not embedding_cls:
        warnings.warn("embedding.register: %s replaces %s as token embedding %r"
                      % (embedding_cls, _REGISTRY[name], name), stacklevel=2)
    _REGISTRY[name] = embedding_cls
    return embedding_cls


def create(embedding_name, **kwargs):
    """An instance of the registered embedding `embedding_name` (case-insensitive), built
    with kwargs (e.g. pretrained_file_name, embedding_root, vocabulary)."""
    name = embedding_name.lower() if isinstance(embedding_name, str) else embedding_name
    if name not in _REGISTRY:
        raise KeyError("embedding.create: no token embedding named %r; registered: %s"
                       % (embedding_name, ", ".join(sorted(_REGISTRY))))
    return _REGISTRY[name](**kwargs)


def get_pretrained_file_names(embedding_name=None):
    """The pretrained file names of embedding `embedding_name`, or, with None, a dict of them
    for every registered embedding."""
    if embedding_name is None:
        return {name: list(cls.pretrained_file_name_sha1) for name, cls in _REGISTRY.items()}
    if embedding_name not in _REGISTRY:
        raise KeyError("embedding.get_pretrained_file_names: no token embedding named %r; registered: %s"
                       % (embedding_name, ", ".join(sorted(_REGISTRY))))
    return list(_REGISTRY[embedding_name].pretrained_file_name_sha1)


class _TokenEmbedding(Vocabulary):
    """The base of the token embeddings: a Vocabulary (built from kwargs: unknown_token,
    reserved_tokens, ...) with `vec_len` and `idx_to_vec`."""

    pretrained_file_name_sha1 = {}

    def __init__(self, **kwargs):
        super(_TokenEmbedding, self).__init__(**kwargs)
        self._vec_len = None
        self._idx_to_vec = None

    @property
    def vec_len(self):
        return self._vec_len

    @property
    def idx_to_vec(self):
        return self._idx_to_vec

    # --- pretrained files -------------------------------------------------------------
    @classmethod
    def _get_download_file_name(cls, pretrained_file_name):
        return pretrained_file_name

    @classmethod
    def _get_pretrained_file_url(cls, pretrained_file_name):
        repo = os.environ.get("MXNET_GLUON_REPO", _pretrained.REPO_URL)
        if not repo.endswith("/"):
            repo += "/"
        return "%sgluon/embeddings/%s/%s" % (repo, cls.__name__.lower(), cls._get_download_file_name(pretrained_file_name))

    @classmethod
    def _check_pretrained_file_names(cls, pretrained_file_name):
        if pretrained_file_name not in cls.pretrained_file_name_sha1:
            name = cls.__name__.lower()
            raise KeyError("%s: no pretrained file %r; the files of %s are: %s"
                           % (cls.__name__, pretrained_file_name, name, ", ".join(sorted(cls.pretrained_file_name_sha1))))

    @classmethod
    def _get_pretrained_file(cls, embedding_root, pretrained_file_name):
        """The path of the checked pretrained file, unpacking or downloading its archive when
        the file is not there."""
        folder = os.path.join(os.path.expanduser(embedding_root), cls.__name__.lower())
        path = os.path.join(folder, pretrained_file_name)
        file_sha1 = cls.pretrained_file_name_sha1[pretrained_file_name]
        if os.path.isfile(path) and check_sha1(path, file_sha1):
            return path
        url = cls._get_pretrained_file_url(pretrained_file_name)
        archive_name = cls._get_download_file_name(pretrained_file_name)
        archive = os.path.join(folder, archive_name)
        archive_sha1 = getattr(cls, "pretrained_archive_name_sha1", {}).get(archive_name, file_sha1)
        try:
            download(url, archive, sha1_hash=archive_sha1, retries=0)
        except RuntimeError as e:
            state = "has a different SHA-1 than MXNet's %s" % file_sha1 if os.path.isfile(path) else "is absent"
            raise RuntimeError("%s: the pretrained file %s %s and it could not be downloaded from %s: %s. Put the "
                               "file (or its archive %s) in %s." % (cls.__name__, path, state, url, e, archive_name,
                                                                    folder)) from None
        if archive != path:
            _unpack(archive, folder)
        if not (os.path.isfile(path) and check_sha1(path, file_sha1)):
            raise RuntimeError("%s: the archive %s did not give %s with MXNet's SHA-1 %s"
                               % (cls.__name__, archive, path, file_sha1))
        return path

    # --- loading vectors --------------------------------------------------------------
    def _load_embedding(self, pretrained_file_path, elem_delim, init_unknown_vec, encoding="utf8"):
        """Indexes every token of the file after the vocabulary's current tokens and sets
        idx_to_vec (reserved tokens that the file lacks get zeros). A token seen again is skipped with a warning, as is a line with a single
        number (fastText's "count dim" header); vectors of different lengths are an error."""
        path = os.path.expanduser(pretrained_file_path)
        if not os.path.isfile(path):
            raise ValueError("%s: pretrained_file_path %r is not a file" % (type(self).__name__, pretrained_file_path))
        logging.info("Loading token embedding vectors from %s", path)
        known = {t: None for t in self._idx_to_token}
        vectors = []
        with io.open(path, "r", encoding=encoding) as f:
            for line_num, line in enumerate(f, 1):
                fields = line.rstrip().split(elem_delim)
                if len(fields) < 2:
                    raise CheckError("%s: line %d of %s is not 'token%svalue...': %r"
                                     % (type(self).__name__, line_num, path, elem_delim, line.rstrip()[:80]))
                token = fields[0]
                try:
                    vec = [float(v) for v in fields[1:]]
                except ValueError:
                    raise ValueError("%s: line %d of %s has a value that is not a number"
                                     % (type(self).__name__, line_num, path)) from None
                if len(vec) == 1:
                    warnings.warn("%s: line %d of %s (token %r with one value) looks like a header and is skipped"
                                  % (type(self).__name__, line_num, path, token))
                    continue
                if vectors and len(vec) != len(vectors[0]):
                    raise CheckError("%s: line %d of %s: token %r has %d values, the tokens before it %d"
                                     % (type(self).__name__, line_num, path, token, len(vec), len(vectors[0])))
                if token in known and known[token] is not None:
                    warnings.warn("%s: line %d of %s repeats token %r; its first vector is kept"
                                  % (type(self).__name__, line_num, path, token))
                    continue
                known[token] = len(vectors)
                vectors.append(vec)
                if token not in self._token_to_idx:
                    self._token_to_idx[token] = len(self._idx_to_token)
                    self._idx_to_token.append(token)
        if not vectors:
            raise ValueError("%s: %s holds no token vectors" % (type(self).__name__, path))
        self._vec_len = len(vectors[0])
        table = np.zeros((len(self._idx_to_token), self._vec_len), dtype=np.float32)
        for token, row in known.items():
            if row is not None:
                table[self._token_to_idx[token]] = vectors[row]
        self._idx_to_vec = nd.array(table)
        if known.get(self.unknown_token) is None:
            self._idx_to_vec[UNKNOWN_IDX] = init_unknown_vec(shape=self._vec_len)

    def _index_tokens_from_vocabulary(self, vocabulary):
        self._token_to_idx = dict(vocabulary.token_to_idx)
        self._idx_to_token = list(vocabulary.idx_to_token)
        self._unknown_token = vocabulary.unknown_token
        self._reserved_tokens = list(vocabulary.reserved_tokens) if vocabulary.reserved_tokens is not None else None

    def _set_idx_to_vec_by_embeddings(self, token_embeddings, vocab_len, vocab_idx_to_token):
        """idx_to_vec for the tokens vocab_idx_to_token: the embeddings' vectors side by side
        (each embedding's unknown vector for index 0 and for tokens it does not know)."""
        parts = []
        for embed in token_embeddings:
            part = np.empty((vocab_len, embed.vec_len), dtype=np.float32)
            part[0] = embed.idx_to_vec[UNKNOWN_IDX].asnumpy()
            if vocab_len > 1:
                part[1:] = embed.get_vecs_by_tokens(list(vocab_idx_to_token[1:])).asnumpy()
            parts.append(part)
        table = np.concatenate(parts, axis=1)
        self._vec_len = table.shape[1]
        self._idx_to_vec = nd.array(table)

    def _build_embedding_for_vocabulary(self, vocabulary):
        if vocabulary is None:
            return
        if not isinstance(vocabulary, Vocabulary):
            raise TypeError("%s: vocabulary must be a Vocabulary, got %s"
                            % (type(self).__name__, type(vocabulary).__name__))
        self._set_idx_to_vec_by_embeddings([self], len(vocabulary), vocabulary.idx_to_token)
        self._index_tokens_from_vocabulary(vocabulary)

    # --- lookups and updates ----------------------------------------------------------
    def get_vecs_by_tokens(self, tokens, lower_case_backup=False):
        """The vector (vec_len,) of a token, or the vectors (n, vec_len) of a list of tokens;
        unknown tokens get the unknown vector. With lower_case_backup, a token not found is
        looked up again in lower case."""
        single = not isinstance(tokens, list)
        if single:
            tokens = [tokens]
        if lower_case_backup:
            indices = [self._token_to_idx[t] if t in self._token_to_idx
                       else self._token_to_idx.get(t.lower(), UNKNOWN_IDX) for t in tokens]
        else:
            indices = [self._token_to_idx.get(t, UNKNOWN_IDX) for t in tokens]
        vecs = nd.Embedding(nd.array(indices), self._idx_to_vec, input_dim=self._idx_to_vec.shape[0],
                            output_dim=self._idx_to_vec.shape[1])
        return vecs[0] if single else vecs

    def update_token_vectors(self, tokens, new_vectors):
        """Sets the vectors of known tokens (a token, or a list) to new_vectors (an NDArray of
        shape (len(tokens), vec_len), or (vec_len,) for one token). An unknown token is an
        error unless it is the unknown token itself."""
        if self._idx_to_vec is None:
            raise ValueError("%s: idx_to_vec is not set" % type(self).__name__)
        if not isinstance(new_vectors, nd.NDArray):
            raise TypeError("update_token_vectors: new_vectors must be an NDArray, got %s"
                            % type(new_vectors).__name__)
        if not isinstance(tokens, list):
            tokens = [tokens]
        if len(tokens) == 1 and new_vectors.ndim == 1:
            new_vectors = new_vectors.reshape((1, -1))
        if new_vectors.shape != (len(tokens), self._vec_len):
            raise CheckError("update_token_vectors: expected new_vectors of shape %s (tokens, vec_len), got %s"
                             % ((len(tokens), self._vec_len), new_vectors.shape))
        for token in tokens:
            if token not in self._token_to_idx:
                raise ValueError("update_token_vectors: token %r is unknown; to update the unknown vector, name "
                                 "the unknown token %r itself" % (token, self._idx_to_token[UNKNOWN_IDX]))
        for row, token in enumerate(tokens):
            self._idx_to_vec[self._token_to_idx[token]] = new_vectors[row]


TokenEmbedding = _TokenEmbedding


def _unpack(archive, folder):
    if archive.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            for name in zf.namelist():
                _check_member(name, folder, archive)
            zf.extractall(folder)
    elif archive.endswith((".tar.gz", ".tgz", ".gz")):
        with tarfile.open(archive, "r:gz") as tf:
            for member in tf.getmembers():
                _check_member(member.name, folder, archive)
            tf.extractall(folder)


def _check_member(name, folder, archive):
    # an archive is outside input: a member may not write outside the embedding folder
    target = os.path.realpath(os.path.join(folder, name))
    if not target.startswith(os.path.realpath(folder) + os.sep):
        raise ValueError("embedding: archive %s has a member %r outside its folder" % (archive, name))


_DEFAULT_ROOT = os.path.join(base.data_dir(), "embeddings")


@register
class GloVe(_TokenEmbedding):
    """GloVe word vectors (https://nlp.stanford.edu/projects/glove/, PDDL licence):
    `pretrained_file_name` one of get_pretrained_file_names('glove'), under
    `embedding_root`/glove; `vocabulary`: index only its tokens (None: every token of the
    file)."""

    pretrained_archive_name_sha1 = _pretrained.GLOVE_ARCHIVES
    pretrained_file_name_sha1 = _pretrained.GLOVE_FILES

    @classmethod
    def _get_download_file_name(cls, pretrained_file_name):
        # glove.<corpus>.<dim>d.txt comes in glove.<corpus>[.<dim>d].zip
        corpus = pretrained_file_name.split(".")[1]
        for archive in cls.pretrained_archive_name_sha1:
            if archive.split(".")[1] == corpus:
                return archive
        return pretrained_file_name

    def __init__(self, pretrained_file_name="glove.840B.300d.txt", embedding_root=_DEFAULT_ROOT,
                 init_unknown_vec=nd.zeros, vocabulary=None, **kwargs):
        GloVe._check_pretrained_file_names(pretrained_file_name)
        super(GloVe, self).__init__(**kwargs)
        path = GloVe._get_pretrained_file(embedding_root, pretrained_file_name)
        self._load_embedding(path, " ", init_unknown_vec)
        self._build_embedding_for_vocabulary(vocabulary)


@register
class FastText(_TokenEmbedding):
    """fastText word vectors (https://fasttext.cc/, CC BY-SA 3.0): `pretrained_file_name` one
    of get_pretrained_file_names('fasttext'), under `embedding_root`/fasttext."""

    pretrained_archive_name_sha1 = _pretrained.FASTTEXT_ARCHIVES
    pretrained_file_name_sha1 = _pretrained.FASTTEXT_FILES

    @classmethod
    def _get_download_file_name(cls, pretrained_file_name):
        return pretrained_file_name.rsplit(".", 1)[0] + ".zip"

    def __init__(self, pretrained_file_name="wiki.simple.vec", embedding_root=_DEFAULT_ROOT,
                 init_unknown_vec=nd.zeros, vocabulary=None, **kwargs):
        FastText._check_pretrained_file_names(pretrained_file_name)
        super(FastText, self).__init__(**kwargs)
        path = FastText._get_pretrained_file(embedding_root, pretrained_file_name)
        self._load_embedding(path, " ", init_unknown_vec)
        self._build_embedding_for_vocabulary(vocabulary)


class CustomEmbedding(_TokenEmbedding):
    """Vectors from the user's file of lines `token<elem_delim>v1<elem_delim>...vk`."""

    def __init__(self, pretrained_file_path, elem_delim=" ", encoding="utf8", init_unknown_vec=nd.zeros,
                 vocabulary=None, **kwargs):
        super(CustomEmbedding, self).__init__(**kwargs)
        self._load_embedding(pretrained_file_path, elem_delim, init_unknown_vec, encoding)
        self._build_embedding_for_vocabulary(vocabulary)


class CompositeEmbedding(_TokenEmbedding):
    """The tokens of `vocabulary`, each with the vectors of token_embeddings (one embedding
    or a list) concatenated in order."""

    def __init__(self, vocabulary, token_embeddings):
        if not isinstance(vocabulary, Vocabulary):
            raise TypeError("CompositeEmbedding: vocabulary must be a Vocabulary, got %s" % type(vocabulary).__name__)
        if not isinstance(token_embeddings, list):
            token_embeddings = [token_embeddings]
        for embed in token_embeddings:
            if not isinstance(embed, _TokenEmbedding):
                raise TypeError("CompositeEmbedding: token_embeddings must be token embeddings, got %s"
                                % type(embed).__name__)
        self._index_tokens_from_vocabulary(vocabulary)
        self._set_idx_to_vec_by_embeddings(token_embeddings, len(self), self.idx_to_token)
