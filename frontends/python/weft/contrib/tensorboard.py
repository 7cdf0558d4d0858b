"""weft.contrib.tensorboard: LogMetricsCallback writes a Module's metrics as TensorBoard
scalars, and SummaryWriter is the small event-file writer it uses.

MXNet's callback needed the `mxboard` package; Weft writes the event files itself, so
`tensorboard --logdir` reads them with nothing else installed. An event file is TensorFlow's
record format (each record: its length as a little-endian uint64, the masked CRC-32C of
those 8 bytes, the bytes, their masked CRC-32C) holding `Event` protocol buffers: first one
with file_version "brain.Event:2", then one per scalar (wall_time = 1, step = 2,
summary = 5 with value = 1 {tag = 1, simple_value = 2})."""
import os
import socket
import struct
import time

__all__ = ["LogMetricsCallback", "SummaryWriter"]


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C = _crc32c_table()


def crc32c(data):
    """CRC-32C (Castagnoli) of `data`, the checksum of TensorFlow's records."""
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC32C[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def _masked_crc(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(n):
    out = bytearray()
    n &= (1 << 64) - 1  # negative int64s are ten-byte two's complement varints
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field_bytes(field, payload):
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _event(wall_time, step=None, file_version=None, summary=None):
    msg = _varint(1 << 3 | 1) + struct.pack("<d", wall_time)
    if step is not None:
        msg += _varint(2 << 3 | 0) + _varint(int(step))
    if file_version is not None:
        msg += _field_bytes(3, file_version.encode("utf-8"))
    if summary is not None:
        msg += _field_bytes(5, summary)
    return msg


def _scalar_summary(tag, value):
    v = _field_bytes(1, tag.encode("utf-8")) + _varint(2 << 3 | 5) + struct.pack("<f", float(value))
    return _field_bytes(1, v)


class SummaryWriter(object):
    """Writes TensorBoard scalars into a new event file under `logdir` (created if needed)."""

    def __init__(self, logdir, filename_suffix=""):
        os.makedirs(logdir, exist_ok=True)
        name = "events.out.tfevents.%d.%s%s" % (int(time.time()), socket.gethostname(), filename_suffix)
        self.path = os.path.join(logdir, name)
        self._file = open(self.path, "wb")
        self._write(_event(time.time(), step=0, file_version="brain.Event:2"))

    def _write(self, event):
        header = struct.pack("<Q", len(event))
        self._file.write(header + struct.pack("<I", _masked_crc(header)) + event +
                         struct.pack("<I", _masked_crc(event)))

    def add_scalar(self, tag, value, global_step=None, wall_time=None):
        """Records `value` under `tag` at step `global_step` (0 when None)."""
        if self._file is None:
            raise ValueError("SummaryWriter: add_scalar after close (%s)" % self.path)
        self._write(_event(time.time() if wall_time is None else wall_time, step=global_step or 0,
                           summary=_scalar_summary(tag, value)))

    def flush(self):
        if self._file is not None:
            self._file.flush()

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class LogMetricsCallback(object):
    """A batch- or epoch-end callback (as `callback.Speedometer`) that writes every value of
    the evaluation metric as a TensorBoard scalar at step `param.epoch`, named
    `<prefix>-<name>` when a prefix is given (to draw a training and an evaluation curve of
    one metric in one chart, log them into two directories with the same names)."""

    def __init__(self, logging_dir, prefix=None):
        self.prefix = prefix
        self.summary_writer = SummaryWriter(logging_dir)

    def __call__(self, param):
        if param.eval_metric is None:
            return
        for name, value in param.eval_metric.get_name_value():
            if self.prefix is not None:
                name = "%s-%s" % (self.prefix, name)
            self.summary_writer.add_scalar(name, value, global_step=param.epoch)
        self.summary_writer.flush()
