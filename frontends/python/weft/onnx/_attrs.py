"""Reading the text form of operator attributes that symbol JSON files use."""
import ast


def parse(value):
    """'(1, 2)' -> (1, 2), 'True' -> True, '0.5' -> 0.5, 'relu' -> 'relu', 'None' -> None."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    if text == "None":
        return None
    try:
        parsed = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    if isinstance(parsed, list):
        return tuple(parsed)
    return parsed


class Attrs:
    """The attributes of one node, parsed on access, with MXNet's defaults supplied by the caller."""

    def __init__(self, node):
        self.op = node["op"]
        self.name = node["name"]
        self._raw = node.get("attrs", node.get("param", {})) or {}

    def get(self, key, default=None):
        if key not in self._raw:
            return default
        value = parse(self._raw[key])
        return default if value is None and default is not None else value

    def tuple(self, key, default=()):
        value = self.get(key, default)
        if value is None:
            return tuple(default)
        if isinstance(value, (int, float)):
            return (value,)
        return tuple(value)

    def bool(self, key, default=False):
        value = self.get(key, default)
        return bool(value)

    def __contains__(self, key):
        return key in self._raw
