"""Whether a tuned network's kernels can use a second thread: the parallel loops of each task's
best record, per tuning method, read from a ``scripts/bench_onnx.py`` run folder.

    python scripts/parallel_picks.py --work scripts/results/bench_onnx_pop128/bert-seed0
                                     [--name NAME]

MetaSchedule parallelises a kernel in post-processing, by fusing its outer spatial loops up to
the sampled extent; a schedule whose outer tiles all have extent 1 has nothing to fuse and runs
on one thread however many the runtime has. Tuned at 1 thread, such a schedule can be the
fastest (it pays no thread-pool launch), and the library built from it does not speed up on
2 threads. For each method's database (the whole run) and each task: the best valid record's
latency, whether its trace holds a ``Parallel`` instruction, and the best latency among the
task's records that do (what choosing a parallel kernel would cost at 1 thread). No TVM and no
timing: the tuning runs' own measurements. Results: scripts/results/<name>.{json,csv} (name:
parallel_picks_<run folder's parent>_<run folder>).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from _results import print_table, write_results

from gbxfer.records.ingest import ingest


def task_rows(database: Path, method: str) -> list[dict]:
    """One row per task of ``database``: its best record, with and without parallel loops."""
    data = ingest(database)
    records = data.records[data.records["valid"]]
    records = records.assign(parallel=records["primitives"].map(lambda p: "Parallel" in p))
    names = data.tasks.set_index("task_key")["description"]
    rows = []
    for key, group in records.groupby("task_key"):
        best = group.loc[group["latency"].idxmin()]
        parallel = group[group["parallel"]]
        best_parallel = parallel["latency"].min() if len(parallel) else np.nan
        rows.append({"method": method, "task": names.get(key, key)[:60],
                     "records": len(group), "parallel_share": round(group["parallel"].mean(), 3),
                     "best_ms": best["latency"] * 1e3, "best_parallel": bool(best["parallel"]),
                     "best_parallel_ms": best_parallel * 1e3,
                     "parallel_over_best": best_parallel / best["latency"]})
    return sorted(rows, key=lambda r: -r["best_ms"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", required=True, type=Path, help="a bench_onnx.py run folder")
    parser.add_argument("--name", help="results file name")
    args = parser.parse_args()
    methods = sorted(p.parent.name for p in args.work.glob("*/metaschedule"))
    if not methods:
        parser.error(f"{args.work} holds no <method>/metaschedule tuning database")
    rows = [row for method in methods
            for row in task_rows(args.work / method / "metaschedule", method)]
    print_table(rows, ["method", "task", "records", "parallel_share", "best_ms", "best_parallel",
                       "best_parallel_ms", "parallel_over_best"])
    summary = {}
    for method in methods:
        mine = [r for r in rows if r["method"] == method]
        total = sum(r["best_ms"] for r in mine)
        serial = [r for r in mine if not r["best_parallel"]]
        summary[method] = {
            "tasks": len(mine), "best_without_parallel": len(serial),
            "their_share_of_summed_best": round(sum(r["best_ms"] for r in serial) / total, 3),
            "parallel_cost_at_1_thread": round(
                sum(r["best_parallel_ms"] for r in serial) / max(1e-12, sum(
                    r["best_ms"] for r in serial)), 3) if serial else 1.0}
        print(f"{method}: {len(serial)} of {len(mine)} tasks' best records have no parallel loop "
              f"({summary[method]['their_share_of_summed_best']:.0%} of the summed best "
              f"latencies, each task once); their best parallel records are "
              f"{summary[method]['parallel_cost_at_1_thread']:.2f}x slower at 1 thread")
    name = args.name or f"parallel_picks_{args.work.parent.name}_{args.work.name}"
    write_results(name, rows, work=str(args.work), summary=summary)


if __name__ == "__main__":
    main()
