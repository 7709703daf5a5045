"""Featurization throughput: primitive features vs TVM's PerStoreFeature (target >= 20,000/s).

    taskset -c 0 python scripts/bench_features.py [--candidates 512]

1. Primitive features of stored programs (cold: a fresh featurizer per repeat, one core; best
   and median of 7 repeats) on the bundled dataset (or a collected one, --dataset) and the
   third-party logs in ../shared.
2. Live MetaSchedule candidates, as in a tuning loop: ``--candidates`` schedules drawn from
   the design space of a few suite tasks; primitive features from ``candidate.sch.trace``
   as the cost-model adapter reads it (printed traces, a fresh featurizer per task) and
   through ``trace.as_json()`` for every candidate, against TVM's own ``PerStoreFeature`` on
   the same candidates, in the same run (ratio: adapter path vs PerStoreFeature).
Results: scripts/results/bench_features.{json,csv}.
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from _results import print_table, write_results

from gbxfer import ingest, load_dataset
from gbxfer.features._program import ProgramFeaturizer

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def stored(name, ds, repeats=7):
    r = ds.records.drop_duplicates("program_id")
    times = []
    for _ in range(repeats):
        featurizer = ProgramFeaturizer()  # cold: no sketch seen yet
        start = time.perf_counter()
        featurizer.transform(r["source_format"].tolist(), r["program"].tolist())
        times.append(time.perf_counter() - start)
    return {"what": f"stored: {name}", "programs": len(r), "seconds": round(min(times), 3),
            "programs_per_s": round(len(r) / min(times)),
            "median_programs_per_s": round(len(r) / statistics.median(times))}


def live(n_candidates):
    import tvm
    from tvm.s_tir import meta_schedule as ms

    from gbxfer.config_files import find_config

    from gbxfer.hardware import load_profile
    from gbxfer.tvm._design_space import DesignSpace
    from gbxfer.tvm._json import to_python
    from gbxfer.tvm._task_modules import task_module
    from gbxfer.records.suite import load_suite

    suite = load_suite(find_config("workloads", "networks")).select(
        ["dense_128_768_768", "conv2d_1_28_28_128_128_3_1_1", "depthwise_conv2d_1_56_56_144_3_1_1",
         "softmax_1536_128"])
    target = tvm.target.Target(load_profile("x86-avx2-1t").target)
    rows = []
    total = {"gbxfer": 0.0, "as_json": 0.0, "tvm": 0.0, "n": 0}
    for task in suite.tasks:
        mod = task_module(task)
        cands = DesignSpace(mod, target, task.name, 0).random(n_candidates // len(suite.tasks))
        schedules = [c.schedule for c in cands]
        start = time.perf_counter()  # as the adapter does: printed traces, a fresh featurizer
        ProgramFeaturizer().transform_printed(
            [str(sch.trace) for sch in schedules],
            lambda i: to_python(schedules[i].trace.as_json()))
        ours = time.perf_counter() - start
        start = time.perf_counter()  # every trace through as_json()
        ProgramFeaturizer().transform_traces([to_python(sch.trace.as_json())
                                              for sch in schedules])
        as_json = time.perf_counter() - start
        context = ms.TuneContext(mod=mod, target=target, task_name=task.name, num_threads=1)
        args_info = ms.arg_info.ArgInfo.from_prim_func(mod["main"])
        candidates = [ms.MeasureCandidate(sch, args_info) for sch in schedules]
        extractor = ms.feature_extractor.PerStoreFeature(extract_workload=False)
        start = time.perf_counter()
        extractor.extract_from(context, candidates)
        theirs = time.perf_counter() - start
        rows.append({"what": f"live: {task.name}", "programs": len(schedules),
                     "gbxfer_per_s": round(len(schedules) / ours),
                     "gbxfer_as_json_per_s": round(len(schedules) / as_json),
                     "per_store_per_s": round(len(schedules) / theirs),
                     "speedup": round(theirs / ours, 2)})
        total["gbxfer"] += ours
        total["as_json"] += as_json
        total["tvm"] += theirs
        total["n"] += len(schedules)
    rows.append({"what": "live: all", "programs": total["n"],
                 "gbxfer_per_s": round(total["n"] / total["gbxfer"]),
                 "gbxfer_as_json_per_s": round(total["n"] / total["as_json"]),
                 "per_store_per_s": round(total["n"] / total["tvm"]),
                 "speedup": round(total["tvm"] / total["gbxfer"], 2)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="bundled")
    parser.add_argument("--candidates", type=int, default=512)
    args = parser.parse_args()
    rows = [stored(args.dataset, load_dataset(args.dataset))]
    if (SHARED / "bennu-ansor").exists():
        rows.append(stored("bennu-ansor (Ansor steps)", ingest([SHARED / "bennu-ansor"])))
        rows.append(stored("bennu A100 (older MetaSchedule)",
                           ingest([SHARED / "bennu-metaschedule-a100-resnet34"])))
    print_table(rows)
    live_rows = live(args.candidates)
    print()
    print_table(live_rows)
    write_results("bench_features", rows + live_rows, target_programs_per_s=20000)


if __name__ == "__main__":
    main()
