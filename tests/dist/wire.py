"""The distributed store's wire protocol spoken by hand (libzmq through ctypes), so that
tests can play a worker, a stranger or a broken peer against real scheduler and server
processes: core/kvstore/dist/protocol.h is the reference for every constant here."""
import ctypes
import ctypes.util
import struct
import time

MAGIC, VERSION = 0x4B564657, 2
# Message types.
REGISTER, ADDRESS_BOOK, HEARTBEAT, HEARTBEAT_ACK, BARRIER, BARRIER_DONE, EXIT, BYE, TERMINATE, NODE_LOST = range(1, 11)
INIT, PUSH, PULL, COMMAND, PULL_ROWS, PUSH_ROWS = 20, 21, 22, 23, 24, 25
ACK, PULL_REPLY, ERROR = 40, 41, 42
FLAG_SYNC = 1
FLOAT32 = 0

# magic, version, type, sender, flags, request, key, offset, count, total, dtype, head,
# threshold, reserved, payload_bytes: 80 bytes, little-endian, as the C++ struct.
_HEADER = struct.Struct("<IHHiIQqQQQiifIQ")
assert _HEADER.size == 80

_ZMQ_DEALER, _ZMQ_SNDMORE, _ZMQ_RCVMORE = 5, 2, 13
_ZMQ_ROUTING_ID, _ZMQ_LINGER, _ZMQ_RCVTIMEO = 5, 17, 27
_ZMQ_CURVE_PUBLICKEY, _ZMQ_CURVE_SECRETKEY, _ZMQ_CURVE_SERVERKEY = 48, 49, 50
_ZMQ_PLAIN_USERNAME, _ZMQ_PLAIN_PASSWORD = 45, 46

_lib = None


def lib():
    global _lib
    if _lib is None:
        _lib = ctypes.CDLL(ctypes.util.find_library("zmq") or "libzmq.so.5")
        _lib.zmq_ctx_new.restype = ctypes.c_void_p
        _lib.zmq_socket.restype = ctypes.c_void_p
        _lib.zmq_socket.argtypes = [ctypes.c_void_p, ctypes.c_int]
        _lib.zmq_connect.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        _lib.zmq_send.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int]
        _lib.zmq_recv.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        _lib.zmq_setsockopt.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
        _lib.zmq_getsockopt.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        _lib.zmq_close.argtypes = [ctypes.c_void_p]
        _lib.zmq_ctx_term.argtypes = [ctypes.c_void_p]
    return _lib


def curve_keypair():
    public, secret = ctypes.create_string_buffer(41), ctypes.create_string_buffer(41)
    assert lib().zmq_curve_keypair(public, secret) == 0
    return public.value.decode(), secret.value.decode()


def header(type, sender=-1, flags=0, request=0, key=0, offset=0, count=0, total=0, dtype=FLOAT32, head=0,
           threshold=0.0, payload_bytes=0):
    return _HEADER.pack(MAGIC, VERSION, type, sender, flags, request, key, offset, count, total, dtype, head,
                        threshold, 0, payload_bytes)


def parse(frame):
    """The header's fields as a dict."""
    names = ("magic", "version", "type", "sender", "flags", "request", "key", "offset", "count", "total", "dtype",
             "head", "threshold", "reserved", "payload_bytes")
    return dict(zip(names, _HEADER.unpack(frame)))


class Peer(object):
    """A DEALER connected to `endpoint`, proving a key as the nodes do: to the scheduler
    CURVE keys (server_key: the listener's public key; keys: this peer's (public, secret)),
    to a server on loopback a PLAIN password (`password`: the job's secret key, or a
    guess); and a routing id."""

    def __init__(self, endpoint, server_key=None, keys=None, routing_id=None, password=None):
        z = lib()
        self.ctx = z.zmq_ctx_new()
        self.sock = z.zmq_socket(self.ctx, _ZMQ_DEALER)
        if password is not None:
            self._opt(_ZMQ_PLAIN_USERNAME, b"weft")
            self._opt(_ZMQ_PLAIN_PASSWORD, password.encode())
        if server_key is not None:
            self._opt(_ZMQ_CURVE_SERVERKEY, server_key.encode())
            self._opt(_ZMQ_CURVE_PUBLICKEY, keys[0].encode())
            self._opt(_ZMQ_CURVE_SECRETKEY, keys[1].encode())
        if routing_id is not None:
            self._opt(_ZMQ_ROUTING_ID, routing_id.encode())
        self._opt(_ZMQ_LINGER, struct.pack("i", 0))
        assert z.zmq_connect(self.sock, endpoint.encode()) == 0

    def _opt(self, option, value):
        assert lib().zmq_setsockopt(self.sock, option, value, len(value)) == 0

    def send(self, type, payload=b"", **fields):
        """Sends a header of `type` with `fields` (see header()) and the payload, if any."""
        self.send_frames([header(type, payload_bytes=len(payload), **fields)] + ([payload] if payload else []))

    def send_frames(self, frames):
        """Sends raw frames as one message (forged ones included)."""
        for i, f in enumerate(frames):
            lib().zmq_send(self.sock, f, len(f), _ZMQ_SNDMORE if i + 1 < len(frames) else 0)

    def recv(self, timeout=10.0):
        """The next message as (header dict, payload bytes), or None after `timeout` s."""
        self._opt(_ZMQ_RCVTIMEO, struct.pack("i", int(timeout * 1000)))
        frames = []
        while True:
            buf = ctypes.create_string_buffer(1 << 16)
            n = lib().zmq_recv(self.sock, buf, len(buf), 0)
            if n < 0:
                return None
            frames.append(buf.raw[:min(n, len(buf))])
            more, size = ctypes.c_int(0), ctypes.c_size_t(ctypes.sizeof(ctypes.c_int))
            lib().zmq_getsockopt(self.sock, _ZMQ_RCVMORE, ctypes.byref(more), ctypes.byref(size))
            if not more.value:
                break
        return parse(frames[0]), (frames[1] if len(frames) > 1 else b"")

    def recv_type(self, wanted, timeout=10.0):
        """The next message of type `wanted` (others, heartbeat acks, are skipped), or None."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.recv(max(0.05, deadline - time.monotonic()))
            if got is None:
                return None
            if got[0]["type"] == wanted:
                return got
        return None

    def close(self):
        lib().zmq_close(self.sock)
        lib().zmq_ctx_term(self.ctx)


def register(peer, role="worker", endpoint="", pid=1):
    peer.send(REGISTER, ("%s\n%s\nraw-peer\n%d\n" % (role, endpoint, pid)).encode())


def read_book(payload):
    """{'servers': [endpoint, ...], 'workers': {rank: token}} from an address book."""
    book = {"servers": [], "workers": {}}
    for line in payload.decode().splitlines():
        kind, rank, value = line.split()
        if kind == "server":
            book["servers"].append(value)
        else:
            book["workers"][int(rank)] = value
    return book
