"""Program features and ingest from one process against two, with the same results.

    python scripts/bench_parallel.py [--repeats 3]

Features: on the bundled dataset and on the bundled dataset merged with the third-party data
of ../shared/data (when present), the median wall-clock time of the program block over
--repeats runs, serial and with 2 processes timed in turn (``build(..., n_jobs=2)``: each given whole
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


def interleaved(run, repeats):
    """Median seconds of ``run(1)`` and of ``run(2)`` (serial and two processes), the two
    timed in turn ``repeats`` times; and the last result of each."""
    times, results = {1: [], 2: []}, {}
    for _ in range(repeats):
        for jobs in (1, 2):
            start = time.perf_counter()
            results[jobs] = run(jobs)
            times[jobs].append(time.perf_counter() - start)
    return statistics.median(times[1]), statistics.median(times[2]), results[1], results[2]


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
        serial, parallel, a, b = interleaved(
            lambda jobs: build(dataset, ["program"], n_jobs=jobs).X, args.repeats)
        rows.append({"data": name, "records": len(dataset),
                     "programs": int(dataset.records["program_id"].nunique()),
                     "serial_s": round(serial, 3), "two_processes_s": round(parallel, 3),
                     "speedup": round(serial / parallel, 3),
                     "identical": bool(np.array_equal(a, b, equal_nan=True))})
        print_table(rows[-1:])
    if all(s.exists() for s in sources):
        serial, parallel, a, b = interleaved(lambda jobs: ingest(sources, jobs=jobs),
                                             args.repeats)
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
