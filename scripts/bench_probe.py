"""The probe's peak against the ISA's theoretical peak and the best measured matmul, per profile.

    python scripts/bench_probe.py [--profiles x86-avx2-1t,...] [--repeats 3] [--dataset bundled]
                                  [--separate-chains 12/12,14] [--name bench_probe]

For each hardware profile (configs/hardware/*.yaml) of this machine (or each named, whose ISA
this CPU executes): the probe
(`gbxfer.hardware.probe.probe`, the profile's ISA and thread count) run ``--repeats`` times;
the median measured clock, peak GFLOP/s and theoretical peak (clock x vector lanes x flops per
lane per cycle x threads, `gbxfer.hardware.microarch`); their ratio (target: >= 0.9); and the
best GFLOP/s of any valid program of the dataset measured on that profile, over matmul-like
tasks (dense, batch_matmul, matmul, conv) and over all tasks — which must not beat the probe.
``--separate-chains A/B/...`` compares chain counts of the probe's kernel of separate
multiplies and adds (the non-FMA ISAs; each arm a comma-separated list, of which the probe keeps
the fastest; default: the probe's own): one row per profile and arm, the arms' runs
interleaved. Run on an idle machine (2-thread profiles need every core). Results:
scripts/results/<name>.{json,csv}.
"""
from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import numpy as np
from _results import print_table, write_results

from gbxfer import load_dataset
from gbxfer.hardware import load_profile
from gbxfer.hardware import probe as probe_module
from gbxfer.hardware.probe import ISAS, host_machine, probe, supported_isas

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "hardware"
ISA_OF_FAMILY = {"x86-avx512": "avx512", "x86-avx2": "avx2-fma", "x86-avx": "avx",
                 "x86-sse42": "sse4.2"}
MATMUL_LIKE = ("dense", "matmul", "batch_matmul", "conv1d", "conv2d", "conv3d")
TARGET_RATIO = 0.9


def best_gflops(dataset) -> dict:
    """Profile -> {"matmul": (GFLOP/s, task), "any": (GFLOP/s, task)}: the fastest valid
    program of each, in GFLOP/s (task FLOPs / latency)."""
    tasks = dataset.tasks.set_index("task_key")
    records = dataset.records[dataset.records["valid"] & (dataset.records["latency"] > 0)]
    records = records.assign(flops=records["task_key"].map(tasks["flops"]),
                             operator=records["task_key"].map(tasks["operator"]))
    records = records[np.isfinite(records["flops"]) & (records["flops"] > 0)]
    records = records.assign(gflops=records["flops"] / records["latency"] / 1e9)
    out = {}
    for hardware, group in records.groupby("hardware"):
        out[hardware] = {}
        for kind, part in (("matmul", group[group["operator"].isin(MATMUL_LIKE)]),
                           ("any", group)):
            if len(part):
                row = part.loc[part["gflops"].idxmax()]
                out[hardware][kind] = (float(row["gflops"]),
                                       tasks.loc[row["task_key"], "description"][:40])
    return out


def row(profile, isa: str, arm: tuple, runs: list[dict], best: dict) -> dict:
    """One profile's probe runs against its theoretical peak and its best bundled programs
    (those only when the profile is this machine's: another machine's programs say nothing of
    this one's probe)."""
    name = profile.name
    best = best if profile.machine == host_machine() else {}
    peak = statistics.median(r["descriptor"]["peak_gflops"] for r in runs)
    theoretical = [r["theoretical_gflops"] for r in runs if r["theoretical_gflops"]]
    theoretical = statistics.median(theoretical) if theoretical else float("nan")
    matmul, task = best.get(name, {}).get("matmul", (float("nan"), ""))
    overall, _ = best.get(name, {}).get("any", (float("nan"), ""))
    return {
        "profile": name, "machine": profile.machine, "isa": isa, "threads": profile.threads,
        "chains": ",".join(map(str, arm)),  # empty for FMA code
        "clock_ghz": statistics.median(r["descriptor"]["clock_ghz"] or np.nan for r in runs),
        "probe_gflops": peak,
        "probe_min": min(r["descriptor"]["peak_gflops"] for r in runs),
        "probe_max": max(r["descriptor"]["peak_gflops"] for r in runs),
        "theoretical_gflops": round(theoretical, 1),
        "ratio": round(peak / theoretical, 3),
        "flops_per_lane_cycle": runs[0]["flops_per_lane_cycle"],
        "profile_yaml_peak": profile.descriptor.get("peak_gflops"),
        "best_matmul_gflops": round(matmul, 2), "best_matmul_task": task,
        "best_any_gflops": round(overall, 2),
        "matmul_beats_probe": bool(matmul > peak),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", help="comma-separated names or YAML paths (default: "
                                           "every profile of this machine)")
    parser.add_argument("--repeats", type=int, default=3, help="probe runs per profile")
    parser.add_argument("--seconds", type=float, default=0.25,
                        help="seconds per repetition of the probe's FMA kernel")
    parser.add_argument("--dataset", default="bundled")
    parser.add_argument("--separate-chains", metavar="A/B/...",
                        help="arms of chain counts for the non-FMA kernel, e.g. 12/12,14 "
                             "(default: the probe's, "
                             f"{','.join(map(str, probe_module.SEPARATE_CHAINS))})")
    parser.add_argument("--name", default="bench_probe", help="results file name")
    args = parser.parse_args()
    default = probe_module.SEPARATE_CHAINS
    arms = [tuple(int(n) for n in arm.split(",")) for arm in args.separate_chains.split("/")] \
        if args.separate_chains else [default]
    if not all(arms) or min(min(arm) for arm in arms) < 1:
        parser.error("--separate-chains: chain counts of at least 1, e.g. 12/12,14")
    names = args.profiles.split(",") if args.profiles else sorted(
        p.stem for p in CONFIGS.glob("*.yaml") if load_profile(p.stem).machine == host_machine())
    if not names:
        parser.error(f"no profile in {CONFIGS} is of this machine ({host_machine()}); "
                     "name some with --profiles")
    best = best_gflops(load_dataset(args.dataset))
    runnable = supported_isas()
    rows = []
    for name in names:
        profile = load_profile(name)  # a name in configs/hardware or a YAML path
        isa = ISA_OF_FAMILY.get(profile.family)
        if isa not in runnable:
            print(f"{profile.name}: skipped (family {profile.family}: this CPU does not run "
                  f"{isa})")
            continue
        mine = [()] if ISAS[isa][2] else arms  # chain arms only for separate mul/add
        runs: list[list] = [[] for _ in mine]
        for _ in range(args.repeats):
            for arm, into in zip(mine, runs, strict=True):  # the arms interleaved
                probe_module.SEPARATE_CHAINS = arm or default
                into.append(probe(isa, profile.threads, seconds=args.seconds))
        probe_module.SEPARATE_CHAINS = default
        rows += [row(profile, isa, arm, r, best) for arm, r in zip(mine, runs, strict=True)]
    print_table(rows, ["profile", "machine", "chains", "threads", "clock_ghz", "probe_gflops",
                       "theoretical_gflops", "ratio", "best_matmul_gflops", "best_any_gflops",
                       "matmul_beats_probe", "profile_yaml_peak"])
    close = sum(r["ratio"] >= TARGET_RATIO for r in rows)
    beaten = sum(r["matmul_beats_probe"] for r in rows)
    print(f"\nmachine: {host_machine()}")
    print(f"rows (profile and chains) within {1 - TARGET_RATIO:.0%} of the theoretical peak: "
          f"{close}/{len(rows)}; where a bundled matmul beats the probe (must be 0): {beaten}")
    write_results(args.name, rows, dataset=str(args.dataset), machine_name=host_machine(),
                  repeats=args.repeats, seconds=args.seconds,
                  summary={"rows": len(rows), "within_target": close,
                           "matmul_beats_probe": beaten})


if __name__ == "__main__":
    main()
