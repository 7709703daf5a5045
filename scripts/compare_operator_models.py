"""Does one model for every operator underfit the weak ones? The default model against models of
one operator kind, on the by-task split, paired per seed.

    python scripts/compare_operator_models.py [--dataset bundled] [--first-seed 0] [--seeds 5]
                                              [--name compare_operator_models]

scripts/by_operator.py finds the by-task split's weakest groups among the memory-bound
operators (depthwise convolution, pooling, softmax). Per seed, the default model
(configs/model/default.yaml) trains on the by-task training part (test fraction 0.3); so does,
for every operator kind, a model with the same parameters on that kind's training groups alone
(``own kind``); ``mean rank`` averages each group's rank percentiles under both. Each is scored
on every kind's test groups (rows per kind: PCA and top-1 over that kind's groups, paired
differences to the default) and over the whole test part (row ``all``: each test group ranked
by the variant of its own kind). Choices are made on seeds 100-104 (``--first-seed 100``) and
reported on seeds 0-4. Results: scripts/results/<name>.{json,csv}.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from _bench import ci95, experiment
from _results import print_table, write_results

from gbxfer import SplitSpec
from gbxfer.metrics import ranking_report
from gbxfer.model import GBCostRanker, load_model_config

DEFAULT = load_model_config()
VARIANTS = ("default", "own kind", "mean rank")
METRICS = ("pca", "top1")


def percentiles(score, groups) -> np.ndarray:
    return pd.Series(score).groupby(np.asarray(groups)).rank(pct=True).to_numpy()


def options(parser) -> None:
    parser.add_argument("--name", default="compare_operator_models", help="results file name")


def main() -> None:
    args, dataset, fm = experiment(__doc__, options=options, blocks=DEFAULT.blocks)
    seeds = args.seed_list
    r = fm.records.merge(dataset.tasks[["task_key", "operator"]], on="task_key", how="left")
    kinds = r["operator"].to_numpy()
    reports: dict = {}  # (kind, variant) -> one report per seed
    for seed in seeds:
        test = SplitSpec("by-task", 0.3, seed).test_mask(dataset)
        params = {**DEFAULT.params, "random_state": seed}
        fit = GBCostRanker(**params).fit(fm.X[~test], r["label"][~test], groups=r["group"][~test])
        scores = {"default": fit.predict(fm.X), "own kind": np.full(len(r), np.nan)}
        for kind in np.unique(kinds):
            train = ~test & (kinds == kind)
            rows = kinds == kind
            if r["group"][train].duplicated().any():  # some group of two or more programs
                own = GBCostRanker(**params).fit(fm.X[train], r["label"][train],
                                                 groups=r["group"][train])
                scores["own kind"][rows] = own.predict(fm.X[rows])
            else:  # no training group of this kind: the default model ranks it
                scores["own kind"][rows] = scores["default"][rows]
        groups = r["group"].to_numpy()
        scores["mean rank"] = (percentiles(scores["default"], groups)
                               + percentiles(scores["own kind"], groups))
        for kind in [*np.unique(kinds[test]), "all"]:
            rows = test & ((kinds == kind) if kind != "all" else True)
            for name in VARIANTS:
                reports.setdefault((kind, name), []).append(ranking_report(
                    r["latency"][rows], scores[name][rows], r["group"][rows], r["weight"][rows]))
        print(f"seed {seed}: " + ", ".join(
            f"{name} {reports[('all', name)][-1]['pca']:.4f}" for name in VARIANTS), flush=True)
    rows = []
    for (kind, name), reps in reports.items():
        base = reports[(kind, "default")]
        row = {"operator": kind, "variant": name, "seeds": len(reps),
               "groups": int(np.mean([rep["n_groups"] for rep in reps]))}
        for metric in METRICS:  # over the seeds that held out a group of this kind
            row[metric] = round(float(np.mean([rep[metric] for rep in reps])), 4)
            d, ci = ci95([a[metric] - b[metric] for a, b in zip(reps, base, strict=True)])
            row[f"d_{metric}"], row[f"d_{metric}_ci"] = round(d, 4), round(ci, 4)
        rows.append(row)
    print_table(rows)
    write_results(args.name, rows, dataset=args.dataset, test_fraction=0.3, seeds=seeds)


if __name__ == "__main__":
    main()
