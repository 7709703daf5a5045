"""Feature-block ablation on the by-task split: which program-feature groups the model needs.

    python scripts/ablate_features.py [--dataset bundled] [--seeds 5] [--first-seed 0]
                                      [--variants all,...] [--configs default,lambdarank]
                                      [--split by-task|by-network] [--name ablate_features]
                                      [--blocks program,workload,hardware[,cross]]

Each variant starts from ``--blocks`` (program + workload + hardware unless given) and drops
a group of program columns (hashed tokens, hashed decisions, both, the by-axis tile columns,
the compute-location and rfactor columns), or adds hardware-relative
cross features (program x hardware / workload: vectorize extent against vector lanes,
parallel extent against threads, inner tile footprints against L1 / L2, FLOPs against peak,
outer iterations, register tile, innermost tile against lanes), or adds features relative to
the workload's loop extents (each axis's tile at each level as a share of the axis, each
level's spatial tiles against the output's size and reduction tiles against the reduction's,
vector and unroll extents against the inner tile), or replaces every program column by its
rank within its (task, hardware) group (per-task normalisation: a candidate population is what
a tuning run ranks too), or adds memory-locality features (the workload's bytes against
L1 / L2 / L3 and its ideal memory time, the memory time against the ideal compute time, and
the sampled compute locations that leave a stage at the root or put it under a loop, weighted
by how far the bytes exceed L2: the full passes over data that does not stay in cache; added
2026-12-07 after the by-task top-1 loss of seeds 120-124 was traced to a 9000 x 1500 softmax
whose picked program leaves its stages at the root while the fastest fuses them under the row
loop), or adds TVM's per-store features (the dataset's table, or computed
with gbxfer[tvm]), as they are or as z-scores within their (task, hardware) group; each
model config (the default, LightGBM lambdarank) is trained on the same training
part per seed and scored on its test part (by-task: 30% of the tasks; by-network: leave one
network out, every network in turn, its tasks (those it shares with another network too) the
test part, scored together; the seed is then only the model's). Mean +- 95% CI over seeds,
and each variant's paired difference to ``all``. Choices are made on seeds 100-104
(``--first-seed 100``) and reported on seeds 0-4. Results: scripts/results/<name>.{json,csv}.

Rule for the locality features, committed 2026-12-07 09:27 UTC before any run with them: they
join the ``cross`` block (the default's features) if, on seeds 100-104 with ``--blocks
program,workload,hardware,cross --configs default``, the by-task paired PCA difference has a
95% CI above 0 and the paired top-1 difference is >= 0; they are then reported on seeds 0-4,
by-task and leave-one-network-out, and not adopted if either split's PCA difference has a CI
below 0 there.
"""
from __future__ import annotations

import numpy as np
from _results import print_table, write_results
from _bench import BASE, ci95, experiment, mean_ci

from gbxfer import SplitSpec
from gbxfer.splits import leave_one_network_out
from gbxfer.metrics import ranking_report
from gbxfer.features._cross import cross_rows
from gbxfer.model import GBCostRanker, load_model_config

VARIANTS = {
    "all": lambda c: True,
    "no hashed tokens": lambda c: not c.startswith("program.tok_"),
    "no hashed decisions": lambda c: not c.startswith("program.dec_"),
    "no hashing at all": lambda c: not c.startswith(("program.tok_", "program.dec_")),
    "no by-axis tiles": lambda c: "_axis" not in c,
    "no compute locations or rfactor": lambda c: not c.startswith(("program.location",
                                                                   "program.rfactor_")),
}

CROSS = "+ hardware-relative cross features"
PER_STORE = "+ per-store features"
PER_STORE_NORMALISED = "+ per-store features normalised per task"
RELATIVE = "+ loop-extent-relative features"
RANKED = "program columns ranked per task"
LOCALITY = "+ memory-locality features"


def cross_features(fm) -> np.ndarray:
    """The ``cross`` block (gbxfer.features._cross) of ``fm``'s rows."""
    col = {c: i for i, c in enumerate(fm.columns)}
    return cross_rows(lambda name: fm.X[:, col[name]].astype(float))


def relative_features(fm) -> np.ndarray:
    """Log2 ratios to the workload's loop extents (see the module docstring): an axis's extent
    is the sum of its tile levels' log2 sizes."""
    col = {c: i for i, c in enumerate(fm.columns)}

    def g(name):
        return fm.X[:, col[name]].astype(float)

    out = []
    for role, axes, levels in (("sp", 5, 4), ("rd", 3, 2)):
        for a in range(axes):
            tiles = [g(f"program.{role}_axis{a}_level{i}_log2") for i in range(levels)]
            extent = sum(tiles)
            out += [t - extent for t in tiles]
    reduction = g("workload.log2_flops") - 1 - g("workload.out_log2_size")
    out += [g(f"program.sp_level{i}_log2") - g("workload.out_log2_size") for i in range(5)]
    out += [g(f"program.rd_level{i}_log2") - reduction for i in range(3)]
    out += [g("program.vectorize_log2") - g("program.sp_inner_max_log2"),
            g("program.unroll_log2") - g("program.rd_inner_max_log2"),
            g("program.parallel_log2") - g("workload.out_log2_size")]
    return np.column_stack(out).astype(np.float32)


def locality_features(fm) -> np.ndarray:
    """Log2 ratios of the workload's bytes to the caches and of its ideal memory time to its
    ideal compute time; the stages left at the root / under a loop, weighted by log2 of how far
    the bytes exceed L2 (0 where they fit); see the module docstring."""
    col = {c: i for i, c in enumerate(fm.columns)}

    def g(name):
        return fm.X[:, col[name]].astype(float)

    nbytes = g("workload.log2_bytes")
    with np.errstate(divide="ignore", invalid="ignore"):
        over = {level: nbytes - np.log2(g(f"hardware.{level}_kb") * 1024)
                for level in ("l1d", "l2", "l3")}
        memory_time = nbytes - np.log2(g("hardware.mem_gbps") * 1e9)
        compute_time = g("workload.log2_flops") - np.log2(g("hardware.peak_gflops") * 1e9)
        beyond_l2 = np.maximum(over["l2"], 0)
        X = np.column_stack([over["l1d"], over["l2"], over["l3"], memory_time,
                             memory_time - compute_time,
                             g("program.location_root") * beyond_l2,
                             g("program.location_loop") * beyond_l2])
    return np.where(np.isfinite(X), X, np.nan).astype(np.float32)


def ranked_program_columns(fm) -> np.ndarray:
    """``fm.X`` with every program column replaced by its rank in [0, 1] within the row's
    (task, hardware) group."""
    from scipy.stats import rankdata

    X = fm.X.astype(float, copy=True)
    program = [i for i, c in enumerate(fm.columns) if c.startswith("program.")]
    groups = fm.records["group"].to_numpy()
    for g in np.unique(groups):
        rows = np.flatnonzero(groups == g)
        if len(rows) > 1:
            X[np.ix_(rows, program)] = (rankdata(X[np.ix_(rows, program)], axis=0) - 1) / (
                len(rows) - 1)
    return X


_PER_STORE: dict = {}  # the per-store frame, computed once (gbxfer[tvm]; cached on disk too)


def per_store_matrix(fm, dataset, normalised: bool) -> np.ndarray:
    """TVM's per-store features of ``fm``'s programs (the dataset's own table, or computed
    with gbxfer[tvm]); ``normalised``: each column as a z-score within the row's task x
    hardware group (constant columns 0), so that a column's scale follows the task."""
    if "frame" not in _PER_STORE:
        from bench_model import per_store_frame

        _PER_STORE["frame"] = per_store_frame(dataset)
    P = np.array(_PER_STORE["frame"].reindex(fm.records["program_id"]), dtype=float)
    if normalised:
        groups = fm.records["group"].to_numpy()
        for g in np.unique(groups):
            rows = np.flatnonzero(groups == g)
            block = P[rows]
            spread = np.nanstd(block, axis=0)
            P[rows] = np.where(spread > 0, (block - np.nanmean(block, axis=0))
                               / np.where(spread > 0, spread, 1), 0.0)
    return P.astype(np.float32)


def variant_matrix(variant, fm, dataset=None) -> np.ndarray:
    if variant in (PER_STORE, PER_STORE_NORMALISED):
        return np.hstack([fm.X, per_store_matrix(fm, dataset, variant == PER_STORE_NORMALISED)])
    if variant == CROSS:
        return np.hstack([fm.X, cross_features(fm)])
    if variant == RELATIVE:
        return np.hstack([fm.X, relative_features(fm)])
    if variant == LOCALITY:
        return np.hstack([fm.X, locality_features(fm)])
    if variant == RANKED:
        return ranked_program_columns(fm)
    return fm.X[:, [i for i, c in enumerate(fm.columns) if VARIANTS[variant](c)]]


def test_masks(dataset, kind, seed):
    """The test parts of one seed: by-task, one mask; by-network, one per network."""
    if kind == "by-task":
        return [SplitSpec("by-task", 0.3, seed).test_mask(dataset)]
    return list(leave_one_network_out(dataset).values())


def options(parser) -> None:
    names = [*VARIANTS, CROSS, RELATIVE, LOCALITY, RANKED, PER_STORE, PER_STORE_NORMALISED]
    parser.add_argument("--variants", default=",".join(names),
                        help=f"comma-separated, of: {'; '.join(names)}")
    parser.add_argument("--configs", default="default,lambdarank")
    parser.add_argument("--blocks", default=",".join(BASE),
                        help="the feature blocks every variant starts from (default: "
                             "%(default)s; with cross among them, leave out the variant that "
                             "adds it again)")
    parser.add_argument("--split", choices=("by-task", "by-network"), default="by-task")
    parser.add_argument("--name", default="ablate_features", help="results file name")


def main() -> None:
    args, dataset, fm = experiment(__doc__, options=options)
    r = fm.records
    variants = args.variants.split(",")
    configs = {name: load_model_config(name if name != "default" else None)
               for name in args.configs.split(",")}
    results: dict = {}
    matrices = {variant: variant_matrix(variant, fm, dataset) for variant in variants}
    for seed in args.seed_list:  # the matrices do not depend on the seed: made once
        masks = test_masks(dataset, args.split, seed)
        for variant in variants:
            X = matrices[variant]
            for name, config in configs.items():
                scores = np.empty(len(r))
                for test in masks:  # by-network: every network's tasks scored by a model
                    model = GBCostRanker(**{**config.params, "random_state": seed}).fit(
                        X[~test], r["label"][~test], groups=r["group"][~test])
                    scores[test] = model.predict(X[test])
                test = np.logical_or.reduce(masks)
                results.setdefault((variant, name), []).append(ranking_report(
                    r["latency"][test], scores[test], r["group"][test], r["weight"][test]))
        print(f"seed {seed} done", flush=True)
    rows = []
    for (variant, name), reports in results.items():
        row = {"variant": variant, "config": name, "seeds": len(reports),
               **mean_ci(reports, ("pca", "top1", "top5"))}
        base = results.get(("all", name))
        if base is not None and variant != "all":
            for metric in ("pca", "top1"):
                d, ci = ci95([a[metric] - b[metric] for a, b in zip(reports, base)])
                row[f"d_{metric}"], row[f"d_{metric}_ci"] = round(d, 4), round(ci, 4)
        rows.append(row)
    print_table(rows)
    write_results(args.name, rows, dataset=args.dataset, split=args.split,
                  seeds=args.seed_list)


if __name__ == "__main__":
    main()
