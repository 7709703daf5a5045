"""Where a tuned ONNX network's latency goes: each task's kernel timed alone, with warm caches
and with the CPU caches flushed before every run, against the whole network, in one process.

    python scripts/onnx_kernels.py --work scripts/results/bench_onnx/bert-seed0
                                   [--methods gbxfer,xgb] [--threads 1] [--repeats 30]
                                   [--rounds 10] [--rerank 16] [--name NAME]

--work is a run folder of ``scripts/bench_onnx.py`` (the ONNX model, ``machine.json``, one
tuned run per method and the libraries built from them), on the machine that made it. For
each method, the library of its last point (the most trials) is the network, and the tuning
records it was built from (that many of the run's first) are the database: each task's record
in the library (its best, or with ``gbxfer tune --parallel-within``'s share in the library's
name, ``-p<F>``, that pick; ``--rerank`` needs an as-tuned library) is compiled alone and
timed --repeats times warm (each run the mean over >= 40 ms, as tuning's runner measures it
when --threads is the profile's) and cold
(``cache_flush_cpu_non_first_arg``: every argument but the first flushed before each single
run; for a dense layer, its weights and output). A task without a record is timed as the
network runs it, unscheduled. The sums are weighted by the tasks' occurrences; what the network
takes beyond the warm sum is spent outside the kernels as tuning timed them (cold weights, the
virtual machine). With ``--rerank K``, each task's K fastest records are timed again cold and
the network compiled with the fastest cold one of every task
(``<method>-rerank<K>-reranked.so``); as a control, the same path compiles the tuned picks
(``<method>-rerank<K>-control.so``, the same kernels as the tuned library). The three networks
are timed in --rounds interleaved rounds; each ratio is the median of the per-round ratios.
Re-ranked over control says whether picking kernels by cold timings makes the network faster;
control over tuned, how far two builds of the same kernels differ here. Run on an idle machine.
Results: scripts/results/<name>.{json,csv} (name: onnx_kernels_<work folder>).
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import re
from pathlib import Path

import numpy as np
from _results import print_table, tuned_layout, write_results
from bench_onnx import cpu_model, interleaved, same_machine


def kernel_seconds(schedule, target, repeats: int, rng, with_warm: bool = True) -> dict:
    """A kernel compiled alone: median seconds warm (NaN unless ``with_warm``) and cold."""
    import tvm

    function = tvm.tirx.build(schedule.mod, target=target)
    device = tvm.cpu()
    (gvar, primfunc), = schedule.mod.functions.items()
    args = [tvm.runtime.tensor(rng.random([int(d) for d in p.ty.shape]).astype(
        str(p.ty.dtype)), device) for p in primfunc.params]
    cold = function.time_evaluator(gvar.name_hint, device, number=1, repeat=repeats,
                                   f_preproc="cache_flush_cpu_non_first_arg")
    warm = function.time_evaluator(gvar.name_hint, device, number=1, repeat=repeats,
                                   min_repeat_ms=40)
    return {"warm": float(np.median(warm(*args).results)) if with_warm else np.nan,
            "cold": float(np.median(cold(*args).results))}


def best_schedule(task, database, target):
    """(schedule, scheduled): the task's best record applied, or the task unscheduled (as the
    network runs a task without a record)."""
    from tvm.s_tir.schedule import Schedule

    schedule = database.query_schedule(task.dispatched[0], target, task.task_name)
    return (schedule, True) if schedule is not None else (Schedule(task.dispatched[0]), False)


def reranked(tasks, database, target, k: int, repeats: int, rng):
    """Two databases built the same way: ``picked`` holds, for every task, the fastest cold of
    its ``k`` fastest warm records, ``control`` the fastest warm one (the tuned pick); and per
    task the rank (0 = the tuned pick) of the record picked."""
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.schedule import Schedule

    picked, control, ranks = ms.database.MemoryDatabase(), ms.database.MemoryDatabase(), {}
    for task in tasks:
        mod = task.dispatched[0]
        records = database.get_top_k(database.commit_workload(mod), k)
        if not records:
            continue
        cold = []
        for record in records:
            schedule = Schedule(mod)
            record.trace.apply_to_schedule(schedule, remove_postproc=False)
            cold.append(kernel_seconds(schedule, target, repeats, rng, with_warm=False)["cold"])
        ranks[task.task_name] = int(np.argmin(cold))
        for db, rank in ((picked, ranks[task.task_name]), (control, 0)):
            db.commit_tuning_record(ms.database.TuningRecord(
                records[rank].trace, db.commit_workload(mod), [cold[rank]], target,
                records[rank].args_info))
    return picked, control, ranks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--methods", default="gbxfer,xgb")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--rerank", type=int, default=0, metavar="K")
    parser.add_argument("--name")
    args = parser.parse_args()
    os.environ["TVM_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(args.threads)
    machine = json.loads((args.work / "machine.json").read_text())
    same_machine(args.work / "machine.json", cpu_model(), machine["hardware"])
    import tvm

    from gbxfer.hardware import load_profile
    from gbxfer.tvm._networks import compile_network, database_prefix, extract_tasks, \
        network_inputs, prefer_parallel, prepare, time_network
    from gbxfer.tvm._onnx import export_module, load_onnx

    target = tvm.target.Target(load_profile(machine["hardware"]).target)
    network = load_onnx(next(args.work.glob("*.onnx")), layout=tuned_layout(args.work)).mod
    tasks = extract_tasks(prepare(network), target)
    inputs = network_inputs(network)
    rng = np.random.default_rng(0)
    rows, totals, reranks = [], [], []
    for method in args.methods.split(","):
        points = {int(m[1]): (p, float(m[2] or 0))  # bench_onnx's names: trials, parallel_within
                  for p in args.work.glob(f"{method}-*.so")
                  if (m := re.fullmatch(rf"{re.escape(method)}-(\d+)t(?:-p([\d.]+))?", p.stem))}
        if not points:
            raise SystemExit(f"{args.work}: no {method}-<trials>t.so library; run "
                             "scripts/bench_onnx.py first")
        trials = max(points)
        database = database_prefix(args.work / method / "metaschedule", trials)
        libraries, within = {"tuned": points[trials][0]}, points[trials][1]
        if within and args.rerank:
            raise SystemExit(f"{points[trials][0].name} was built with --parallel-within "
                             f"{within:g}: --rerank compares with the fastest records as tuned")
        picks = prefer_parallel(database, within) if within else database  # the library's
        if args.rerank:
            picked, control, ranks = reranked(tasks, database, target, args.rerank,
                                              args.repeats, rng)
            for key, db in (("reranked", picked), ("control", control)):
                libraries[key] = args.work / f"{method}-rerank{args.rerank}-{key}.so"
                export_module(compile_network(network, db, target, 0.0), libraries[key])
        loaded = {key: tvm.runtime.load_module(str(path)) for key, path in libraries.items()}
        seconds = {key: np.asarray(s) for key, s in interleaved(
            {key: functools.partial(time_network, module, inputs, repeat=1, min_repeat_ms=500)
             for key, module in loaded.items()}, args.rounds, seed=0).items()}
        if args.rerank:
            reranks.append({"method": method, "k": args.rerank,
                            "tuned_ms": 1e3 * float(np.median(seconds["tuned"])),
                            "reranked_ms": 1e3 * float(np.median(seconds["reranked"])),
                            "control_ms": 1e3 * float(np.median(seconds["control"])),
                            "reranked_over_tuned": float(np.median(
                                seconds["reranked"] / seconds["tuned"])),
                            "control_over_tuned": float(np.median(
                                seconds["control"] / seconds["tuned"])),
                            "reranked_over_control": float(np.median(
                                seconds["reranked"] / seconds["control"])),
                            "tasks_changed": sum(r > 0 for r in ranks.values()),
                            "ranks": ranks})
        network_ms = 1e3 * float(np.median(seconds["tuned"]))
        part = []
        for task in tasks:
            schedule, scheduled = best_schedule(task, picks, target)
            timed = kernel_seconds(schedule, target, args.repeats, rng)
            part.append({"method": method, "task": task.task_name, "weight": task.weight,
                         "scheduled": scheduled, "warm_ms": timed["warm"] * 1e3,
                         "cold_ms": timed["cold"] * 1e3,
                         "cold_over_warm": timed["cold"] / timed["warm"]})
        part.sort(key=lambda r: -r["weight"] * r["cold_ms"])
        rows += part
        warm = sum(r["weight"] * r["warm_ms"] for r in part)
        cold = sum(r["weight"] * r["cold_ms"] for r in part)
        totals.append({"method": method, "library": points[trials][0].name,
                       "network_ms": network_ms, "kernels_warm_ms": warm,
                       "kernels_cold_ms": cold, "outside_warm_kernels_ms": network_ms - warm,
                       "warm_share": warm / network_ms, "cold_share": cold / network_ms})
    print_table(rows, ["method", "task", "weight", "scheduled", "warm_ms", "cold_ms",
                       "cold_over_warm"])
    print_table(totals, list(totals[0]))
    if reranks:
        print_table(reranks, [c for c in reranks[0] if c != "ranks"])
    write_results(args.name or f"onnx_kernels_{args.work.name}", rows, totals=totals,
                  reranks=reranks, work=str(args.work), threads=args.threads,
                  repeats=args.repeats, rounds=args.rounds, cpu=cpu_model(),
                  hardware=machine["hardware"])


if __name__ == "__main__":
    main()
