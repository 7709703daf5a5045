"""Where a tuned ONNX network's latency goes: each task's best kernel timed alone, with warm
caches (as MetaSchedule's runner measured it in tuning) and with the CPU caches flushed before
every run, against the whole network, in one process.

    python scripts/onnx_kernels.py --work scripts/results/bench_onnx/bert-seed0
                                   [--methods gbxfer,xgb] [--threads 1] [--repeats 30]
                                   [--rerank 32] [--name onnx_kernels_bert-seed0]

--work is a run folder of ``scripts/bench_onnx.py`` (the ONNX model, ``machine.json``, one
tuned run per method and the libraries built from them). For each method, the library of its
last point (the most trials) is the network; each of the network's tasks is compiled alone
from the method's best record in its database and timed ``--repeats`` times with warm caches
(each run the mean over >= 20 ms) and cold (``cache_flush_cpu_non_first_arg``: every argument
but the first, i.e. the weights and the output, flushed before each single run). The sums are
weighted by the tasks' occurrences; what the network takes beyond the warm sum is spent
outside the tuned kernels as MetaSchedule measured them (cold weights, the virtual machine,
memory planning). With ``--rerank K``, each task's K fastest records (warm, as tuned) are
timed again cold and the network is compiled with the fastest cold one of every task
(``<method>-rerank<K>.so``); both networks, the tuned and the re-ranked, are then timed in
--repeats interleaved rounds, and the re-ranked one's latency over the tuned one's is the median
of the per-round ratios: whether picking kernels by cold timings makes the network faster.
Run on an idle machine, like ``bench_onnx``.
Results: scripts/results/<name>.{json,csv}.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np
from _results import print_table, write_results


def kernel_seconds(schedule, target, repeats: int, rng, warm: bool = True) -> dict:
    """A scheduled kernel compiled alone: median seconds warm and cold."""
    import tvm

    if schedule is None:
        return {"warm": np.nan, "cold": np.nan}
    function = tvm.tirx.build(schedule.mod, target=target)
    device = tvm.cpu()
    primfunc = next(iter(schedule.mod.functions.values()))
    args = [tvm.runtime.tensor(rng.random([int(d) for d in p.ty.shape]).astype(
        str(p.ty.dtype)), device) for p in primfunc.params]
    name = next(iter(schedule.mod.functions.keys())).name_hint
    cold = function.time_evaluator(name, device, number=1, repeat=repeats,
                                   f_preproc="cache_flush_cpu_non_first_arg")
    if not warm:
        return {"warm": np.nan, "cold": float(np.median(cold(*args).results))}
    warm = function.time_evaluator(name, device, number=1, repeat=repeats, min_repeat_ms=20)
    return {"warm": float(np.median(warm(*args).results)),
            "cold": float(np.median(cold(*args).results))}


def reranked(tasks, database, target, k: int, repeats: int, rng):
    """A database holding, for every task, the fastest cold of its ``k`` fastest warm records;
    and per task the rank (0 = the tuned pick) of the record chosen."""
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.schedule import Schedule

    picked, ranks = ms.database.MemoryDatabase(), {}
    for task in tasks:
        mod = task.dispatched[0]
        records = database.get_top_k(database.commit_workload(mod), k)
        if not records:
            continue
        cold = []
        for record in records:
            schedule = Schedule(mod)
            record.trace.apply_to_schedule(schedule, remove_postproc=False)
            cold.append(kernel_seconds(schedule, target, repeats, rng, warm=False)["cold"])
        best = int(np.nanargmin(cold))
        ranks[task.task_name] = best
        picked.commit_tuning_record(ms.database.TuningRecord(
            records[best].trace, picked.commit_workload(mod), [cold[best]], target,
            records[best].args_info))
    return picked, ranks


def paired(libraries: dict, inputs, repeats: int, seed: int) -> dict:
    """Seconds per inference of each library in ``repeats`` rounds, in a shuffled order."""
    import tvm

    from gbxfer.tvm._networks import time_network

    loaded = {key: tvm.runtime.load_module(str(path)) for key, path in libraries.items()}
    seconds, order = {key: [] for key in loaded}, np.random.default_rng(seed)
    for _ in range(repeats):
        for key in order.permutation(list(loaded)):
            seconds[key] += time_network(loaded[key], inputs, repeat=1, min_repeat_ms=500)
    return {key: np.asarray(s) for key, s in seconds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--methods", default="gbxfer,xgb")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--rerank", type=int, default=0, metavar="K")
    parser.add_argument("--name")
    args = parser.parse_args()
    os.environ["TVM_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import tvm
    from tvm.s_tir import meta_schedule as ms

    from gbxfer.hardware import load_profile
    from gbxfer.tvm._networks import compile_network, extract_tasks, network_inputs, prepare
    from gbxfer.tvm._onnx import export_module, load_onnx

    machine = json.loads((args.work / "machine.json").read_text())
    target = tvm.target.Target(load_profile(machine["hardware"]).target)
    network = load_onnx(next(args.work.glob("*.onnx"))).mod
    tasks = extract_tasks(prepare(network), target)
    inputs = network_inputs(network)
    rng = np.random.default_rng(0)
    rows, totals, reranks = [], [], []
    for method in args.methods.split(","):
        folder = args.work / method / "metaschedule"
        database = ms.database.JSONDatabase(
            path_workload=str(folder / "database_workload.json"),
            path_tuning_record=str(folder / "database_tuning_record.json"))
        library = max(args.work.glob(f"{method}-*t.so"),
                      key=lambda p: int(p.stem.split("-")[-1][:-1]))
        libraries = {"tuned": library}
        if args.rerank:
            picked, ranks = reranked(tasks, database, target, args.rerank, args.repeats, rng)
            libraries["reranked"] = args.work / f"{method}-rerank{args.rerank}.so"
            export_module(compile_network(network, picked, target), libraries["reranked"])
        network_s = paired(libraries, inputs, args.repeats // 3 or 1, seed=0)
        if args.rerank:
            reranks.append({"method": method, "k": args.rerank,
                            "tuned_ms": 1e3 * float(np.median(network_s["tuned"])),
                            "reranked_ms": 1e3 * float(np.median(network_s["reranked"])),
                            "reranked_over_tuned": float(np.median(
                                network_s["reranked"] / network_s["tuned"])),
                            "tasks_changed": sum(r > 0 for r in ranks.values()),
                            "ranks": ranks})
        network_s = float(np.median(network_s["tuned"]))
        part = []
        for task in tasks:
            schedule = database.query_schedule(task.dispatched[0], target, task.task_name)
            seconds = kernel_seconds(schedule, target, args.repeats, rng)
            part.append({"method": method, "task": task.task_name, "weight": task.weight,
                         "warm_ms": seconds["warm"] * 1e3, "cold_ms": seconds["cold"] * 1e3,
                         "cold_over_warm": seconds["cold"] / seconds["warm"]})
        part.sort(key=lambda r: -r["weight"] * r["cold_ms"])
        rows += part
        warm = sum(r["weight"] * r["warm_ms"] for r in part)
        cold = sum(r["weight"] * r["cold_ms"] for r in part)
        totals.append({"method": method, "library": library.name,
                       "network_ms": network_s * 1e3, "kernels_warm_ms": warm,
                       "kernels_cold_ms": cold, "outside_warm_kernels_ms": network_s * 1e3 - warm,
                       "warm_share": warm / (network_s * 1e3),
                       "cold_share": cold / (network_s * 1e3)})
    print_table(rows, ["method", "task", "weight", "warm_ms", "cold_ms", "cold_over_warm"])
    print_table(totals, list(totals[0]))
    if reranks:
        print_table(reranks, [c for c in reranks[0] if c != "ranks"])
    write_results(args.name or f"onnx_kernels_{args.work.name}", rows, totals=totals,
                  reranks=reranks,
                  work=str(args.work), threads=args.threads, repeats=args.repeats,
                  cpu=machine["cpu"], hardware=machine["hardware"])


if __name__ == "__main__":
    main()
