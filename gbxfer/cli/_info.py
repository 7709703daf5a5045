"""``gbxfer info``: what a dataset holds."""
from __future__ import annotations

import json

from ._common import format_table, input_path, load_dataset_arg, task_names


def add_parser(verbs, common):
    p = verbs.add_parser("info", parents=[common], help="counts and latency ranges of a dataset",
                         description="Lines read, records, valid/failed and tasks by machine "
                                     "and by hardware profile; with --tasks also latency "
                                     "ranges by hardware x task.")
    p.add_argument("dataset", type=input_path, metavar="DATASET",
                   help="dataset folder, or 'bundled'")
    p.add_argument("--tasks", action="store_true",
                   help="also one row per hardware x task: records and latency range")
    p.add_argument("--json", action="store_true", help="print one JSON object (every table)")
    p.set_defaults(run=run)


def run(args) -> int:
    dataset = load_dataset_arg(args.dataset)
    summary = dataset.summary()
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    print(f"{args.dataset}: {summary['n_lines']} lines read, {summary['n_records']} records "
          f"({summary['n_valid']} valid, {summary['n_failed']} failed), {summary['n_tasks']} "
          f"tasks, {summary['n_programs']} programs "
          f"({summary['n_programs_on_every_hardware']} on every hardware profile)")
    if summary["skipped_lines"]:
        print("skipped at ingest: " + ", ".join(
            f"{n} {r}" for r, n in sorted(summary["skipped_lines"].items())))
    print()
    print(format_table([{"machine": name, **m, "profiles": ", ".join(m["hardware"])}
                        for name, m in summary["machines"].items()],
                       ["machine", "profiles", "n_records", "n_valid", "n_tasks"]))
    print()
    print(format_table([{"hardware": name, **h} for name, h in summary["hardware"].items()],
                       ["hardware", "family", "machine", "n_lines", "n_records", "n_valid",
                        "n_failed", "n_tasks"]))
    print()
    if not args.tasks:
        print(f"({len(summary['groups'])} hardware x task groups: --tasks lists them)")
        return 0
    names = task_names(dataset)
    rows = [{**g, "task": names.get(g["task_key"], g["task_key"])[:60]}
            for g in summary["groups"]]
    print(format_table(rows, ["hardware", "task", "n_records", "n_valid", "latency_min",
                              "latency_median", "latency_max"]))
    return 0
