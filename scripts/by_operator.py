"""Where the by-task split's ranking errors lie: the default model's PCA and top-1 by operator kind.

    python scripts/by_operator.py [--dataset bundled] [--first-seed 0] [--seeds 5]
                                  [--name by_operator]

The default model (configs/model/default.yaml) trains on the by-task training part (test
fraction 0.3) of every seed and ranks its test part; every held-out task x profile group is
then counted under its task's operator, over all seeds. Columns: ``groups``; ``pca`` (mean
over the groups); ``top1_group`` (mean over the groups of best latency / latency of the
predicted best); ``top1_weight`` (the operator's share of the top-1 score's denominator, the
task-weighted sum of the predicted best programs' latencies: the top-1 score is a ratio of
latency sums, so the slowest tasks decide it); ``top1_loss`` (the operator's share of what
the score loses to 1: of the weighted sum of (latency of the predicted best - best latency));
``flat_pairs`` (the median over its groups of the share of program pairs whose latencies are
within 10% of each other: pairs that measurement noise, 7-15% between runs, leaves unordered).
Also (2026-12-07): how concentrated the top-1 loss is (``loss_concentration``: the share of a
seed's loss in its 5 and 20 costliest groups, mean over seeds) and the groups by octile of their
best latency (``by_latency_octile``: groups, mean PCA, mean best / picked latency, share of
the loss).
Results: scripts/results/<name>.{json,csv,png}.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from _bench import experiment
from _results import RESULTS, print_table, write_results

from gbxfer import SplitSpec
from gbxfer.metrics import pairwise_accuracy, ranking_report
from gbxfer.model import GBCostRanker, load_model_config

DEFAULT = load_model_config()


def group_rows(records: pd.DataFrame, score: np.ndarray, seed: int) -> list[dict]:
    """One row per held-out group: its operator, PCA, best and predicted-best latency, weight
    and the share of its program pairs within 10% of each other."""
    rows = []
    frame = records.assign(score=score)
    for group, g in frame.groupby("group"):
        latency = g["latency"].to_numpy()
        if len(latency) < 2:
            continue
        ratio = np.abs(np.log(latency[:, None] / latency[None, :]))
        pairs = ratio[np.triu_indices(len(latency), 1)]
        rows.append({"seed": seed, "group": group, "operator": g["operator"].iloc[0],
                     "pca": pairwise_accuracy(latency, g["score"].to_numpy(),
                                              np.zeros(len(g))),
                     "best": latency.min(), "picked": latency[np.argmax(g["score"])],
                     "weight": g["weight"].iloc[0],
                     "flat": float((pairs < np.log(1.1)).mean())})
    return rows


def options(parser) -> None:
    parser.add_argument("--name", default="by_operator", help="results file name")


def main() -> None:
    args, dataset, fm = experiment(__doc__, options=options, blocks=DEFAULT.blocks)
    seeds = args.seed_list
    r = fm.records.merge(dataset.tasks[["task_key", "operator"]], on="task_key", how="left")
    rows, overall = [], []
    for seed in seeds:
        test = SplitSpec("by-task", 0.3, seed).test_mask(dataset)
        model = GBCostRanker(**{**DEFAULT.params, "random_state": seed}).fit(
            fm.X[~test], r["label"][~test], groups=r["group"][~test])
        score = model.predict(fm.X[test])
        overall.append(ranking_report(r["latency"][test], score, r["group"][test],
                                      r["weight"][test]))
        rows += group_rows(r[test], score, seed)
        print(f"seed {seed}: PCA {overall[-1]['pca']:.4f}, top-1 {overall[-1]['top1']:.4f}",
              flush=True)
    g = pd.DataFrame(rows)
    g["q"] = g["best"] / g["picked"]
    g["w_picked"], g["w_loss"] = g["weight"] * g["picked"], g["weight"] * (g["picked"] - g["best"])
    table = g.groupby("operator").agg(groups=("pca", "size"), pca=("pca", "mean"),
                                      top1_group=("q", "mean"), w_picked=("w_picked", "sum"),
                                      w_loss=("w_loss", "sum"), flat_pairs=("flat", "median"))
    table["top1_weight"] = table.pop("w_picked") / g["w_picked"].sum()
    table["top1_loss"] = table.pop("w_loss") / g["w_loss"].sum()
    table = table.sort_values("groups", ascending=False)
    out = [{"operator": op, **{k: (int(v) if k == "groups" else round(float(v), 4))
                               for k, v in row.items()}} for op, row in table.iterrows()]
    scores = {m: round(float(np.mean([o[m] for o in overall])), 4) for m in ("pca", "top1")}
    concentration, octiles = loss_shape(g)
    print_table(out)
    print_table(octiles)
    print("share of each seed's top-1 loss in its costliest groups:", concentration)
    print(f"all groups, mean of the seeds' scores: PCA {scores['pca']}, top-1 {scores['top1']}")
    write_results(args.name, out, dataset=args.dataset, test_fraction=0.3, seeds=seeds,
                  overall=scores, loss_concentration=concentration, by_latency_octile=octiles)
    plot(out, RESULTS / f"{args.name}.png")


def loss_shape(g: pd.DataFrame) -> tuple[dict, list[dict]]:
    """The share of each seed's top-1 loss in its 5 and 20 costliest groups (mean over seeds),
    and per octile of the groups' best latency: groups, PCA, best / picked, share of the loss."""
    shares = {k: [] for k in (5, 20)}
    for _, s in g.groupby("seed"):
        loss = np.sort(s["w_loss"].to_numpy())[::-1]
        for k in shares:
            shares[k].append(loss[:k].sum() / loss.sum())
    concentration = {f"top_{k}_groups": round(float(np.mean(v)), 3) for k, v in shares.items()}
    octile = pd.qcut(np.log(g["best"]), 8, labels=False)
    rows = []
    for i, o in g.groupby(octile):
        rows.append({"octile": int(i) + 1, "best_ms_min": round(o["best"].min() * 1e3, 4),
                     "best_ms_max": round(o["best"].max() * 1e3, 4), "groups": len(o),
                     "pca": round(float(o["pca"].mean()), 4),
                     "top1_group": round(float(o["q"].mean()), 4),
                     "top1_loss": round(float(o["w_loss"].sum() / g["w_loss"].sum()), 4)})
    return concentration, rows


def plot(rows, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["operator"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    left.barh(names, [r["pca"] for r in rows], color="tab:blue")
    left.set_xlim(0.5, 1.0)
    left.set_xlabel("PCA, mean over held-out groups")
    right.barh(names, [r["top1_loss"] for r in rows], color="tab:red", label="share of top-1 loss")
    right.barh(names, [r["top1_weight"] for r in rows], fill=False, edgecolor="black",
               label="share of top-1 weight")
    right.set_xlabel("share")
    right.legend(loc="lower right")
    left.invert_yaxis()
    fig.suptitle("default model, by-task split: where the ranking errors lie")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
