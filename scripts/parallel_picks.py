"""Whether a tuned network's kernels can use a second thread: the parallel loops of each task's
best record, per tuning method, read from a ``scripts/bench_onnx.py`` run folder.

    python scripts/parallel_picks.py --work scripts/results/bench_onnx_pop128/bert-seed0
                                     [--time 0.05 [--repeats 15]] [--name NAME]

MetaSchedule parallelises a kernel in post-processing, by fusing its outer spatial loops up to
the sampled extent; a schedule whose outer tiles all have extent 1 has nothing to fuse and runs
on one thread however many the runtime has. Tuned at 1 thread, such a schedule can be the
fastest (it pays no thread-pool launch), and the library built from it does not speed up on
2 threads. For each method's database (the whole run) and each task: the best valid record's
latency, whether its trace holds a ``Parallel`` instruction, and the best latency among the
task's records that do (what choosing a parallel kernel would cost at 1 thread), from the
tuning runs' own measurements (no TVM needed, nothing timed). Results: scripts/results/<name>.{json,csv} (name:
parallel_picks_<run folder's parent>_<run folder>).

``--time F`` then measures the remedy, on the machine that made the run folder: each method's
whole database compiled twice, as tuned and with ``gbxfer tune --parallel-within F``'s picks
(the fastest record with a parallel loop where it is at most F slower), both timed at 1 and 2
threads in ``--repeats`` interleaved rounds with ONNX Runtime, as ``bench_onnx.py`` times its
libraries (in ``<run folder>/parallel-<F>/``); each ratio is the median of the per-round
ratios. Run it on an idle machine. Results: <name>_time.{json,csv}.
"""
from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path

import numpy as np
from _results import print_table, tuned_layout, write_results

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


def time_preference(work: Path, rows: list[dict], within: float, repeats: int) -> list[dict]:
    """Each method's whole database built as tuned and with the parallel preference, timed at
    1 and 2 threads (see the module's docstring)."""
    import onnx
    import tvm
    from bench_onnx import bert, cpu_model, resnet50, time_builds

    from gbxfer.hardware import load_profile
    from gbxfer.tvm._networks import compile_network, database_prefix, has_parallel_loop, \
        prefer_parallel
    from gbxfer.tvm._onnx import export_module, load_onnx

    machine = json.loads((work / "machine.json").read_text())
    if machine["cpu"] != cpu_model():
        raise SystemExit(f"{work} was tuned on {machine['cpu']}, this is {cpu_model()}")
    found = re.fullmatch(r"(resnet50|bert)(\d*)-seed(\d+)(?:-nhwc)?", work.name)
    if not found:
        raise SystemExit(f"{work.name}: not a bench_onnx.py run folder name (MODEL-seedN)")
    model, layers, seed = found[1], int(found[2] or 12), int(found[3])
    folder = work / f"parallel-{within:g}"  # its own timing cache beside its own model file
    folder.mkdir(exist_ok=True)
    path = folder / f"{model}.onnx"
    if not path.exists() and (work / path.name).exists():
        os.link(work / path.name, path)  # the very model the run tuned
    elif not path.exists():  # a fresh checkout: the run's model made again from its seed
        onnx.save(resnet50(seed) if model == "resnet50" else bert(seed, layers=layers), str(path))
    network = load_onnx(path, layout=tuned_layout(work))
    target = tvm.target.Target(load_profile(machine["hardware"]).target)
    builds, changed = [], {}
    for method in sorted({r["method"] for r in rows}):
        database_folder = work / method / "metaschedule"
        lines = (database_folder / "database_tuning_record.json").read_text().splitlines()
        trials = sum(1 for line in lines if line.strip())
        database = database_prefix(database_folder, trials)
        picks = [[has_parallel_loop(r) for r in prefer_parallel(database, share)
                  .get_all_tuning_records()] for share in (0.0, within)]
        changed[method] = sum(a != b for a, b in zip(*picks, strict=True))
        for kind, share in (("tuned", 0.0), ("parallel", within)):
            library = folder / f"{method}-{trials}t-{kind}.so"
            if not library.exists():
                export_module(compile_network(network.mod, database, target, share), library)
                print(f"built {library.name}", flush=True)
            builds.append({"method": method, "kind": kind, "library": str(library)})
    out = []
    for threads in (1, 2):
        timed = time_builds(path, builds, threads,
                            argparse.Namespace(repeats=repeats, seed=0))
        seconds = {name: np.asarray(v) for name, v in timed["seconds"].items()}
        for method in sorted(changed):
            names = [Path(b["library"]).name for b in builds if b["method"] == method]
            tuned, parallel = (seconds[name] for name in names)
            out.append({"method": method, "threads": threads, "within": within,
                        "tasks_changed": changed[method],
                        "tuned_ms": 1e3 * float(np.median(tuned)),
                        "parallel_ms": 1e3 * float(np.median(parallel)),
                        "parallel_over_tuned": float(np.median(parallel / tuned)),
                        "onnxruntime_ms": 1e3 * float(np.median(seconds["onnxruntime"])),
                        "outputs_match": all(timed["checks"][name]["within_tolerance"]
                                             for name in names)})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", required=True, type=Path, help="a bench_onnx.py run folder")
    parser.add_argument("--time", type=float, metavar="F",
                        help="also build and time the libraries with this parallel preference")
    parser.add_argument("--repeats", type=int, default=15, help="with --time: rounds")
    parser.add_argument("--name", help="results file name")
    args = parser.parse_args()
    if args.time is not None and not 0 < args.time < 1 or args.repeats < 1:
        parser.error("--time: a fraction 0 < F < 1; --repeats: at least 1")
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
    if args.time is not None:
        timed = time_preference(args.work, rows, args.time, args.repeats)
        print_table(timed)
        write_results(f"{name}_time", timed, work=str(args.work), repeats=args.repeats)


if __name__ == "__main__":
    main()
