"""Feature-block ablation on the by-task split: which program-feature groups the model needs.

    python scripts/ablate_features.py [--dataset bundled] [--seeds 5]

Each variant drops a group of program columns (hashed tokens, hashed decisions, both, the
by-axis tile columns) from program + workload + hardware features, or adds hardware-relative
cross features (program x hardware / workload: vectorize extent against vector lanes,
parallel extent against threads, inner tile footprints against L1 / L2, FLOPs against peak,
outer iterations, register tile, innermost tile against lanes); both model configs
(default XGBoost regression, LightGBM lambdarank) are trained on the same by-task training
part per seed and scored on its test part. Mean +- 95% CI over seeds.
Results: scripts/results/ablate_features.{json,csv}.
"""
from __future__ import annotations

import numpy as np
from _results import print_table, write_results
from _bench import experiment, mean_ci

from gbxfer import SplitSpec
from gbxfer.metrics import ranking_report
from gbxfer.model import GBCostRanker, load_model_config

VARIANTS = {
    "all": lambda c: True,
    "no hashed tokens": lambda c: not c.startswith("program.tok_"),
    "no hashed decisions": lambda c: not c.startswith("program.dec_"),
    "no hashing at all": lambda c: not c.startswith(("program.tok_", "program.dec_")),
    "no by-axis tiles": lambda c: "_axis" not in c,
}

CROSS = "+ hardware-relative cross features"


def cross_features(fm) -> np.ndarray:
    """Differences of logs that trees cannot form themselves (see the module docstring)."""
    col = {c: i for i, c in enumerate(fm.columns)}

    def g(name):
        return fm.X[:, col[name]].astype(float)

    def levels(role, *lv):
        return sum(g(f"program.{role}_level{i}_log2") for i in lv)

    lanes = np.log2(1 + g("hardware.vector_bits") / 32)
    return np.column_stack([
        g("program.vectorize_log2") - lanes,
        g("program.parallel_log2") - np.log2(1 + g("hardware.threads")),
        levels("sp", 0, 1) + levels("rd", 0) + 2 - np.log2(g("hardware.l1d_kb") * 1024),
        levels("sp", 0, 1, 2) + levels("rd", 0, 1) + 2 - np.log2(g("hardware.l2_kb") * 1024),
        g("workload.log2_flops") - np.log2(g("hardware.peak_gflops")),
        g("workload.out_log2_size") - levels("sp", 0, 1),
        levels("sp", 0) + levels("rd", 0),
        g("program.sp_axis0_level0_log2") - lanes,
    ]).astype(np.float32)


def main() -> None:
    args, dataset, fm = experiment(__doc__)
    r = fm.records
    cross = cross_features(fm)
    configs = {"default": load_model_config(), "lambdarank": load_model_config("lambdarank")}
    results: dict = {}
    for seed in range(args.seeds):
        test = SplitSpec("by-task", 0.3, seed).test_mask(dataset)
        for variant in [*VARIANTS, CROSS]:
            X = (np.hstack([fm.X, cross]) if variant == CROSS else
                 fm.X[:, [i for i, c in enumerate(fm.columns) if VARIANTS[variant](c)]])
            for name, config in configs.items():
                model = GBCostRanker(**{**config.params, "random_state": seed}).fit(
                    X[~test], r["label"][~test], groups=r["group"][~test])
                results.setdefault((variant, name), []).append(ranking_report(
                    r["latency"][test], model.predict(X[test]), r["group"][test],
                    r["weight"][test]))
        print(f"seed {seed} done", flush=True)
    rows = []
    for (variant, name), reports in results.items():
        rows.append({"variant": variant, "config": name, "seeds": len(reports),
                     **mean_ci(reports, ("pca", "top1", "top5"))})
    print_table(rows)
    write_results("ablate_features", rows, dataset=args.dataset)


if __name__ == "__main__":
    main()
