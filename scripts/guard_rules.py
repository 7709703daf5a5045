"""How the transfer guard's threshold trades safety against gain, replayed from measured draws.

    python scripts/guard_rules.py [--thresholds 1,0.5,0,-0.5]

`scripts/bench_transfer.py` records, for every (setting, K, shot draw), the test scores of the
source model, of the continue adaptation unguarded, of pooled retraining, and the guard's
cross-validated gain and standard error of both candidates inside the shots. Each rule here
picks per draw what the guard would pick with another threshold (a candidate passes when its
gain > z x its standard error; of those passing, the larger gain; none: the source model;
z = 1 is gbxfer's), and "oracle" picks the candidate with the best test PCA (what no rule
can beat). Per rule: mean PCA over all draws, the cells (setting x K) whose mean PCA falls
below the pooled arm's, the (cell, metric) pairs whose paired 95% CI against the source model
lies entirely below 0 (PCA and top-1), and how often each candidate is picked; and, over all
draws, the correlation of each candidate's guard gain with its test PCA gain. Reads the rows
of the latest benchmark version in scripts/results/bench_transfer.jsonl (no training). Since
f42a23b the guard does not check the continue adaptation where it takes pooled retraining
first (``pooled_from``): draws measured after that record no gain for it, and it never passes
there.
Results: scripts/results/guard_rules.{json,csv}.
"""
from __future__ import annotations

import argparse
import collections
import json

import numpy as np
import pandas as pd
from _results import RESULTS, print_table, write_results

ARMS = {"source": "source-only", "config": "unguarded", "pooled": "pooled"}


def draws() -> pd.DataFrame:
    """One row per measured draw of the latest benchmark version: test PCA and top-1 of each
    candidate, and the guard's gain and standard error of each."""
    rows = [json.loads(line) for line in (RESULTS / "bench_transfer.jsonl").read_text()
            .splitlines() if line.strip()]
    latest = max(r.get("bench") or 0 for r in rows)
    out = []
    for r in rows:
        if (r.get("bench") or 0) != latest:
            continue
        candidates = (r["arms"]["default"].get("guard") or {}).get("candidates", {})
        row = {"setting": r["setting"], "k": str(r["k"]), "seed": r["seed"], "bench": latest}
        for name, arm in ARMS.items():
            row.update({f"{name}_pca": r["arms"][arm]["pca"],
                        f"{name}_top1": r["arms"][arm]["top1"]})
            if name != "source":
                row[f"{name}_gain"] = (candidates.get(name) or {}).get("gain")
                row[f"{name}_se"] = (candidates.get(name) or {}).get("se")
        out.append(row)
    return pd.DataFrame(out)


def choose(d: pd.DataFrame, z: float | None) -> pd.Series:
    """The candidate picked in each draw: by the guard's rule at threshold ``z``, or (None)
    the one with the best test PCA."""
    if z is None:
        return d[[f"{n}_pca" for n in ARMS]].idxmax(axis=1).str.removesuffix("_pca")

    def pick(row):
        passing = [(row[f"{n}_gain"], n) for n in ("config", "pooled")
                   if pd.notna(row[f"{n}_gain"]) and row[f"{n}_gain"] > z * row[f"{n}_se"]]
        return max(passing)[1] if passing else "source"
    return d.apply(pick, axis=1)


def outcome(d: pd.DataFrame, picked: pd.Series, rule: str) -> dict:
    d = d.assign(**{m: [d.at[i, f"{c}_{m}"] for i, c in picked.items()] for m in ("pca", "top1")})
    below_pooled, ci_below = 0, 0
    for _, cell in d.groupby(["setting", "k"]):
        below_pooled += cell["pca"].mean() < cell["pooled_pca"].mean() - 1e-12
        for metric in ("pca", "top1"):
            diff = (cell[metric] - cell[f"source_{metric}"]).to_numpy()
            if len(diff) > 1 and diff.std(ddof=1) > 0:
                ci_below += diff.mean() + 1.96 * diff.std(ddof=1) / np.sqrt(len(diff)) < 0
    counts = collections.Counter(picked)
    return {"rule": rule, "draws": len(d), "cells": d.groupby(["setting", "k"]).ngroups,
            "mean_pca": float(d["pca"].mean()), "source_pca": float(d["source_pca"].mean()),
            "pooled_pca": float(d["pooled_pca"].mean()),
            "cells_below_pooled": int(below_pooled), "ci_below_zero": int(ci_below),
            **{f"picks_{n}": counts.get(n, 0) for n in ARMS}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--thresholds", default="1,0.5,0,-0.5",
                        type=lambda s: [float(x) for x in s.split(",")])
    args = parser.parse_args()
    d = draws()
    rows = [outcome(d, choose(d, z), f"gain > {z:g} se" + (" (gbxfer)" if z == 1 else ""))
            for z in args.thresholds] + [outcome(d, choose(d, None), "oracle (best test PCA)")]
    print_table(rows)
    correlation = {}
    for name in ("config", "pooled"):
        known = d[d[f"{name}_gain"].notna()]
        correlation[name] = float(np.corrcoef(known[f"{name}_gain"],
                                              known[f"{name}_pca"] - known["source_pca"])[0, 1])
        print(f"{name}: correlation of the guard's gain with the test PCA gain "
              f"{correlation[name]:.3f} over {len(known)} draws")
    write_results("guard_rules", rows, bench=int(d["bench"].iloc[0]),
                  gain_test_correlation=correlation)


if __name__ == "__main__":
    main()
