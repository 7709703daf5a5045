"""Which training label ranks best by task? The default model on transforms of its label.

    python scripts/compare_labels.py [--dataset bundled] [--seeds 10]

The XGBoost config (configs/model/xgboost.yaml, the default until 2026-12-04) trains on the
by-task training part (test fraction 0.3) of each seed with one label transform at a time:
MetaSchedule's normalised throughput (min latency / latency in the task x hardware group, the
default), its square and fourth power (weighting the fast programs more), its square root and
log, the percentile rank within the group (which ignores how much faster), the z-score of -log
latency within the group, and log(FLOPs / latency) (an absolute throughput, comparable across
tasks). Scored on the test part; mean +- 95% CI over seeds and of the paired per-seed
differences to the default label (d_*). The default config's ``label: rank`` (the i-th of n
as i / (n + 1)) is this percentile rank (i / n) shrunk towards 1/2 in small groups, on LightGBM
(scripts/compare_configs.py).
Results: scripts/results/compare_labels.{json,csv}.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from _results import print_table, write_results
from _bench import experiment, mean_ci

from gbxfer import SplitSpec
from gbxfer.metrics import ranking_report
from gbxfer.model import GBCostRanker, load_model_config

METRICS = ("pca", "top1", "top5")


def z_scores(values, groups):
    by = pd.Series(values).groupby(groups)
    return (values - by.transform("mean").to_numpy()) / (by.transform("std").fillna(
        0).to_numpy() + 1e-9)


def main() -> None:
    args, dataset, fm = experiment(__doc__, seeds=10)
    r = fm.records
    ratio = r["label"].to_numpy()
    labels = {"throughput ratio (default)": ratio, "ratio^2": ratio ** 2, "ratio^4": ratio ** 4,
              "sqrt ratio": np.sqrt(ratio), "log ratio": np.log(ratio),
              "percentile rank": pd.Series(ratio).groupby(r["group"].to_numpy()).rank(
                  pct=True).to_numpy(),
              "z-score of -log latency": z_scores(-np.log(r["latency"].to_numpy()),
                                                  r["group"].to_numpy()),
              "log(FLOPs / latency)": np.log(r["task_key"].map(dataset.tasks.set_index(
                  "task_key")["flops"]).to_numpy(float) / r["latency"].to_numpy())}
    labels = {name: y for name, y in labels.items() if np.isfinite(y).all()}  # FLOPs known
    params = {**load_model_config("xgboost").params, "label": "throughput"}
    results: dict = {}
    for seed in args.seed_list:
        test = SplitSpec("by-task", 0.3, seed).test_mask(dataset)
        for name, y in labels.items():
            model = GBCostRanker(**{**params, "random_state": seed}).fit(
                fm.X[~test], y[~test], groups=r["group"][~test])
            results.setdefault(name, []).append(ranking_report(
                r["latency"][test], model.predict(fm.X[test]), r["group"][test],
                r["weight"][test]))
        print(f"seed {seed} done", flush=True)
    base = next(iter(results.values()))
    rows = []
    for name, reports in results.items():
        deltas = [{f"d_{m}": rep[m] - ref[m] for m in METRICS}
                  for rep, ref in zip(reports, base, strict=True)]
        rows.append({"label": name, "seeds": len(reports), **mean_ci(reports, METRICS),
                     **mean_ci(deltas, [f"d_{m}" for m in METRICS])})
    print_table(rows)
    write_results("compare_labels", rows, dataset=args.dataset, test_fraction=0.3)


if __name__ == "__main__":
    main()
