"""TVM targets as plain dicts, and the hardware identity of foreign data.

No TVM import: targets are parsed from their JSON form (``{"kind": "llvm", "mcpu": ...}``) or from
the old string form found in logs (``"llvm -keys=cpu -mcpu=skylake-avx512 -num-cores=4"``).
"""
from __future__ import annotations

import json
import re
import shlex

from ..errors import GbxferError

# a target kind as TVM spells them: llvm, cuda, ext_dev, ... (no spaces, quotes or options)
_KIND = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")


def parse_target(target) -> dict:
    """Parse a TVM target given as a dict, a JSON string or an old-style target string.

    Returns a dict with at least ``kind``; numeric option values become ints, comma lists become
    lists (``-keys=cuda,gpu`` -> ``["cuda", "gpu"]``). Raises ``ValueError`` on an empty target,
    one that is neither a dict nor a string, and one without a ``kind`` name.
    """
    if isinstance(target, dict):
        return _check_kind(dict(target), target)
    if not isinstance(target, str):
        raise ValueError(f"a target is a JSON object or a string, got {type(target).__name__} "
                         f"{str(target)[:80]}")
    text = target.strip()
    if not text:
        raise ValueError("empty target")
    if text.startswith("{"):
        parsed = json.loads(text)
        if not isinstance(parsed, dict):
            raise ValueError(f"target JSON is not an object: {text[:80]}")
        return _check_kind(parsed, text)
    words = shlex.split(text)
    result: dict = _check_kind({"kind": words[0]}, text)
    for word in words[1:]:
        if not word.startswith("-"):
            raise ValueError(f"unexpected word {word!r} in target {text!r}")
        key, _, value = word.lstrip("-").partition("=")
        result[key.replace("_", "-")] = _target_value(value)
    return result


def _check_kind(target: dict, shown) -> dict:
    kind = target.get("kind")
    if not isinstance(kind, str) or not _KIND.fullmatch(kind):
        what = "has no 'kind'" if kind is None else f"has no valid 'kind' (got {kind!r})"
        raise ValueError(f"target {what}: {str(shown)[:80]}")
    return target


def _target_value(value: str):
    if "," in value:
        return [_target_value(v) for v in value.split(",") if v]
    try:
        return int(value)
    except ValueError:
        return value


def target_json(target) -> str:
    """The target as canonical JSON text (sorted keys), as records store it."""
    return json.dumps(parse_target(target), sort_keys=True)


def hardware_identity(target) -> tuple[str, str]:
    """``(name, family)`` of a target, the identity of foreign data's hardware:

    family = ``<kind>-<mcpu or arch>`` (``llvm-generic`` with neither); name = family plus
    ``-<num-cores>c`` when the target gives a core count. Raises ``ValueError`` when ``mcpu`` or
    ``arch`` is not a string, the core count not a positive integer, or the name would not be a
    profile name (:func:`profile_name_problem`).
    """
    t = parse_target(target)
    for key in ("mcpu", "arch"):
        if key in t and not isinstance(t[key], str):
            raise ValueError(f"target {key!r} must be a string, got {json.dumps(t[key])[:80]}")
    model = t.get("mcpu") or t.get("arch") or "generic"
    family = f"{t['kind']}-{model}"
    key = next((k for k in ("num-cores", "num_cores") if k in t), None)
    cores = t.get(key)
    if key and (not isinstance(cores, int) or isinstance(cores, bool) or cores < 1):
        raise ValueError(f"target num-cores must be a positive integer, got {json.dumps(cores)}")
    name = f"{family}-{cores}c" if key else family
    problem = profile_name_problem(name)
    if problem:
        raise ValueError(f"target gives the hardware name {name!r}, which {problem}")
    return name, family


def machine_identity(target) -> str:
    """The physical machine a target names, as far as the target says: its ``model`` (TVM's
    ``-model=``) when given, else its family (``cuda-sm_80``, ``llvm-znver3``: some machine of
    that architecture); ``"unknown"`` for an unreadable or empty target. Data collected with a
    profile, or ingested with ``--machine``, carries the machine's real name instead."""
    try:
        t = parse_target(target)
        model = t.get("model")
        if isinstance(model, str) and model.strip() and model != "unknown":
            return model.strip()
        return hardware_identity(t)[1]
    except (ValueError, TypeError):
        return "unknown"


def profile_name_problem(name) -> str:
    """Why ``name`` cannot name a hardware profile (it names folders and files), or ``""``."""
    if not isinstance(name, str) or not name:
        return "is empty"
    if name.startswith(".") or "/" in name or "\\" in name:
        return "must not start with '.' or hold '/' or '\\'"
    if not name.isprintable() or any(c.isspace() for c in name):
        return "must not hold spaces or control characters"
    return ""


def parse_hardware_option(text: str) -> tuple[str, str | None]:
    """Split ``--hardware NAME[:FAMILY]`` into ``(name, family or None)``; an empty FAMILY
    (``name:``) is none. Raises :class:`~gbxfer.errors.GbxferError` on a bad NAME or FAMILY."""
    name, _, family = text.partition(":")
    for what, value in (("NAME", name), ("FAMILY", family)):
        problem = profile_name_problem(value) if value or what == "NAME" else ""
        if problem:
            raise GbxferError(f"--hardware NAME[:FAMILY]: {what} {value!r} {problem} "
                              f"(got {text!r})")
    return name, (family or None)
