"""Exploration in gbxfer's search, task by task: the tasks of a tuned ONNX network where gbxfer's
search stalled, tuned alone with and without random picks in every round.

    python scripts/explore_tasks.py --work scripts/results/bench_onnx_zen4/resnet50-seed1
        --hardware zen4-avx512-1t --tasks NAME[,NAME...] [--trials 192] [--seeds 0,1]
        [--explore 0,0.25] [--xgb] [--population 128] [--jobs 2] [--report-only]
        [--name explore_tasks]

--work is a run folder of ``scripts/bench_onnx.py`` (its ONNX model); --tasks are names of
that network's tasks as MetaSchedule extracts them (e.g. ``fused_conv2d22_add13_relu10``).
Each task is tuned alone for --trials trials, 16 a round, by the gbxfer cost model (pretrained,
online updates, --population) once per --explore share (``tune(explore=...)``: that share of
every round drawn at random from the search's freshly sampled programs, rounded down; 0 draws
none, as ``gbxfer tune``'s 0.05 does of a 16-program round; the first share is the baseline of
the ratios) and, with --xgb, by TVM's XGBModel (MetaSchedule's population, 512), for every seed.
Runs are interleaved (seed, task, method) and saved as they finish under
scripts/results/<name>/, so the script stops and continues (a saved run tuned with other
--trials, --population or --hardware stops it). Run on an idle machine (it
measures). Report: each method's best latency at 32/64/128/--trials trials (median over
seeds), its ratio to gbxfer's default at the end (geometric mean over seeds) and the
geometric mean over tasks; scripts/results/<name>.{json,csv,png}.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
from _results import RESULTS, print_table, tuned_layout, write_results


def method_names(explore: list[float], xgb: bool) -> list[str]:
    return [f"gbxfer-explore{e:g}" for e in explore] + (["xgb"] if xgb else [])


def run_one(task, method: str, seed: int, profile, trials: int, population: int, jobs: int,
            out: Path) -> None:
    from gbxfer.tvm import GbxferCostModel
    from gbxfer.tvm._tune import tune

    if method == "xgb":
        cost_model, explore, population = "xgb", 0.05, 512  # MetaSchedule's defaults
    else:
        explore = float(method.removeprefix("gbxfer-explore"))
        cost_model = GbxferCostModel(hardware=profile.name, seed=seed)
    partial = out.with_name(out.name + ".partial")
    if partial.exists():
        import shutil
        shutil.rmtree(partial)  # a run cut off halfway starts again
    result = tune([task], profile, cost_model, trials, partial, seed=seed, weights=[1.0],
                  progress=False, population=population, jobs=jobs, explore=explore)
    result.curve.to_csv(partial / "curve.csv", index=False)
    (partial / "done.json").write_text(json.dumps({
        "seconds": result.seconds, "trials": int(result.curve["trials"].max()),
        "budget": trials, "population": population, "explore": explore,
        "online": getattr(getattr(cost_model, "online", None), "mode", None),
        "hardware": profile.name}))
    partial.rename(out)


def best_at(curve: pd.DataFrame, trials: int) -> float:
    rows = curve[curve["trials"] <= trials]
    return float(rows["best_0"].min()) if len(rows) else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--hardware", required=True)
    parser.add_argument("--tasks", required=True)
    parser.add_argument("--trials", type=int, default=192)
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--explore", default="0,0.25")
    parser.add_argument("--xgb", action="store_true")
    parser.add_argument("--population", type=int, default=128)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--name", default="explore_tasks")
    args = parser.parse_args()
    names = args.tasks.split(",")
    seeds = [int(s) for s in args.seeds.split(",")]
    methods = method_names([float(e) for e in args.explore.split(",")], args.xgb)
    runs = RESULTS / args.name
    if not args.report_only:
        import tvm

        from gbxfer.hardware import load_profile
        from gbxfer.tvm._networks import extract_tasks, prepare
        from gbxfer.tvm._onnx import load_onnx

        profile = load_profile(args.hardware)
        os.environ["TVM_NUM_THREADS"] = str(profile.threads)
        model = next(args.work.glob("*.onnx"))
        network = load_onnx(model, layout=tuned_layout(args.work)).mod
        tasks = {t.task_name: t for t in extract_tasks(prepare(network),
                                                       tvm.target.Target(profile.target))}
        missing = [n for n in names if n not in tasks]
        if missing:
            raise SystemExit(f"{model}: no task {missing[0]!r}; its tasks: "
                             f"{', '.join(sorted(tasks))}")
        for seed in seeds:
            for name in names:
                for method in methods:
                    out = runs / name / f"{method}-seed{seed}"
                    if out.exists():
                        done = json.loads((out / "done.json").read_text())
                        wanted = {"budget": args.trials, "hardware": profile.name,
                                  "population": 512 if method == "xgb" else args.population}
                        if any(done.get(k, v) != v for k, v in wanted.items()):
                            raise SystemExit(f"{out} was tuned with {done}, not {wanted}: "
                                             "give another --name")
                    else:
                        print(f"tuning {name} with {method}, seed {seed}", flush=True)
                        run_one(tasks[name], method, seed, profile, args.trials,
                                args.population, args.jobs, out)
    points = sorted({32, 64, 128, args.trials})
    rows, curves = [], {}
    for name in names:
        for method in methods:
            found = [(seed, pd.read_csv(runs / name / f"{method}-seed{seed}" / "curve.csv"))
                     for seed in seeds if (runs / name / f"{method}-seed{seed}").exists()]
            if not found:
                continue
            curves[name, method] = found
            row = {"task": name, "method": method, "seeds": len(found)}
            for p in points:
                row[f"best@{p} (ms)"] = 1e3 * float(np.median([best_at(c, p) for _, c in found]))
            rows.append(row)
    base = methods[0]
    overall = {}
    for row in rows:
        pairs = [(best_at(c, args.trials), best_at(b, args.trials))
                 for s, c in curves[row["task"], row["method"]]
                 for t, b in curves.get((row["task"], base), []) if s == t]
        if pairs:
            row[f"end / {base}"] = float(np.exp(np.mean([np.log(a / b) for a, b in pairs])))
            overall.setdefault(row["method"], []).append(row[f"end / {base}"])
    overall = {m: float(np.exp(np.mean(np.log(r)))) for m, r in overall.items()}
    print(f"best latency by trials (median over seeds {args.seeds}); geometric mean over tasks "
          f"of end / {base}: " + ", ".join(f"{m} {r:.3f}" for m, r in overall.items()))
    print_table(rows)
    write_results(args.name, rows, command=vars(args) | {"work": str(args.work)},
                  overall=overall)
    if curves:
        plot(curves, names, methods).savefig(RESULTS / f"{args.name}.png", dpi=120)


def plot(curves, names, methods):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(names), figsize=(4.5 * len(names), 3.6), squeeze=False)
    for ax, name in zip(axes[0], names):
        for i, method in enumerate(methods):
            for j, (seed, curve) in enumerate(curves.get((name, method), [])):
                ax.step(curve["trials"], 1e3 * curve["best_0"].cummin(), where="post",
                        color=f"C{i}", alpha=0.8, label=method if j == 0 else None)
        ax.set_title(name, fontsize=8)
        ax.set_xlabel("trials")
        ax.set_ylabel("best latency (ms)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


if __name__ == "__main__":
    main()
