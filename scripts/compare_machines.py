"""How alike two profiles rank the same programs: per task, the Spearman correlation of the
latencies of the programs both measured, and their median latency ratio.

    python scripts/compare_machines.py [--dataset bundled] [--add DATASET ...]
                                       [--again DATASET ...] [--profiles A,B,...] [--name NAME]

For every pair of profiles that share programs (the same ``program_id`` of one task, valid on
both): the mean over their shared tasks (at least ``--min-programs``, 8, paired programs each)
of the per-task Spearman correlation with its 95% CI over tasks, the median of the per-program
latency ratio (A / B: above 1, B is faster) and of its |log|, and how many tasks and programs.
Two profiles of one target on two machines are a pure machine change; two of one machine, an
ISA or thread change. The heatmap shows the mean correlations. ``--again``: a dataset that
measured programs again on a profile already there (`gbxfer calibrate`'s measurements), its
profiles renamed ``<profile> (again)``: how tightly one machine repeats itself, the floor for
the other pairs. Results: scripts/results/<NAME>.{json,csv,png} (NAME: compare_machines).
"""
from __future__ import annotations

import argparse
import itertools

import numpy as np
import pandas as pd
from _bench import ci95
from _results import RESULTS, print_table, write_results

from gbxfer import Dataset, load_dataset

MIN_PROGRAMS = 8


def pair_row(records: pd.DataFrame, a: str, b: str, min_programs: int = MIN_PROGRAMS
             ) -> dict | None:
    """The row of profiles ``a`` and ``b`` (None when they share no task)."""
    columns = ["task_key", "program_id", "latency"]
    both = records.loc[records.hardware == a, columns].merge(
        records.loc[records.hardware == b, columns], on=["task_key", "program_id"],
        suffixes=("_a", "_b"))
    counts = both.groupby("task_key").size()
    both = both[both.task_key.isin(counts.index[counts >= min_programs])]
    if both.empty:
        return None
    rho = both.groupby("task_key")[["latency_a", "latency_b"]].apply(
        lambda g: g.latency_a.rank().corr(g.latency_b.rank())).dropna()  # NaN: ties only
    if rho.empty:
        return None
    both = both[both.task_key.isin(rho.index)]
    ratio = both.latency_a / both.latency_b
    mean, half = ci95(rho.to_numpy())
    profile = records.drop_duplicates("hardware").set_index("hardware")  # machine, target
    return {"a": a, "b": b, "machine_a": profile.machine[a], "machine_b": profile.machine[b],
            "target_same": profile.target[a] == profile.target[b],
            "spearman": round(mean, 4), "spearman_ci": round(half, 4),
            "latency_ratio_median": round(float(np.median(ratio)), 4),
            "abs_log_ratio_median": round(float(np.median(np.abs(np.log(ratio)))), 4),
            "n_tasks": len(rho), "n_programs": len(both)}


def plot(rows: list[dict], profiles: list[str], path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    index = {p: i for i, p in enumerate(profiles)}
    grid = np.full((len(profiles), len(profiles)), np.nan)
    for r in rows:
        grid[index[r["a"]], index[r["b"]]] = grid[index[r["b"]], index[r["a"]]] = r["spearman"]
    np.fill_diagonal(grid, 1.0)
    fig, ax = plt.subplots(figsize=(3 + 0.6 * len(profiles), 2 + 0.6 * len(profiles)))
    image = ax.imshow(grid, vmin=0.7, vmax=1.0, cmap="viridis")
    ax.set_xticks(range(len(profiles)), profiles, rotation=90)
    ax.set_yticks(range(len(profiles)), profiles)
    for i, j in itertools.product(range(len(profiles)), repeat=2):
        if not np.isnan(grid[i, j]) and i != j:
            ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=7,
                    color="white" if grid[i, j] < 0.85 else "black")
    fig.colorbar(image, label="mean per-task Spearman of paired latencies")
    ax.set_title("How alike profiles rank the same programs")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="bundled")
    parser.add_argument("--add", action="append", default=[],
                        help="another dataset whose profiles join (e.g. a new collection)")
    parser.add_argument("--again", action="append", default=[],
                        help="a dataset of programs measured again on profiles already there")
    parser.add_argument("--profiles", type=lambda text: text.split(","),
                        help="only these profiles (comma-separated)")
    parser.add_argument("--min-programs", type=int, default=MIN_PROGRAMS,
                        help="paired programs a task needs to count (default: %(default)s)")
    parser.add_argument("--name", default="compare_machines")
    args = parser.parse_args()
    again = [load_dataset(d).records.assign(hardware=lambda r: r.hardware + " (again)")
             for d in args.again]
    dataset = Dataset.concat([load_dataset(d) for d in [args.dataset, *args.add]])
    records = pd.concat([dataset.records, *again], ignore_index=True)
    records = records[records.valid]
    profiles = args.profiles or sorted(records.hardware.unique(),
                                       key=lambda p: (records.machine[records.hardware == p]
                                                      .iloc[0], p))
    missing = set(profiles) - set(records.hardware)
    if missing:
        raise SystemExit(f"no profile {sorted(missing)[0]!r}; profiles: "
                         f"{', '.join(sorted(records.hardware.unique()))}")
    records = records[records.hardware.isin(profiles)]
    rows = [row for a, b in itertools.combinations(profiles, 2)
            if (row := pair_row(records, a, b, args.min_programs)) is not None]
    print_table(rows, ["a", "b", "target_same", "spearman", "spearman_ci",
                       "latency_ratio_median", "abs_log_ratio_median", "n_tasks", "n_programs"])
    plot(rows, profiles, RESULTS / f"{args.name}.png")
    write_results(args.name, rows, datasets=[args.dataset, *args.add], again=args.again,
                  profiles=profiles)


if __name__ == "__main__":
    main()
