"""TVM objects from ``as_json()`` to plain Python, ready for ``json``/``orjson``."""
from __future__ import annotations


def to_python(obj):
    """Convert IntImm/FloatImm/String/Array/Map (as found in traces) to int/float/str/list/dict."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, dict) or hasattr(obj, "items"):
        return {str(k): to_python(v) for k, v in obj.items()}
    if hasattr(obj, "value"):  # IntImm, FloatImm
        return obj.value
    if isinstance(obj, (list, tuple)) or hasattr(obj, "__iter__"):
        return [to_python(x) for x in obj]
    raise TypeError(f"cannot convert {type(obj).__name__} to JSON")
