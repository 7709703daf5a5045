"""Ablation of the numpy hardware attention (feature-group gating) on the by-hardware split.

    python scripts/bench_attention.py [--dataset bundled] [--seeds 5]

For each hardware family of the dataset held out in turn (by-hardware split: the model never
sees that family) and each seed, the default model config is trained with and without
``attention:`` gating on the other families and evaluated on the held-out family. Reports mean
+- 95% CI over seeds per family and over all (family, seed) pairs, and the paired difference
(with - without). Results: scripts/results/bench_attention.{json,csv}.
"""
from __future__ import annotations

from _results import print_table, write_results
from _bench import ci95, experiment

from gbxfer import SplitSpec
from gbxfer.model import load_model_config
from gbxfer.training import evaluate, train

METRICS = ("pca", "top1", "top5")


def main() -> None:
    args, dataset, _ = experiment(__doc__)
    base = load_model_config()
    arms = {"without": base, "with attention": base.replace(attention={"dim": 8})}
    families = sorted(dataset.records["hardware_family"].unique())
    results = {}
    for family in families:
        for seed in args.seed_list:
            split = SplitSpec("by-hardware", seed=seed, family=family)
            for arm, config in arms.items():
                report = evaluate(train(dataset, config, split, seed=seed), dataset)
                results[(family, seed, arm)] = report
                print(family, seed, arm, *(f"{m} {report[m]:.4f}" for m in METRICS), flush=True)
    rows = []
    for family in [*families, "all"]:
        keys = [(f, s) for f in families for s in args.seed_list if family in (f, "all")]
        for arm in [*arms, "difference"]:
            row = {"held_out": family, "arm": arm, "n": len(keys)}
            for m in METRICS:
                if arm == "difference":
                    values = [results[(f, s, "with attention")][m] - results[(f, s, "without")][m]
                              for f, s in keys]
                else:
                    values = [results[(f, s, arm)][m] for f, s in keys]
                row[m], row[f"{m}_ci"] = (round(v, 4) for v in ci95(values))
            rows.append(row)
    print()
    print_table(rows)
    write_results("bench_attention", rows, dataset=args.dataset, seeds=args.seeds)


if __name__ == "__main__":
    main()
