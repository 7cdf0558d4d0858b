"""weft.registry (MXNet's mxnet.registry): name -> class tables per base class, with the
register, alias and create functions that optimizers, initializers and metrics are built
on in MXNet. Names are kept lower-case; create takes a name, an instance, a dict, or a JSON
string ('["name", {kwargs}]' or '{"nickname": "name", ...}')."""
import json
import warnings

_REGISTRY = {}


def _table(base_class):
    return _REGISTRY.setdefault(base_class, {})


def get_registry(base_class):
    """A copy of the name -> class table of `base_class`."""
    return _table(base_class).copy()


def get_register_func(base_class, nickname):
    """A function register(klass, name=None) adding a subclass of `base_class` under `name`
    (its class name by default), warning when it replaces another."""
    registry = _table(base_class)

    def register(klass, name=None):
        if not (isinstance(klass, type) and issubclass(klass, base_class)):
            raise TypeError("Can only register subclass of %s, got %r" % (base_class.__name__, klass))
        name = (klass.__name__ if name is None else name).lower()
        if name in registry and registry[name] is not klass:
            warnings.warn("New %s %s.%s registered with name %s is overriding existing %s %s.%s"
                          % (nickname, klass.__module__, klass.__name__, name, nickname,
                             registry[name].__module__, registry[name].__name__), UserWarning, stacklevel=2)
        registry[name] = klass
        return klass

    register.__doc__ = "Register %s to the %s factory" % (nickname, nickname)
    return register


def get_alias_func(base_class, nickname):
    """A decorator factory alias(*names) registering a class under each of `names`."""
    register = get_register_func(base_class, nickname)

    def alias(*aliases):
        def reg(klass):
            for name in aliases:
                register(klass, name)
            return klass
        return reg
    return alias


def get_create_func(base_class, nickname):
    """A function create(name_or_instance, *args, **kwargs) that builds the registered class
    (an instance is returned as is; `nickname=` may name the class by keyword)."""
    registry = _table(base_class)

    def create(*args, **kwargs):
        if args:
            name, args = args[0], args[1:]
        elif nickname in kwargs:
            name = kwargs.pop(nickname)
        else:
            raise TypeError("create: expected the %s's name as first argument or %s=" % (nickname, nickname))
        if isinstance(name, base_class):
            if args or kwargs:
                raise ValueError("%s is already an instance. Additional arguments are invalid" % nickname)
            return name
        if isinstance(name, dict):
            return create(**name)
        if not isinstance(name, str):
            raise TypeError("%s must be of string type, got %s" % (nickname, type(name).__name__))
        if name.startswith("[") or name.startswith("{"):
            if args or kwargs:
                raise ValueError("create: a JSON %s takes no further arguments" % nickname)
            decoded = json.loads(name)
            if isinstance(decoded, list):
                return create(decoded[0], **decoded[1])
            return create(**decoded)
        key = name.lower()
        if key not in registry:
            raise ValueError("%s is not registered. Please register with %s.register first (registered: %s)"
                             % (name, nickname, ", ".join(sorted(registry))))
        return registry[key](*args, **kwargs)

    create.__doc__ = "Create a %s instance from its name, a JSON string or a dict, or return an instance." % nickname
    return create
