"""Copy collected datasets into the package as the bundled dataset (gbxfer/data/bundled).

    python scripts/package_bundled.py --from COLLECT_DIR/dataset [--from ...] [--add]
                                      [--complete COLLECT_DIR/metaschedule/complete.json]
                                      [--commands-of DATASET ...] [--suite SUITE]

``--add`` adds the bundled dataset's records to the sources (a new machine's collection is
added beside them; a profile name already there on another machine is refused), but for the
profiles the sources hold: their records replace the bundled's (a collection that went on,
ingested again, holds all the earlier measurements; merged, each would count twice). Of all of
them it keeps, on each machine, the programs measured on every one of its profiles, of the
tasks it holds whole: at least ``--min-programs`` (64) such programs, or a task that a
``--complete`` file of a collection lists as finished (a design space with fewer distinct
programs) with as many as the machine with the most has (a replay measures the programs of
another machine's collection). A collection stopped halfway through a task or a profile so
leaves that task out until it is finished. Keeps the commands of the manifests (and, first,
those of ``--commands-of`` datasets: the collection runs behind databases that were ingested),
describes every task from the suite (operator, FLOPs, networks, weight; an ingested database
knows none of them; a task not in the suite is refused), adds the measured noise
(scripts/results/noise.json) when present, computes the per-store features (TVM; reusing
those the bundled dataset already has) and checks the 30 MB limit.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from gbxfer import Dataset, load_dataset
from gbxfer.records import load_suite
from gbxfer.records.dataset import BUNDLED

LIMIT_MB = 30
MIN_PROGRAMS = 64  # per (task, profile): the collection's --programs
NOISE = Path(__file__).resolve().parent / "results" / "noise.json"
SUITE = Path(__file__).resolve().parent.parent / "configs" / "workloads" / "networks.yaml"


def whole(ds: Dataset, min_programs: int = MIN_PROGRAMS, complete=frozenset()) -> Dataset:
    """Per machine, the programs measured on every one of its profiles, of the tasks that have
    at least ``min_programs`` of them, or those of the task keys in ``complete`` (finished with
    fewer) that have as many as the machine with the most has."""
    r = ds.records
    profiles = r.groupby("machine")["hardware"].transform("nunique")
    everywhere = r.groupby(["machine", "program_id"])["hardware"].transform("nunique") == profiles
    programs = r[everywhere].groupby(["machine", "task_key"])["program_id"].nunique()
    most = programs.groupby(level="task_key").transform("max")
    finished = programs.index.get_level_values("task_key").isin(list(complete))
    kept = programs[(programs >= np.minimum(min_programs, most))
                    & ((programs >= min_programs) | finished)].index
    keep = everywhere & pd.MultiIndex.from_frame(r[["machine", "task_key"]]).isin(kept)
    for machine, g in r[~keep].groupby("machine"):
        print(f"left out on {machine}: {len(g)} records of {g['task_key'].nunique()} tasks "
              f"(programs not on all its {profiles[g.index[0]]} profiles, or tasks not whole)")
    return ds.select(keep.to_numpy())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="sources", required=True, action="append")
    parser.add_argument("--add", action="store_true",
                        help="keep the bundled dataset's records beside the new ones (but "
                             "those of the profiles the sources hold)")
    parser.add_argument("--min-programs", type=int, default=MIN_PROGRAMS,
                        help="programs a task needs on every profile of a machine to be kept")
    parser.add_argument("--complete", action="append", default=[], type=Path,
                        help="a collection's metaschedule/complete.json: its finished tasks")
    parser.add_argument("--commands-of", action="append", default=[], metavar="DATASET",
                        help="a dataset whose manifest's commands made the sources' records")
    parser.add_argument("--suite", default=str(SUITE), help="the suite the tasks come from")
    args = parser.parse_args()
    complete = {key for path in args.complete
                for keys in json.loads(path.read_text()).values() for key in keys}
    parts = [load_dataset(s) for s in args.sources]
    if args.add:
        bundled = load_dataset("bundled")
        again = {h for part in parts for h in part.hardware}
        kept = bundled.select(~bundled.records["hardware"].isin(again).to_numpy())
        paths = {s["path"] for part in parts for s in part.manifest.get("sources", [])}
        kept.manifest = {**bundled.manifest,  # a replaced source is not listed twice
                         "sources": [s for s in bundled.manifest.get("sources", [])
                                     if s["path"] not in paths]}
        parts.insert(0, kept)
    ds = whole(Dataset.concat(parts), args.min_programs, complete)
    from gbxfer.tvm import describe_tasks, per_store_features

    describe_tasks(ds, load_suite(args.suite))
    unknown = ds.tasks.loc[ds.tasks["network"] == "", "task_key"]
    if len(unknown):
        raise SystemExit(f"{len(unknown)} tasks are not in {args.suite} (first: {unknown.iloc[0]})")
    earlier = [c for path in args.commands_of for c in load_dataset(path).manifest["commands"]]
    commands = earlier + ds.manifest["commands"]
    ds.manifest["commands"] = [c for i, c in enumerate(commands) if c not in commands[:i]]
    networks = sorted({n for names in ds.tasks["network"] for n in names.split(",") if n})
    ds.manifest["description"] = (
        f"Programs of the suite {Path(args.suite).name} ({', '.join(networks)}) collected "
        "with `gbxfer collect` on ISA/thread profiles of the machines "
        f"{', '.join(ds.machines)} (2-vCPU virtual machines): see configs/hardware. "
        "Latency = median of 3 timed repeats.")
    if NOISE.exists():
        ds.manifest["noise"] = json.loads(NOISE.read_text())
    shipped = load_dataset("bundled").per_store if (BUNDLED / "manifest.json").exists() else None
    ds.per_store = per_store_features(ds, precomputed=shipped)
    ds.save(BUNDLED)
    size = sum(p.stat().st_size for p in BUNDLED.iterdir()) / 2**20
    print(f"{BUNDLED}: {len(ds)} records, {size:.1f} MB")
    if size > LIMIT_MB:
        raise SystemExit(f"bundled dataset is {size:.1f} MB, over the {LIMIT_MB} MB limit")


if __name__ == "__main__":
    main()
