"""``gbxfer info``: what a dataset holds."""
from __future__ import annotations

import json

from ._common import format_table, input_path, load_dataset_arg


def add_parser(verbs, common):
    p = verbs.add_parser("info", parents=[common], help="counts and latency ranges of a dataset",
                         description="Lines read, records, valid/failed and tasks by machine "
                                     "and by hardware profile, and latency ranges by hardware "
                                     "x task.")
    p.add_argument("dataset", type=input_path, metavar="DATASET", help="dataset folder")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run)


def run(args) -> int:
    summary = load_dataset_arg(args.dataset).summary()
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
    rows = [{**g, "task": g["task_key"][:48]} for g in summary["groups"]]
    print(format_table(rows, ["hardware", "task", "n_records", "n_valid", "latency_min",
                              "latency_median", "latency_max"]))
    return 0
