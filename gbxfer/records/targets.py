"""TVM targets as plain dicts, and the hardware identity of foreign data.

No TVM import: targets are parsed from their JSON form (``{"kind": "llvm", "mcpu": ...}``) or from
the old string form found in logs (``"llvm -keys=cpu -mcpu=skylake-avx512 -num-cores=4"``).
"""
from __future__ import annotations

import json
import shlex


def parse_target(target) -> dict:
    """Parse a TVM target given as a dict, a JSON string or an old-style target string.

    Returns a dict with at least ``kind``; numeric option values become ints, comma lists become
    lists (``-keys=cuda,gpu`` -> ``["cuda", "gpu"]``). Raises ``ValueError`` on an empty target.
    """
    if isinstance(target, dict):
        return dict(target)
    text = str(target).strip()
    if not text:
        raise ValueError("empty target")
    if text.startswith("{"):
        parsed = json.loads(text)
        if not isinstance(parsed, dict) or "kind" not in parsed:
            raise ValueError(f"target JSON has no 'kind': {text[:80]}")
        return parsed
    words = shlex.split(text)
    result: dict = {"kind": words[0]}
    for word in words[1:]:
        if not word.startswith("-"):
            raise ValueError(f"unexpected word {word!r} in target {text!r}")
        key, _, value = word.lstrip("-").partition("=")
        result[key.replace("_", "-")] = _target_value(value)
    return result


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
    ``-<num-cores>c`` when the target gives a positive core count.
    """
    t = parse_target(target)
    kind = t.get("kind", "unknown")
    model = t.get("mcpu") or t.get("arch") or "generic"
    family = f"{kind}-{model}"
    cores = t.get("num-cores", t.get("num_cores"))
    name = f"{family}-{cores}c" if isinstance(cores, int) and cores > 0 else family
    return name, family


def parse_hardware_option(text: str) -> tuple[str, str | None]:
    """Split ``--hardware NAME[:FAMILY]`` into ``(name, family or None)``."""
    name, _, family = text.partition(":")
    if not name:
        raise ValueError(f"--hardware needs a NAME, got {text!r}")
    return name, (family or None)
