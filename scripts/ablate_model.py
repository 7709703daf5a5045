"""Training-label and booster-capacity variants of the default model, by-task and within-task.

    python scripts/ablate_model.py [--dataset bundled] [--seeds 5] [--first-seed 0]
                                   [--name ablate_model]

On program + workload + hardware features, the default config (XGBoost regression on the
label min latency / latency within the task x hardware group, 150 trees) against: other
labels, each ranked within its group the same way (its log; its square root; the group
percentile rank; the z-score of -log latency within the group; log(FLOPs / latency), an
absolute throughput comparable across tasks), and more capacity (500 trees at learning rate
0.05; with 63 leaves and depth 10 too; 300 trees at 0.1 with row and column subsampling).
Every variant is trained on the same training part per seed and scored on its test part (30%
of the tasks, or of each group's programs); mean +- 95% CI over seeds and the paired
difference to the default. Choices are made on seeds 100-104 (``--first-seed 100``) and
reported on seeds 0-4. Results: scripts/results/<name>.{json,csv}.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from _bench import ci95, experiment, mean_ci
from _results import print_table, write_results

from gbxfer import SplitSpec
from gbxfer.metrics import ranking_report
from gbxfer.model import GBCostRanker, load_model_config

METRICS = ("pca", "top1", "top5")
CAPACITY = {
    "500 trees x 0.05": {"n_estimators": 500, "learning_rate": 0.05},
    "500 trees x 0.05, 63 leaves, depth 10": {"n_estimators": 500, "learning_rate": 0.05,
                                              "num_leaves": 63, "max_depth": 10},
    "300 trees x 0.1, subsampled": {"n_estimators": 300, "learning_rate": 0.1,
                                    "subsample": 0.8, "colsample_bytree": 0.5},
}


def labels(records, tasks) -> dict:
    """Each training label of the variants, one value per record (higher = faster)."""
    latency = records["latency"].to_numpy(dtype=float)
    group = records["group"].to_numpy()
    by_group = pd.Series(latency).groupby(group)
    best = by_group.transform("min").to_numpy()
    log = pd.Series(-np.log(latency)).groupby(group)
    flops = records["task_key"].map(tasks.set_index("task_key")["flops"]).to_numpy(float)
    return {
        "default": best / latency,
        "label: log(min / latency)": np.log(best / latency),
        "label: sqrt(min / latency)": np.sqrt(best / latency),
        "label: percentile rank in group": pd.Series(-latency).groupby(group).rank(
            pct=True).to_numpy(),
        "label: z-score of -log latency": ((-np.log(latency) - log.transform("mean").to_numpy())
                                           / (log.transform("std").fillna(0).to_numpy()
                                              + 1e-9)),
        "label: log(FLOPs / latency)": np.log(flops / latency),
    }


def main() -> None:
    args, dataset, fm = experiment(__doc__, options=lambda p: p.add_argument(
        "--name", default="ablate_model"))
    config = load_model_config()
    r = fm.records
    latency, group = r["latency"].to_numpy(float), r["group"].to_numpy()
    ys = labels(r, dataset.tasks)
    variants = {name: (y, {}) for name, y in ys.items()}
    variants.update({name: (ys["default"], params) for name, params in CAPACITY.items()})
    reports = {}  # (split, variant) -> per-seed reports
    for kind in ("by-task", "within-task"):
        for seed in args.seed_list:
            test = SplitSpec.parse(kind, 0.3, seed=seed).test_mask(dataset)
            train = ~test
            for name, (y, params) in variants.items():
                if not np.isfinite(y[train]).all():
                    continue  # a label undefined on some records (unknown FLOPs)
                model = GBCostRanker(**{**config.params, **params, "random_state": seed})
                model.fit(fm.X[train], y[train], groups=group[train])
                report = ranking_report(latency[test], model.predict(fm.X[test]), group[test])
                reports.setdefault((kind, name), []).append(report)
            print(f"{kind} seed {seed} done", flush=True)
    rows = []
    for (kind, name), reps in reports.items():
        row = {"split": kind, "variant": name, "seeds": len(reps), **mean_ci(reps, METRICS)}
        for m in METRICS:
            diff = [a[m] - b[m] for a, b in zip(reps, reports[(kind, "default")])]
            row[f"{m}_diff"], row[f"{m}_diff_ci"] = (round(v, 4) for v in ci95(diff))
        rows.append(row)
    print_table(rows, ["split", "variant", "pca", "pca_ci", "pca_diff", "pca_diff_ci", "top1",
                       "top1_diff", "top1_diff_ci", "top5", "top5_diff"])
    write_results(args.name, rows, dataset=args.dataset, seeds=args.seed_list)


if __name__ == "__main__":
    main()
