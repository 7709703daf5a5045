"""How each task of a tuned ONNX network began: its first round, what the online model knew
then, and where the task ended against XGBModel's run.

    python scripts/first_rounds.py --work scripts/results/bench_onnx_zen4/resnet50-seed1
                                   [--method gbxfer] [--name NAME]

--work is a run folder of ``scripts/bench_onnx.py`` holding a gbxfer run (--method) and an
XGBModel run (``xgb``). The gbxfer run's measurements are fed, round by round as its curve
records them, to :class:`gbxfer.online.OnlineModel` (the shipped pretrained model, with the
run's ``--online`` mode and seed, as ``gbxfer tune`` updated it). Before each task's first
round it reports the refined prior's prequential pairwise accuracy over the rounds so far
(``prior_accuracy``: what the online blend checked before 2026-12-05, when <= 0.5 drew a new
task's first round at random; computed here as it was, from the predictions the refined prior
made before each round was seen; ``random_start_before``: the check would have fired), and,
per task, the best latency of its first round and of the whole run (tuning's own timings),
XGBModel's best in its run, and their ratio, the rounds after which the task was ranked by
models of its own measurements (``local_rounds``: as chosen in mode ``choose``, all in
``local``, none in the others) and the session model's weight at the end; and each run's
weighted latency at its end. Results: scripts/results/<name>.{json,csv} (name:
first_rounds_<work folder>_<run folder>).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
from _results import print_table, write_results
from bench_online import prior_accuracy

from gbxfer import ingest
from gbxfer.features import build
from gbxfer.hardware import load_profile
from gbxfer.model import PRETRAINED, SavedModel
from gbxfer.online import OnlineModel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--method", default="gbxfer")
    parser.add_argument("--name")
    args = parser.parse_args()
    machine = json.loads((args.work / "machine.json").read_text())
    profile = load_profile(machine["hardware"])
    where = dict(hardware=(profile.name, profile.family), machine=profile.machine)
    prior = SavedModel.load(PRETRAINED)
    run = ingest([args.work / args.method / "metaschedule"], **where)
    fm = build(run, list(prior.blocks))
    describe = run.tasks.set_index("task_key")["description"]
    records = fm.records.reset_index(drop=True)  # in the order measured
    xgb = ingest([args.work / "xgb" / "metaschedule"], **where).filter(valid=True).records
    xgb_best = xgb.groupby("task_key")["latency"].min()
    summary = json.loads((args.work / args.method / "summary.json").read_text())
    argv = summary["command"]["argv"].split()
    option = {name: argv[argv.index(name) + 1] for name in ("--seed", "--online")
              if name in argv}
    mode = summary.get("online", {}).get("mode") or option.get("--online", "blend")
    model = OnlineModel(prior, fm.columns, mode, seed=int(option.get("--seed", 0)))
    keys, latency = records["task_key"].to_numpy(), records["latency"].to_numpy(float)
    valid = records["valid"].to_numpy(bool)
    ends = pd.read_csv(args.work / args.method / "curve.csv")["trials"].to_numpy()
    if ends[-1] != len(records):  # records merged by ingest: rounds as runs of one task
        ends = np.append(np.flatnonzero(keys[1:] != keys[:-1]) + 1, len(records))
    rows, order, chosen = {}, 0, {}  # chosen: the pair of models after each of a task's rounds
    for start, end in zip([0, *ends[:-1]], ends):  # one round each
        key = keys[start]
        if key not in rows:
            order += 1
            rows[key] = {
                "order": order, "task": str(key)[-6:],
                "prior_accuracy": round(prior_accuracy(model), 3),
                "random_start_before": bool(model.refined is not model.prior
                                            and prior_accuracy(model) <= 0.5),
                "first_round_ms": 1e3 * np.nanmin(np.where(valid[start:end],
                                                           latency[start:end], np.nan))
                if valid[start:end].any() else float("nan")}
        costs = np.where(valid[start:end], latency[start:end], np.nan)
        model.observe(fm.X[start:end], costs, key)
        chosen.setdefault(key, []).append(model.pair_of(key))
    for key, row in rows.items():
        mine = latency[(keys == key) & valid]
        row["programs"] = int(len(mine))
        row["best_ms"] = 1e3 * float(mine.min()) if len(mine) else float("nan")
        row["xgb_best_ms"] = 1e3 * float(xgb_best.get(key, np.nan))
        row["best_over_xgb"] = row["best_ms"] / row["xgb_best_ms"]
        row["local_rounds"] = f"{chosen[key].count('local')}/{len(chosen[key])}"
        row["last_weight"] = model.weight_of(key)
        row["description"] = str(describe.get(key, ""))[:48]
    table = list(rows.values())
    print_table(table)
    weighted = {method: 1e3 * json.loads((args.work / method / "summary.json").read_text())[
        "weighted_latency"] for method in (args.method, "xgb")}
    print("weighted latency at the end of each run (tuning's own timings, ms): " +
          ", ".join(f"{method} {value:.2f}" for method, value in weighted.items()))
    name = args.name or f"first_rounds_{args.work.parent.name}_{args.work.name}" + (
        f"_{args.method}" if args.method != "gbxfer" else "")
    write_results(name, table, work=str(args.work), method=args.method,
                  weighted_latency_ms=weighted)


if __name__ == "__main__":
    main()
