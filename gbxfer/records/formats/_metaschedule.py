"""MetaSchedule JSON databases (``database_workload.json`` + ``database_tuning_record.json``).

Works for TVM 0.27 and older TVM alike without importing TVM: the workload IR is stored as text
(once per task) and the task is described from the records' argument shapes and the block names
the trace reads, so records ingest even where TVM 0.27 cannot parse an older IR.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from ...errors import InputError
from ..programs import canonical_json, canonical_trace_text, trace_primitives
from ..targets import hardware_identity, parse_target, target_json
from ._builder import RecordBuilder
from ._lines import check_costs, expect, shape_problem

WORKLOAD_FILE = "database_workload.json"
RECORD_FILE = "database_tuning_record.json"
FAILED_RUN_SECS = 1e10  # what MetaSchedule writes as the run_secs of a failed build or run
FAILED_AT_SECS = 1e9  # a repeat this long (31 years) marks a failure, whoever wrote it
# TVM data types: float32, int8, bool, bfloat16, float8_e4m3fn, e4m3_float8, float32x4, ...
DTYPE = re.compile(r"(bool|handle|u?int[0-9]+|b?float[0-9]+(_[a-z0-9]+)?|e[0-9]m[0-9]_float[0-9]+"
                   r"|custom\[[A-Za-z0-9_]+\][0-9]+)(x[0-9]+)?")

# Substrings that name the main compute of a task, most specific first.
OPERATOR_HINTS = ("depthwise_conv2d", "group_conv2d", "conv2d_transpose", "conv3d", "conv2d",
                  "conv1d", "batch_matmul", "matmul", "dense", "softmax", "pool", "reduce",
                  "sum", "max", "mean", "layer_norm", "norm")


def find_file(folder: Path, name: str) -> Path | None:
    """``folder/name`` or ``folder/name.gz``, whichever exists."""
    for candidate in (folder / name, folder / (name + ".gz")):
        if candidate.is_file():
            return candidate
    return None


def is_metaschedule_database(folder: Path) -> bool:
    return any(find_file(folder, n) for n in (WORKLOAD_FILE, RECORD_FILE))


def read_metaschedule_database(folder: Path, builder: RecordBuilder, hardware=None,
                               progress=None) -> None:
    """Add every record of a MetaSchedule database folder to ``builder``.

    ``hardware`` is ``(name, family or None)`` to override the identity derived from each
    record's target. ``progress`` is called with the number of lines read so far.
    """
    folder = Path(folder)
    workload_path = find_file(folder, WORKLOAD_FILE)
    record_path = find_file(folder, RECORD_FILE)
    if workload_path is None or record_path is None:
        missing = WORKLOAD_FILE if workload_path is None else RECORD_FILE
        builder.guard(InputError(folder, None, "missing-file",
                                 f"MetaSchedule database folder lacks {missing}(.gz)"))
        return
    workloads = _read_workloads(workload_path, builder)
    identities: dict[str, tuple[str, str, str]] = {}
    n_lines = 0
    for number, value in builder.lines(record_path):
        n_lines += 1
        try:
            _add_record(record_path, number, value, workloads, identities, hardware, builder)
        except InputError as error:
            builder.guard(error)
        if progress is not None:
            progress(1)
    builder.sources.append({"path": str(folder), "format": "metaschedule", "n_lines": n_lines})


def _read_workloads(path: Path, builder: RecordBuilder) -> dict:
    """Workloads by index (the 0-based line number that records refer to)."""
    workloads = {}
    for number, value in builder.lines(path):
        try:
            expect(isinstance(value, list) and len(value) == 2 and isinstance(value[1], str),
                   path, number, "expected [structural_hash, IRModule JSON text]")
            shash = value[0]
            expect(isinstance(shash, str) and shash.isdigit() and shash.isascii()
                   or isinstance(shash, int) and not isinstance(shash, bool) and shash >= 0,
                   path, number, f"structural hash must be a non-negative integer (or its "
                   f"decimal string), got {json.dumps(shash)[:60]}")
            expect(value[1].strip() != "", path, number, "the workload's IRModule text is empty")
        except InputError as error:
            builder.guard(error)
            continue
        workloads[number - 1] = (str(value[0]), value[1])
    return workloads


def _add_record(path, number, value, workloads, identities, hardware, builder) -> None:
    expect(isinstance(value, list) and len(value) == 2 and isinstance(value[1], list),
           path, number, "expected [workload_index, [trace, run_secs, target, args_info]]")
    index, body = value
    expect(isinstance(index, int) and not isinstance(index, bool), path, number,
           f"workload index must be an integer, got {type(index).__name__}")
    expect(index in workloads, path, number,
           f"workload index {index} is not a readable line of {WORKLOAD_FILE} "
           f"({len(workloads)} workloads)", reason="unknown-workload")
    expect(2 <= len(body) <= 4, path, number, "expected [trace, run_secs, target, args_info]")
    trace, run_secs = body[0], body[1]
    target = body[2] if len(body) > 2 else None
    args_info = body[3] if len(body) > 3 else None
    _check_trace(path, number, trace)
    primitives = trace_primitives(trace)
    _check_args_info(path, number, args_info)

    error = ""
    costs: list[float] = []
    if run_secs is None:
        error = "not-measured"
    else:
        costs = check_costs(path, number, run_secs, "run_secs")
        if run_latency(costs) is None:
            error = "build-or-run-failed"
            costs = []

    if target is None:
        expect(hardware is not None, path, number,
               "record has no target: give --hardware NAME[:FAMILY]", reason="no-target")
        target_text = "{}"
    else:
        expect(isinstance(target, dict), path, number, lambda: f"target must be a JSON object, "
               f"got {json.dumps(target)[:80]}", reason="bad-target")
        key = canonical_json(target)
        if key not in identities:
            try:
                name, family = hardware_identity(target)
                identities[key] = (name, family, target_json(parse_target(target)))
            except (ValueError, TypeError) as exc:
                raise InputError(path, number, "bad-target", f"unreadable target: {exc}") from None
        name, family, target_text = identities[key]
    if hardware is not None:
        name, family = hardware[0], hardware[1] or (family if target is not None else hardware[0])

    shash, workload_text = workloads[index]
    raw = canonical_json(trace)
    if not builder.has_task(shash):
        builder.add_task(shash, **describe_task(trace, args_info), source_format="metaschedule",
                         workload_format="tvm-json", workload=workload_text)
    builder.add(task_key=shash, canonical=canonical_trace_text(raw), raw=raw,
                primitives=primitives, costs=costs, error=error, hardware=name, family=family,
                target=target_text, source_format="metaschedule", source=path, line=number)


def _check_trace(path, number, trace) -> None:
    """A trace is ``[instructions, decisions]``: each instruction ``[name, inputs, attrs,
    outputs]`` (a string and three lists), each decision ``[instruction index, value]``."""
    expect(isinstance(trace, list) and len(trace) == 2 and isinstance(trace[0], list)
           and isinstance(trace[1], list), path, number,
           "trace must be [instructions, decisions]")
    insts, decisions = trace
    n = len(insts)
    if not all(type(i) is list and len(i) == 4 and type(i[0]) is str and i[0]  # noqa: E721
               and type(i[1]) is list and type(i[2]) is list and type(i[3]) is list
               for i in insts):  # (one pass for the common case; the first bad one named below)
        for i, inst in enumerate(insts):
            expect(isinstance(inst, list) and len(inst) == 4 and isinstance(inst[0], str)
                   and inst[0] and all(isinstance(part, list) for part in inst[1:]), path,
                   number, lambda: f"trace instruction {i} must be [name, inputs, attrs, "
                                   f"outputs], got {json.dumps(inst)[:80]}")
    for decision in decisions:
        expect(type(decision) is list and len(decision) == 2  # noqa: E721
               and type(decision[0]) is int and 0 <= decision[0] < n, path, number,
               lambda: f"trace decision must be [instruction index < {n}, value], got "
                       f"{json.dumps(decision)[:80]}")


def _check_args_info(path, number, args_info) -> None:
    """``args_info`` is absent (None) or a list of ``["TENSOR", dtype, shape]``."""
    if args_info is None:
        return
    expect(isinstance(args_info, list), path, number,
           lambda: f"args_info must be a list of [\"TENSOR\", dtype, shape], got "
                   f"{json.dumps(args_info)[:80]}")
    for arg in args_info:
        expect(isinstance(arg, list) and len(arg) == 3 and arg[0] == "TENSOR"
               and isinstance(arg[1], str) and DTYPE.fullmatch(arg[1]), path, number,
               lambda: f"args_info entry must be [\"TENSOR\", dtype, shape], got "
                       f"{json.dumps(arg)[:80]}")
        problem = shape_problem(arg[2])
        expect(not problem, path, number, f"args_info {problem}", reason="bad-shape")


def run_latency(run_secs) -> float | None:
    """A MetaSchedule measurement's latency, in seconds: the median of its repeats; ``None``
    when it failed (no repeats, or one of :data:`FAILED_AT_SECS` or more)."""
    secs = [float(s) for s in run_secs] if run_secs else []
    if not secs or max(secs) >= FAILED_AT_SECS:
        return None
    return float(np.median(secs))


def describe_task(trace, args_info) -> dict:
    """Operator, description and argument shapes of a task, from one of its records."""
    blocks = [inst[2][0] for inst in trace[0]
              if inst[0] in ("GetBlock", "GetSBlock") and inst[2] and isinstance(inst[2][0], str)]
    operator = _main_operator(blocks)
    args = []
    for arg in args_info or []:
        if isinstance(arg, list) and len(arg) == 3 and arg[0] == "TENSOR":
            args.append([arg[1], arg[2]])
    shapes = " ".join("x".join(str(d) for d in shape) for _, shape in args)
    return {"operator": operator,
            "description": f"{operator or '?'} [{shapes}] blocks={','.join(blocks)}",
            "args": json.dumps(args)}


def _main_operator(blocks: list[str]) -> str:
    lowered = [b.lower() for b in blocks]
    for hint in OPERATOR_HINTS:
        for block in lowered:
            if hint in block:
                return block
    for block in blocks:
        if block != "root" and not block.startswith("pad"):
            return block
    return ""
