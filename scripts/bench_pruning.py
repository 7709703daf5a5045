"""Pruning: ranking quality against the kept fraction, coreset vs random (by-task split).

    python scripts/bench_pruning.py [--dataset bundled] [--seeds 5] [--speed-only]

For each seed: a by-task split (test fraction 0.3); the training part pruned to each kept
fraction by each method; a default model trained on it and evaluated on the full test part.
Targets: keeping <= 40% loses <= 1 point of PCA (mean); coreset above random at every
fraction <= 50%. Speed: pruning the model benchmark's 100,000 resampled records (bundled +
shared third-party data) to 40%, target under a minute. Results: scripts/results/bench_pruning.{json,csv,png}.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from _results import RESULTS, print_table, write_results
from _bench import ci95, speed_records

from gbxfer import SplitSpec, load_dataset
from gbxfer.model import load_model_config
from gbxfer.pruning import prune
from gbxfer.training import evaluate, train

FRACTIONS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="bundled")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--speed-only", action="store_true",
                        help="only time pruning 100,000 records")
    args = parser.parse_args()
    dataset = load_dataset(args.dataset)
    speed = prune_speed(dataset)
    print("speed:", speed)
    if args.speed_only:
        return
    config = load_model_config(None)
    results = {}
    for seed in range(args.seeds):
        split = SplitSpec("by-task", 0.3, seed)
        for method in ("coreset", "random"):
            for keep in FRACTIONS:
                if keep == 1.0 and method == "random":
                    results[(method, keep, seed)] = results[("coreset", keep, seed)]
                    continue
                start = time.perf_counter()
                pruned = dataset if keep == 1.0 else prune(dataset, keep, method, seed)
                report = evaluate(train(pruned, config, split, seed=seed), dataset)
                report["seconds"] = time.perf_counter() - start
                results[(method, keep, seed)] = report
                print(seed, method, keep, round(report["pca"], 4), round(report["top5"], 4),
                      flush=True)
    rows = []
    for method in ("coreset", "random"):
        for keep in FRACTIONS:
            reps = [results[(method, keep, s)] for s in range(args.seeds)]
            row = {"method": method, "keep": keep, "seeds": len(reps)}
            for metric in ("pca", "top1", "top5"):
                row[metric], row[f"{metric}_ci"] = (round(v, 4) for v in
                                                    ci95([r[metric] for r in reps]))
            row["random_top5"] = round(float(np.mean([r["random_top5"] for r in reps])), 4)
            row["n_test_groups"] = reps[0]["n_groups"]
            rows.append(row)
    print_table(rows)
    full = next(r["pca"] for r in rows if r["keep"] == 1.0)
    at40 = next(r["pca"] for r in rows if r["keep"] == 0.4 and r["method"] == "coreset")
    above = all(c["pca"] > r["pca"] for c in rows for r in rows
                if c["method"] == "coreset" and r["method"] == "random"
                and c["keep"] == r["keep"] <= 0.5)
    print(f"\ncoreset at 40%: PCA {at40:.4f} vs {full:.4f} with all data "
          f"({100 * (at40 - full):+.2f} points); coreset above random at every fraction <= 50%: "
          f"{above}")
    plot(rows)
    write_results("bench_pruning", rows, dataset=args.dataset,
                  summary={"pca_full": full, "pca_coreset_40": at40,
                           "coreset_above_random_le_50": above}, speed=speed)


def prune_speed(dataset, keep=0.4) -> dict:
    """Seconds to prune 100,000 resampled records (features included), per method."""
    records, distinct = speed_records(dataset)
    out = {"records": len(records), "distinct_records": distinct, "keep": keep}
    for method in ("coreset", "random"):
        start = time.perf_counter()
        kept = prune(records, keep, method, seed=0)
        out[f"{method}_seconds"] = round(time.perf_counter() - start, 2)
        out[f"{method}_kept"] = len(kept)
    return out


def plot(rows):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, metric in zip(axes, ("pca", "top5")):
        for method in ("coreset", "random"):
            sel = [r for r in rows if r["method"] == method]
            ax.errorbar([r["keep"] for r in sel], [r[metric] for r in sel],
                        yerr=[r[f"{metric}_ci"] for r in sel], label=method, capsize=3,
                        marker="o")
        ax.set_xlabel("kept fraction of the training data")
        ax.set_ylabel(metric)
        ax.legend()
    fig.tight_layout()
    RESULTS.mkdir(exist_ok=True)
    fig.savefig(RESULTS / "bench_pruning.png", dpi=120)


if __name__ == "__main__":
    main()
