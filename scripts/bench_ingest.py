"""Ingest throughput on the real third-party logs in ../shared/data (target: all in under 10 s).

    python scripts/bench_ingest.py [--shared ../shared/data] [--repeats 3]

Each source is ingested alone and then all together, ``--repeats`` times; the table shows the
median wall time, records/s and lines/s. Results: scripts/results/bench_ingest.{json,csv}.
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from _results import print_table, write_results

from gbxfer import ingest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared"
                                                / "data"))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    shared = Path(args.shared)
    sources = {
        "ansor gpu_a100": [shared / "bennu-ansor" / "gpu_a100"],
        "ansor gpu_rtx3080": [shared / "bennu-ansor" / "gpu_rtx3080"],
        "ansor cpu_x86": [shared / "bennu-ansor" / "cpu_x86"],
        "metaschedule a100 resnet34": [shared / "bennu-metaschedule-a100-resnet34"],
    }
    sources["all of them"] = [p for paths in list(sources.values()) for p in paths]
    rows = []
    for name, paths in sources.items():
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            ds = ingest(paths)
            times.append(time.perf_counter() - start)
        seconds = statistics.median(times)
        s = ds.summary()
        rows.append({"source": name, "lines": s["n_lines"], "records": s["n_records"],
                     "valid": s["n_valid"], "seconds": round(seconds, 3),
                     "records_per_s": round(s["n_records"] / seconds),
                     "lines_per_s": round(s["n_lines"] / seconds)})
    print_table(rows)
    total = rows[-1]["seconds"]
    verdict = "meets" if total < 10 else "misses"
    print(f"\nall shared logs in {total:.2f} s: {verdict} the target of < 10 s")
    write_results("bench_ingest", rows, target_seconds=10, repeats=args.repeats,
                  note="median wall time of --repeats runs, one process, cold file cache not "
                       "enforced")


if __name__ == "__main__":
    main()
