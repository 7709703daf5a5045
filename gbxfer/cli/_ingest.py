"""``gbxfer ingest``: read measurements into a dataset."""
from __future__ import annotations

import argparse
import logging
from pathlib import Path

from ..errors import GbxferError
from ..records.ingest import ingest
from ..records.targets import parse_hardware_option
from ._common import command_stamp, existing_path, output_folder, positive_int

log = logging.getLogger("gbxfer")


def add_parser(verbs, common):
    p = verbs.add_parser(
        "ingest", parents=[common], help="read MetaSchedule databases, Ansor/TenSet logs and "
        "datasets into one dataset",
        description="Read MetaSchedule database folders, Ansor/TenSet logs (files, folders, "
                    "TenSet trees measure_records/<platform>/*.json) and gbxfer datasets into "
                    "one dataset. Duplicate records (same program and hardware) merge their "
                    "repeats. OUT is replaced atomically; to add to it, pass it as a SOURCE too.")
    p.add_argument("sources", nargs="+", metavar="SOURCE", type=existing_path)
    p.add_argument("--out", required=True, type=output_folder, metavar="DATASET",
                   help="dataset folder to write")
    p.add_argument("--hardware", type=hardware_option, metavar="NAME[:FAMILY]",
                   help="hardware profile of every record read (default: derived from each "
                        "record's target, e.g. cuda-sm_80, llvm-znver4-2c; a gbxfer dataset "
                        "keeps its own)")
    p.add_argument("--machine", type=machine_option, metavar="MACHINE",
                   help="the physical machine of every record read: CPU model and "
                        "microarchitecture, e.g. 'AMD EPYC (zen3)' (what `gbxfer hardware "
                        "probe` prints there), or a GPU name (default: the target's -model, "
                        "else its family, e.g. cuda-sm_80; a gbxfer dataset keeps its own)")
    p.add_argument("--jobs", type=positive_int, default=1, metavar="N",
                   help="processes that parse the lines (default: 1); the dataset is the same "
                        "whatever N")
    p.add_argument("--skip-bad", action="store_true",
                   help="skip bad lines, files, folders and datasets, and report them, "
                        "instead of stopping")
    p.set_defaults(run=run)


def hardware_option(text: str) -> tuple[str, str | None]:
    """``--hardware NAME[:FAMILY]`` as ``(name, family or None)``."""
    try:
        return parse_hardware_option(text)
    except (ValueError, GbxferError) as exc:  # argparse prints ArgumentTypeError on one line
        raise argparse.ArgumentTypeError(str(exc)) from None


def machine_option(text: str) -> str:
    if not text.strip() or not text.isprintable():
        raise argparse.ArgumentTypeError(f"a machine is a non-empty printable name, got {text!r}")
    return text.strip()


def run(args) -> int:
    sources = list({Path(source).resolve(): source for source in args.sources}.values())
    if len(sources) < len(args.sources):  # read twice, each measurement would count twice
        log.warning("%d SOURCE(s) named more than once: each read once",
                    len(args.sources) - len(sources))
    dataset = ingest(sources, hardware=args.hardware, skip_bad=args.skip_bad,
                     progress=not args.quiet, machine=args.machine,
                     jobs=args.jobs)
    skipped = dataset.manifest.get("skipped", {})
    if skipped:
        reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(skipped.items()))
        log.warning("skipped %d bad lines, files, folders or datasets (%s)",
                    sum(skipped.values()), reasons)
        for example in dataset.manifest.get("skip_examples", [])[:5]:
            log.warning("  %s", example)
    if not len(dataset):  # an empty dataset would replace OUT
        why = "every source was bad and skipped" if skipped else "the sources hold none"
        raise GbxferError(f"no record read ({why}): {args.out} not written")
    dataset.manifest.setdefault("commands", []).append(command_stamp())
    dataset.save(args.out)
    s = dataset.summary()
    log.info("wrote %s: %d records (%d valid, %d failed) from %d lines, %d tasks, hardware %s "
             "on %s", args.out, s["n_records"], s["n_valid"], s["n_failed"], s["n_lines"],
             s["n_tasks"], ", ".join(s["hardware"]) or "-", ", ".join(s["machines"]) or "-")
    return 0
