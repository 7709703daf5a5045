"""Where the transfer guard's check looks: pooled retraining's gain inside the shots, over all
held-out shot groups and over the groups of tasks the source model never saw.

    python scripts/guard_groups.py [--setting TEXT] [--k 16] [--seeds 5]

For a `scripts/bench_transfer.py` setting (default: Zen 4's unseen tasks) and K shots per
task, each draw's shots are cross-validated as the guard does (within-task folds:
``gbxfer.transfer.cross_validate``): the paired per-group differences of PCA and top-1 between
pooled retraining (and the continue adaptation) and the source model, mean and standard error,
over every held-out group and over those whose task the source lacks; beside them the same
draw's test-part gain of the benchmark's `pooled` arm is in bench_transfer.csv. Results:
scripts/results/guard_groups.{json,csv}.
"""
from __future__ import annotations

import argparse

import numpy as np
from _results import print_table, write_results
from bench_transfer import HOLDOUT, prepared, settings

from gbxfer.model import load_model_config
from gbxfer.transfer import TransferConfig, cross_validate, draw_shots
from gbxfer.transfer._guard import _by_group


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setting", default="zen4), unseen tasks")
    parser.add_argument("--k", type=int, default=16)
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    config = load_model_config()
    rows = []
    for name, source, target, _, _ in settings(["machines", "gpus"]):
        if args.setting not in name:
            continue
        shared = prepared(source, target, config)
        seen = set(source.records["task_key"])
        for seed in range(args.seeds):
            shots = draw_shots(target, args.k, seed, HOLDOUT)
            scores = {arm: _by_group(cross_validate(
                shared["model"], source, target, shots, c, seed, "pca", shared["fm_source"],
                shared["fm_target"], within_task=True)[0])
                for arm, c in (("source", TransferConfig(extra_rounds=0)),
                               ("pooled", TransferConfig().pooled()),
                               ("continue", TransferConfig(guard=False)))}
            groups = sorted(set(scores["source"]) & set(scores["pooled"]))
            for where, keep in (("all", groups),
                                ("new tasks", [g for g in groups
                                               if g[1].rsplit("|", 1)[0] not in seen])):
                if len(keep) < 2:
                    continue
                for arm in ("pooled", "continue"):
                    for metric in ("pca", "top1"):
                        d = np.array([scores[arm][g][metric] - scores["source"][g][metric]
                                      for g in keep])
                        rows.append({"setting": name, "k": args.k, "seed": seed,
                                     "groups": where, "n_groups": len(d), "arm": arm,
                                     "metric": metric, "gain": round(float(d.mean()), 4),
                                     "se": round(float(d.std(ddof=1) / np.sqrt(len(d))), 4)})
            print(f"{name} seed {seed}: done", flush=True)
    print_table(rows, ["setting", "seed", "groups", "n_groups", "arm", "metric", "gain", "se"])
    write_results("guard_groups", rows, k=args.k)


if __name__ == "__main__":
    main()
