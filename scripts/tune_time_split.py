"""Where a tuning round's wall time goes: search, cost model, builds, the rest, per cost model.

    python scripts/tune_time_split.py --onnx MODEL.onnx --hardware PROFILE
                                      [--tasks 7,21,24] [--methods gbxfer,xgb] [--seeds 1]
                                      [--build-timeouts 15] [--jobs 1] [--populations N,...]
                                      [--trials-per-iter 16] [--name tune_time_split]

Tunes the chosen tasks (indices into the network's extracted tasks, in ``gbxfer tune``'s order)
for one round each, i.e. ``--trials-per-iter`` programs per task, with ``gbxfer.tvm`` ``tune``
(the builder and runner ``gbxfer tune`` uses) once per (build timeout, jobs, population, seed,
method), in that order. MetaSchedule searches a task's batch (the cost model's ``predict``
inside it), builds it and measures it (TVM's LocalRunner waits for the batch), one task after
the other: a round's wall time is search + builds + measurement. Reported per run: wall seconds
(by the tuning curve's clock, which starts once the runner's worker is up), the search's
seconds (the cost model's ``predict`` within them), the builds' seconds (a worker restarted
after a timeout counted in them), programs and timeouts, the cost model's seconds, and the rest
(measurement), plus the weighted best latency of the round. ``--jobs``: ``gbxfer tune
--jobs``, the search's threads and the builder's workers. ``--populations``: ``gbxfer tune
--population``, the evolutionary search's (default: 512, ``tune``'s in a budget of trials); on
several ``--seeds``, its cost against the round's weighted best, the quality of a first round's
picks. Run on an idle machine. Results: scripts/results/<name>.{json,csv}.
"""
from __future__ import annotations

import argparse
import os
import tempfile

from _results import print_table, write_results
from bench_onnx import cpu_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--onnx", required=True)
    parser.add_argument("--hardware", required=True)
    parser.add_argument("--tasks", default="7,21,24")
    parser.add_argument("--methods", default="gbxfer,xgb")
    parser.add_argument("--seeds", default="1")
    parser.add_argument("--build-timeouts", default="15")
    parser.add_argument("--jobs", default="1")
    parser.add_argument("--populations", default="")
    parser.add_argument("--trials-per-iter", type=int, default=16)
    parser.add_argument("--name", default="tune_time_split")
    args = parser.parse_args()
    if any(int(j) < 1 for j in args.jobs.split(",")):
        parser.error("--jobs: at least 1 each")
    populations = [int(p) for p in args.populations.split(",")] if args.populations else [None]
    if any(p is not None and p < 1 for p in populations):
        parser.error("--populations: at least 1 each")

    import tvm
    from gbxfer.hardware.profiles import load_profile
    from gbxfer.tvm import GbxferCostModel
    from gbxfer.tvm._networks import extract_tasks, prepare
    from gbxfer.tvm._onnx import load_onnx
    from gbxfer.tvm._tune import tune

    profile = load_profile(args.hardware)
    os.environ["TVM_NUM_THREADS"] = str(profile.threads)
    network = load_onnx(args.onnx, {}).mod
    every = extract_tasks(prepare(network), tvm.target.Target(profile.target))
    chosen = [int(i) for i in args.tasks.split(",")]
    tasks = [every[i] for i in chosen]
    rows = []
    runs = [(float(t), int(j), p, int(s), m) for t in args.build_timeouts.split(",")
            for j in args.jobs.split(",") for p in populations
            for s in args.seeds.split(",") for m in args.methods.split(",")]
    for timeout, jobs, population, seed, method in runs:
        model = GbxferCostModel(model="pretrained", hardware=profile.name,
                                seed=seed) if method == "gbxfer" else method
        with tempfile.TemporaryDirectory() as out:
            result = tune(tasks, profile, model, args.trials_per_iter * len(tasks), out,
                          seed=seed, trials_per_iter=args.trials_per_iter,
                          progress=False, build_timeout=timeout, jobs=jobs,
                          population=population)
        cost = sum(result.cost_model_seconds.values())
        wall = float(result.curve["seconds"].iloc[-1])
        rows.append({
            "method": method, "build_timeout_s": timeout, "jobs": jobs,
            "population": result.population, "seed": seed, "tasks": args.tasks,
            "programs": result.builds["programs"], "wall_s": wall,
            "search_s": result.search_seconds,
            "builds_s": result.builds["seconds"], "timeouts": result.builds["timeouts"],
            "cost_model_s": cost,
            "rest_s": wall - result.search_seconds - result.builds["seconds"]
            - result.cost_model_seconds["update"],
            "weighted_best_ms": 1e3 * float(result.weighted_latency().iloc[-1]),
        })
        print_table(rows[-1:])
    print_table(rows)
    write_results(args.name, rows, cpu=cpu_model(), hardware=profile.name, onnx=args.onnx,
                  seeds=args.seeds, task_names=[t.task_name for t in tasks],
                  trials_per_iter=args.trials_per_iter)


if __name__ == "__main__":
    main()
