"""Helpers of MXNet 1.x's `gluon.utils`."""
import collections
import hashlib
import os
import ssl
import urllib.error
import urllib.request
import uuid
import warnings
import weakref

import numpy as np

from .. import ndarray as nd

__all__ = ["split_data", "split_and_load", "clip_global_norm", "check_sha1", "download", "replace_file",
           "shape_is_known", "HookHandle"]


def split_data(data, num_slice, batch_axis=0, even_split=True):
    """Splits `data` into num_slice parts along batch_axis."""
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise ValueError("split_data: data with shape %s cannot be split evenly into %d slices along axis %d; "
                         "use a batch size divisible by the number of contexts or even_split=False"
                         % (data.shape, num_slice, batch_axis))
    if size < num_slice:
        raise ValueError("split_data: %d samples cannot be split into %d slices" % (size, num_slice))
    # Uneven splits give the first size % num_slice slices one element more, as numpy's
    # array_split (and MXNet) do.
    each, extra = divmod(size, num_slice)
    bounds = np.cumsum([0] + [each + 1] * extra + [each] * (num_slice - extra)).tolist()
    if batch_axis == 0:
        return [data[bounds[i]:bounds[i + 1]] for i in range(num_slice)]
    return [nd.slice_axis(data, axis=batch_axis, begin=bounds[i], end=bounds[i + 1]) for i in range(num_slice)]


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    """Splits `data` along batch_axis and puts one part on each context."""
    if not isinstance(data, nd.NDArray):
        data = nd.array(np.asarray(data), ctx=ctx_list[0])
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    parts = split_data(data, len(ctx_list), batch_axis, even_split)
    return [p.as_in_context(c) for p, c in zip(parts, ctx_list)]


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Scales `arrays` in place so that their joint 2-norm is at most max_norm; returns the norm."""
    if not arrays:
        raise ValueError("clip_global_norm: no arrays given")
    total = 0.0
    for a in arrays:
        total += float(nd.sum(nd.square(a)).asscalar())
    norm = float(np.sqrt(total))
    if check_isfinite and not np.isfinite(norm):
        import warnings
        warnings.warn("clip_global_norm: the norm is not finite; the arrays are left unchanged", stacklevel=2)
        return norm
    scale = max_norm / (norm + 1e-8)
    if scale < 1.0:
        for a in arrays:
            a *= scale
    return norm


def check_sha1(filename, sha1_hash):
    """Whether the SHA-1 of the file `filename` is `sha1_hash` (40 hex digits, either case)."""
    sha1 = hashlib.sha1()
    with open(filename, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            sha1.update(chunk)
    return sha1.hexdigest() == sha1_hash.lower()


def replace_file(src, dst):
    """Moves `src` over `dst` atomically (dst may exist)."""
    os.replace(src, dst)


def download(url, path=None, overwrite=False, sha1_hash=None, retries=5, verify_ssl=True):
    """Downloads `url` to `path` and returns the file's name.

    `path` is a file name or an existing folder (the URL's last part is the name); None is
    that name in the current folder. A file already there is kept, not downloaded again,
    unless `overwrite`, or `sha1_hash` is given and the file's SHA-1 differs. The bytes go to
    a temporary file renamed at the end, so an interrupted download leaves no partial file.
    `retries` more attempts follow a failed one; when all fail, the error names the URL.
    """
    if path is None:
        fname = url.split("/")[-1]
        if not fname:
            raise ValueError("download: cannot name the file from the URL '%s'; give `path`" % url)
    else:
        path = os.path.expanduser(os.fspath(path))
        fname = os.path.join(path, url.split("/")[-1]) if os.path.isdir(path) else path
    if not isinstance(retries, int) or retries < 0:
        raise ValueError("download: expected retries >= 0, got %r" % (retries,))
    if not verify_ssl:
        warnings.warn("download: the SSL certificate of '%s' will not be verified" % url, stacklevel=2)
    if not overwrite and os.path.exists(fname) and (sha1_hash is None or check_sha1(fname, sha1_hash)):
        return fname

    folder = os.path.dirname(os.path.abspath(fname))
    os.makedirs(folder, exist_ok=True)
    context = None
    if not verify_ssl:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    attempts = retries + 1
    last_error = None
    for _ in range(attempts):
        tmp = "%s.%s" % (fname, uuid.uuid4().hex)
        try:
            with urllib.request.urlopen(url, context=context, timeout=60) as response, open(tmp, "wb") as out:
                for chunk in iter(lambda: response.read(1 << 20), b""):
                    out.write(chunk)
            if sha1_hash and not check_sha1(tmp, sha1_hash):
                raise UserWarning("download: the file downloaded from '%s' has a SHA-1 hash that is not %s: the "
                                  "server may hold a different version, or the download was corrupted"
                                  % (url, sha1_hash))
            replace_file(tmp, fname)
            return fname
        except (urllib.error.URLError, OSError, ValueError) as e:
            last_error = e
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    raise RuntimeError("download: could not download '%s' to %s after %d attempt(s): %s (no network here, or "
                       "the URL is wrong; put the file at that path by hand to use it)"
                       % (url, fname, attempts, last_error))


def shape_is_known(shape):
    """Whether every dimension of `shape` is known (no 0 or -1; under NumPy shape
    semantics 0 is a real size)."""
    if shape is None:
        return False
    from ..util import is_np_shape
    unknown = -1 if is_np_shape() else 0
    if len(shape) == 0:
        return is_np_shape()
    return all(d != unknown and d != -1 for d in shape)


def _get_repo_url():
    """The base URL of the data sets and models Gluon downloads: $MXNET_GLUON_REPO, else
    MXNet's public repository; always ends with '/'."""
    url = os.environ.get("MXNET_GLUON_REPO", "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/")
    return url if url.endswith("/") else url + "/"


def _get_repo_file_url(namespace, filename):
    """The URL of `filename` under `namespace` in the Gluon repository."""
    return "%s%s/%s" % (_get_repo_url(), namespace, filename)


def _brief_print_list(lst, limit=7):
    """The elements of `lst`, quoted and comma-separated, with the middle elided past
    `limit` of them."""
    lst = list(lst)
    if len(lst) > limit:
        return _brief_print_list(lst[:limit // 2], limit) + ", ..., " + _brief_print_list(lst[-limit // 2:], limit)
    return ", ".join("'%s'" % str(i) for i in lst)


class HookHandle(object):
    """Attaches a hook to a dict of hooks (by the hook's id) and detaches it again, also
    on leaving a `with` block. The dict is held weakly: a handle does not keep its owner
    alive."""

    def __init__(self):
        self._hooks_dict_ref = None
        self._id = None

    def attach(self, hooks_dict, hook):
        """Adds `hook` to `hooks_dict`; a handle attaches once."""
        if self._hooks_dict_ref is not None:
            raise RuntimeError("HookHandle.attach: this handle is already attached; use a new one")
        self._id = id(hook)
        hooks_dict[self._id] = hook
        self._hooks_dict_ref = weakref.ref(hooks_dict)

    def detach(self):
        """Removes the hook (nothing happens if it, or its dict, is gone)."""
        hooks_dict = self._hooks_dict_ref() if self._hooks_dict_ref is not None else None
        if hooks_dict is not None and self._id in hooks_dict:
            del hooks_dict[self._id]

    def __getstate__(self):
        return (self._hooks_dict_ref() if self._hooks_dict_ref is not None else None, self._id)

    def __setstate__(self, state):
        # A weak reference does not pickle: the dict travels in the state instead.
        hooks = state[0] if state[0] is not None else collections.OrderedDict()
        self._hooks_dict_ref = weakref.ref(hooks)
        self._id = state[1]

    def __enter__(self):
        return self

    def __exit__(self, ptype, value, trace):
        self.detach()
