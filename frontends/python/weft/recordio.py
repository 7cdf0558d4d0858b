"""RecordIO files (MXNet's `.rec`) and image records, as mxnet.recordio.

    record = weft.recordio.MXRecordIO('data.rec', 'w')
    record.write(weft.recordio.pack(weft.recordio.IRHeader(0, 3.0, 7, 0), b'payload'))
    record.close()

The container is dmlc RecordIO, read and written by the C library; `.idx` files are text,
one "<key>\\t<offset>" line per record. Images are encoded and decoded by Weft's codec
(libjpeg-turbo, libpng), in OpenCV's BGR channel order as MXNet's pack_img/unpack_img use.
"""
import numbers
import os
import struct
from collections import namedtuple

import numpy as np

from .base import _api, WeftIOError, WeftValueError, ERR_IO, ERR_VALUE

__all__ = ["MXRecordIO", "MXIndexedRecordIO", "IRHeader", "pack", "unpack", "pack_img", "unpack_img"]


class MXRecordIO(object):
    """Reads (flag 'r') or writes (flag 'w') a RecordIO file, one record (bytes) at a time."""

    def __init__(self, uri, flag):
        self.uri = str(uri)
        self.handle = None
        self.flag = flag
        self.pid = None
        self.is_open = False
        self.writable = None
        self.open()

    def open(self):
        """Opens the file (again: reading restarts at the first record)."""
        if self.flag == "w":
            self.handle = _api.weft_recordio_writer_create(self.uri)
            self.writable = True
        elif self.flag == "r":
            self.handle = _api.weft_recordio_reader_create(self.uri)
            self.writable = False
        else:
            raise ValueError("Invalid flag %r: expected 'r' or 'w'" % (self.flag,))
        self.pid = os.getpid()
        self.is_open = True

    def __del__(self):
        try:
            self.close()
        except Exception:  # pylint: disable=broad-except
            # The interpreter may be tearing down; nothing useful can be raised from here.
            pass

    def __getstate__(self):
        # A handle does not survive pickling: the copy reopens the file on arrival (a reader
        # at its first record); this object keeps its own handle and position.
        d = dict(self.__dict__)
        d["handle"] = None
        return d

    def __setstate__(self, d):
        self.__dict__ = d
        is_open = d["is_open"]
        self.is_open = False
        self.handle = None
        if is_open:
            self.open()

    def _check_pid(self, allow_reset=False):
        # A forked child shares the parent's file position; a reader reopens its own file.
        if self.pid != os.getpid():
            if allow_reset:
                self.reset()
            else:
                raise RuntimeError("Forbidden operation in multiple processes")

    def close(self):
        """Closes the file (a writer is flushed)."""
        if not self.is_open:
            return
        handle, self.handle = self.handle, None
        self.is_open = False
        self.pid = None
        _api.weft_recordio_free(handle)

    def reset(self):
        """Reopens the file: a reader goes back to the first record."""
        self.close()
        self.open()

    def _require_open(self):
        if not self.is_open:
            raise WeftValueError("RecordIO file '%s' is closed" % self.uri, ERR_VALUE)

    def write(self, buf):
        """Appends the record `buf` (bytes-like)."""
        assert self.writable, "MXRecordIO '%s' was opened for reading" % self.uri
        self._require_open()
        self._check_pid(allow_reset=False)
        _api.weft_recordio_write(self.handle, bytes(buf) if not isinstance(buf, (bytes, bytearray)) else buf)

    def read(self):
        """The next record as bytes, or None at the end of the file."""
        assert not self.writable, "MXRecordIO '%s' was opened for writing" % self.uri
        self._require_open()
        self._check_pid(allow_reset=True)
        h = _api.weft_recordio_read(self.handle)
        if h is None:
            return None
        try:
            return _api.weft_bytes_get(h)
        finally:
            _api.weft_bytes_free(h)

    def tell(self):
        """Byte offset of the next record."""
        self._require_open()
        return _api.weft_recordio_tell(self.handle)


class MXIndexedRecordIO(MXRecordIO):
    """A RecordIO file with an `.idx` index, for reading records by key.

    keys: the keys in file order; idx: {key: byte offset}. key_type converts the keys read
    from the index (int by default)."""

    def __init__(self, idx_path, uri, flag, key_type=int):
        self.idx_path = str(idx_path)
        self.idx = {}
        self.keys = []
        self.key_type = key_type
        self.fidx = None
        super().__init__(uri, flag)

    def open(self):
        super().open()
        self.idx = {}
        self.keys = []
        self.fidx = open(self.idx_path, self.flag)
        if not self.writable:
            for lineno, line in enumerate(iter(self.fidx.readline, ""), 1):
                fields = line.strip().split("\t")
                if fields == [""]:
                    continue
                try:
                    if len(fields) < 2:
                        raise ValueError("no tab-separated offset")
                    key = self.key_type(fields[0])
                    pos = int(fields[1])
                    if pos < 0:
                        raise ValueError("negative offset")
                except ValueError as e:
                    raise WeftIOError("RecordIO index '%s' line %d: expected '<key>\\t<byte offset>', got %r (%s)"
                                      % (self.idx_path, lineno, line.rstrip("\n"), e), ERR_IO) from None
                self.idx[key] = pos
                self.keys.append(key)

    def close(self):
        if not self.is_open:
            return
        super().close()
        if self.fidx is not None:
            self.fidx.close()
            self.fidx = None

    def __getstate__(self):
        d = super().__getstate__()
        d["fidx"] = None
        return d

    def seek(self, idx):
        """Moves the reader to the record of key `idx`."""
        assert not self.writable, "MXIndexedRecordIO '%s' was opened for writing" % self.uri
        self._require_open()
        self._check_pid(allow_reset=True)
        if idx not in self.idx:
            raise KeyError("key %r is not in the index '%s'" % (idx, self.idx_path))
        _api.weft_recordio_seek(self.handle, self.idx[idx])

    def tell(self):
        assert self.writable, "MXIndexedRecordIO '%s' was opened for reading" % self.uri
        return super().tell()

    def read_idx(self, idx):
        """The record of key `idx`."""
        self.seek(idx)
        return self.read()

    def write_idx(self, idx, buf):
        """Appends record `buf` under key `idx` (recorded in the index file)."""
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self.fidx.write("%s\t%d\n" % (str(key), pos))
        self.idx[key] = pos
        self.keys.append(key)


IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
IRHeader.__doc__ = """The header of an image record: flag (0, or the number of float labels
that follow), label (a float, or an array of labels), id and id2 (uint64)."""

_IR_FORMAT = "IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)


def pack(header, s):
    """An image record: the header, then the labels when `header.label` is an array, then s."""
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + bytes(s)
    return struct.pack(_IR_FORMAT, *header) + bytes(s)


def unpack(s):
    """(IRHeader, payload) of an image record; a multi-label header carries the labels as a
    float32 array."""
    if len(s) < _IR_SIZE:
        raise WeftIOError("image record of %d bytes is too short for the %d-byte header" % (len(s), _IR_SIZE),
                          ERR_IO)
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if len(s) < 4 * header.flag:
            raise WeftIOError("image record header announces %d labels (%d bytes) but only %d bytes follow it"
                              % (header.flag, 4 * header.flag, len(s)), ERR_IO)
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[header.flag * 4:]
    return header, s


def unpack_img(s, iscolor=-1):
    """(IRHeader, image): the image decoded as a numpy uint8 array in BGR order (as
    cv2.imdecode): (H, W, 3) for colour, (H, W) for grey; iscolor 1 forces colour, 0 grey,
    -1 keeps what is stored."""
    header, s = unpack(s)
    from .ndarray import NDArray
    img = NDArray(_api.weft_image_decode(s, int(iscolor), 0)).asnumpy()
    if img.shape[2] == 1:
        img = img[:, :, 0]
    return header, img


def pack_img(header, img, quality=95, img_fmt=".jpg"):
    """An image record of a numpy uint8 image (BGR, as cv2), encoded as img_fmt ('.jpg'
    with JPEG quality, or '.png' with quality as the compression level)."""
    from . import ndarray as nd
    if img_fmt.upper() not in (".JPG", ".JPEG", ".PNG"):
        raise ValueError("pack_img: img_fmt must be '.jpg', '.jpeg' or '.png', got %r" % (img_fmt,))
    img = np.ascontiguousarray(np.asarray(img, dtype=np.uint8))
    h = _api.weft_image_encode(nd.array(img, dtype=np.uint8), img_fmt, int(quality), 1)
    try:
        buf = _api.weft_bytes_get(h)
    finally:
        _api.weft_bytes_free(h)
    return pack(header, buf)
