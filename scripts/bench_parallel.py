"""Program features and ingest from one process against two, with the same results.

    python scripts/bench_parallel.py [--repeats 3]

Features: on the bundled dataset and on the bundled dataset merged with the third-party data
of ../shared/data (when present), the median wall-clock time of the program block over
--repeats runs, serial and with 2 processes (``build(..., n_jobs=2)``: each given whole
tasks), their ratio, and whether the two matrices are equal bit for bit. Ingest: the same for
``ingest(..., jobs=2)`` of the third-party logs and database (records, tasks and manifest
equal). Run on an idle machine.
Results: scripts/results/bench_parallel.{json,csv}.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from _bench import SHARED
from _results import print_table, write_results

from gbxfer import Dataset, ingest, load_dataset
from gbxfer.features import build


def timed(dataset, n_jobs, repeats):
    times, matrix = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        matrix = build(dataset, ["program"], n_jobs=n_jobs).X
        times.append(time.perf_counter() - start)
    return statistics.median(times), matrix


def timed_ingest(sources, jobs, repeats):
    times, dataset = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        dataset = ingest(sources, jobs=jobs)
        times.append(time.perf_counter() - start)
    return statistics.median(times), dataset


def same_dataset(a, b) -> bool:
    return a.records.equals(b.records) and a.tasks.equals(b.tasks) and a.manifest == b.manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    bundled = load_dataset("bundled")
    cases = [("bundled", bundled)]
    sources = [SHARED / "bennu-ansor", SHARED / "bennu-metaschedule-a100-resnet34"]
    if all(s.exists() for s in sources):
        cases.append(("bundled + shared data",
                      Dataset.concat([bundled, *(ingest([s]) for s in sources)])))
    rows = []
    for name, dataset in cases:
        serial, a = timed(dataset, 1, args.repeats)
        parallel, b = timed(dataset, 2, args.repeats)
        rows.append({"data": name, "records": len(dataset),
                     "programs": int(dataset.records["program_id"].nunique()),
                     "serial_s": round(serial, 3), "two_processes_s": round(parallel, 3),
                     "speedup": round(serial / parallel, 3),
                     "identical": bool(np.array_equal(a, b, equal_nan=True))})
        print_table(rows[-1:])
    if all(s.exists() for s in sources):
        serial, a = timed_ingest(sources, 1, args.repeats)
        parallel, b = timed_ingest(sources, 2, args.repeats)
        rows.append({"data": "ingest: shared data", "records": len(a),
                     "lines": sum(s["n_lines"] for s in a.manifest["sources"]),
                     "serial_s": round(serial, 3), "two_processes_s": round(parallel, 3),
                     "speedup": round(serial / parallel, 3), "identical": same_dataset(a, b)})
        print_table(rows[-1:])
    print()
    print_table(rows)
    write_results("bench_parallel", rows, repeats=args.repeats)


if __name__ == "__main__":
    main()
