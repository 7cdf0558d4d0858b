"""The profiler, as mxnet.profiler:

    weft.profiler.set_config(profile_all=True, filename='trace.json', aggregate_stats=True)
    weft.profiler.set_state('run')
    ...                                  # operators, executors, tasks, counters
    weft.profiler.set_state('stop')
    weft.profiler.dump()                 # Chrome trace JSON: chrome://tracing, Perfetto
    print(weft.profiler.dumps())         # per-operator counts and times

The engine records every operation it runs (name, device, worker thread, start, end,
bytes allocated); executor steps carry their graph node's name. Domain, Task, Frame,
Event, Counter and Marker add the program's own spans, values and instants. Setting
MXNET_PROFILER_AUTOSTART=1 (or WEFT_PROFILER_AUTOSTART=1) profiles a whole run into
profile.json without changing the program.
"""
import contextlib
import contextvars
import warnings

from .base import _api

__all__ = ["set_config", "profiler_set_config", "set_state", "profiler_set_state", "state", "dump",
           "dump_profile", "dumps", "pause", "resume", "Domain", "Task", "Frame", "Event", "Counter",
           "Marker", "scope", "set_kvstore_handle"]

_STATES = {"stop": 0, "run": 1}
_FORMATS = {"table": 0, "json": 1}
_SORT_BY = {"total": 0, "avg": 1, "min": 2, "max": 3, "count": 4}


def _check_process(profile_process):
    if profile_process not in ("worker", "server"):
        raise ValueError("profile_process must be 'worker' or 'server', got %r" % (profile_process,))
    if profile_process == "server":
        # MXNet forwards these calls to the parameter servers; Weft's servers are not profiled.
        raise NotImplementedError("profiling the parameter servers (profile_process='server') is not supported")


def set_kvstore_handle(handle):
    """Accepted for MXNet's API: the store would carry commands to the servers, which Weft
    does not profile, so the handle is not used."""
    del handle


def _str(value):
    # MXNet sends each value as Python prints it (True, 0.5, 'name').
    return str(value)


def set_config(**kwargs):
    """Configures the profiler (keyword arguments only), with MXNet's keys and defaults:

    filename : str ('profile.json'), where dump() writes the trace
    profile_all : bool (False), everything below
    profile_symbolic : bool (True), executor steps
    profile_imperative : bool (True), eager operator calls
    profile_memory : bool (True), bytes in use per device
    profile_api : bool (True), calls of the C API
    continuous_dump : bool (True), rewrite the file every dump_period seconds while running
    dump_period : float (1.0), seconds
    aggregate_stats : bool (False), keep the statistics dumps() prints
    profile_process : 'worker' ('server' is not supported)

    An unknown key or a bad value raises MXNetError naming it.
    """
    keys = list(kwargs.keys())
    _api.weft_profiler_set_config(len(keys), keys, [_str(kwargs[k]) for k in keys])


def profiler_set_config(mode="symbolic", filename="profile.json"):
    """Deprecated form of set_config: mode 'symbolic' or 'all'."""
    warnings.warn("profiler.profiler_set_config() is deprecated. Please use profiler.set_config() instead",
                  DeprecationWarning, stacklevel=2)
    if mode not in ("symbolic", "all"):
        raise ValueError("mode must be 'symbolic' or 'all', got %r" % (mode,))
    set_config(**{"profile_" + mode: True, "filename": filename})


def set_state(state="stop", profile_process="worker"):
    """Starts ('run') or stops ('stop') recording."""
    if state not in _STATES:
        raise ValueError("state must be 'run' or 'stop', got %r" % (state,))
    _check_process(profile_process)
    _api.weft_profiler_set_state(_STATES[state])


def profiler_set_state(state="stop"):
    """Deprecated form of set_state."""
    warnings.warn("profiler.profiler_set_state() is deprecated. Please use profiler.set_state() instead",
                  DeprecationWarning, stacklevel=2)
    set_state(state)


def state():
    """'run' or 'stop'."""
    return "run" if _api.weft_profiler_get_state() == 1 else "stop"


def dump(finished=True, profile_process="worker"):
    """Writes what was recorded to the configured file as Chrome trace JSON. With
    finished=True (the default) this is the final dump: the profiler stops and forgets its
    records."""
    _check_process(profile_process)
    _api.weft_profiler_dump(1 if finished is True else 0)


def dump_profile():
    """Deprecated form of dump()."""
    warnings.warn("profiler.dump_profile() is deprecated. Please use profiler.dump() instead",
                  DeprecationWarning, stacklevel=2)
    dump(True)


def dumps(reset=False, format="table", sort_by="total", ascending=False):  # pylint: disable=redefined-builtin
    """The aggregate statistics (set_config(aggregate_stats=True) first) as a table or as
    JSON: per category (operator, Device Storage, each domain, C API), one row per name
    with count and total/min/max/average time in ms (memory: use in kB), sorted by
    'total', 'avg', 'min', 'max' or 'count'. reset=True clears them afterwards."""
    if format not in _FORMATS:
        raise ValueError("Invalid value provided for format: %r. Support: 'table', 'json'" % (format,))
    if sort_by not in _SORT_BY:
        raise ValueError("Invalid value provided for sort_by: %r. Support: 'total', 'avg', 'min', 'max', 'count'"
                         % (sort_by,))
    if ascending not in (False, True):
        raise ValueError("Invalid value provided for ascending: %r. Support: False, True" % (ascending,))
    if reset not in (False, True):
        raise ValueError("Invalid value provided for reset: %r. Support: False, True" % (reset,))
    h = _api.weft_profiler_dumps(int(reset), _FORMATS[format], _SORT_BY[sort_by], int(ascending))
    try:
        return bytes(_api.weft_bytes_get(h)).decode("utf-8")
    finally:
        _api.weft_bytes_free(h)


def pause(profile_process="worker"):
    """Stops recording until resume(); the state stays 'run'."""
    _check_process(profile_process)
    _api.weft_profiler_set_paused(1)


def resume(profile_process="worker"):
    """Records again after pause()."""
    _check_process(profile_process)
    _api.weft_profiler_set_paused(0)


class Domain(object):
    """A named group of tasks, frames, counters and markers (their category in the trace)."""

    def __init__(self, name):
        self.name = name
        self.handle = _api.weft_profile_domain_create(str(name))

    def __del__(self):
        handle, self.handle = getattr(self, "handle", None), None
        if handle is not None and _api is not None:
            _api.weft_profile_domain_free(handle)

    def __str__(self):
        return self.name

    def new_task(self, name):
        """A Task of this domain."""
        return Task(self, name)

    def new_frame(self, name):
        """A Frame of this domain."""
        return Frame(self, name)

    def new_counter(self, name, value=None):
        """A Counter of this domain, set to value when given."""
        return Counter(self, name, value)

    def new_marker(self, name):
        """A Marker of this domain."""
        return Marker(self, name)


class _Duration(object):
    """What Task, Frame and Event share: start() and stop() bracket a stretch of work."""

    def __init__(self, name, handle):
        self.name = name
        self.handle = handle

    def __del__(self):
        handle, self.handle = getattr(self, "handle", None), None
        if handle is not None and _api is not None:
            _api.weft_profile_duration_free(handle)

    def start(self):
        """Starts timing."""
        _api.weft_profile_duration_start(self.handle)

    def stop(self):
        """Stops timing."""
        _api.weft_profile_duration_stop(self.handle)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def __str__(self):
        return self.name


class Task(_Duration):
    """A unit of work of a domain; every pass through it adds to one row of dumps()."""

    def __init__(self, domain, name):
        super().__init__(name, _api.weft_profile_task_create(domain.handle, str(name)))


class Frame(_Duration):
    """Like a Task, for work that repeats in frames (an iteration, a batch)."""

    def __init__(self, domain, name):
        super().__init__(name, _api.weft_profile_frame_create(domain.handle, str(name)))


class Event(_Duration):
    """A span of work outside any domain."""

    def __init__(self, name):
        super().__init__(name, _api.weft_profile_event_create(str(name)))


class Counter(object):
    """An integer whose changes show as a counter track in the trace."""

    def __init__(self, domain, name, value=None):
        self.name = name
        self.handle = _api.weft_profile_counter_create(domain.handle, str(name))
        if value is not None:
            self.set_value(value)

    def __del__(self):
        handle, self.handle = getattr(self, "handle", None), None
        if handle is not None and _api is not None:
            _api.weft_profile_counter_free(handle)

    def set_value(self, value):
        """Sets the counter."""
        _api.weft_profile_counter_set(self.handle, int(value))

    def increment(self, delta=1):
        """Adds delta."""
        _api.weft_profile_counter_adjust(self.handle, int(delta))

    def decrement(self, delta=1):
        """Subtracts delta."""
        _api.weft_profile_counter_adjust(self.handle, -int(delta))

    @property
    def value(self):
        """The current value."""
        return _api.weft_profile_counter_get(self.handle)

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self

    def __str__(self):
        return self.name


class Marker(object):
    """An instant in time, marked with mark()."""

    def __init__(self, domain, name):
        self.name = name
        self.domain = domain

    def mark(self, scope="process"):  # pylint: disable=redefined-outer-name
        """Marks now; scope is 'global', 'process', 'thread', 'task' or 'marker'."""
        _api.weft_profile_marker(self.domain.handle, str(self.name), str(scope))


_current_scope = contextvars.ContextVar("profilerscope", default="<unk>:")


@contextlib.contextmanager
def scope(name="<unk>:", append_mode=True):
    """Within the block, operators this thread calls are recorded as '<name>:<operator>'
    (as MXNet 2's profiler.scope). With append_mode the name nests in the enclosing scope's."""
    name = name if name.endswith(":") else name + ":"
    if append_mode and _current_scope.get() != "<unk>:":
        name = _current_scope.get() + name
    token = _current_scope.set(name)
    _api.weft_profiler_set_scope(name)
    try:
        yield name
    finally:
        _current_scope.reset(token)
        _api.weft_profiler_set_scope(_current_scope.get())
