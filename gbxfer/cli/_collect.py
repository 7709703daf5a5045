"""``gbxfer collect``: measure programs of a workload suite on hardware profiles (needs TVM)."""
from __future__ import annotations

import argparse

from ..errors import GbxferError
from ..config_files import find_config
from ..hardware.profiles import load_profile
from ..records.suite import load_suite
from ._common import (command_stamp, input_path, load_dataset_arg, name_list, non_negative_int,
                      positive_float, positive_int, run_folder, share)


def core_list(text: str) -> tuple[int, ...]:
    try:
        cores = tuple(int(c) for c in text.split(","))
    except ValueError:
        cores = ()
    if not cores or min(cores) < 0:
        raise argparse.ArgumentTypeError(f"expected core numbers like 1 or 2,3, got {text!r}")
    return cores


def add_parser(verbs, common):
    p = verbs.add_parser(
        "collect", parents=[common], help="sample and measure programs with TVM MetaSchedule",
        description="Sample N distinct programs per task of a workload suite from MetaSchedule's "
                    "design space (random decisions) and measure each on every hardware profile "
                    "given (profiles with the same target share one build). Writes one "
                    "MetaSchedule database per profile under OUT/metaschedule/ and a gbxfer "
                    "dataset in OUT/dataset. Resumable: rerun the same command after an "
                    "interruption and only what is missing is measured. Needs gbxfer[tvm].")
    p.add_argument("--suite", required=True, help="suite name (configs/workloads) or YAML path")
    p.add_argument("--hardware", required=True, metavar="PROFILE[,PROFILE...]",
                   help="hardware profile names (configs/hardware) or YAML paths")
    p.add_argument("--programs", type=positive_int, metavar="N",
                   help="distinct programs per task to sample (not with --replay-from)")
    p.add_argument("--replay-from", type=input_path, metavar="DATASET",
                   help="measure exactly the programs of this dataset (another profile's) on "
                        "these profiles: paired data; a program whose trace does not apply or "
                        "build here is recorded as a failure")
    p.add_argument("--out", required=True, type=run_folder, metavar="DIR")
    p.add_argument("--seed", type=non_negative_int, default=0)
    p.add_argument("--evolutionary-share", type=share, default=0.25, metavar="F",
                   help="0 <= F < 1: share of the N programs made by mutating the best random "
                        "programs measured on the first profile (a short evolutionary step, so "
                        "that good programs are present); the rest have uniformly random "
                        "decisions")
    p.add_argument("--tasks", type=name_list, metavar="NAME[,NAME...]",
                   help="only these tasks of the suite, in this order (names as `gbxfer suite show "
                        "SUITE --names` prints them)")
    p.add_argument("--batch-size", type=positive_int, default=16,
                   help="programs built per batch")
    p.add_argument("--repeats", type=positive_int, default=3, help="timed repeats per program")
    p.add_argument("--min-repeat-ms", type=non_negative_int, default=40,
                   help="each repeat runs the kernel for at least this long")
    p.add_argument("--build-workers", type=positive_int, default=1,
                   help="parallel build processes (1 leaves a core free on a 2-core machine)")
    p.add_argument("--run-timeout", type=positive_float, default=20.0,
                   help="seconds per program run")
    p.add_argument("--run-cores", type=core_list, metavar="CORE[,CORE...]",
                   help="run the kernels on these cores and build the next batch on the "
                        "others meanwhile (e.g. 1 on a 2-core machine: 1-thread profiles run "
                        "on core 1 while core 0 builds); without it builds and runs take turns")
    p.add_argument("--rpc-tracker", metavar="HOST:PORT",
                   help="measure on devices registered with this TVM RPC tracker")
    p.add_argument("--rpc-key", metavar="KEY[,KEY...]",
                   help="device key at the RPC tracker; several keys (one per --hardware "
                        "profile, in order) measure on several devices at once")
    p.set_defaults(run=run, resumable=True)


def run(args) -> int:
    try:
        from ..tvm._collect import Collector
        from ..tvm._collect_plan import CollectPlan
    except ImportError as exc:
        raise GbxferError(f"gbxfer collect needs TVM: pip install 'gbxfer[tvm]' ({exc})") from None
    suite = load_suite(find_config("workloads", args.suite))
    if args.tasks:
        suite = suite.select(args.tasks.split(","))
    names = args.hardware.split(",")
    if len(set(names)) < len(names):
        raise GbxferError(f"--hardware {args.hardware}: a profile named twice")
    profiles = [load_profile(name) for name in names]
    if (args.programs is None) == (args.replay_from is None):
        raise GbxferError("give either --programs N or --replay-from DATASET")
    replay = load_dataset_arg(args.replay_from) if args.replay_from else None
    if bool(args.rpc_tracker) != bool(args.rpc_key):
        raise GbxferError("--rpc-tracker and --rpc-key go together")
    if args.rpc_tracker and not args.rpc_tracker.rpartition(":")[2].isdigit():
        raise GbxferError(f"--rpc-tracker must be HOST:PORT, got {args.rpc_tracker!r}")
    plan = CollectPlan(suite=suite, profiles=profiles, programs=args.programs or 0, out=args.out,
                       seed=args.seed, evolutionary_share=args.evolutionary_share,
                       batch_size=args.batch_size, repeats=args.repeats,
                       min_repeat_ms=args.min_repeat_ms, build_workers=args.build_workers,
                       run_timeout=args.run_timeout, rpc_tracker=args.rpc_tracker,
                       rpc_key=args.rpc_key, replay=replay, run_cores=args.run_cores,
                       commands=[command_stamp()])
    dataset = Collector(plan).run(progress=not args.quiet)
    summary = dataset.summary()
    for name, h in summary["hardware"].items():
        print(f"{name}: {h['n_records']} programs, {h['n_valid']} valid, {h['n_tasks']} tasks")
    print(f"dataset: {args.out / 'dataset'}")
    return 0
