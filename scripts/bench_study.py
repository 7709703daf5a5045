"""Seconds per trial of a seeded model study, and its trials, for comparing two versions.

    python scripts/bench_study.py [--dataset bundled] [--trials 10] [--seed 0] [--name NAME]

Runs ``gbxfer study model DATASET --trials N --seed S`` in a fresh SQLite storage, in a
subprocess (so that the gbxfer on ``sys.path`` is the one measured), and writes every trial's
parameters, value and user attributes with its duration to
``scripts/results/<NAME>.json`` (default ``bench_study``). Two versions of gbxfer that behave
the same give the same trials; only the seconds may differ.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _results import print_table, write_results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="bundled")
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default="bench_study")
    args = parser.parse_args()
    import optuna

    with tempfile.TemporaryDirectory() as tmp:
        storage = f"sqlite:///{Path(tmp) / 'study.db'}"
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "gbxfer", "study", "model", args.dataset,
                        "--trials", str(args.trials), "--seed", str(args.seed), "--storage",
                        storage, "--study-name", "bench", "-q"], check=True,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        wall = time.perf_counter() - start
        study = optuna.load_study(study_name="bench", storage=storage)
    rows = [{"trial": t.number, "value": t.value, "seconds": round(
        (t.datetime_complete - t.datetime_start).total_seconds(), 2), "params": t.params,
        "user_attrs": t.user_attrs} for t in study.trials]
    seconds = [r["seconds"] for r in rows]
    print_table([{k: r[k] for k in ("trial", "value", "seconds")} for r in rows])
    summary = {"wall_seconds": round(wall, 1), "median_seconds_per_trial": float(np.median(
        seconds)), "mean_seconds_per_trial": round(float(np.mean(seconds)), 2)}
    print(summary)
    write_results(args.name, rows, **summary, dataset=args.dataset, trials=args.trials,
                  seed=args.seed)


if __name__ == "__main__":
    main()
