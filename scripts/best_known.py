"""Headroom in a tuned network: each task's best program in any of several tuning runs, and how
far each run ended from it.

    python scripts/best_known.py RUN [RUN ...] [--name NAME]

A RUN is the output folder of one ``gbxfer tune`` (its summary.json holds each task's best
latency, tuning's own timings, and the task's weight in the network); a folder holding several
is searched for them. For one network tuned on one machine by several runs (cost models,
seeds, modes, budgets), a task's best known latency is the least any run measured for it; the
network's best known latency is their weighted sum. Reported per run covering every task: its
weighted latency, over the best known (``over_best_known``), and for an XGBModel run the best
known over it (``best_known_over_run``: the gbxfer/XGBModel ratio a run would reach by finding
every task's best known program, the best the runs themselves show to be reachable); per task:
the best known, the run that found it, and each run's best over it. The runs were timed hours
apart on a VM whose speed drifts, so a few percent is noise. Results:
scripts/results/<name>.{json,csv} (the csv: one row per run).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from _results import RESULTS, print_table, write_results


class BadRun(Exception):
    """A run folder that cannot be read; the message names it."""


def runs_in(paths: list[Path]) -> dict[str, dict]:
    """Each run's summary, by its folder relative to scripts/results/ where it lies there; a
    run copied into several folders (bench_onnx.py's XGBModel runs) counts once."""
    out, texts = {}, set()
    for path in paths:
        if path.name == "summary.json":
            path = path.parent
        found = sorted([path / "summary.json"] if (path / "summary.json").exists()
                       else path.rglob("summary.json"))
        if not found:
            raise BadRun(f"{path}: no summary.json of a gbxfer tune run there")
        for summary in found:
            folder, text = summary.parent.resolve(), summary.read_text()
            label = str(folder.relative_to(RESULTS)) if folder.is_relative_to(RESULTS) \
                else str(folder)
            if text in texts:
                continue
            texts.add(text)
            try:
                run = json.loads(text)
                assert {"hardware", "weights", "best_latency", "trials", "cost_model"} <= set(run)
            except (ValueError, AssertionError):
                raise BadRun(f"{summary}: not a gbxfer tune summary") from None
            out[label] = run
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, metavar="RUN")
    parser.add_argument("--name", default="best_known", help="results file name")
    args = parser.parse_args()
    try:
        runs = runs_in(args.runs)
    except BadRun as error:
        parser.error(str(error))
    hardware = {summary["hardware"] for summary in runs.values()}
    if len(hardware) > 1:
        parser.error("runs of several hardware profiles: " + ", ".join(
            f"{label} ({summary['hardware']})" for label, summary in runs.items()))
    weights = max((s["weights"] for s in runs.values()), key=len)  # the whole network's
    for label, summary in runs.items():
        if not set(summary["best_latency"]) <= set(weights):
            parser.error(f"{label}: tasks of another network than "
                         f"{max(runs, key=lambda r: len(runs[r]['weights']))}")
    best, found = {}, {}
    for label, summary in runs.items():
        for task, latency in summary["best_latency"].items():
            if latency is not None and latency < best.get(task, float("inf")):
                best[task], found[task] = latency, label
    missing = sorted(set(weights) - set(best))
    if missing:
        parser.error(f"no run measured {missing[0]}")
    best_known = sum(weights[t] * best[t] for t in weights)
    rows = []
    for label, summary in runs.items():
        if any(summary["best_latency"].get(t) is None for t in weights):  # not every task
            continue
        weighted = sum(weights[t] * summary["best_latency"][t] for t in weights)
        rows.append({"run": label, "cost_model": summary["cost_model"],
                     "online": (summary.get("online") or {}).get("mode", ""),
                     "minutes": (summary.get("budget") or {}).get("minutes"),
                     "trials": summary["trials"],
                     "weighted_ms": round(1e3 * weighted, 3),
                     "over_best_known": round(weighted / best_known, 4),
                     "best_known_over_run": round(best_known / weighted, 4)
                     if summary["cost_model"] == "xgb" else None})
    if not rows:
        parser.error("no run measured every task of the network")
    tasks = [{"task": t, "weight": weights[t], "best_known_ms": round(1e3 * best[t], 4),
              "found_by": found[t],
              **{label: round(s["best_latency"][t] / best[t], 3)
                 for label, s in runs.items() if s["best_latency"].get(t) is not None}}
             for t in sorted(weights, key=lambda t: -weights[t] * best[t])]
    print_table([{k: v for k, v in row.items() if k in ("task", "weight", "best_known_ms",
                                                         "found_by")} for row in tasks])
    print_table(rows)
    print(f"best known weighted latency: {1e3 * best_known:.2f} ms ({hardware.pop()}, "
          f"{len(runs)} runs)")
    write_results(args.name, rows, best_known_ms=round(1e3 * best_known, 3), tasks=tasks,
                  runs=list(runs))
    print(f"results: {RESULTS / args.name}.json")


if __name__ == "__main__":
    main()
