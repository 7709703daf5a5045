"""Plausibility of a collected dataset: best-program FLOP rates against each profile's peak.

    python scripts/check_bundled.py [--dataset bundled]

For every task with known FLOPs: the best program's GFLOP/s and its share of the profile's
measured peak (configs/hardware descriptor.peak_gflops; target for matmul and conv2d tasks:
10%-100%), and the spread best / median latency. Results: scripts/results/check_bundled.*
"""
from __future__ import annotations

import argparse

import numpy as np
from _results import print_table, write_results

from gbxfer import load_dataset
from gbxfer.hardware import load_profile

COMPUTE_BOUND = ("conv2d", "dense", "batch_matmul", "depthwise_conv2d")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="bundled")
    args = parser.parse_args()
    ds = load_dataset(args.dataset)
    tasks = ds.tasks.set_index("task_key")
    rows = []
    for (task, hw), g in ds.groups():
        lat = g.loc[g["valid"], "latency"].to_numpy()
        if not len(lat):
            continue
        peak = load_profile(hw).descriptor.get("peak_gflops", np.nan)
        flops = tasks.loc[task, "flops"]
        best = lat.min()
        gflops = flops / best / 1e9
        op = tasks.loc[task, "operator"]
        rows.append({"hardware": hw, "task": tasks.loc[task, "description"][:44], "op": op,
                     "n_valid": int(len(lat)), "best_ms": round(best * 1e3, 4),
                     "best_gflops": round(gflops, 2), "peak_gflops": peak,
                     "share_of_peak": round(gflops / peak, 3),
                     "best_over_median": round(best / np.median(lat), 3),
                     "in_10_100_pct": bool(0.1 <= gflops / peak <= 1.0)
                     if op in ("conv2d", "dense", "batch_matmul") else None})
    print_table(rows)
    checked = [r for r in rows if r["in_10_100_pct"] is not None]
    ok = sum(r["in_10_100_pct"] for r in checked)
    print(f"\nmatmul/conv2d groups whose best program reaches 10-100% of peak: {ok}/{len(checked)}")
    write_results("check_bundled", rows, dataset=str(args.dataset),
                  summary={"groups_checked": len(checked), "groups_in_range": ok})


if __name__ == "__main__":
    main()
