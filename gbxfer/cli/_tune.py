"""``gbxfer tune``: tune suite tasks, a Relax network or an ONNX model with MetaSchedule and a
cost model (needs TVM; ONNX models need onnx and onnxruntime too)."""
from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
from pathlib import Path

import numpy as np

from ..errors import GbxferError
from ..config_files import find_config
from ..hardware.profiles import load_profile
from ..manifests import write_file
from ..online import DEFAULT_MODE, MODES
from ..records._parallel import usable_cpus
from ..records.suite import load_suite
from ..tvm._networks import PARALLEL_WITHIN, WEIGHT_LAYOUTS, end_to_end_ms
from ..tvm._onnx import LAYOUTS
from ._tune_run import earlier_curve, identity, plot_curve
from ._common import (a_name, command_stamp, name_list, non_negative_int, positive_float,
                      positive_int, run_folder, share)

log = logging.getLogger("gbxfer")
INT32_MAX = 2 ** 31 - 1  # MetaSchedule's counts, and TVM's shapes as the frontend takes them
MAX_TRIALS = 1_000_000_000  # gbxfer.tvm._tune.UNLIMITED_TRIALS: MetaSchedule counts in int32


def _at_most(kind, limit: int):
    """An argparse ``type=``: ``kind`` (positive_int, non_negative_int), and <= ``limit``:
    larger values reach TVM as integers it cannot take (a traceback after OUT is written)."""
    def parse(text: str) -> int:
        value = kind(text)
        if value > limit:
            raise argparse.ArgumentTypeError(f"expected at most {limit}, got {text!r}")
        return value
    return parse


def add_parser(verbs, common):
    p = verbs.add_parser(
        "tune", parents=[common], help="tune tasks with MetaSchedule and gbxfer's cost model",
        description="Tune the suite's tasks (or --tasks, or one --network's), or a whole "
                    "network's fused tasks (--relax, --onnx), on a hardware profile with "
                    "MetaSchedule's evolutionary search and gradient task scheduler, which "
                    "spends the trials on the tasks where they cut the weighted latency most "
                    "(task weights from the suite, or how often a task occurs in the network), "
                    "scoring candidates with a gbxfer model (the pretrained one by default, "
                    "updated online), TVM's XGBModel or random scores. Writes the MetaSchedule "
                    "database (OUT/metaschedule, which `gbxfer ingest` reads), the tuning curve "
                    "(OUT/curve.csv, OUT/curve.png: best latency against trials and seconds) "
                    "and OUT/summary.json; with --relax, compiles the network with the database "
                    "and times it end to end; with --onnx, also writes the compiled library "
                    "(OUT/module.so, for tvm.runtime.load_module), runs it and ONNX Runtime on "
                    "the same seeded random inputs, compares their outputs (within rtol 1e-3, "
                    "atol 1e-4 x the output's largest value; a mismatch exits with status 2 "
                    "after writing everything) and times both. Ctrl-C ends the run after the "
                    "measurements in flight, writing everything (exit status 130); a second "
                    "stops at once. The same command again continues a stopped run, or a "
                    "finished one to a larger budget. Needs gbxfer[tvm] (--onnx: "
                    "gbxfer[tvm,onnx]).")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--suite", help="suite name (configs/workloads) or YAML path")
    source.add_argument("--relax", type=relax_option, metavar="NETWORK|FILE.py:FUNCTION",
                        help="a Relax network: resnet18 (built in), or a function of a Python "
                             "file that returns the IRModule")
    source.add_argument("--onnx", type=onnx_file, metavar="MODEL.onnx",
                        help="an ONNX model, imported with TVM's Relax ONNX frontend (weights "
                             "bound as constants); every input needs a static shape")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--tasks", type=name_list, metavar="NAME[,NAME...]",
                       help="only these tasks of the suite")
    which.add_argument("--network", type=a_name, metavar="NAME",
                       help="all tasks of one network of the suite, weighted by how often "
                            "each occurs in it")
    p.add_argument("--hardware", required=True, metavar="PROFILE",
                   help="hardware profile name (configs/hardware) or YAML path")
    p.add_argument("--cost-model", choices=("gbxfer", "xgb", "random"), default="gbxfer")
    p.add_argument("--model", metavar="MODEL",
                   help="with --cost-model gbxfer: a gbxfer model folder, 'pretrained' (the "
                        "default: shipped) or 'none' (cold start)")
    p.add_argument("--online", choices=MODES,
                   help="how the run's measurements update the gbxfer model: blend (the model "
                        "refined on them, blended with a model of them alone by which ranked "
                        "the latest rounds better), local (blend, both models fitted per task "
                        "on that task's measurements alone), choose (default: per task, the "
                        "blend pair or the local one, whichever ranked its latest rounds "
                        "better), refine (the model refined only), session (their own model "
                        "after a task's first round), prior (never updated); gbxfer's cost "
                        "model only")
    p.add_argument("--layout", choices=list(LAYOUTS),
                   help="with --onnx: the layout its convolutions are tuned and built in: "
                        "nhwc (channels-last, the layout of the pretrained model's training "
                        "data; default) or as-is (the model's); inputs and outputs keep the "
                        "model's")
    p.add_argument("--weight-layout", choices=WEIGHT_LAYOUTS,
                   help="with --onnx or --relax: as-is or packed: each kernel is tuned to "
                        "read its constant weights rearranged in the order it computes, and "
                        "the build rearranges them once (TVM's cpu_weight_prepack; CPU "
                        "profiles); a network without constant weights is tuned as-is "
                        "(default: packed, every kernel's weights, for an --onnx model with "
                        "a convolution; as-is otherwise)")
    p.add_argument("--input-shape", type=input_shape_option, action="append",
                   metavar="NAME=D1,D2,...",
                   help="with --onnx: the shape of input NAME, fixing its dynamic dimensions "
                        "(repeat for each input that has any)")
    budget = p.add_mutually_exclusive_group(required=True)
    budget.add_argument("--trials", type=_at_most(positive_int, MAX_TRIALS), metavar="N",
                        help="measurements in all")
    budget.add_argument("--minutes", type=positive_float, metavar="M",
                        help="tune for M minutes of wall clock instead, counted once TVM and "
                             "the runner's worker have started (no measurement batch starts "
                             "after them; compiling and checking the network take extra; a "
                             "continued run's count from its first part's start)")
    p.add_argument("--trials-per-iter", type=_at_most(positive_int, INT32_MAX), default=16,
                   metavar="N",
                   help="measurements per search round (default: 16)")
    p.add_argument("--out", required=True, type=run_folder, metavar="DIR",
                   help="the run's folder; a run stopped there with the same arguments is "
                        "continued")
    p.add_argument("--seed", type=_at_most(non_negative_int, INT32_MAX), default=0,
                   help="random seed, 0 to 2^31-1 (default: 0)")
    p.add_argument("--population", type=_at_most(positive_int, INT32_MAX),
                   help="evolutionary search population per round (default: 128 with the "
                        "gbxfer cost model and --minutes, else MetaSchedule's 512)")
    p.add_argument("--repeats", type=_at_most(positive_int, INT32_MAX), default=3,
                   help="timed repeats per program")
    p.add_argument("--min-repeat-ms", type=_at_most(non_negative_int, INT32_MAX), default=40,
                   help="each repeat runs the kernel for at least this long")
    p.add_argument("--build-timeout", type=positive_float, default=15.0, metavar="SECONDS",
                   help="a program not compiled within this long counts as failed (the "
                        "search waits for each batch's builds; the fastest programs of "
                        "ResNet-50 and BERT runs compiled in under 2.2 s) (default: 15)")
    p.add_argument("--parallel-within", type=share, metavar="F",
                   help="with --relax or --onnx: build each task with its fastest program "
                        "that has a parallel loop when that is at most this fraction slower "
                        "than its fastest: tuned at 1 thread, a serial program can win by a "
                        "few percent and then not speed up on more threads; 0: the fastest, "
                        f"as tuned (default: {PARALLEL_WITHIN:g})")
    cores = usable_cpus()
    p.add_argument("--jobs", type=_at_most(positive_int, 256), default=cores, metavar="N",
                   help="threads for the search and workers for the builds (more than one "
                        "makes the search's draws depend on their timing); kernels are timed "
                        f"with nothing else running (default: the usable cores, {cores})")
    p.set_defaults(run=run)


def relax_option(text: str) -> str:
    """``--relax``: a built-in network's name, or ``FILE.py:FUNCTION``; which names exist and
    whether the file does is checked when it is loaded."""
    path, colon, function = text.rpartition(":")
    if not text or colon and not (path.endswith(".py") and function):
        raise argparse.ArgumentTypeError(f"expected a network name or FILE.py:FUNCTION, "
                                         f"got {text!r}")
    return text


def onnx_file(text: str) -> Path:
    """``--onnx``: an existing file (whether it holds an ONNX model is checked on loading)."""
    path = Path(text)
    if text and path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r}: is a folder, not an ONNX file")
    if not text or not path.is_file():
        raise argparse.ArgumentTypeError(f"{text!r}: no such file")
    return path


def input_shape_option(text: str) -> tuple[str, tuple[int, ...]]:
    """``--input-shape NAME=D1,D2,...``: an input's name and its dimensions (integers 1 to
    2^31-1)."""
    name, equals, dims = text.rpartition("=")
    try:
        shape = tuple(int(d) for d in dims.split(","))
    except ValueError:
        shape = ()
    if not (name and equals and shape and all(1 <= d <= INT32_MAX for d in shape)):
        raise argparse.ArgumentTypeError(f"expected NAME=D1,D2,... (dimensions integers 1 to "
                                         f"{INT32_MAX}), got {text!r}")
    return name, shape


def _input_shapes(args) -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {}
    for name, shape in args.input_shape or []:
        if name in shapes:
            raise GbxferError(f"--input-shape {name}: given twice")
        shapes[name] = shape
    return shapes


def run(args) -> int:
    try:
        from ..tvm._tune import default_population, task_name, tune
    except ImportError as exc:
        extra = "tvm,onnx" if args.onnx else "tvm"
        raise GbxferError(f"gbxfer tune needs TVM: pip install 'gbxfer[{extra}]' ({exc})") \
            from None
    if args.onnx:
        for module in ("onnx", "onnxruntime"):
            try:
                importlib.import_module(module)
            except ImportError as exc:
                raise GbxferError(f"gbxfer tune --onnx needs onnx and onnxruntime: pip install "
                                  f"'gbxfer[tvm,onnx]' ({exc})") from None
    network_source = "--relax" if args.relax else "--onnx" if args.onnx else None
    within = PARALLEL_WITHIN if args.parallel_within is None else args.parallel_within
    if network_source and (args.tasks or args.network):
        raise GbxferError(f"--tasks and --network choose among a suite's tasks, not "
                          f"{network_source}'s")
    if args.input_shape and not args.onnx:
        raise GbxferError("--input-shape fixes the inputs of an --onnx model")
    if args.layout is not None and not args.onnx:
        raise GbxferError("--layout converts the convolutions of an --onnx model")
    args.layout = args.layout or ("nhwc" if args.onnx else "as-is")  # (as-is: none converted)
    if args.weight_layout is not None and not network_source:
        raise GbxferError("--weight-layout says how a --relax or --onnx network reads weights")
    packed = args.weight_layout == "packed"  # (None: --onnx chooses once the model is read)
    if args.parallel_within is not None and not network_source:
        raise GbxferError("--parallel-within chooses the programs a --relax or --onnx network "
                          "is built with")
    for option, value in (("--model", args.model), ("--online", args.online)):
        if value is not None and args.cost_model != "gbxfer":
            raise GbxferError(f"{option} is gbxfer's cost model's; --cost-model "
                              f"{args.cost_model} takes none")
    args.online = args.online or DEFAULT_MODE
    profile = load_profile(args.hardware)
    if packed and profile.target.get("kind") != "llvm":
        raise GbxferError(f"--weight-layout packed is for CPUs: --hardware {profile.name} is a "
                          f"{profile.target.get('kind')} profile")
    # TVM reads it when its thread pool starts: the network's timings use the profile's threads
    os.environ["TVM_NUM_THREADS"] = str(profile.threads)
    weights = None  # the tasks' own: the suite's, or occurrences in the network
    if args.relax or args.onnx:
        from ..tvm._networks import (extract_tasks, load_network, packable, prepare,
                                     symbolic_tasks)

        import tvm

        if args.onnx:
            from ..tvm._onnx import load_onnx, onnxruntime_session

            if profile.target.get("kind") != "llvm":
                raise GbxferError(f"--onnx runs the network on this machine's CPU: --hardware "
                                  f"{profile.name} is a {profile.target.get('kind')} profile; "
                                  "give an llvm one")
            # both before OUT is written: a model either cannot take fails before tuning
            onnx_network = load_onnx(args.onnx, _input_shapes(args), args.layout)
            args.layout = onnx_network.layout  # (as-is where the model has no convolution)
            if args.weight_layout is None:  # the default: packed where there are convolutions
                packed = onnx_network.convolutions
            session = onnxruntime_session(args.onnx, profile.threads)
            network = onnx_network.mod
        else:
            network = load_network(args.relax)  # compiled as built: compile_network prepares it
        prepared = prepare(network, packed)
        if packed and not packable(prepared):
            if args.weight_layout == "packed":  # asked for, not the default's choice
                print("gbxfer tune: --weight-layout packed: no kernel reads a constant weight; "
                      "tuned as-is", file=sys.stderr)
            packed = False
            prepared = prepare(network)
        tasks = extract_tasks(prepared, tvm.target.Target(profile.target))
        if not tasks:  # before OUT is written: MetaSchedule refuses to tune nothing
            raise GbxferError(f"{network_source} {args.onnx or args.relax}: the network has no "
                              "kernels to tune (it computes nothing, or only constants)")
        dynamic = symbolic_tasks(tasks)
        if dynamic:  # MetaSchedule would fail on them once OUT is written
            names = ", ".join(dynamic[:3]) + (" ..." if len(dynamic) > 3 else "")
            raise GbxferError(f"{network_source} {args.onnx or args.relax}: a shape known only "
                              "at run time (a data-dependent operator such as NonZero) in "
                              f"{names}; MetaSchedule tunes fixed shapes only")
    else:
        suite = load_suite(find_config("workloads", args.suite))
        if args.tasks:
            suite = suite.select(args.tasks.split(","))
        elif args.network:
            suite, weights = suite.network(args.network)
        tasks = list(suite.tasks)
    args.weight_layout = "packed" if packed else "as-is"  # as tuned (a suite's: nothing packed)
    if args.cost_model == "gbxfer":
        from ..tvm import GbxferCostModel

        model = {None: "pretrained", "none": None}.get(args.model, args.model)
        if model is None and args.online in ("refine", "prior"):
            raise GbxferError(f"--online {args.online} needs a model (not --model none)")
        cost_model = GbxferCostModel(model=model, hardware=profile.name, online=args.online,
                                     seed=args.seed)
    else:
        cost_model = args.cost_model
    # what it searches with when not given, part of the run's identity
    args.population = args.population or default_population(cost_model, args.minutes)
    names = [task_name(task) for task in tasks]
    run_weights = weights if weights is not None else [task.weight for task in tasks]
    # a stopped run of the same arguments continues; another run's folder is refused
    earlier = earlier_curve(args.out, identity(args, names, run_weights), args)
    result = tune(tasks, profile, cost_model, args.trials, args.out, seed=args.seed,
                  trials_per_iter=args.trials_per_iter, weights=weights,
                  progress=not args.quiet, repeats=args.repeats,
                  min_repeat_ms=args.min_repeat_ms, population=args.population,
                  minutes=args.minutes, build_timeout=args.build_timeout, jobs=args.jobs,
                  graceful=True, earlier=earlier)
    table = result.curve.assign(weighted_latency=result.weighted_latency())
    write_file(args.out / "curve.csv", lambda tmp: table.to_csv(tmp, index=False))
    plot_curve(result, args.out / "curve.png")
    best = {name: float(result.curve[f"best_{i}"].min()) if len(result.curve) else None
            for i, name in enumerate(result.names)}
    best = {name: b if b is not None and np.isfinite(b) else None  # inf: nothing valid yet
            for name, b in best.items()}
    trials = int(result.curve["trials"].max()) if len(result.curve) else 0
    summary = {"command": command_stamp(), "hardware": profile.name,
               "cost_model": args.cost_model, "trials": trials,
               "budget": {"minutes": args.minutes} if args.minutes else {"trials": args.trials},
               "seconds": result.seconds, "cost_model_seconds": result.cost_model_seconds,
               "builds": result.builds, "search_seconds": result.search_seconds,
               "jobs": args.jobs, "population": result.population,
               "parallel_within": within if network_source else None,
               "layout": args.layout if args.onnx else None,
               "weight_layout": args.weight_layout if network_source else None,
               "rounds": result.rounds, "best_latency": best,
               "weights": dict(zip(best, result.weights, strict=True)),
               "weighted_latency": float(result.weighted_latency().iloc[-1])
               if len(result.curve) else None, "interrupted": result.interrupted,
               "continued_from": result.continued_from}
    if args.cost_model == "gbxfer":
        online = cost_model.online
        final = list(online.weight.values())  # per task, after its last round
        summary["online"] = {"mode": args.online,
                             "session_weight_mean": float(np.mean(final)) if final else None,
                             "tasks_led_by_session": sum(w > 0.5 for w in final),
                             "tasks_ranked_by_their_own_models": sum(
                                 online.pair_of(task) == "local" for task in online.weight)}
    for name, latency in best.items():
        print(f"{name}: best {latency * 1e3:.4g} ms" if latency is not None else
              f"{name}: not measured")
    if args.relax:
        summary["end_to_end_ms"], scheduled = end_to_end_ms(
            network, profile, args.out / "metaschedule", within, packed)
        summary["scheduled_functions"] = scheduled
        print(f"{args.relax}, compiled with the tuned database ({scheduled[0]} of "
              f"{scheduled[1]} functions scheduled from it): "
              f"{summary['end_to_end_ms']:.4g} ms per inference (median of 5)")
    if args.onnx:
        summary.update(onnx_summary(onnx_network, session, profile, args.out, args.seed,
                                    within, packed))
    write_file(args.out / "summary.json", lambda tmp: tmp.write_text(json.dumps(summary,
                                                                              indent=1)))
    print(f"{summary['trials']} trials in {result.seconds:.0f} s; database: "
          f"{args.out / 'metaschedule'}")
    if result.interrupted:
        print(f"gbxfer tune: interrupted after {summary['trials']} trials; what they found is "
              f"written to {args.out} (the same command continues the run)", file=sys.stderr)
    if args.onnx and not summary["outputs_match"]:
        differ = [f"{name} (max |diff| {o['max_abs_diff']:.3g}, scale {o['scale']:.3g})"
                  if o["max_abs_diff"] is not None else f"{name} (shape {o['shape']} vs "
                  f"{o['expected_shape']})" for name, o in summary["outputs"].items()
                  if not o["within_tolerance"]]
        raise GbxferError(f"TVM's outputs differ from ONNX Runtime's beyond tolerance (rtol "
                          f"{summary['tolerance']['rtol']:g}, atol "
                          f"{summary['tolerance']['atol']:g} x scale): {', '.join(differ)}; "
                          f"everything is written to {args.out}")
    return 130 if result.interrupted else 0


def onnx_summary(network, session, profile, out: Path, seed: int,
                 parallel_within: float = PARALLEL_WITHIN, packed: bool = False) -> dict:
    """The tuned ONNX model compiled (``out/module.so``), checked against ONNX Runtime
    (``session``) and timed; prints what it found and returns the summary's ONNX part."""
    from ..tvm._onnx import check_against_onnxruntime

    part = check_against_onnxruntime(network, out / "metaschedule", profile, out, session,
                                     seed=seed, parallel_within=parallel_within,
                                     packed=packed)
    for name, o in part["outputs"].items():
        diff = "-" if o["max_abs_diff"] is None else f"{o['max_abs_diff']:.3g}"
        print(f"output {name}: max |TVM - ONNX Runtime| {diff}"
              f"{'' if o['within_tolerance'] else ' (BEYOND TOLERANCE)'}")
    scheduled = part["scheduled_functions"]
    print(f"{network.path}: TVM {part['tvm_ms']:.4g} ms, ONNX Runtime "
          f"{part['onnx_runtime_ms']:.4g} ms per inference (median of 5, "
          f"{part['threads']['tvm']} / {part['threads']['onnx_runtime']} threads; "
          f"{part['speedup']:.3g}x; "
          f"{scheduled[0]} of {scheduled[1]} functions scheduled from the database); library: "
          f"{out / 'module.so'}")
    return part
