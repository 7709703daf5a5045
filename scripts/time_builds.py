"""Libraries of one ONNX model from different tuning runs, timed together in the same rounds.

    python scripts/time_builds.py --model M.onnx LIB.so [LIB.so ...] [--threads 1,2]
                                  [--repeats 15] [--seed 0] [--name time_builds]

Two runs of ``scripts/bench_onnx.py`` are timed hours apart, and on a VM the ratio of the same
library to ONNX Runtime moves between timings (by 8% on BERT, 2026-12-07): runs in different
work folders (another layout, another weight layout) are compared here instead, with
``bench_onnx.py``'s own timing worker (each library's outputs checked against ONNX Runtime's,
then ONNX Runtime and every library timed once a round, in a seeded shuffled order, mean over
>= 0.5 s), in one fresh process per thread count. Reported per library: the median latency,
and the medians of the per-round ratios to ONNX Runtime, to the first library and to the one
listed before it (give pairs one after the other), and each round's latency. Every
library must be built from the same model file (its name and weights). Run on an idle machine.
Results: scripts/results/<name>.{json,csv}.
"""
from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import numpy as np
from _results import print_table, write_results
from bench_onnx import cpu_model, run_timing


def rows_of(timed: dict, libraries: list[Path], threads: int, cpu: str) -> list[dict]:
    """One row for ONNX Runtime and one per library; ratios are medians of per-round ratios."""
    seconds, checks = timed["seconds"], timed["checks"]
    ort = np.asarray(seconds["onnxruntime"])
    first = np.asarray(seconds[libraries[0].name])
    rows = [{"threads": threads, "library": "ONNX Runtime",
             "latency_ms": 1e3 * float(np.median(ort)), "over_onnxruntime": 1.0, "cpu": cpu}]
    for i, path in enumerate(libraries):
        s = np.asarray(seconds[path.name])
        previous = np.asarray(seconds[libraries[max(i - 1, 0)].name])
        rows.append({"threads": threads, "library": str(path),
                     "latency_ms": 1e3 * float(np.median(s)),
                     "over_onnxruntime": float(np.median(s / ort)),
                     "over_first": float(np.median(s / first)),
                     "over_previous": float(np.median(s / previous)), "cpu": cpu,
                     **checks[path.name], "round_ms": [1e3 * float(x) for x in s]})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="the ONNX model file")
    parser.add_argument("libraries", type=Path, nargs="+",
                        help="libraries of that model (bench_onnx.py's builds); the first is "
                             "the one the others are compared with")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default="time_builds")
    args = parser.parse_args()
    names = [p.name for p in args.libraries]
    if len(set(names)) != len(names):  # the worker keys its timings by file name
        raise SystemExit(f"libraries must have different file names: {names}; link or copy "
                         "one under another name")
    missing = [str(p) for p in [args.model, *args.libraries] if not p.is_file()]
    if missing:
        raise SystemExit(f"not found: {', '.join(missing)}")
    cpu = cpu_model()
    rows = []
    for threads in [int(t) for t in args.threads.split(",")]:
        spec = {"model": str(args.model), "libraries": [str(p) for p in args.libraries],
                "threads": threads, "repeats": args.repeats, "seed": args.seed}
        rows += rows_of(run_timing(spec), args.libraries, threads, cpu)
        print_table(rows[-len(args.libraries) - 1:],
                    ["threads", "library", "latency_ms", "over_onnxruntime", "over_first",
                     "over_previous", "max_abs_diff", "within_tolerance"])
    write_results(args.name, rows, model=str(args.model), repeats=args.repeats,
                  seed=args.seed, cpu=cpu,
                  model_sha256=hashlib.sha256(args.model.read_bytes()).hexdigest())


if __name__ == "__main__":
    main()
