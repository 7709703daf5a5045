"""Model configs on the by-task split, paired per seed: which booster and label rank best?

    python scripts/compare_configs.py [--dataset bundled] [--first-seed 0] [--seeds 5]
                                      [--variants "NAME;NAME..."] [--blocks B,B...]
                                      [--name compare_configs]

Each variant trains on the by-task training part (test fraction 0.3) of every seed and is
scored on its test part; ``d_*`` are the paired per-seed differences to the first variant
(XGBoost regression on the throughput label, the default until 2026-12-04,
configs/model/xgboost.yaml). Variants: XGBoost and LightGBM regression on the throughput label
or on the rank within the group (``label: rank``), at three model sizes, LightGBM lambdarank,
a rank average of the shipped default and lambdarank, the former default (LightGBM on the
rank label, 600 x 0.05, 63 leaves, until 2026-12-06; the runs before then named its variants
"shipped default, ...") grown larger, regularized otherwise, on the throughput label, on the
mean of the two labels, and rank-averaged with its throughput-label twin, and the two configs
scripts/tune_config.py chose (the shipped default's parameters and large.yaml's since).
Rows also give the median seconds of a fit and of the test part's prediction (one thread).
``--variants`` runs only the named ones (the first is then the reference of ``d_*``);
``--blocks`` the feature blocks (default: the shipped default's; runs before 2026-12-05 used
program, workload and hardware). Choices are made on seeds 100-104 (``--first-seed 100``);
scripts/bench_model.py reports the chosen config on seeds 0-4.
Results: scripts/results/<name>.{json,csv}.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from _results import print_table, write_results
from _bench import experiment, paired_rows

from gbxfer import SplitSpec
from gbxfer.metrics import ranking_report
from gbxfer.model import GBCostRanker, load_model_config

XGB, LAMBDARANK = load_model_config("xgboost").params, load_model_config("lambdarank").params
LGB = {**LAMBDARANK, "objective": "regression"}
BIG = {"n_estimators": 600, "learning_rate": 0.05, "num_leaves": 63, "min_child_samples": 10}
BIGGER = {"n_estimators": 1000, "learning_rate": 0.03, "num_leaves": 127,
          "min_child_samples": 10}
DEFAULT = load_model_config().params
# the default from 2026-12-04 to 2026-12-06, which the variants named after it modify
FORMER = {"backend": "lightgbm", "objective": "regression", "label": "rank", **BIG,
          "colsample_bytree": 0.8}
# literal copies of what the studies chose (the configs may change again)
TUNED_LARGE = {**FORMER, "n_estimators": 900, "learning_rate": 0.0355, "num_leaves": 117,
               "min_child_samples": 42, "subsample": 0.666, "colsample_bytree": 0.805,
               "reg_lambda": 0.0065}
TUNED = {**FORMER, "n_estimators": 600, "learning_rate": 0.0565, "num_leaves": 57,
         "min_child_samples": 41, "subsample": 0.692, "colsample_bytree": 0.788,
         "reg_lambda": 0.0247}
VARIANTS = {
    "xgboost regression, throughput, 150 x 0.2": XGB,
    "xgboost regression, rank, 150 x 0.2": {**XGB, "label": "rank"},
    "lightgbm regression, throughput, 300 x 0.1": LGB,
    "lightgbm regression, rank, 300 x 0.1": {**LGB, "label": "rank"},
    "lightgbm regression, throughput, 600 x 0.05": {**LGB, **BIG},
    "lightgbm regression, rank, 600 x 0.05": {**LGB, **BIG, "label": "rank"},
    "lightgbm regression, rank, 1000 x 0.03": {**LGB, **BIGGER, "label": "rank"},
    "lambdarank, 300 x 0.1": LAMBDARANK,
    "lambdarank, 600 x 0.05": {**LAMBDARANK, **BIG},
    "shipped default": DEFAULT,
    "former default": FORMER,
    "former default, 127 leaves": {**FORMER, "num_leaves": 127},
    "former default, 1200 x 0.05": {**FORMER, "n_estimators": 1200},
    "former large, 1500 x 0.03, 127 leaves": {**FORMER, "n_estimators": 1500,
                                              "learning_rate": 0.03, "num_leaves": 127},
    "former default, 1000 x 0.03, 255 leaves": {**FORMER, **BIGGER, "num_leaves": 255},
    "former default, bagging 0.8, columns 0.5": {**FORMER, "subsample": 0.8,
                                                  "colsample_bytree": 0.5},
    "former default, L2 1": {**FORMER, "reg_lambda": 1.0},
    "former default, throughput label": {**FORMER, "label": "throughput"},
    "former default, rank+throughput label": {**FORMER, "label": "rank+throughput"},
    # the best of scripts/tune_config.py's free study on seeds 100-104 (2026-12-06; large.yaml)
    "tuned: 900 x 0.0355, 117 leaves, bagging 0.67": TUNED_LARGE,
    # the best of its same-size study on seeds 100-104 (the shipped default since 2026-12-06)
    "tuned: 600 x 0.0565, 57 leaves, bagging 0.69": TUNED,
    # the two above with leaves of a fraction of the training rows (about the same counts on
    # the bundled by-task part; fewer on smaller data)
    "tuned: 900 x 0.0355, 117 leaves, bagging 0.67, leaves 0.046% of the rows": {
        **TUNED_LARGE, "min_child_samples": 0.00046},
    "tuned: 600 x 0.0565, 57 leaves, bagging 0.69, leaves 0.045% of the rows": {
        **TUNED, "min_child_samples": 0.00045},
}
ENSEMBLES = {  # rank averages of two variants' scores within each group, when both run
    "rank average of the shipped default and lambdarank 300 x 0.1":
        ("shipped default", "lambdarank, 300 x 0.1"),
    "rank average of the former default on the rank and the throughput label":
        ("former default", "former default, throughput label"),
}
METRICS = ("pca", "top1", "top5")


def options(parser) -> None:
    parser.add_argument("--name", default="compare_configs", help="results file name")
    parser.add_argument("--variants", default="", type=named_variants, metavar="NAME;NAME...",
                        help="only these variants, ';'-separated (default: all)")
    parser.add_argument("--blocks", default=",".join(load_model_config().blocks),
                        help="feature blocks, comma-separated (default: the shipped default's)")


def named_variants(text: str) -> dict:
    """The variants named in ``text`` (';'-separated, in that order), or all of them."""
    names = [n.strip() for n in text.split(";") if n.strip()] or list(VARIANTS)
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown variant {unknown[0]!r}; "
                                         f"known: {'; '.join(VARIANTS)}")
    return {n: VARIANTS[n] for n in names}


def main() -> None:
    args, dataset, fm = experiment(__doc__, options=options)
    r = fm.records
    results: dict = {}
    seconds: dict = {}  # variant -> per-seed (fit, predict) seconds, one thread
    for seed in args.seed_list:
        test = SplitSpec("by-task", 0.3, seed).test_mask(dataset)
        groups = r["group"][test].to_numpy()
        scores = {}
        for name, params in args.variants.items():
            start = time.perf_counter()
            model = GBCostRanker(**{**params, "random_state": seed}).fit(
                fm.X[~test], r["label"][~test], groups=r["group"][~test])
            middle = time.perf_counter()
            scores[name] = model.predict(fm.X[test])
            seconds.setdefault(name, []).append((middle - start, time.perf_counter() - middle))
        for ensemble, pair in ENSEMBLES.items():
            if set(pair) <= set(scores):
                scores[ensemble] = sum(
                    pd.Series(scores[n]).groupby(groups).rank(pct=True).to_numpy() for n in pair)
        for name, s in scores.items():
            results.setdefault(name, []).append(ranking_report(
                r["latency"][test], s, r["group"][test], r["weight"][test]))
        print(f"seed {seed} done", flush=True)
    rows = paired_rows(results, METRICS)
    for row in rows:
        if row["variant"] in seconds:
            fit, predict = np.median(seconds[row["variant"]], axis=0)
            row["fit_s"], row["predict_s"] = round(float(fit), 1), round(float(predict), 2)
    print_table(rows)
    write_results(args.name, rows, dataset=args.dataset, test_fraction=0.3,
                  seeds=args.seed_list, blocks=args.blocks.split(","))


if __name__ == "__main__":
    main()
