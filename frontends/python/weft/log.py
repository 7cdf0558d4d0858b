"""weft.log (MXNet's mxnet.log): loggers whose lines look like MXNet's (and glog's):
`W1127 09:30:00 1234 file.py:func:12] message`, coloured by level on a terminal stream."""
import logging
import warnings

CRITICAL = logging.CRITICAL
ERROR = logging.ERROR
WARNING = logging.WARNING
INFO = logging.INFO
DEBUG = logging.DEBUG
NOTSET = logging.NOTSET

_LABELS = {CRITICAL: "C", ERROR: "E", WARNING: "W", INFO: "I", DEBUG: "D"}


class _Formatter(logging.Formatter):
    """A level letter, the date as MMDD HH:MM:SS, the process id and the calling site;
    red from WARNING up, green for INFO, blue below."""

    def __init__(self):
        super().__init__(datefmt="%m%d %H:%M:%S")

    @staticmethod
    def _color(level):
        if level >= WARNING:
            return "\x1b[31m"
        return "\x1b[32m" if level >= INFO else "\x1b[34m"

    def format(self, record):
        self._style._fmt = (self._color(record.levelno) + _LABELS.get(record.levelno, "U") +
                            "%(asctime)s %(process)d %(pathname)s:%(funcName)s:%(lineno)d]\x1b[0m %(message)s")
        return super().format(record)


def get_logger(name=None, filename=None, filemode=None, level=WARNING):
    """The logging.Logger `name`; the first call for a named logger gives it one handler (a
    file opened with `filemode`, default 'a', or a stream with the coloured formatter) and
    the level `level`. The root logger (name None) is returned untouched."""
    logger = logging.getLogger(name)
    if name is not None and not getattr(logger, "_init_done", False):
        logger._init_done = True
        if filename:
            handler = logging.FileHandler(filename, filemode or "a")
        else:
            # The colour codes suit a terminal, not a file: files keep logging's default format.
            handler = logging.StreamHandler()
            handler.setFormatter(_Formatter())
        logger.addHandler(handler)
        logger.setLevel(level)
    return logger


def getLogger(name=None, filename=None, filemode=None, level=WARNING):  # pylint: disable=invalid-name
    """Deprecated name of get_logger."""
    warnings.warn("getLogger is deprecated, Use get_logger instead.", DeprecationWarning, stacklevel=2)
    return get_logger(name, filename, filemode, level)
