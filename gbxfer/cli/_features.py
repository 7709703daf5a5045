"""``gbxfer features``: compute a dataset's per-store features, or export its feature matrix."""
from __future__ import annotations

import argparse
import logging
from pathlib import Path

import pandas as pd

from ..errors import GbxferError
from ..manifests import write_file
from ..features import BLOCKS, build
from ._common import command_stamp, input_path, load_dataset_arg, output_file, positive_int

log = logging.getLogger("gbxfer")


def add_parser(verbs, common):
    p = verbs.add_parser(
        "features", parents=[common], help="compute per-store features; export feature matrices",
        description="With --per-store: compute TVM's per-store features (needs gbxfer[tvm]) of "
                    "the dataset's MetaSchedule programs that lack them and store them in the "
                    "dataset folder, so that models using the per_store block need no TVM "
                    "later. With --out: write the feature matrix of the given blocks (one row "
                    "per record, with record_id, group, latency and label) as Parquet or CSV.")
    p.add_argument("dataset", type=input_path, metavar="DATASET")
    p.add_argument("--per-store", action="store_true",
                   help="compute and store per-store features in DATASET (a folder)")
    p.add_argument("--blocks", type=block_list, default="program,workload,hardware",
                   help=f"comma-separated blocks for --out, of: {', '.join(BLOCKS)}")
    p.add_argument("--out", type=matrix_file, metavar="FILE.parquet|FILE.csv",
                   help="write the feature matrix here (missing parent folders are created)")
    p.add_argument("--jobs", type=positive_int, default=1, metavar="N",
                   help="processes computing the program features for --out, each given "
                        "whole tasks (the same matrix; pays off on large datasets)")
    p.set_defaults(run=run)


def block_list(text: str) -> list[str]:
    """``--blocks``: one or more comma-separated feature block names."""
    blocks = [b.strip() for b in text.split(",") if b.strip()]
    unknown = [b for b in blocks if b not in BLOCKS]
    if not blocks or unknown or len(set(blocks)) < len(blocks):
        raise argparse.ArgumentTypeError(f"expected comma-separated blocks of "
                                         f"{', '.join(BLOCKS)}, each once, got {text!r}")
    return blocks


def matrix_file(text: str) -> Path:
    """``--out``: a .parquet or .csv file to write."""
    path = output_file(text)
    if path.suffix not in (".parquet", ".csv"):
        raise argparse.ArgumentTypeError(f"{text}: expected a name ending in .parquet or .csv")
    return path


def run(args) -> int:
    if not args.per_store and args.out is None:
        raise GbxferError("nothing to do: give --per-store and/or --out")
    dataset = load_dataset_arg(args.dataset)
    if args.per_store:
        if not Path(args.dataset).is_dir():
            raise GbxferError(f"{args.dataset}: --per-store writes into a dataset folder; copy "
                              "the dataset first (gbxfer ingest bundled --out DIR)")
        try:
            from ..tvm._per_store import per_store_features
        except ImportError as exc:
            raise GbxferError(f"--per-store needs TVM: pip install 'gbxfer[tvm]' ({exc})") \
                from None
        table = per_store_features(dataset, progress=not args.quiet,
                                   precomputed=dataset.per_store)
        dataset.per_store = table
        dataset.manifest.setdefault("commands", []).append(command_stamp())
        dataset.save(args.dataset)
        missing = int(table.isna().all(axis=1).sum())
        log.info("%s: per-store features of %d programs (%d missing: IR or trace does not "
                 "load in this TVM)", args.dataset, len(table), missing)
    if args.out is not None:
        fm = build(dataset, args.blocks, n_jobs=args.jobs)
        frame = pd.concat([fm.records[["record_id", "program_id", "task_key", "hardware",
                                       "group", "latency", "label"]],
                           pd.DataFrame(fm.X, columns=fm.columns)], axis=1)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        if args.out.suffix == ".csv":
            write_file(args.out, lambda tmp: frame.to_csv(tmp, index=False))
        else:
            write_file(args.out, lambda tmp: frame.to_parquet(tmp, index=False))
        log.info("wrote %s: %d records x %d features", args.out, *fm.X.shape)
    return 0
