"""Measurement noise: programs of a collected dataset measured again in a separate run.

    python scripts/measure_noise.py --dataset DIR/dataset --programs 200 --out NOISE_DIR

Draws ``--programs`` program ids (seeded, spread over tasks), measures them again on the same
profiles with ``gbxfer collect --replay-from`` (a second, separate run), and reports per profile
the median and 90th-percentile relative difference |a - b| / ((a + b) / 2) of the latencies, and
how well run 2 ranks run 1 (top-1, top-5, PCA within each task, with the random baseline).
Run it on an idle machine, never beside another collection. Results: scripts/results/noise.*
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from _results import RESULTS, print_table, write_results

from gbxfer import load_dataset
from gbxfer.metrics import ranking_report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--suite", default="networks")
    parser.add_argument("--programs", type=int, default=200)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--taskset", default="", help="e.g. '1' to pin to core 1 (1-thread)")
    parser.add_argument("--hardware", help="only these profiles (comma-separated); the rows of "
                                           "other profiles already in results/noise.json stay")
    args = parser.parse_args()
    first = load_dataset(args.dataset)
    valid = first.records[first.records["valid"]]
    programs = valid.groupby("program_id")["hardware"].nunique()
    every = programs[programs == first.records["hardware"].nunique()].index
    rng = np.random.default_rng(args.seed)
    chosen = set(rng.choice(np.array(sorted(every)), size=min(args.programs, len(every)),
                            replace=False))
    subset = first.select(first.records["program_id"].isin(chosen).to_numpy())
    if args.hardware:
        subset = subset.filter(hardware=args.hardware.split(","))
    subset_path = args.out / "programs"
    subset.save(subset_path)
    profiles = ",".join(subset.hardware)
    command = [sys.executable, "-m", "gbxfer", "collect", "--suite", args.suite, "--hardware",
               profiles, "--replay-from", str(subset_path), "--out", str(args.out / "run2")]
    if args.taskset:
        command = ["taskset", "-c", args.taskset, *command]
    subprocess.run(command, check=True)
    second = load_dataset(args.out / "run2" / "dataset")
    a = subset.records.set_index(["program_id", "hardware"])["latency"]
    b = second.records.set_index(["program_id", "hardware"])["latency"]
    joined = a.to_frame("run1").join(b.to_frame("run2"), how="inner").dropna().reset_index()
    rows = []
    for hw, g in joined.groupby("hardware"):
        rel = (g["run1"] - g["run2"]).abs() / ((g["run1"] + g["run2"]) / 2)
        tasks = g["program_id"].map(first.records.drop_duplicates("program_id")
                                    .set_index("program_id")["task_key"])
        report = ranking_report(g["run1"].to_numpy(), -g["run2"].to_numpy(), tasks.to_numpy())
        rows.append({"hardware": hw, "programs": len(g), "median_rel_diff": rel.median(),
                     "p90_rel_diff": rel.quantile(0.9), "top1": report["top1"],
                     "top5": report["top5"], "pca": report["pca"],
                     "random_top1": report["random_top1"], "n_groups": report["n_groups"]})
    previous = RESULTS / "noise.json"
    if args.hardware and previous.exists():
        measured = {row["hardware"] for row in rows}
        kept = [dict(row, measured=json.loads(previous.read_text())["date"])
                for row in json.loads(previous.read_text())["rows"]
                if row["hardware"] not in measured]
        rows = sorted(kept + rows, key=lambda row: row["hardware"])
    print_table(rows)
    write_results("noise", rows, dataset=str(args.dataset),
                  note="run 2 (a separate replay of the same programs) used as the ranking of "
                       "run 1; relative difference = |a - b| / mean(a, b)")


if __name__ == "__main__":
    main()
