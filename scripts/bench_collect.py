"""Measured programs per hour: ``gbxfer collect`` against plain ``tune_tir`` (replay-trace).

    python scripts/bench_collect.py [--programs 16] [--tasks A,B,C,D] [--rounds 3] [--before REF]
                                    [--run-cores CORES]

``--before REF`` adds ``gbxfer collect`` as of commit REF (from a temporary git worktree) as a
third arm: the collection rate before and after a change, in the same interleaved rounds;
``--run-cores CORES`` one more, the current code running kernels on CORES while the next
batch builds on the others. The current code's own account of where the time goes
(``collect time: build, run, sample, write dataset``, logged by ``gbxfer collect``) is kept
per run.

Both measure the same tasks on the same profile with the same runner settings (1 repeat set of
3, 40 ms minimum), each as a fresh process timed from start to end, in interleaved rounds
(A B, B A, ...) on the same machine. ``tune_tir`` uses TVM's defaults otherwise (its LocalBuilder,
the replay-trace search strategy: random programs, no cost model). Run it on an idle machine.
Results: scripts/results/bench_collect.{json,csv}.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import print_table, write_results

TUNE_TIR = r"""
import json, os, sys
os.environ["TVM_NUM_THREADS"] = "1"
from tvm.s_tir import meta_schedule as ms
import tvm
from gbxfer.hardware import load_profile
from gbxfer.records.suite import load_suite
from gbxfer.config_files import find_config
from gbxfer.tvm._task_modules import task_module
suite = load_suite(find_config("workloads", sys.argv[1])).select(sys.argv[2].split(","))
profile = load_profile(sys.argv[3])
n, work = int(sys.argv[4]), sys.argv[5]
target = tvm.target.Target(profile.target)
config = ms.runner.EvaluatorConfig(number=1, repeat=3, min_repeat_ms=40)
measured = 0
for i, task in enumerate(suite.tasks):
    ms.tir_integration.tune_tir(task_module(task), target, f"{work}/{i}", max_trials_global=n,
        num_trials_per_iter=16, strategy="replay-trace",
        runner=ms.runner.LocalRunner(evaluator_config=config), num_tuning_cores=1, seed=1)
    measured += sum(1 for _ in open(f"{work}/{i}/database_tuning_record.json"))
print(json.dumps({"measured": measured}))
"""


def run_gbxfer(args, work, code=None, extra=()) -> tuple[int, str]:
    """``gbxfer collect`` of the current code (with ``extra`` arguments), or of the checkout
    at ``code``."""
    env = dict(os.environ, PYTHONPATH=str(code)) if code else None
    out = subprocess.run([sys.executable, "-m", "gbxfer", "collect", "--suite", args.suite,
                          "--hardware", args.hardware, "--programs", str(args.programs),
                          "--tasks", args.tasks, "--out", str(work), *extra], check=True, env=env,
                         capture_output=True, text=True, cwd=code)
    phases = [line for line in out.stderr.splitlines() if line.startswith("collect time:")]
    measured = sum(1 for _ in open(work / "metaschedule" / args.hardware /
                                   "database_tuning_record.json"))
    return measured, phases[-1] if phases else ""


def run_tune_tir(args, work) -> int:
    out = subprocess.run([sys.executable, "-c", TUNE_TIR, args.suite, args.tasks, args.hardware,
                          str(args.programs), str(work)], check=True, capture_output=True,
                         text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["measured"], ""


def measure(args, methods) -> list[dict]:
    """Interleaved rounds, the order of the methods rotating from one round to the next."""
    rows = []
    names = list(methods)
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            with tempfile.TemporaryDirectory() as tmp:
                start = time.perf_counter()
                measured, phases = methods[name](args, Path(tmp) / "w")
                seconds = time.perf_counter() - start
            rows.append({"round": r, "method": name, "programs": measured,
                         "seconds": round(seconds, 1),
                         "programs_per_hour": round(measured / seconds * 3600),
                         "phases": phases.removeprefix("collect time: ")})
            print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="networks")
    parser.add_argument("--tasks", default="dense_1_768_768,depthwise_conv2d_1_28_28_192_3_1_1,"
                        "conv2d_1_28_28_128_128_3_1_1,softmax_1536_128")
    parser.add_argument("--hardware", default="x86-avx2-1t")
    parser.add_argument("--programs", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", metavar="REF", help="also gbxfer collect as of this commit")
    parser.add_argument("--run-cores", metavar="CORES",
                        help="also the current gbxfer collect with --run-cores CORES")
    args = parser.parse_args()
    methods = {"gbxfer collect": run_gbxfer, "tune_tir replay-trace": run_tune_tir}
    with contextlib.ExitStack() as stack:
        if args.before:
            old = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "before"
            repo = Path(__file__).resolve().parents[1]
            subprocess.run(["git", "-C", str(repo), "worktree", "add", "--detach", str(old),
                            args.before], check=True, capture_output=True)
            stack.callback(subprocess.run, ["git", "-C", str(repo), "worktree", "remove",
                                            "--force", str(old)], check=False)
            methods[f"gbxfer collect @{args.before}"] = functools.partial(run_gbxfer, code=old)
        if args.run_cores:
            methods[f"gbxfer collect --run-cores {args.run_cores}"] = functools.partial(
                run_gbxfer, extra=("--run-cores", args.run_cores))
        rows = measure(args, methods)
    summary = []
    for name in methods:  # (the first is the current gbxfer collect, the second tune_tir)
        rates = [row["programs_per_hour"] for row in rows if row["method"] == name]
        summary.append({"method": name, "median_programs_per_hour": statistics.median(rates)})
    ratio = summary[0]["median_programs_per_hour"] / summary[1]["median_programs_per_hour"]
    print()
    print_table(summary)
    print(f"\ngbxfer collect / tune_tir: {ratio:.2f}x programs per hour")
    speedup = None
    if args.before:
        speedup = summary[0]["median_programs_per_hour"] / summary[2]["median_programs_per_hour"]
        print(f"gbxfer collect now / at {args.before}: {speedup:.2f}x programs per hour")
    overlapped = None
    if args.run_cores:
        overlapped = (summary[-1]["median_programs_per_hour"]
                      / summary[0]["median_programs_per_hour"])
        print(f"gbxfer collect --run-cores {args.run_cores} / without: {overlapped:.2f}x")
    write_results("bench_collect", rows, summary=summary, ratio=ratio, speedup=speedup,
                  overlapped_speedup=overlapped, before=args.before, run_cores=args.run_cores,
                  tasks=args.tasks, hardware=args.hardware, programs_per_task=args.programs)


if __name__ == "__main__":
    main()
