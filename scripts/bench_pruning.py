"""Pruning: ranking quality against the kept fraction, herding vs coreset vs k-center vs random.

    python scripts/bench_pruning.py [--dataset a100] [--config default] [--seeds 0,1,2,3,4]
    python scripts/bench_pruning.py --tasks [--dataset bundled]   # which tasks to collect first
    python scripts/bench_pruning.py --speed-only [--size 1000000]

Records (default): for each seed, a within-task split (test fraction 0.3); the training part
pruned to each kept fraction by each method (coreset, `gbxfer prune`'s default; herding, the
default for part of 2026-12-06; kcenter, random; the same seed), each with `gbxfer prune`'s
default allocation (`balanced` since 2026-12-07: the records spread evenly over the groups), and
the coreset and random with `proportional` (the fraction of every group, the only allocation
before), a model trained on it and evaluated on the whole test part; the full training part is
the reference. Reported: mean PCA / top-1 / top-5 with 95% CIs, and the paired differences (same
seed, same split) to random (the same allocation), to the full training part and to the
proportional coreset. Targets (issue 20): on the A100 database, <= 40%
kept at <= 1 point mean PCA loss; the default selection's (the coreset's)
paired mean above random at 10/20/30/50%, the CI excluding 0 at two or more (the summary gives
both herding and coreset).

Tasks (--tasks): for each seed, a by-task split (test fraction 0.3); n = 4, 8, 16 of the training
tasks chosen by coreset (k-means medoids over workload features), kernel herding over the same
points or at random; a model trained on all their records, evaluated on the held-out tasks;
paired as above. Rule written 2026-12-07 02:23, before any run of task herding: herding replaces
the coreset as ``select_tasks``' default and ``gbxfer suite --first``'s choice if on seeds
100-104 (``--tasks --seeds 100,101,102,103,104``) its paired mean over random is above 0 at all
three n and its mean over the three n is at least the coreset's + 0.005; reported on seeds 0-4.
Outcome: passed (``bench_pruning_tasks_herding_choice``: +0.009 / +0.004 / +0.007 over random,
the coreset -0.004 on average), the default since; seeds 0-4 (``bench_pruning_tasks_v3``):
+0.005 / +0.010 / +0.006.

Speed: pruning a resampled dataset of --size records (bundled + the shared third-party data),
program features included, per method; target 1,000,000 records in under 120 s on 2 cores.

Datasets: bundled, a100 (the older-TVM MetaSchedule database), ansor-x86, ansor-a100,
ansor-rtx3080 (Ansor logs), or a dataset path. Results: scripts/results/NAME.{json,csv,png}
(NAME: --name, or bench_pruning_<dataset>[_<config>], bench_pruning_tasks, bench_pruning_speed).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from _bench import SHARED, ci95, speed_records
from _results import RESULTS, print_table, write_results

from gbxfer import SplitSpec, ingest, load_dataset
from gbxfer.model import load_model_config
from gbxfer.pruning import TASK_METHODS, prune, select_tasks
from gbxfer.training import evaluate, train, training_part

FRACTIONS = (0.1, 0.2, 0.3, 0.4, 0.5)
METHODS = ("coreset", "herding", "kcenter", "random", "coreset-proportional",
           "random-proportional")  # method[-allocation], gbxfer prune's default allocation
TASK_COUNTS = (4, 8, 16)
SOURCES = {"a100": SHARED / "bennu-metaschedule-a100-resnet34",
           "ansor-x86": SHARED / "bennu-ansor" / "cpu_x86",
           "ansor-a100": SHARED / "bennu-ansor" / "gpu_a100",
           "ansor-rtx3080": SHARED / "bennu-ansor" / "gpu_rtx3080"}
METRICS = ("pca", "top1", "top5")


def load(name):
    return ingest([SOURCES[name]]) if name in SOURCES else load_dataset(name)


def paired(a: list, b: list) -> tuple[float, float]:
    return ci95(np.asarray(a) - np.asarray(b))


def prune_as(dataset, keep: float, method: str, seed: int):
    """``gbxfer prune`` by a METHODS name: ``method[-allocation]`` (the default allocation)."""
    how, _, allocation = method.partition("-")
    return prune(dataset, keep, how, seed, allocation=allocation or "balanced")


def records_rows(dataset, config, seeds) -> tuple[list[dict], dict]:
    runs = {}  # (method, keep, seed) -> report
    for seed in seeds:
        split = SplitSpec("within-task", 0.3, seed)
        part = training_part(dataset, split)
        runs[("full", 1.0, seed)] = evaluate(train(part, config, split, seed=seed), dataset)
        for keep in FRACTIONS:
            for method in METHODS:
                pruned = prune_as(part, keep, method, seed)
                runs[(method, keep, seed)] = evaluate(train(pruned, config, split, seed=seed),
                                                      dataset)
                print(seed, method, keep, round(runs[(method, keep, seed)]["pca"], 4),
                      "full", round(runs[("full", 1.0, seed)]["pca"], 4), flush=True)
    rows = []
    for method, keep in [("full", 1.0)] + [(m, k) for k in FRACTIONS for m in METHODS]:
        reps = [runs[(method, keep, s)] for s in seeds]
        row = {"method": method, "keep": keep, "seeds": len(seeds)}
        for metric in METRICS:
            row[metric], row[f"{metric}_ci"] = (round(v, 4) for v in
                                                ci95([r[metric] for r in reps]))
        full = [runs[("full", 1.0, s)]["pca"] for s in seeds]
        random = "random-proportional" if method.endswith("-proportional") else "random"
        random = [runs[(random, keep, s)]["pca"] for s in seeds] if keep < 1 else full
        proportional = [runs[("coreset-proportional", keep, s)]["pca"] for s in seeds] \
            if keep < 1 else full
        pca = [r["pca"] for r in reps]
        row["d_pca_full"], row["d_pca_full_ci"] = (round(v, 4) for v in paired(pca, full))
        row["d_pca_random"], row["d_pca_random_ci"] = (round(v, 4) for v in paired(pca, random))
        row["d_pca_proportional"], row["d_pca_proportional_ci"] = (
            round(v, 4) for v in paired(pca, proportional))
        row["n_test_groups"] = reps[0]["n_groups"]
        rows.append(row)
    summary = {}
    for method in ("coreset", "herding", "coreset-proportional"):
        own = [r for r in rows if r["method"] == method]
        summary[method] = {
            "smallest_keep_within_1_point": min((r["keep"] for r in own
                                                 if r["d_pca_full"] >= -0.01), default=None),
            "above_random_at": [r["keep"] for r in own if r["d_pca_random"] > 0],
            "above_random_ci_excludes_0_at": [
                r["keep"] for r in own if r["d_pca_random"] - r["d_pca_random_ci"] > 0]}
    return rows, summary


def task_rows(dataset, config, seeds) -> tuple[list[dict], dict]:
    runs = {}
    for seed in seeds:
        split = SplitSpec("by-task", 0.3, seed)
        part = training_part(dataset, split)
        runs[("all", 0, seed)] = evaluate(train(part, config, split, seed=seed), dataset)
        for n in TASK_COUNTS:
            for method in TASK_METHODS:
                tasks = select_tasks(part, n, method, seed)
                chosen = part.filter(task=list(tasks))
                runs[(method, n, seed)] = evaluate(train(chosen, config, split, seed=seed),
                                                   dataset)
                print(seed, method, n, round(runs[(method, n, seed)]["pca"], 4), flush=True)
    rows = []
    for method, n in [("all", 0)] + [(m, n) for n in TASK_COUNTS for m in TASK_METHODS]:
        reps = [runs[(method, n, s)] for s in seeds]
        row = {"method": method, "train_tasks": n or "all", "seeds": len(seeds)}
        for metric in METRICS:
            row[metric], row[f"{metric}_ci"] = (round(v, 4) for v in
                                                ci95([r[metric] for r in reps]))
        if n:
            random = [runs[("random", n, s)]["pca"] for s in seeds]
            row["d_pca_random"], row["d_pca_random_ci"] = (
                round(v, 4) for v in paired([r["pca"] for r in reps], random))
        rows.append(row)
    return rows, {f"{m}_above_random_at": [
        r["train_tasks"] for r in rows if r["method"] == m and r["d_pca_random"] > 0]
        for m in TASK_METHODS if m != "random"}


def prune_speed(dataset, size: int, keep=0.4) -> list[dict]:
    """Seconds to prune ``size`` resampled records (program features included), per method."""
    records, distinct = speed_records(dataset, size=size)
    rows = []
    for method in ("coreset", "herding", "random", "coreset-proportional"):
        start = time.perf_counter()
        kept = prune_as(records, keep, method, seed=0)
        rows.append({"method": method, "records": len(records), "distinct_records": distinct,
                     "keep": keep, "kept": len(kept),
                     "seconds": round(time.perf_counter() - start, 1)})
        print(rows[-1], flush=True)
    return rows


def plot(rows, name, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    full = next(r for r in rows if r["method"] == "full")
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, metric in zip(axes, ("pca", "top1")):
        for method in METHODS:
            sel = [r for r in rows if r["method"] == method]
            ax.errorbar([r["keep"] for r in sel], [r[metric] for r in sel],
                        yerr=[r[f"{metric}_ci"] for r in sel], label=method, capsize=3,
                        marker="o")
        ax.axhline(full[metric], color="grey", linestyle="--", label="all training data")
        ax.set_xlabel("kept fraction of the training part")
        ax.set_ylabel(f"{metric} (within-task test part)")
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    RESULTS.mkdir(exist_ok=True)
    fig.savefig(RESULTS / f"{name}.png", dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default=None)
    parser.add_argument("--config", default=None, help="model config (default: the default)")
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--tasks", action="store_true", help="task-level coreset (bundled)")
    parser.add_argument("--speed-only", action="store_true")
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--name", default=None,
                        help="results file name (default: bench_pruning_<dataset>[_<config>], "
                             "bench_pruning_tasks[_<config>] or bench_pruning_speed)")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    config = load_model_config(args.config)
    if args.speed_only:
        rows = prune_speed(load_dataset("bundled"), args.size)
        print_table(rows)
        write_results(args.name or "bench_pruning_speed", rows, size=args.size)
        return
    name = args.dataset or ("bundled" if args.tasks else "a100")
    dataset = load(name)
    suffix = f"_{args.config}" if args.config else ""
    if args.tasks:
        rows, summary = task_rows(dataset, config, seeds)
        out = args.name or f"bench_pruning_tasks{suffix}"
    else:
        rows, summary = records_rows(dataset, config, seeds)
        out = args.name or f"bench_pruning_{name.replace('/', '_')}{suffix}"
        plot(rows, out, f"{name}, {args.config or 'default'} model, {len(seeds)} seeds")
    print_table(rows)
    print(summary)
    sizes = dataset.records[dataset.records["valid"]].groupby(["task_key", "hardware"]).size()
    write_results(out, rows, dataset=name, config=args.config or "default",
                  group_sizes={"groups": len(sizes), "min": int(sizes.min()),
                               "median": float(sizes.median()), "max": int(sizes.max())},
                  model={"blocks": list(config.blocks), "params": dict(config.params)},
                  seeds=seeds, summary=summary)


if __name__ == "__main__":
    main()
