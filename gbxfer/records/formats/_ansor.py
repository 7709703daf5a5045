"""Ansor (TVM auto_scheduler) and TenSet measure-record logs, one JSON record per line.

``{"i": [[workload_key, target, hardware_params, ...], [[], steps]], "r": [costs, error_no,
all_cost, timestamp], "v": "v0.6"}``. The task key is the workload key; ``error_no != 0`` marks a
failed measurement.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from ...errors import InputError
from ..programs import ansor_primitives, canonical_json
from ..targets import hardware_identity, parse_target, target_json
from ._builder import RecordBuilder
from ._lines import check_costs, expect, shape_problem

# auto_scheduler MeasureErrorNO
ANSOR_ERRORS = {1: "instantiation-error", 2: "compile-host", 3: "compile-device",
                4: "runtime-device", 5: "wrong-answer", 6: "build-timeout", 7: "run-timeout",
                8: "unknown-error"}
_HASH_KEY = re.compile(r"^[0-9a-f]{32}$")


def is_ansor_log(path: Path) -> bool:
    name = path.name
    return (name.endswith(".json") or name.endswith(".json.gz")) and not name.startswith("database_")


def read_ansor_log(path: Path, builder: RecordBuilder, hardware=None, progress=None) -> None:
    """Add every measurement of one Ansor/TenSet log file to ``builder``.

    ``hardware`` is ``(name, family or None)``; without it the identity comes from each line's
    target (:func:`gbxfer.records.targets.hardware_identity`).
    """
    path = Path(path)
    identities: dict[str, tuple[str, str, str]] = {}
    n_lines = 0
    for number, value in builder.lines(path):
        n_lines += 1
        try:
            _add_line(path, number, value, identities, hardware, builder)
        except InputError as error:
            builder.guard(error)
        if progress is not None:
            progress(1)
    builder.sources.append({"path": str(path), "format": "ansor", "n_lines": n_lines})


def _add_line(path, number, value, identities, hardware, builder) -> None:
    expect(isinstance(value, dict) and "i" in value and "r" in value, path, number,
           'expected an Ansor record {"i": [...], "r": [...], "v": ...}')
    inp, res = value["i"], value["r"]
    expect(isinstance(inp, list) and len(inp) == 2 and isinstance(inp[0], list)
           and len(inp[0]) >= 2 and isinstance(inp[1], list) and len(inp[1]) == 2,
           path, number, '"i" must be [[workload_key, target, ...], [[], steps]]')
    workload_key, target = inp[0][0], inp[0][1]
    steps = inp[1][1]
    expect(isinstance(workload_key, str), path, number, "workload key must be a string")
    expect(isinstance(target, str) and target.strip(), path, number,
           lambda: f"target must be a non-empty string, got {json.dumps(target)[:80]}",
           reason="bad-target")
    expect(isinstance(steps, list) and all(isinstance(s, list) and s and isinstance(s[0], str)
                                           for s in steps),
           path, number, "steps must be a list of [code, ...] lists")
    expect(isinstance(res, list) and len(res) >= 2, path, number,
           '"r" must be [costs, error_no, all_cost, timestamp]')
    costs, error_no = res[0], res[1]
    expect(isinstance(error_no, int) and not isinstance(error_no, bool) and error_no >= 0,
           path, number, f"error_no must be a non-negative integer, got {json.dumps(error_no)}")
    if error_no != 0:
        expect(isinstance(costs, list), path, number, "costs must be a list")
        error, costs = f"ansor-{ANSOR_ERRORS.get(error_no, f'error-{error_no}')}", []
    else:
        error, costs = "", check_costs(path, number, costs)

    if target not in identities:
        try:
            name, family = hardware_identity(target)
            identities[target] = (name, family, target_json(parse_target(target)))
        except ValueError as exc:
            raise InputError(path, number, "bad-target", f"unreadable target: {exc}") from None
    name, family, target_text = identities[target]
    if hardware is not None:
        name, family = hardware[0], hardware[1] or family

    if not builder.has_task(workload_key):
        try:
            described = describe_workload_key(workload_key)
        except ValueError as exc:
            raise InputError(path, number, "bad-workload-key", str(exc)) from None
        builder.add_task(workload_key, source_format="ansor", workload_format="ansor-key",
                         workload=workload_key, **described)
    text = canonical_json(steps)
    builder.add(task_key=workload_key, canonical=text, raw=text,
                primitives=ansor_primitives(steps), costs=costs, error=error, hardware=name,
                family=family, target=target_text, source_format="ansor", source=path,
                line=number)


def describe_workload_key(key: str) -> dict:
    """Operator and argument shapes spelled by an Ansor workload key.

    Registered workloads read ``["conv2d_layer", 128, ...]``: their parameters are one shape
    when they are all positive integers (``["matmul_layer", 1, 1024, 1024]``), else none.
    Hashed (relay-extracted) ones read ``["<32 hex digits>", [shape], [shape], ...]`` and give
    no operator name. Raises ``ValueError`` when the key is not a JSON list that starts with a
    name, or a list argument is not a shape (positive integers).
    """
    try:
        parsed = json.loads(key)
    except json.JSONDecodeError:
        raise ValueError(f"workload key is not JSON: {key[:80]!r}") from None
    if not isinstance(parsed, list) or not parsed or not isinstance(parsed[0], str) \
            or not parsed[0]:
        raise ValueError(f'workload key must be ["name", args...], got {key[:80]!r}')
    head, rest = parsed[0], parsed[1:]
    operator = "" if _HASH_KEY.match(head) else head
    if rest and all(isinstance(a, list) for a in rest):
        for a in rest:
            problem = shape_problem(a)
            if problem:
                raise ValueError(f"workload key argument: {problem}")
        args = [["", a] for a in rest]
        shown = " ".join("x".join(str(d) for d in a) for a in rest)
    else:  # parameters of a registered workload: a shape only when all are sizes
        args = [["", rest]] if rest and not shape_problem(rest) else []
        shown = ",".join(str(a) for a in rest)
    return {"operator": operator, "description": f"{operator or head[:8]} [{shown}]",
            "args": json.dumps(args)}
