"""``gbxfer suite show``: the tasks of a workload suite, and which to collect first."""
from __future__ import annotations

import json
import logging

import pandas as pd

from ..config_files import find_config
from ..errors import GbxferError
from ..pruning import TASK_METHODS, choose_tasks
from ..records.suite import load_suite
from ._common import a_name, format_table, non_negative_int, positive_int

log = logging.getLogger("gbxfer")


def add_parser(verbs, common):
    p = verbs.add_parser("suite", parents=[common], help="workload suites: their tasks",
                         description="Workload suites (configs/workloads/*.yaml or a YAML path).")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = actions.add_parser(
        "show", parents=[common], help="list a suite's tasks",
        description="List a suite's tasks (name, operator, networks, weight, GFLOPs). "
                    "--first N lists only N tasks chosen over the suite's kinds and sizes "
                    "of work (kernel herding over their workload features, which follows "
                    "how common each kind is): the tasks to collect first. --names prints "
                    "the names alone, comma-separated, as `gbxfer collect --tasks` takes "
                    "them.")
    show.add_argument("suite", metavar="SUITE", help="suite name (configs/workloads) or YAML path")
    show.add_argument("--network", type=a_name, help="only the tasks of this network")
    show.add_argument("--first", type=positive_int, metavar="N",
                      help="only N tasks chosen to cover the suite (--method)")
    show.add_argument("--method", choices=TASK_METHODS, default="herding",
                      help="how --first chooses: herding (the default; follows how common "
                           "each kind of work is; no draws), coreset (k-means medoids: "
                           "spreads over the kinds) or random")
    show.add_argument("--seed", type=non_negative_int, default=0,
                      help="seed of the --first choice (coreset and random)")
    output = show.add_mutually_exclusive_group()
    output.add_argument("--names", action="store_true", help="task names, comma-separated")
    output.add_argument("--json", action="store_true")
    show.set_defaults(run=run)


def run(args) -> int:
    suite = load_suite(find_config("workloads", args.suite))
    if args.network:
        suite, _ = suite.network(args.network)
    tasks = list(suite.tasks)
    if not args.first and (args.method != "herding" or args.seed):
        raise GbxferError("--method and --seed choose the --first N tasks; add --first N")
    if args.method == "herding" and args.seed:
        raise GbxferError("herding is deterministic: --seed seeds --method coreset or random")
    if args.first and args.first >= len(tasks):
        log.warning("--first %d: the suite holds %d tasks, all listed", args.first, len(tasks))
    if args.first:
        table = pd.DataFrame({"task_key": [t.name for t in tasks],
                              "operator": [t.op for t in tasks],
                              "args": [t.args for t in tasks],
                              "flops": [t.flops for t in tasks]})
        chosen = set(choose_tasks(table, args.first, args.method, args.seed))
        tasks = [t for t in tasks if t.name in chosen]
    if args.names:
        print(",".join(t.name for t in tasks))
        return 0
    rows = [{"task": t.name, "operator": t.op, "networks": t.network, "weight": t.weight,
             "gflops": float(f"{t.flops / 1e9:.4g}")} for t in tasks]
    if args.json:
        print(json.dumps({"suite": suite.name, "tasks": rows}, indent=1))
    else:
        print(f"{suite.name}: {len(rows)} tasks")
        print(format_table(rows, ["task", "operator", "networks", "weight", "gflops"]))
    return 0
