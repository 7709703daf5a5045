"""By-task ranking quality against the number of training tasks: does the model need more tasks?

    python scripts/learning_curve.py [--dataset bundled] [--seeds 5] [--blocks B,B...]
                                     [--name learning_curve]

For each seed, the by-task split (test fraction 0.3) fixes the test tasks; the models train on
a seeded random subset of the remaining tasks (25%, 50%, 75%, 100% of them, nested) with the
model configs (the default; the default with a fixed 41 programs a leaf, as it was before its
leaves became a fraction of the training rows on 2026-12-06; LightGBM lambdarank) and are scored
on the same test part, on the features ``--blocks`` (default: the default config's; runs before
2026-12-06 used program, workload and hardware). Mean +- 95% CI over seeds. A curve still
rising at 100% says that more training tasks, not a different model, is what the by-task
targets need.
Results: scripts/results/<name>.{json,csv,png}.
"""
from __future__ import annotations

import numpy as np
from _results import RESULTS, print_table, write_results
from _bench import experiment, mean_ci

from gbxfer import SplitSpec
from gbxfer.metrics import ranking_report
from gbxfer.model import GBCostRanker, load_model_config

FRACTIONS = (0.25, 0.5, 0.75, 1.0)
METRICS = ("pca", "top1", "top5")


def main() -> None:
    args, dataset, fm = experiment(__doc__, options=options)
    r = fm.records
    default = load_model_config()
    configs = {"default": default,
               "default, 41 a leaf": default.replace(
                   params={**default.params, "min_child_samples": 41}),
               "lambdarank": load_model_config("lambdarank")}
    results: dict = {}
    for seed in args.seed_list:
        test = SplitSpec("by-task", 0.3, seed).test_mask(dataset)
        train_tasks = np.random.default_rng(seed).permutation(
            sorted(set(r["task_key"][~test])))
        for fraction in FRACTIONS:
            n_tasks = max(1, round(fraction * len(train_tasks)))
            train = ~test & r["task_key"].isin(train_tasks[:n_tasks]).to_numpy()
            for name, config in configs.items():
                model = GBCostRanker(**{**config.params, "random_state": seed}).fit(
                    fm.X[train], r["label"][train], groups=r["group"][train])
                report = ranking_report(r["latency"][test], model.predict(fm.X[test]),
                                        r["group"][test], r["weight"][test])
                results.setdefault((fraction, name), []).append({**report,
                                                                 "n_tasks": n_tasks})
        print(f"seed {seed} done", flush=True)
    rows = []
    for (fraction, name), reports in results.items():
        rows.append({"fraction": fraction, "config": name, "seeds": len(reports),
                     "train_tasks": float(np.mean([rep["n_tasks"] for rep in reports])),
                     **mean_ci(reports, METRICS)})
    print_table(rows)
    write_results(args.name, rows, dataset=args.dataset, test_fraction=0.3,
                  blocks=args.blocks.split(","))
    plot(rows, args.name)


def options(parser) -> None:
    parser.add_argument("--name", default="learning_curve", help="results file name")
    parser.add_argument("--blocks", default=",".join(load_model_config().blocks),
                        help="feature blocks, comma-separated (default: the default config's)")


def plot(rows, name) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(METRICS), figsize=(4 * len(METRICS), 3.2))
    for ax, metric in zip(axes, METRICS):
        for config in dict.fromkeys(row["config"] for row in rows):
            own = [row for row in rows if row["config"] == config]
            ax.errorbar([row["train_tasks"] for row in own], [row[metric] for row in own],
                        yerr=[row[f"{metric}_ci"] for row in own], marker="o", capsize=3,
                        label=config)
        ax.set_xlabel("training tasks")
        ax.set_title(metric)
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(RESULTS / f"{name}.png", dpi=120)


if __name__ == "__main__":
    main()
