"""``gbxfer prune``: keep a covering fraction of a dataset."""
from __future__ import annotations

import logging
from pathlib import Path

from ..errors import GbxferError
from ..pruning import ALLOCATIONS, METHODS, prune
from ._common import command_stamp, input_path, keep_fraction, load_dataset_arg, output_folder

log = logging.getLogger("gbxfer")


def add_parser(verbs, common):
    p = verbs.add_parser(
        "prune", parents=[common], help="keep a covering fraction of a dataset's records",
        description="Keep a fraction of a dataset's valid records, spread over its task x "
                    "hardware groups (--allocation), and choose them within each group: "
                    "'coreset' (the default) clusters the group over program features and log "
                    "latency (k-means with k = the records kept) and keeps the program nearest "
                    "each cluster's centre; 'herding' picks, one at a time, the program that "
                    "brings the kept set's kernel mean closest to the whole group's (faster); "
                    "'kcenter' keeps the fastest and then covers the group (k-center "
                    "greedy); 'random' draws uniformly. Deterministic given --seed.")
    p.add_argument("dataset", type=input_path, metavar="DATASET")
    p.add_argument("--keep", type=keep_fraction, required=True, metavar="FRACTION",
                   help="0 < FRACTION <= 1 of the valid records")
    p.add_argument("--method", choices=METHODS, default="coreset")
    p.add_argument("--allocation", choices=list(ALLOCATIONS), default="balanced",
                   help="'balanced' (the default): the records spread evenly over the groups, "
                        "small groups kept whole and the largest pruned harder; "
                        "'proportional': FRACTION of every group")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, type=output_folder, metavar="DATASET2")
    p.set_defaults(run=run)


def run(args) -> int:
    if args.out.exists() and Path(args.dataset).exists() and args.out.resolve() == Path(
            args.dataset).resolve():
        raise GbxferError(f"--out {args.out} is DATASET itself: pruning in place would lose "
                          "the records it drops; write the pruned dataset elsewhere")
    dataset = load_dataset_arg(args.dataset)
    pruned = prune(dataset, args.keep, args.method, args.seed, allocation=args.allocation,
                   progress=not args.quiet)
    pruned.manifest.setdefault("commands", []).append(command_stamp())
    pruned.save(args.out)
    log.info("kept %d of %d valid records (%s, %s, keep %g): %s", len(pruned),
             int(dataset.records["valid"].sum()), args.method, args.allocation, args.keep,
             args.out)
    return 0
