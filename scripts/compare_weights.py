"""What the default model learns from, on the by-task split, paired per seed: does training that
leans towards a group's fast programs, or an ensemble, rank unseen tasks better at the top?

    python scripts/compare_weights.py [--dataset bundled] [--first-seed 0] [--seeds 5]
                                      [--variants A,B] [--name compare_weights]

The top-1 score is a ratio of latencies summed over tasks, decided by each task's fastest
predicted program; the default model (regression on each program's rank within its group,
configs/model/default.yaml) weighs every pair of programs alike. Variants, all with the
default's blocks and parameters, trained on the by-task training part (test fraction 0.3) and
scored on its test part; ``d_*`` are the paired per-seed differences to the default:

- ``rank^P``: the label raised to the power P, which widens the gaps between fast programs;
- ``top weight eB``: each training program weighted exp(B x its rank percentile), its group's
  fastest about e^B times its slowest;
- ``task weight``: each program weighted by how often its task occurs in its networks, the
  weight the top-k score gives the task;
- ``ensemble of N``: the mean rank within the group of N default models of different seeds.
- ``latency^A`` / ``latency pct eB``: each group weighted by its best latency to the power A,
  or exp(B x that latency's percentile among the groups) (weights of mean 1): the top-1 score
  sums latencies, so the slowest tasks decide it (scripts/by_operator.py); added 2026-12-07
  after an exploration on seeds 100-104 had shown them (so no rule decides on those seeds).
- ``top re-ranker``: a second default model trained on the faster half of each training group
  (its labels the ranks within that half) re-orders each test group's 30% ranked first by the
  default: those keep their place above the rest, ordered by the sum of both models' rank
  percentiles. Its fractions (0.5, 0.3) and the sum were picked in a scratch exploration on
  seeds 120-124 among train 0.3 / 0.5, apply 0.15 / 0.3, replace / sum (there top-1 -0.003 ±
  0.054, top-5 +0.010 ± 0.019, PCA +0.0014 ± 0.0008 over the default).

Rule for ``top re-ranker``, written 2026-12-07 04:02 UTC before its runs on seeds 100-104 and
0-4: it becomes part of the default model only if on seeds 100-104 its paired top-1 difference
has a 95% CI above 0 and its paired PCA difference is at least -0.001; otherwise it is reported
as not adopted, with its seeds 0-4 numbers beside.

Choices are made on seeds 100-104 (``--first-seed 100``) and reported on seeds 0-4.
Results: scripts/results/<name>.{json,csv}.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from _bench import experiment, paired_rows
from _results import print_table, write_results

from gbxfer import SplitSpec
from gbxfer.metrics import ranking_report
from gbxfer.model import GBCostRanker, load_model_config
from gbxfer.model._ranker import group_ranks

DEFAULT = load_model_config()
METRICS = ("pca", "top1", "top5")


def variants(label, groups, weight, latency):
    """``{name: (params, label, sample_weight, ensemble size)}`` for the training rows."""
    rank = group_ranks(label, pd.factorize(groups)[0])
    plain = {**DEFAULT.params, "label": "throughput"}  # the label given is what is fitted
    out = {"default": (DEFAULT.params, label, None, 1)}
    for power in (2, 4):
        out[f"rank^{power}"] = (plain, rank ** power, None, 1)
    for b in (1, 2):
        out[f"top weight e{b}"] = (DEFAULT.params, label, np.exp(b * rank), 1)
    out["task weight"] = (DEFAULT.params, label, weight.astype(float), 1)
    out["ensemble of 3"] = (DEFAULT.params, label, None, 3)
    best = pd.Series(latency).groupby(groups).transform("min").to_numpy()
    for power in (0.25, 0.5):
        out[f"latency^{power}"] = (DEFAULT.params, label, mean_one(best ** power), 1)
    percentile = pd.Series(np.log(best)).rank(pct=True).to_numpy()
    out["latency pct e2"] = (DEFAULT.params, label, mean_one(np.exp(2 * percentile)), 1)
    return out


def rerank_top(stage1, stage2, groups, apply: float = 0.3) -> np.ndarray:
    """Each group's ``apply`` share ranked first by ``stage1`` re-ordered by the sum of both
    scores' rank percentiles within the group, kept above the rest of the group."""
    first = percentile(stage1, groups)
    top = first > 1 - apply
    out = first.copy()
    out[top] = 2 + first[top] + percentile(stage2, groups)[top]
    return out


def percentile(score, groups) -> np.ndarray:
    return pd.Series(score).groupby(groups).rank(pct=True).to_numpy()


def mean_one(weight: np.ndarray) -> np.ndarray:
    return weight / weight.mean()


def options(parser) -> None:
    parser.add_argument("--name", default="compare_weights", help="results file name")
    parser.add_argument("--variants", default=None,
                        help="only these variants, comma-separated (the default always runs;"
                        " 'top re-ranker' too)")


def main() -> None:
    args, dataset, fm = experiment(__doc__, options=options, blocks=DEFAULT.blocks)
    seeds = args.seed_list
    r = fm.records
    results: dict = {}
    for seed in seeds:
        test = SplitSpec("by-task", 0.3, seed).test_mask(dataset)
        train = ~test
        groups = r["group"][test].to_numpy()
        scores = {}
        for name, (params, y, w, n) in variants(r["label"][train].to_numpy(),
                                                 r["group"][train].to_numpy(),
                                                 r["weight"][train].to_numpy(),
                                                 r["latency"][train].to_numpy()).items():
            if args.variants and name not in {"default", *args.variants.split(",")}:
                continue
            score = 0.0
            for member in range(n):
                model = GBCostRanker(**{**params, "random_state": seed + 1000 * member}).fit(
                    fm.X[train], y, groups=r["group"][train], sample_weight=w)
                score = score + percentile(model.predict(fm.X[test]), groups)
            scores[name] = score
        if args.variants and "top re-ranker" in args.variants.split(","):
            y, g = r["label"][train].to_numpy(), r["group"][train].to_numpy()
            faster = group_ranks(y, pd.factorize(g)[0]) >= 0.5
            second = GBCostRanker(**{**DEFAULT.params, "random_state": seed}).fit(
                fm.X[train][faster], y[faster], groups=g[faster])
            scores["top re-ranker"] = rerank_top(scores["default"],
                                                 second.predict(fm.X[test]), groups)
        for name, score in scores.items():
            results.setdefault(name, []).append(ranking_report(
                r["latency"][test], score, r["group"][test], r["weight"][test]))
            print(f"seed {seed} {name}: " + " ".join(
                f"{m} {results[name][-1][m]:.4f}" for m in METRICS), flush=True)
    rows = paired_rows(results, METRICS, "default")
    print_table(rows)
    write_results(args.name, rows, dataset=args.dataset, test_fraction=0.3, seeds=seeds)


if __name__ == "__main__":
    main()
