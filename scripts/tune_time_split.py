"""Where a tuning round's wall time goes: search, cost model, builds, the rest, per cost model.

    python scripts/tune_time_split.py --onnx MODEL.onnx --hardware PROFILE
                                      [--tasks 7,21,24] [--methods gbxfer,xgb] [--seed 1]
                                      [--build-timeouts 60] [--trials-per-iter 16]
                                      [--name tune_time_split]

Tunes the chosen tasks (indices into the network's extracted tasks, in ``gbxfer tune``'s order)
for one round each, i.e. ``--trials-per-iter`` programs per task, with ``gbxfer.tvm`` ``tune``
(the builder and runner ``gbxfer tune`` uses) once per (method, build timeout), in that order.
MetaSchedule's main thread searches a task's batch (the cost model's ``predict`` inside it),
builds it (one worker) and hands it to the runner, which measures on its own while the next
task is searched: a round's wall time is search + builds + what is left of the runner's work
when the last batch is built. Reported per run: wall seconds (by the tuning curve's clock,
which starts once the builder's and runner's workers are up), the builds' seconds (TVM's
LocalBuilder starts a fresh worker for every batch and after every timeout: counted in them),
programs and timeouts, the cost model's seconds, and the rest (search and the runner's tail),
plus the weighted best latency of the round. Run on an idle machine. Results:
scripts/results/<name>.{json,csv}.
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
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--build-timeouts", default="60")
    parser.add_argument("--trials-per-iter", type=int, default=16)
    parser.add_argument("--name", default="tune_time_split")
    args = parser.parse_args()

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
    for timeout in (float(t) for t in args.build_timeouts.split(",")):
        for method in args.methods.split(","):
            model = GbxferCostModel(model="pretrained", hardware=profile.name,
                                    seed=args.seed) if method == "gbxfer" else method
            with tempfile.TemporaryDirectory() as out:
                result = tune(tasks, profile, model, args.trials_per_iter * len(tasks), out,
                              seed=args.seed, trials_per_iter=args.trials_per_iter,
                              progress=False, build_timeout=timeout)
            cost = sum(result.cost_model_seconds.values())
            wall = float(result.curve["seconds"].iloc[-1])
            rows.append({
                "method": method, "build_timeout_s": timeout, "tasks": args.tasks,
                "programs": result.builds["programs"], "wall_s": wall,
                "builds_s": result.builds["seconds"], "timeouts": result.builds["timeouts"],
                "cost_model_s": cost,
                "rest_s": wall - result.builds["seconds"] - cost,
                "weighted_best_ms": 1e3 * float(result.weighted_latency().iloc[-1]),
            })
            print_table(rows[-1:])
    print_table(rows)
    write_results(args.name, rows, cpu=cpu_model(), hardware=profile.name, onnx=args.onnx,
                  seed=args.seed, task_names=[t.task_name for t in tasks],
                  trials_per_iter=args.trials_per_iter)


if __name__ == "__main__":
    main()
