"""``gbxfer calibrate``: carry the pretrained model to this machine (needs TVM)."""
from __future__ import annotations

import logging

import yaml

from ..config_files import find_config
from ..errors import GbxferError
from ..hardware.profiles import load_profile
from ..manifests import write_file
from ..model import SavedModel
from ..records.suite import load_suite
from ._common import (MODEL_HELP, command_stamp, input_path, load_dataset_arg, model_path,
                      name_list, non_negative_int, positive_float, run_folder)
from ._transfer import guard_choice

log = logging.getLogger("gbxfer")


def add_parser(verbs, common):
    p = verbs.add_parser(
        "calibrate", parents=[common], help="measure this machine for some minutes and carry "
        "the pretrained model to it",
        description="The path to a new machine: measure the source data's programs on "
                    "PROFILE for --minutes (chosen to be informative at any length: every task "
                    "in turn, each task's fastest program first, then the most different "
                    "ones), then transfer the model with every measurement (kept only where "
                    "the adaptation wins inside the measurements). Without --hardware, probes "
                    "this machine first (its widest ISA, 1 thread) and writes OUT/hardware.yaml. "
                    "Writes OUT/model (for `gbxfer tune --model OUT/model`), the measurements "
                    "OUT/measurements/dataset and OUT/calibrate.json. Resumable: a rerun "
                    "measures what the budget has left and transfers again. Needs gbxfer[tvm]; "
                    "run it on an idle machine.")
    p.add_argument("--hardware", metavar="PROFILE",
                   help="the profile to calibrate (default: probe this machine)")
    p.add_argument("--minutes", type=positive_float, default=10.0,
                   help="measuring time, over every run into OUT (default: 10)")
    p.add_argument("--model", type=model_path, default="pretrained", metavar="MODEL",
                   help=f"the model to carry over: {MODEL_HELP} (default: pretrained)")
    p.add_argument("--source-data", type=input_path, default="bundled", metavar="DATASET",
                   help="the model's training data, whose programs are measured (default: "
                        "bundled)")
    p.add_argument("--suite", default="networks",
                   help="the suite whose tasks the programs belong to (default: networks)")
    p.add_argument("--tasks", type=name_list, metavar="NAME[,NAME...]",
                   help="only these tasks of the suite")
    p.add_argument("--out", required=True, type=run_folder, metavar="OUT",
                   help="calibration folder (created; a rerun continues it)")
    p.add_argument("--seed", type=non_negative_int, default=0)
    p.set_defaults(run=run, resumable=True)


def run(args) -> int:
    try:
        from ..tvm._calibrate import calibrate
    except ImportError as exc:
        raise GbxferError(f"gbxfer calibrate needs TVM: pip install 'gbxfer[tvm]' ({exc})") \
            from None
    out = args.out
    if out.exists() and not out.is_dir():
        raise GbxferError(f"--out {out}: a file, not a folder")
    profile_path = out / "hardware.yaml"
    if args.hardware:
        profile = load_profile(args.hardware)
    elif profile_path.exists():  # probed by an earlier run into OUT
        profile = load_profile(str(profile_path))
    else:
        profile = load_profile(str(_probe_into(profile_path)))
    model = SavedModel.load(args.model)
    source = load_dataset_arg(args.source_data)
    suite = load_suite(find_config("workloads", args.suite))
    if args.tasks:
        suite = suite.select(args.tasks.split(","))
    adapted, measured, state = calibrate(profile, out, model, source, suite, args.minutes,
                                         args.seed, progress=not args.quiet,
                                         commands=[command_stamp()])
    guard = adapted.extra["transfer"].get("guard_check") or {}
    print(f"{profile.name} ({profile.machine or 'this machine'}): {state['valid']} of "
          f"{state['programs']} programs valid over {state['tasks']} tasks in "
          f"{state['seconds'] / 60:.1f} min; the transfer "
          f"{guard_choice(guard) if guard.get('adapted') else 'kept the source model'}"
          + (f" ({adapted.extra['transfer']['kept_source']})"
             if adapted.extra["transfer"].get("kept_source") else "")
          + (f" (gain {guard['gain']:+.4f} +- {guard['se']:.4f} inside the measurements)"
             if guard.get("gain") is not None else ""))
    print(f"model: {out / 'model'}    tune with: gbxfer tune ... --hardware "
          f"{args.hardware or profile_path} --model {out / 'model'}")
    return 0


def _probe_into(path):
    from ..hardware.probe import supported_isas
    from ._hardware import profile_document, warn_if_off_peak

    isas = supported_isas()
    if not isas:
        raise GbxferError("no known vector ISA found in /proc/cpuinfo: give --hardware")
    log.info("probing this machine (%s, 1 thread)", isas[0])
    doc, result = profile_document(isas[0], 1)
    warn_if_off_peak(doc["name"], result)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_file(path, lambda tmp: tmp.write_text(yaml.safe_dump(doc, sort_keys=False)))
    return path
