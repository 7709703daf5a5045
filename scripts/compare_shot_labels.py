"""Do the shots' rank labels make pooled retraining lose with few shots a group? (Measured: no.)

    python scripts/compare_shot_labels.py [--settings machines,bundled] [--match TEXT]
                                          [--seeds 100,101,102,103,104] [--shots 2,4] [--more]
                                          [--name compare_shot_labels] [--report-only]

The default model learns each program's rank within its group as i / (n + 1)
(gbxfer.model._ranker.group_ranks: the expected percentile of the i-th of n programs drawn).
As a regression target for one program that is biased towards 1/2 when n is small: a program
at percentile p of its task, drawn with one other, is the faster of the two with probability
p, so its label averages 1/3 + p / 3; with n shots, (1 + (n - 1) p) / (n + 1). The share of
the other shots it beats, (i - 1) / (n - 1), averages p itself. The shots then tell a
retrained model that programs on the target differ 3x (K = 2) or 5/3x (K = 4) less than their
percentiles say.

Arms, for each shot draw of `scripts/bench_transfer.py` (the same settings, source model, test
part and shots): the source model, pooled retraining as gbxfer's guard weighs it
(``TransferConfig(guard=False).pooled()``), and the same with the labels of groups of at most
16 records as (i - 1) / (n - 1) (``share beaten``; every group of the bundled dataset has 47 or
more valid programs, so on the CPU settings these are the shot groups alone); with ``--more``
(2026-12-07, after the first run had found the wider labels scoring worse) also those
labels halfway to 1/2 (``halfway``: 1/2 + (i / (n + 1) - 1/2) / 2) and the shots at a quarter
of a source record's weight (``weight 0.25``). Paired differences to the source model, mean and
95% CI over draws. Exploratory (choice seeds 100-104 by default): nothing in gbxfer changes on
it.

Each (setting, seed, K) is appended to scripts/results/<name>.jsonl (resumable).
Results: <name>.{jsonl,json,csv}.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses

import numpy as np
from _bench import ci95
from _draws import add_setting_options, each_draw
from _results import add_draw_log_options, print_table, write_results
from bench_transfer import HOLDOUT, report

import gbxfer.model._ranker as ranker_module
from gbxfer.model import load_model_config
from gbxfer.transfer import TransferConfig, draw_shots, shots_rank, transfer

SMALL = 16  # groups of at most this many records get an arm's other label
EXPECTED = ranker_module.group_ranks


def share_beaten(ranks, sizes):
    return (ranks - 1) / np.maximum(sizes - 1, 1)


def halfway(ranks, sizes):
    return 0.5 + (ranks / (sizes + 1) - 0.5) / 2


@contextlib.contextmanager
def small_group_labels(label):
    """Within the block, groups of at most SMALL records are labelled ``label(ranks, sizes)``
    (None: as always)."""
    def patched(y, codes):
        ranks, sizes = ranker_module._ranks(y, codes)
        return np.where(sizes <= SMALL, label(ranks, sizes), ranks / (sizes + 1))

    if label is None:
        yield
        return
    ranker_module.group_ranks = patched
    try:
        yield
    finally:
        ranker_module.group_ranks = EXPECTED


POOLED = TransferConfig(guard=False).pooled()
ARMS = {"pooled": (POOLED, None), "pooled, share beaten": (POOLED, share_beaten)}
MORE = {"pooled, halfway": (POOLED, halfway),
        "pooled, weight 0.25": (dataclasses.replace(POOLED, target_weight=0.25), None)}


def draw(source, target, seed, k, shared, only, arms_run) -> dict | None:
    model, fm_target = shared["model"], shared["fm_target"]
    features = {"source_features": shared["fm_source"], "target_features": fm_target}
    shots = draw_shots(target, k, seed, HOLDOUT)
    if not shots_rank(target.select(shots)):
        return None
    test = HOLDOUT.test_mask(target) & (True if only is None else only)
    arms = {"source": report(lambda X: model.predict(X, fm_target.columns), fm_target, test)}
    for name, (config, label) in arms_run.items():
        with small_group_labels(label):
            adapted = transfer(model, source, target, shots, config, seed, HOLDOUT, **features)
        arms[name] = report(lambda X: adapted.predict(X, fm_target.columns), fm_target, test)
    return {"arms": arms, "n_shots": len(shots)}


def summarize(runs) -> list[dict]:
    cells: dict = {}
    for run in runs:
        cells.setdefault((run["setting"], run["k"]), []).append(run)
    rows = []
    for (setting, k), draws in cells.items():
        for arm in [a for a in draws[0]["arms"] if a != "source"]:
            row = {"setting": setting, "k": k, "arm": arm, "draws": len(draws)}
            for m in ("pca", "top1"):
                mean, half = ci95([d["arms"][arm][m] - d["arms"]["source"][m] for d in draws])
                row[f"d_{m}"], row[f"d_{m}_ci"] = round(mean, 4), round(half, 4)
            rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_setting_options(parser, "machines,bundled")  # (the GPU logs hold small groups)
    parser.add_argument("--seeds", default="100,101,102,103,104", help="shot draws")
    parser.add_argument("--shots", default="2,4", help="K shots per task x profile")
    parser.add_argument("--more", action="store_true",
                        help="also the halfway labels and the shots at weight 0.25")
    add_draw_log_options(parser, "compare_shot_labels")
    args = parser.parse_args()
    config = load_model_config("default")
    seeds = [int(s) for s in args.seeds.split(",")]
    shots = [int(k) for k in args.shots.split(",")]
    arms = {**ARMS, **(MORE if args.more else {})}
    runs = each_draw(args.name, args.settings.split(","), args.match, seeds, shots, config,
                     lambda source, target, only, shared, seed, k: draw(
                         source, target, seed, k, shared, only, arms),
                     lambda row: "PCA " + ", ".join(f"{arm} {v['pca']:.4f}"
                                                     for arm, v in row["arms"].items()),
                     args.report_only)
    rows = summarize(runs)
    print_table(rows)
    write_results(args.name, rows, seeds=seeds)


if __name__ == "__main__":
    main()
