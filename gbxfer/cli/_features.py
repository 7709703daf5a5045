"""``gbxfer features``: compute a dataset's per-store features, or export its feature matrix."""
from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from ..errors import GbxferError
from ..features import BLOCKS, build
from ._common import command_stamp, load_dataset_arg

log = logging.getLogger("gbxfer")


def add_parser(verbs, common):
    p = verbs.add_parser(
        "features", parents=[common], help="compute per-store features; export feature matrices",
        description="With --per-store: compute TVM's per-store features (needs gbxfer[tvm]) of "
                    "the dataset's MetaSchedule programs that lack them and store them in the "
                    "dataset folder, so that models using the per_store block need no TVM "
                    "later. With --out: write the feature matrix of the given blocks (one row "
                    "per record, with record_id, group, latency and label) as Parquet or CSV.")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("--per-store", action="store_true",
                   help="compute and store per-store features in DATASET (a folder)")
    p.add_argument("--blocks", default="program,workload,hardware",
                   help=f"comma-separated blocks for --out, of: {', '.join(BLOCKS)}")
    p.add_argument("--out", type=Path, metavar="FILE.parquet|FILE.csv",
                   help="write the feature matrix here")
    p.set_defaults(run=run)


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
        fm = build(dataset, [b.strip() for b in args.blocks.split(",") if b.strip()])
        frame = pd.concat([fm.records[["record_id", "program_id", "task_key", "hardware",
                                       "group", "latency", "label"]],
                           pd.DataFrame(fm.X, columns=fm.columns)], axis=1)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        if args.out.suffix == ".csv":
            frame.to_csv(args.out, index=False)
        else:
            frame.to_parquet(args.out, index=False)
        log.info("wrote %s: %d records x %d features", args.out, *fm.X.shape)
    return 0
