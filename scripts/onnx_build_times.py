"""Why a tuning run's first round takes longer with one cost model than another: the time to
build the programs each one picked, rebuilt here.

    python scripts/onnx_build_times.py --work scripts/results/bench_onnx/resnet50-seed1
                                       [--methods gbxfer,xgb] [--per-task 4] [--seed 0]
                                       [--failed-cap 120] [--best 3]

--work is a run folder of ``scripts/bench_onnx.py``. MetaSchedule's task scheduler commits no
result until its first round has sent every task's first batch to the builder, which builds
them one at a time (``gbxfer tune``'s builder had one worker and a 60 s timeout when these runs were tuned), so that
round's wall time is the search's, the builds' and the measurements'. For each method,
the first round is the records committed up to the curve's row for the last task of the
round; --per-task of each task's first-round records that built and ran are drawn (seeded)
and built again with the tuning builder's function (``fast_build``), methods alternating per
task; the estimate of the round's build seconds is each task's mean build time x its records
that built (exporting the library not counted). With --failed-cap S, every failed first-round
record (a build or a run that failed) is built again in a child process stopped after S
seconds: one that takes 45 s or more, or does not finish, counts as slow to build (the tuning
builder's timeout was 60 s). With --best K, each task's K fastest programs of the whole run are
built again (each built within the tuning builder's timeout then): whether a lower build
timeout would have cost a run the programs it ended with. Run on an idle machine.
Results: scripts/results/<name>.{json,csv} (name: onnx_build_times_<work folder>).
"""
from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path

import numpy as np
from _results import print_table, write_results
from bench_onnx import cpu_model, same_machine

SLOW = 45.0  # a failed program whose rebuild takes this long or more: a build timeout


def first_round(folder: Path) -> tuple[list[tuple[int, int, dict]], float]:
    """A tuning run's first round: its (database line, workload index, record) triples in
    commit order, and the curve's seconds when it ended."""
    with open(folder / "curve.csv") as f:
        rows = list(csv.DictReader(f))
    n_tasks = len([c for c in rows[0] if c.startswith("best_")])
    if [int(r["task"]) for r in rows[:n_tasks]] != list(range(n_tasks)):
        raise SystemExit(f"{folder}: the curve's first {n_tasks} batches are not one per task")
    trials = int(rows[n_tasks - 1]["trials"])
    return database(folder)[:trials], float(rows[n_tasks - 1]["seconds"])


def database(folder: Path) -> list[tuple[int, int, dict]]:
    """A tuning run's (database line, workload index, record) triples in commit order."""
    lines = (folder / "metaschedule" / "database_tuning_record.json").read_text().splitlines()
    return [(n, *json.loads(line)) for n, line in enumerate(lines) if line.strip()]


def fastest(folder: Path, k: int) -> list[tuple[int, int, dict, float]]:
    """Each task's ``k`` fastest records of a whole tuning run: (database line, workload index,
    record, latency in seconds), task by task."""
    from gbxfer.records.formats._metaschedule import run_latency

    timed = [(n, i, r, run_latency(r[1])) for n, i, r in database(folder)]
    timed = [t for t in timed if t[3] is not None]
    return [t for index in sorted({t[1] for t in timed})
            for t in sorted((t for t in timed if t[1] == index), key=lambda t: t[3])[:k]]


def failed(record: list) -> bool:
    """Whether a database record's program failed to build or run."""
    from gbxfer.records.formats._metaschedule import run_latency

    return run_latency(record[1]) is None


def build_seconds(workload, record: dict, target) -> float:
    """Seconds to build one record's program as ``gbxfer tune``'s builder does."""
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.schedule import Schedule

    from gbxfer.tvm._builder import fast_build

    schedule = Schedule(workload.mod)
    ms.database.TuningRecord.from_json(record, workload).trace.apply_to_schedule(
        schedule, remove_postproc=False)
    start = time.perf_counter()
    fast_build(schedule.mod, target, None)
    return time.perf_counter() - start


def _child(queue, workload_json, record, hardware: str) -> None:
    import tvm
    from tvm.s_tir import meta_schedule as ms

    from gbxfer.hardware import load_profile

    workload = ms.database.Workload.from_json(workload_json)
    target = tvm.target.Target(load_profile(hardware).target)
    try:
        queue.put(("built", build_seconds(workload, record, target)))
    except Exception as error:  # reported to the parent, which records it
        queue.put(("error", f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"))


def capped_build(workload_json, record: dict, hardware: str, cap: float) -> tuple:
    """(status, seconds): :func:`build_seconds` in a child process stopped after ``cap``
    seconds (which also count the child's start and imports); ``("not built", None)`` then,
    ``("error: ...", None)`` if building failed."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=_child, args=(queue, workload_json, record, hardware))
    child.start()
    child.join(cap)
    if child.is_alive():
        child.kill()
        child.join()
        return f"not built in {cap:g} s", None
    status, value = queue.get() if child.exitcode == 0 else ("error", f"exit {child.exitcode}")
    return ("built", value) if status == "built" else (f"error: {value}", None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--methods", default="gbxfer,xgb")
    parser.add_argument("--per-task", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--failed-cap", type=float, default=0.0, metavar="S")
    parser.add_argument("--best", type=int, default=0, metavar="K")
    parser.add_argument("--name")
    args = parser.parse_args()
    machine = json.loads((args.work / "machine.json").read_text())
    same_machine(args.work / "machine.json", cpu_model(), machine["hardware"])
    import tvm
    from tvm.s_tir import meta_schedule as ms

    from gbxfer.hardware import load_profile

    target = tvm.target.Target(load_profile(machine["hardware"]).target)
    methods = args.methods.split(",")
    rng = np.random.default_rng(args.seed)
    rounds, raw, workloads, ends = {}, {}, {}, {}
    for method in methods:
        folder = args.work / method
        raw[method] = [json.loads(line) for line in (
            folder / "metaschedule" / "database_workload.json").read_text().splitlines()
            if line.strip()]
        workloads[method] = [ms.database.Workload.from_json(w) for w in raw[method]]
        rounds[method], ends[method] = first_round(folder)
    rows = []
    for index in range(len(workloads[methods[0]])):
        for method in methods if index % 2 == 0 else methods[::-1]:
            records = [r for _, i, r in rounds[method] if i == index]
            built = [r for r in records if not failed(r)]
            drawn = rng.choice(len(built), min(args.per_task, len(built)), replace=False) \
                if built else []
            seconds = [build_seconds(workloads[method][index], built[j], target)
                       for j in drawn]
            rows.append({"method": method, "task": index, "records": len(records),
                         "failed": len(records) - len(built), "drawn": len(seconds),
                         "mean_build_s": float(np.mean(seconds)) if seconds else 0.0,
                         "max_build_s": float(np.max(seconds)) if seconds else 0.0})
    rebuilt = []
    if args.failed_cap:
        for method in methods:
            for line, index, record in rounds[method]:
                if failed(record):
                    status, seconds = capped_build(raw[method][index], record,
                                                   machine["hardware"], args.failed_cap)
                    rebuilt.append({"method": method, "task": index, "database_line": line,
                                    "status": status, "build_s": seconds})
    best = []
    for method in methods if args.best else ():
        for line, index, record, latency in fastest(args.work / method, args.best):
            best.append({"method": method, "task": index, "database_line": line,
                         "latency_ms": 1e3 * latency,
                         "build_s": build_seconds(workloads[method][index], record, target)})
    totals = []
    for method in methods:
        mine = [r for r in rows if r["method"] == method]
        built_s = sum(r["mean_build_s"] * (r["records"] - r["failed"]) for r in mine)
        n_failed = sum(r["failed"] for r in mine)
        slow = sum(r["status"].startswith("not built") or (r["build_s"] or 0.0) >= SLOW
                   for r in rebuilt if r["method"] == method)
        totals.append({"method": method, "first_round_s": ends[method],
                       "records": sum(r["records"] for r in mine), "failed": n_failed,
                       "failed_slow_to_build": slow if args.failed_cap else None,
                       "builds_s": built_s, "slowest_build_s": max(
                           r["max_build_s"] for r in mine)})
        if best:
            mine = [r for r in best if r["method"] == method]
            totals[-1]["best_programs"] = len(mine)
            totals[-1]["best_slowest_build_s"] = max((r["build_s"] for r in mine), default=None)
    print_table(rows)
    print_table(totals)
    if rebuilt:
        print_table(rebuilt)
    if best:
        print_table(sorted(best, key=lambda r: -r["build_s"])[:10])
    write_results(args.name or f"onnx_build_times_{args.work.name}", rows, totals=totals,
                  failed=rebuilt, failed_cap=args.failed_cap, best=best,
                  work=str(args.work), per_task=args.per_task, seed=args.seed,
                  cpu=cpu_model(), hardware=machine["hardware"])


if __name__ == "__main__":
    main()
