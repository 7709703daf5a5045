"""Transfer settings beside the default on the real machine change: where could shots gain?

    python scripts/ablate_transfer_modes.py [--seeds 3] [--shots 4,16] [--configs NAME,...]
                                            [--name ablate_transfer_modes]

On four settings of scripts/bench_transfer.py (the Zen 3 -> Zen 4 change on programs the
source never measured, the same on tasks it never measured, the reverse on unseen tasks, and
the bundled Zen 3's AVX2 family from its other families), each K and shot draw: the paired
difference to the source model (zero-shot) on the same test records of

  default               gbxfer transfer's default (guarded continue, target weight 5)
  retrain w20 guarded   a new booster on source + shots, shots weighing 20, guarded
  retrain w20           the same without the guard
  continue shots-only   trees added on the shots alone (the source's scores as base margin)
  continue              the default's adaptation unguarded: trees added on source + shots, the
                        source records weighted by an RBF similarity of their hardware
                        descriptor to the target's (temperature 1)
  continue unweighted   the same with every source record weighing 1 (temperature 0)

with how often the guard kept the adaptation, and the range of the weights the continue
adaptation gives the source records (how far from uniform). Results:
scripts/results/<name>.{json,csv}.
"""
from __future__ import annotations

import argparse

import numpy as np
from _bench import ci95
from _results import print_table, write_results
from bench_transfer import HOLDOUT, prepared, report, settings

from gbxfer.model import load_model_config
from gbxfer.transfer import TransferConfig, draw_shots, source_weights, transfer

SETTINGS = ("bundled -> AMD EPYC (zen4)", "bundled -> AMD EPYC (zen4), unseen tasks",
            "bundled -> AMD EPYC (zen3), unseen tasks", "bundled -> x86-avx2")
CONFIGS = {"default": TransferConfig(),
           "retrain w20 guarded": TransferConfig(mode="retrain", target_weight=20.0),
           "retrain w20": TransferConfig(guard=False, mode="retrain", target_weight=20.0),
           "continue shots-only": TransferConfig(guard=False, source_fraction=0.0),
           "continue": TransferConfig(guard=False),
           "continue unweighted": TransferConfig(guard=False, temperature=0.0)}


def weight_range(model, fm_source, fm_target) -> str:
    """The range (min-max) of the weights the continue adaptation gives the source records
    (gbxfer.transfer.source_weights, temperature 1) over the target's profiles: how far from
    uniform they are."""
    profiles = fm_source.records["hardware"].to_numpy()
    fm_used = fm_source.select_rows(fm_source.records["valid"].to_numpy(dtype=bool)
                                    & np.isin(profiles, model.hardware))
    targets = fm_target.records["hardware"].to_numpy()
    weights = [source_weights(fm_used, fm_target.X[np.flatnonzero(targets == t)[0]], 1.0)
               for t in sorted(set(targets))]
    return f"{min(w.min() for w in weights):.2f}-{max(w.max() for w in weights):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--shots", default="4,16")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="arms to run")
    parser.add_argument("--name", default="ablate_transfer_modes", help="results file name")
    args = parser.parse_args()
    unknown = sorted(set(args.configs.split(",")) - set(CONFIGS))
    if unknown:
        parser.error(f"unknown config {unknown[0]!r}; configs: {', '.join(CONFIGS)}")
    config = load_model_config()
    rows = []
    for name, source, target, only, _ in settings(["machines", "bundled"]):
        if name not in SETTINGS:
            continue
        shared = prepared(source, target, config)
        spread = weight_range(shared["model"], shared["fm_source"], shared["fm_target"])
        model, fm = shared["model"], shared["fm_target"]
        test = HOLDOUT.test_mask(target) & (True if only is None else only)
        base = report(lambda X: model.predict(X, fm.columns), fm, test)
        for k in map(int, args.shots.split(",")):
            diffs: dict = {}
            for seed in range(args.seeds):
                shots = draw_shots(target, k, seed, HOLDOUT)
                for arm in args.configs.split(","):
                    transfer_config = CONFIGS[arm]
                    adapted = transfer(model, source, target, shots, transfer_config, seed,
                                       HOLDOUT, source_features=shared["fm_source"],
                                       target_features=fm)
                    rep = report(lambda X: adapted.predict(X, fm.columns), fm, test)
                    guard = adapted.extra["transfer"].get("guard_check") or {}
                    diffs.setdefault(arm, []).append(
                        [rep[m] - base[m] for m in ("pca", "top1", "top5")]
                        + [bool(guard.get("adapted"))])
            for arm, values in diffs.items():
                values = np.array(values, dtype=float)
                row = {"setting": name, "k": k, "arm": arm, "seeds": len(values),
                       "source_weights": spread,
                       "zero_shot_pca": round(base["pca"], 4),
                       "zero_shot_top1": round(base["top1"], 4)}
                for i, metric in enumerate(("pca", "top1", "top5")):
                    mean, half = ci95(values[:, i])
                    row[f"d_{metric}"], row[f"d_{metric}_ci"] = round(mean, 4), round(half, 4)
                if CONFIGS[arm].guard:
                    row["adapted"] = f"{int(values[:, 3].sum())}/{len(values)}"
                rows.append(row)
                print_table([row])
    print()
    print_table(rows)
    write_results(args.name, rows, seeds=args.seeds)


if __name__ == "__main__":
    main()
