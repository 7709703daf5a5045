"""``gbxfer prune``: keep a covering fraction of a dataset."""
from __future__ import annotations

import logging

from ..pruning import METHODS, prune
from ._common import command_stamp, input_path, keep_fraction, load_dataset_arg, output_folder

log = logging.getLogger("gbxfer")


def add_parser(verbs, common):
    p = verbs.add_parser(
        "prune", parents=[common], help="keep a fraction of each task x hardware group",
        description="Select a fraction of every task x hardware group's valid records: "
                    "'coreset' (the default) clusters the group over program features and log "
                    "latency (k-means with k = the records kept) and keeps the program nearest "
                    "each cluster's centre; 'herding' picks, one at a time, the program that "
                    "brings the kept set's kernel mean closest to the whole group's (faster); "
                    "'kcenter' keeps the fastest and then covers the group (k-center "
                    "greedy); 'random' draws uniformly. Deterministic given --seed.")
    p.add_argument("dataset", type=input_path, metavar="DATASET")
    p.add_argument("--keep", type=keep_fraction, required=True, metavar="FRACTION",
                   help="0 < FRACTION <= 1 of every group's valid records")
    p.add_argument("--method", choices=METHODS, default="coreset")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, type=output_folder, metavar="DATASET2")
    p.set_defaults(run=run)


def run(args) -> int:
    dataset = load_dataset_arg(args.dataset)
    pruned = prune(dataset, args.keep, args.method, args.seed)
    pruned.manifest.setdefault("commands", []).append(command_stamp())
    pruned.save(args.out)
    log.info("kept %d of %d records (%s, keep %.2f): %s", len(pruned), len(dataset),
             args.method, args.keep, args.out)
    return 0
