"""MetaSchedule JSON databases (``database_workload.json`` + ``database_tuning_record.json``).

Works for TVM 0.27 and older TVM alike without importing TVM: the workload IR is stored as text
(once per task) and the task is described from the records' argument shapes and the block names
the trace reads, so records ingest even where TVM 0.27 cannot parse an older IR.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ...errors import InputError
from ..programs import canonical_json, canonical_trace_text, trace_primitives
from ..targets import hardware_identity, parse_target, target_json
from ._builder import RecordBuilder
from ._lines import check_costs, expect

WORKLOAD_FILE = "database_workload.json"
RECORD_FILE = "database_tuning_record.json"
FAILED_RUN_SECS = 1e10  # what MetaSchedule writes as the run_secs of a failed build or run
FAILED_AT_SECS = 1e9  # a repeat this long (31 years) marks a failure, whoever wrote it

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
            expect(isinstance(value[0], (str, int)) and not isinstance(value[0], bool),
                   path, number, "structural hash must be a string or integer")
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
    expect(isinstance(trace, list) and len(trace) == 2 and isinstance(trace[0], list)
           and isinstance(trace[1], list), path, number,
           "trace must be [instructions, decisions]")
    try:
        primitives = trace_primitives(trace)
    except ValueError as exc:
        raise InputError(path, number, "bad-structure", str(exc)) from None

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
        key = canonical_json(target) if isinstance(target, dict) else str(target)
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
