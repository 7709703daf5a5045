"""Continuing a tuning run stopped in its folder (``tune(earlier=...)``): what its database
holds and its curve lacks, its cost model taught what the run measured before, and its totals
(``OUT/totals.json``) carried on."""
from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import pandas as pd

from ..manifests import write_file
from ..records.formats._metaschedule import run_latency

TOTALS = "totals.json"  # a run's totals so far, rewritten after every measured batch
log = logging.getLogger("gbxfer")


def workload_hash(mod) -> str:
    """A task's IRModule's structural hash, as text."""
    import tvm_ffi

    return str(tvm_ffi.structural_hash(mod))


def caught_up(earlier: pd.DataFrame, records: list, tasks: list[str]) -> pd.DataFrame:
    """A resumed run's curve, with one more row for the ``records`` (``records_in_order``)
    past its last trial (a kill between the database's write and the curve's, or a curve
    lost): their trials, failures and best latencies per task (of ``tasks``' workload
    hashes); the seconds they took are not known."""
    rows = earlier.to_dict("records")
    last = rows[-1] if rows else {"trials": 0, "seconds": 0.0, "task": 0, "failures": 0}
    missing = records[int(last["trials"]):]
    if not missing:
        return earlier
    row = {"trials": len(records), "seconds": float(last["seconds"]), "task": last["task"],
           "failures": int(last["failures"])}
    best = {i: float(last.get(f"best_{i}", math.inf)) for i in range(len(tasks))}
    for workload, record in missing:
        latency = run_latency(record.run_secs)
        if latency is None:
            row["failures"] += 1
        elif workload in tasks:
            i = tasks.index(workload)
            best[i], row["task"] = min(best[i], latency), i
    row.update({f"best_{i}": b for i, b in best.items()})
    return pd.DataFrame([*rows, row])


def replay_measured(cost_model, contexts, records: list, per_round: int) -> set:
    """A resumed run's cost model learns what the run measured before: each task's
    ``records`` (``records_in_order``), ``per_round`` at a time, as its updates would have.
    Returns the records' (workload hash, printed trace) pairs."""
    from tvm.s_tir import meta_schedule as ms

    measured = set()
    for context in contexts:
        key = workload_hash(context.mod)
        mine = [record for workload, record in records if workload == key]
        for i in range(0, len(mine), per_round):
            part = mine[i:i + per_round]
            results = [ms.runner.RunnerResult(r.run_secs, None if run_latency(r.run_secs)
                                              is not None else "failed") for r in part]
            cost_model.update(context, [r.as_measure_candidate() for r in part], results)
        measured.update((key, str(r.trace)) for r in mine)
    return measured


def read_totals(out) -> dict:
    """The totals a run in ``out`` wrote (:func:`write_totals`); ``{}`` where there are none
    (a run from before them) or they are damaged (said in a warning): the totals then count
    the parts from this one on."""
    path = Path(out) / TOTALS
    if not path.is_file():
        return {}
    try:
        totals = json.loads(path.read_text())
    except (OSError, ValueError):
        totals = None
    if not isinstance(totals, dict):
        log.warning("%s: damaged; the summary's totals count this part only", path)
        return {}
    return totals


def write_totals(out, totals: dict) -> None:
    """``totals`` (the run's so far) to ``out``'s totals file, whole or not at all."""
    write_file(Path(out) / TOTALS, lambda tmp: tmp.write_text(json.dumps(totals)))


def add_totals(before: dict, part: dict) -> dict:
    """``part``'s numbers (nested in dicts) plus ``before``'s of the same keys (a number
    missing or not a number there counts 0)."""
    out = {}
    for key, value in part.items():
        earlier = before.get(key) if isinstance(before, dict) else None
        if isinstance(value, dict):
            out[key] = add_totals(earlier if isinstance(earlier, dict) else {}, value)
        else:
            ok = isinstance(earlier, (int, float)) and not isinstance(earlier, bool) and \
                math.isfinite(earlier)
            out[key] = value + (type(value)(earlier) if ok else 0)
    return out
