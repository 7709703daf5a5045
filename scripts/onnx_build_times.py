"""Why a tuning run's first round takes longer with one cost model than another: the time to
build the programs each one picked, rebuilt here.

    python scripts/onnx_build_times.py --work scripts/results/bench_onnx/resnet50-seed1
                                       [--methods gbxfer,xgb] [--per-task 4] [--seed 0]
                                       [--failed-cap 120]

--work is a run folder of ``scripts/bench_onnx.py``. MetaSchedule's task scheduler measures
nothing until its first round has sent every task's first batch to the builder, which builds
them one at a time (``gbxfer tune``'s builder has one worker and a 60 s timeout), so that
round's wall time is the search's, the builds' and the runner's left-over. For each method,
the first round is the records committed before the curve's row for the last task of the
round; --per-task of each task's first-round records that built and ran are drawn (seeded)
and built again with the tuning builder's function (``fast_build``), methods alternating per
task; the estimate of the round's build seconds is each task's mean build time x its records,
plus 60 s per failed record (a build timeout, as the tuning logs of ResNet-50 say; a failed run
would cost less). Build times exclude exporting the library. With --failed-cap S, every failed
first-round record is built again in a child process stopped after S seconds: whether those
programs build at all. Run on an idle machine.
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

FAILED = 1e9  # run seconds MetaSchedule stores for a program that did not build or run


def first_round(folder: Path) -> list[tuple[int, dict]]:
    """The (workload index, record) pairs of a tuning run's first round, in commit order."""
    rows = list(csv.DictReader(open(folder / "curve.csv")))
    n_tasks = len([c for c in rows[0] if c.startswith("best_")])
    trials = int(rows[n_tasks - 1]["trials"])
    lines = (folder / "metaschedule" / "database_tuning_record.json").read_text().splitlines()
    return [tuple(json.loads(line)) for line in lines[:trials]]


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
    queue.put(build_seconds(workload, record, tvm.target.Target(load_profile(hardware).target)))


def capped_build_seconds(workload_json, record: dict, hardware: str, cap: float) -> float:
    """:func:`build_seconds` in a child process; NaN when it has not finished after ``cap``."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=_child, args=(queue, workload_json, record, hardware))
    child.start()
    child.join(cap)
    if child.is_alive():
        child.kill()
        child.join()
        return float("nan")
    return queue.get() if child.exitcode == 0 else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--methods", default="gbxfer,xgb")
    parser.add_argument("--per-task", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--failed-cap", type=float, default=0.0, metavar="S")
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
        rounds[method] = first_round(folder)
        curve = list(csv.DictReader(open(folder / "curve.csv")))
        ends[method] = float(curve[len(workloads[method]) - 1]["seconds"])
    rows = []
    for index in range(len(workloads[methods[0]])):
        for method in methods if index % 2 == 0 else methods[::-1]:
            records = [r for i, r in rounds[method] if i == index]
            built = [r for r in records if max(float(s) for s in r[1]) < FAILED]
            drawn = rng.choice(len(built), min(args.per_task, len(built)), replace=False) \
                if built else []
            seconds = [build_seconds(workloads[method][index], built[j], target)
                       for j in drawn]
            rows.append({"method": method, "task": index, "records": len(records),
                         "failed": len(records) - len(built), "drawn": len(seconds),
                         "mean_build_s": float(np.mean(seconds)) if seconds else 0.0,
                         "max_build_s": float(np.max(seconds)) if seconds else 0.0})
    totals = []
    for method in methods:
        mine = [r for r in rows if r["method"] == method]
        built_s = sum(r["mean_build_s"] * (r["records"] - r["failed"]) for r in mine)
        failed = sum(r["failed"] for r in mine)
        totals.append({"method": method, "first_round_s": ends[method],
                       "records": sum(r["records"] for r in mine), "failed": failed,
                       "builds_s": built_s, "timeouts_s": 60.0 * failed,
                       "builds_and_timeouts_s": built_s + 60.0 * failed,
                       "slowest_build_s": max(r["max_build_s"] for r in mine)})
    failed = []
    if args.failed_cap:
        for method in methods:
            for index, record in rounds[method]:
                if max(float(s) for s in record[1]) >= FAILED:
                    failed.append({"method": method, "task": index, "build_s": (
                        capped_build_seconds(raw[method][index], record,
                                             machine["hardware"], args.failed_cap))})
    print_table(rows)
    print_table(totals)
    if failed:
        print_table(failed)
    write_results(args.name or f"onnx_build_times_{args.work.name}", rows, totals=totals,
                  failed=failed, failed_cap=args.failed_cap,
                  work=str(args.work), per_task=args.per_task, seed=args.seed,
                  cpu=cpu_model(), hardware=machine["hardware"])


if __name__ == "__main__":
    main()
