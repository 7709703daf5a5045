"""End-to-end tuning: gbxfer's cost model against TVM's XGBModel in MetaSchedule, same machine.

    python scripts/bench_tune.py [--target x86-sse42-1t] [--trials 200] [--seeds 3]
                                 [--network resnet18] [--network-trials 32] [--report-only]
    python scripts/bench_tune.py --target PROFILE --calibrated MODEL --network '' \
        --tasks conv2d_1_28_28_128_128_3_1_1,dense_128_768_768

On a hardware family whose data the pretrained models did not see (--target's family; the
models pretrain on the bundled dataset's other families), tune each of four suite tasks
(conv2d, depthwise conv2d, dense, batch matmul) for --trials trials, 16 per round, with
  (a) gbxfer pretrained + online update   (--seeds seeds)
  (b) gbxfer cold start                   (1 seed)
  (c) TVM's default XGBModel              (--seeds seeds)
  (d) XGBModel pretrained on the same source records (--seeds seeds)
  (e) random scores                       (1 seed)
On a new machine (--calibrated MODEL: --target is a profile of a machine the bundled dataset's
other machines pretrain without), (a) and (c) beside
  (f) the model `gbxfer calibrate` wrote on this machine + online update   (--seeds seeds)
with results under scripts/results/bench_tune_<target>; the calibration's minutes count in
the wall-clock comparison (say them beside the table).
Programs are built with ``gbxfer tune``'s build timeout (15 s; runs saved before 2026-12-03
used 60 s and have no ``builds`` entry). Runs are interleaved (seed, then task, then method)
and each is saved as it finishes under
scripts/results/bench_tune/runs/, so the benchmark stops and continues; never run it beside
another measurement. With --network, then tunes a whole network built in Relax (ResNet-18,
NHWC: its 19 fused tasks as MetaSchedule extracts them, weighted by occurrence, gradient task
scheduler) with (a) and (c), --network-trials per task, and compiles the network from each
run's database as it was at equal wall-clock time (the shorter run's total) and at the end,
and times it end to end, the builds interleaved. Report: best latency at 25/50/100/200 trials
(for the network: the task scheduler's weighted sum of task latencies, at the same shares of
its trials) and at equal wall-clock times, trials and seconds to reach (c)'s final best,
cost-model seconds per round, and their geometric means over tasks;
scripts/results/bench_tune.{json,csv,png}; the network's end-to-end latencies in
scripts/results/bench_tune/network-<name>-end-to-end.json.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _results import RESULTS, markdown_table, print_table, stamp, write_results

from gbxfer import load_dataset
from gbxfer.model import SavedModel, load_model_config
from gbxfer.config_files import find_config
from gbxfer.hardware import load_profile
from gbxfer.training import train
from gbxfer.tvm._networks import NETWORKS
from gbxfer.records.suite import load_suite

TASKS = ("conv2d_1_28_28_128_128_3_1_1", "depthwise_conv2d_1_56_56_144_3_1_1",
         "dense_128_768_768", "batch_matmul_12_128_128_64")
METHODS = {"a": "gbxfer pretrained + online", "b": "gbxfer cold start",
           "c": "XGBModel (TVM default)", "d": "XGBModel pretrained", "e": "random"}
NAME = "bench_tune"  # the results' stem: --calibrated writes bench_tune_<profile> instead
CHECKPOINTS = (25, 50, 100, 200)


def results_dir() -> Path:
    """Where this benchmark's runs, work folders and end-to-end timings go."""
    return RESULTS / NAME


def source_data(family: str | None = None, machine: str | None = None):
    """The bundled dataset without one hardware family or without one machine."""
    bundled = load_dataset("bundled").filter(valid=True)
    column, value = ("hardware_family", family) if family else ("machine", machine)
    return bundled.select((bundled.records[column] != value).to_numpy())


def pretrained_gbxfer(source, path: Path):
    if not (path / "manifest.json").exists():
        train(source, load_model_config(), seed=0).save(path)
    return SavedModel.load(path)


def cost_model(method, seed, profile, pretrained, source):
    from tvm.s_tir.meta_schedule.cost_model import XGBModel

    from gbxfer.tvm import GbxferCostModel
    from gbxfer.tvm._tune import xgbmodel_pretrained

    if method in "af":  # pretrained, or calibrated on this machine
        return GbxferCostModel(model=pretrained, hardware=profile.name, seed=seed)
    if method == "b":
        return GbxferCostModel(model=None, hardware=profile.name, seed=seed)
    if method == "c":
        return XGBModel(num_tuning_cores=1)
    if method == "d":
        return xgbmodel_pretrained(source)
    return "random"


def run_one(tasks, weights, method, seed, profile, trials, pretrained, source, name):
    from gbxfer.tvm._tune import tune

    path = results_dir() / "runs" / f"{name}.json"
    model = cost_model(method, seed, profile, pretrained, source)
    online = getattr(getattr(model, "online", None), "mode", None)  # gbxfer's online mode
    if path.exists():
        row = json.loads(path.read_text())
        tuned = row.get("online", "unrecorded (before 2026-12-05)" if online else None)
        if tuned != online:
            raise SystemExit(f"{path} was tuned with online mode {tuned}, not {online}: "
                             "move it away to tune it again")
        return row
    out = results_dir() / "work" / name
    shutil.rmtree(out, ignore_errors=True)  # what a run stopped halfway left must not seed this one
    result = tune(tasks, profile, model, trials, out, seed=seed, trials_per_iter=16,
                  weights=weights)
    row = {"name": name, "method": method, "online": online, "seed": seed, "tasks": result.names,
           "weights": weights, "curve": result.curve.to_dict("list"),
           "weighted": result.weighted_latency().tolist(),
           "cost_model_seconds": result.cost_model_seconds, "rounds": result.rounds,
           "seconds": result.seconds, "builds": result.builds,  # with the build timeout
           "search_seconds": result.search_seconds, "population": result.population,
           "commit": stamp()["commit"]}  # which adapter ran
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(row))
    tmp.replace(path)
    return row


def network_runs(network, profile, trials_per_task, pretrained, source):
    """(a) and (c) tune every task of a Relax network (task weights: occurrences, gradient task
    scheduler); then the network, compiled from each run's database at equal wall-clock time
    and at its end, is timed end to end."""
    import tvm

    from gbxfer.tvm._networks import extract_tasks, load_network, prepare

    raw = load_network(network)
    tasks = extract_tasks(prepare(raw), tvm.target.Target(profile.target))
    runs = [run_one(tasks, [float(t.weight) for t in tasks], method, 0, profile,
                    trials_per_task * len(tasks), pretrained, source,
                    f"network-{network}-{method}-0") for method in "ac"]
    end_to_end(network, raw, profile, runs)


def end_to_end(network, mod, profile, runs, repeats=21, min_repeat_ms=1000) -> dict:
    """Each run's database cut at equal wall-clock time (the shorter run's total) and whole,
    compiled with the network ``mod`` (as built, not prepared) and timed, with the untuned
    network alongside, the builds interleaved ``repeats`` times (each timing the mean of
    ``min_repeat_ms`` of inferences); medians in ms. A cut that is the whole database is
    the same build, timed once."""
    import tvm
    from tvm.s_tir import meta_schedule as ms

    from gbxfer.tvm._networks import (compile_network, database_prefix, network_inputs,
                                      scheduled_functions, time_network)

    path = results_dir() / f"network-{network}-end-to-end.json"
    if path.exists():
        return json.loads(path.read_text())
    target = tvm.target.Target(profile.target)
    equal = min(r["seconds"] for r in runs)  # each database's fastest programs, as tuned:
    # built so since this benchmark began, before `gbxfer tune` preferred parallel ones
    untuned = ms.database.MemoryDatabase()
    compiled = {("untuned", 0): (scheduled_functions(mod, untuned, target),
                                 compile_network(mod, untuned, target, 0.0))}
    builds = {("untuned", "-"): ("untuned", 0)}  # (method, at) -> compiled (method, trials)
    tasks_ms = {("untuned", 0): float("nan")}  # the tuned tasks' best, weighted sum
    for r in runs:
        curve = pd.DataFrame(r["curve"])
        databases = results_dir() / "work" / r["name"] / "metaschedule"
        before = curve["trials"][curve["seconds"] <= equal]
        for at, n in (("equal time", int(before.max()) if len(before) else 0),
                      ("end", int(curve["trials"].max()))):
            if (r["method"], n) not in compiled:
                database = database_prefix(databases, n)
                compiled[r["method"], n] = (scheduled_functions(mod, database, target),
                                            compile_network(mod, database, target, 0.0))
            builds[r["method"], at] = r["method"], n
            tasks_ms[r["method"], n] = 1e3 * best_at(r, trials=n)
    seconds: dict = {key: [] for key in compiled}
    inputs = network_inputs(mod)
    for _ in range(repeats):
        for key, (_, executable) in compiled.items():
            seconds[key] += time_network(executable, inputs, repeat=1,
                                         min_repeat_ms=min_repeat_ms)
    rows = [{"method": method, "at": at, "trials": key[1],
             "scheduled_functions": "{}/{}".format(*compiled[key][0]),
             "tasks_weighted_ms": tasks_ms[key],
             "latency_ms": 1e3 * float(np.median(seconds[key])),
             "min_ms": 1e3 * min(seconds[key]), "max_ms": 1e3 * max(seconds[key])}
            for (method, at), key in builds.items()]
    # each repeat times every build back to back: (a)'s latency over (c)'s within a repeat
    # cancels the machine's slow drifts
    paired = {at: float(np.median(np.divide(seconds[builds["a", at]], seconds[builds["c", at]])))
              for at in ("equal time", "end")}
    result = {"network": network, "equal_seconds": equal, "repeats": repeats,
              "min_repeat_ms": min_repeat_ms, "rows": rows,
              "a_over_c_paired_median": paired,
              "seconds": {f"{m} {n}": v for (m, n), v in seconds.items()},
              "commit": stamp()["commit"]}
    path.write_text(json.dumps(result, indent=1))
    return result


def best_at(run, trials=None, seconds=None) -> float:
    curve = pd.DataFrame(run["curve"])
    weighted = pd.Series(run["weighted"])
    mask = curve["trials"] <= trials if trials is not None else curve["seconds"] <= seconds
    values = weighted[mask.to_numpy()].dropna()
    return float(values.min()) if len(values) else float("nan")


def gmean(values) -> float:
    values = np.asarray([v for v in values if np.isfinite(v) and v > 0], dtype=float)
    return float(np.exp(np.log(values).mean())) if len(values) else float("nan")


def mean_curve(runs, grid, by: str) -> np.ndarray:
    """Geometric mean over seeds of the best latency so far at each ``by`` (``"trials"`` or
    ``"seconds"``) in ``grid``; NaN until every seed has a measurement. A finished run keeps
    its final best."""
    values = np.array([[best_at(r, **{by: x}) for x in grid] for r in runs])
    return np.where(np.isnan(values).any(axis=0), np.nan,
                    np.exp(np.log(values).mean(axis=0)))


def reach(curve, grid, level) -> float:
    """Where ``curve`` first reaches ``level`` on ``grid`` (inf when it never does)."""
    hit = np.flatnonzero(curve <= level * (1 + 1e-9))
    return float(grid[hit[0]]) if len(hit) else float("inf")


def task_of(run) -> str:
    return run["tasks"][0] if len(run["tasks"]) == 1 else "network"


def summarize(runs, trials) -> list[dict]:
    """One row per (task, method): best latency at fixed trials and at equal wall-clock
    times (geometric mean over seeds), and the trials / seconds at which the method's mean
    curve (geometric mean over seeds) reaches (c)'s final best, the geometric mean of (c)'s
    seeds' finals, which (c)'s own mean curve reaches by its last trial; each seed's own
    trials to it alongside."""
    rows = []
    for task in dict.fromkeys(map(task_of, runs)):
        mine = [r for r in runs if task_of(r) == task]
        ref_runs = [r for r in mine if r["method"] == "c"]
        if not ref_runs:
            continue
        total = trials if task != "network" else max(max(r["curve"]["trials"]) for r in mine)
        reference = gmean([best_at(r, trials=total) for r in ref_runs])
        ref_seconds = float(np.median([r["seconds"] for r in ref_runs]))
        grids = {by: np.unique(np.concatenate([r["curve"][by] for r in mine]))
                 for by in ("trials", "seconds")}
        for method in METHODS:
            sel = sorted((r for r in mine if r["method"] == method), key=lambda r: r["seed"])
            if not sel:
                continue
            row = {"task": task, "method": method, "seeds": len(sel)}
            for k in CHECKPOINTS:
                row[f"best_at_{k}_ms"] = 1e3 * gmean([best_at(r, trials=k * total // trials)
                                                      for r in sel])
            for share in (0.25, 0.5, 1.0):
                row[f"best_at_{share:g}T_ms"] = 1e3 * gmean(
                    [best_at(r, seconds=share * ref_seconds) for r in sel])
            for by, grid in grids.items():
                row[f"{by}_to_c_final"] = reach(mean_curve(sel, grid, by), grid, reference)
            row["trials_share"] = row["trials_to_c_final"] / total
            row["seconds_share"] = row["seconds_to_c_final"] / ref_seconds
            row["seed_trials_to_c_final"] = "/".join(
                f"{reach(mean_curve([r], grids['trials'], 'trials'), grids['trials'], reference):g}"
                for r in sel)
            row["final_vs_c"] = gmean([best_at(r, trials=total) for r in sel]) / reference
            # runs stamped with a commit ran the current adapter (earlier ones featurized
            # through as_json, several times slower); the cost per round is theirs when any
            stamped = [r for r in sel if "commit" in r] or sel
            row["cost_model_s_per_round"] = float(np.mean(
                [sum(r["cost_model_seconds"].values()) / max(r["rounds"], 1) for r in stamped]))
            row["cost_model_runs"] = len(stamped)
            rows.append(row)
    per_task = [r for r in rows if r["task"] != "network"]
    for method in METHODS:  # the targets are geometric means over tasks
        sel = [r for r in per_task if r["method"] == method]
        if sel:
            rows.append({"task": "gmean over tasks", "method": method, "seeds": min(
                r["seeds"] for r in sel), **{key: float("inf") if any(
                    r[key] == float("inf") for r in sel) else gmean([r[key] for r in sel])
                    for key in ("trials_share", "seconds_share", "final_vs_c",
                                "cost_model_s_per_round")}})  # inf: a task never reached
    return rows


def plot(runs, trials):
    """Per task: each seed's best-so-far curve (thin) and the method's mean curve (thick)
    against trials and against seconds; the dashed line is (c)'s final best."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(map(task_of, runs)))
    fig, axes = plt.subplots(2, len(names), figsize=(4 * len(names), 6.5), squeeze=False)
    colors = dict(zip(METHODS, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    for j, task in enumerate(names):
        mine = [r for r in runs if task_of(r) == task]
        total = trials if task != "network" else max(max(r["curve"]["trials"]) for r in mine)
        for row, by in enumerate(("trials", "seconds")):
            ax = axes[row][j]
            grid = np.unique(np.concatenate([r["curve"][by] for r in mine]))
            for method, label in METHODS.items():
                sel = [r for r in mine if r["method"] == method]
                for r in sel:
                    y = 1e3 * pd.Series(r["weighted"]).cummin()
                    ax.step(r["curve"][by], y, where="post", color=colors[method], lw=0.7,
                            alpha=0.35)
                if sel:
                    ax.step(grid, 1e3 * mean_curve(sel, grid, by), where="post",
                            color=colors[method], lw=2, label=f"({method}) {label}")
            ref = [best_at(r, trials=total) for r in mine if r["method"] == "c"]
            if ref:
                ax.axhline(1e3 * gmean(ref), color="k", ls="--", lw=0.8)
            ax.set_xlabel(by)
            ax.set_ylabel("best latency (ms)" + (", weighted" if task == "network" else ""))
        axes[0][j].set_title(task, fontsize=9)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / f"{NAME}.png", dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="x86-sse42-1t", help="hardware profile tuned for")
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--network", default="resnet18", choices=[*NETWORKS, ""],
                        help="Relax network tuned whole with (a) and (c); '' skips it")
    parser.add_argument("--network-trials", type=int, default=32,
                        help="trials per task of the network")
    parser.add_argument("--report-only", action="store_true",
                        help="summarize the finished runs, measure nothing")
    parser.add_argument("--calibrated", metavar="MODEL",
                        help="a new machine: --target's machine is absent from the pretraining "
                             "(every other machine's records) and (f) tunes with MODEL, what "
                             "`gbxfer calibrate` wrote on this machine; results "
                             "bench_tune_<target>")
    parser.add_argument("--tasks", default=",".join(TASKS), help="suite tasks to tune")
    parser.add_argument("--methods", help="methods to run (default: abcde; acf with "
                                          "--calibrated)")
    args = parser.parse_args()
    profile = load_profile(args.target)
    suite = load_suite(find_config("workloads", "networks"))
    methods = args.methods or ("acf" if args.calibrated else "abcde")
    global NAME
    if args.calibrated:
        if not profile.machine:
            parser.error(f"--calibrated: profile {profile.name} names no machine to hold out")
        NAME = f"bench_tune_{profile.name}"
        METHODS["f"] = "gbxfer calibrated + online"
    if not set(methods) <= set(METHODS):
        parser.error(f"--methods: letters of {''.join(METHODS)} ({methods!r} given)")
    if not args.report_only:
        if args.calibrated:
            source = source_data(machine=profile.machine)
            calibrated = SavedModel.load(args.calibrated)
            what = "no-" + "_".join(re.findall(r"\w+", profile.machine))
        else:
            source, calibrated = source_data(family=profile.family), None
            what = f"no-{profile.family}"
        pretrained = pretrained_gbxfer(source, RESULTS / "bench_tune" / f"pretrained-{what}")
        for seed in range(args.seeds):
            for task in suite.select(args.tasks.split(",")).tasks:
                for method in methods:
                    if method in "be" and seed > 0:
                        continue
                    start = time.perf_counter()
                    run_one([task], [1.0], method, seed, profile, args.trials,
                            calibrated if method == "f" else pretrained,
                            source, f"{task.name}-{method}-{seed}")
                    print(f"{task.name} ({method}) seed {seed}: "
                          f"{time.perf_counter() - start:.0f} s", flush=True)
        if args.network:
            network_runs(args.network, profile, args.network_trials, pretrained, source)
    runs = [json.loads(p.read_text()) for p in sorted((results_dir() / "runs").glob("*.json"))]
    rows = summarize(runs, args.trials)
    print_table(rows, ["task", "method", "seeds", "best_at_25_ms", "best_at_200_ms",
                       "trials_share", "seconds_share", "seed_trials_to_c_final", "final_vs_c",
                       "cost_model_s_per_round"])
    if runs:
        plot(runs, args.trials)
    write_results(NAME, rows, target=args.target, trials=args.trials,
                  methods={m: METHODS[m] for m in methods})
    report = [f"# {NAME}: {args.target}, {args.trials} trials per task\n",
              "Trials and seconds to reach (c)'s final best, final latency against (c)'s, "
              "cost-model seconds per round (update + predict; over the runs of the current "
              "adapter, `cost_model_runs`):\n", markdown_table(rows, [
                  "task", "method", "seeds", "trials_to_c_final", "trials_share",
                  "seed_trials_to_c_final", "seconds_to_c_final", "seconds_share",
                  "final_vs_c", "cost_model_s_per_round", "cost_model_runs"]),
              "\nBest latency (ms, geometric mean over seeds) at 25/50/100/200 trials and at "
              "a quarter, half and all of (c)'s median wall-clock time (T):\n",
              markdown_table([r for r in rows if "best_at_25_ms" in r], [
                  "task", "method", *[f"best_at_{k}_ms" for k in CHECKPOINTS],
                  "best_at_0.25T_ms", "best_at_0.5T_ms", "best_at_1T_ms"])]
    for path in sorted(results_dir().glob("network-*-end-to-end.json")):
        e2e = json.loads(path.read_text())
        title = (f"{path.stem}: compiled and timed, at equal wall-clock time "
                 f"({e2e['equal_seconds']:.0f} s) and at the end of each run")
        print(f"\n{title}")
        paired = ", ".join(f"{at} {ratio:.3f}" for at, ratio in
                           e2e.get("a_over_c_paired_median", {}).items())
        print_table(e2e["rows"])
        print(f"(a) / (c), median of the repeats' ratios: {paired}")
        report += [f"\n{title} ({e2e['repeats']} repeats, each the mean of "
                   f"{e2e.get('min_repeat_ms', 200)} ms of inferences):\n",
                   markdown_table(e2e["rows"]),
                   f"\n(a) / (c), median of the repeats' ratios: {paired}\n"]
    (RESULTS / f"{NAME}.md").write_text("\n".join(report))


if __name__ == "__main__":
    main()
