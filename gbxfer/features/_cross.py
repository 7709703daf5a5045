"""The ``cross`` block: a program's schedule against the hardware and the workload it runs on.

Differences of log2 values that trees cannot form from the separate blocks: the vectorized
extent against the vector lanes, the parallel extent against the threads, the inner tiles'
footprints against L1 and L2, the workload's FLOPs against the peak rate (an ideal time), the
outer iterations, the register tile, and the innermost spatial tile against the lanes; NaN
where a descriptor field is unknown. In the default config since 2026-12-04, after it won on
the by-task and leave-one-network-out splits (docs/features.md,
``scripts/ablate_features.py``).
"""
from __future__ import annotations

import numpy as np

COLUMNS = ["vector_over_lanes", "parallel_over_threads", "l1_tile_over_l1d", "l2_tile_over_l2",
           "ideal_time", "outer_iterations", "register_tile", "inner_tile_over_lanes"]
NEEDS = ("program", "workload", "hardware")  # the blocks it is computed from


def cross_rows(named) -> np.ndarray:
    """The (n, len(COLUMNS)) block from ``named(column) -> (n,) array`` of the program,
    workload and hardware blocks' columns (``"program.vectorize_log2"`` ...)."""
    def levels(role, *lv):
        return sum(named(f"program.{role}_level{i}_log2") for i in lv)

    with np.errstate(divide="ignore", invalid="ignore"):
        lanes = np.log2(1 + named("hardware.vector_bits") / 32)
        X = np.column_stack([
            named("program.vectorize_log2") - lanes,
            named("program.parallel_log2") - np.log2(1 + named("hardware.threads")),
            levels("sp", 0, 1) + levels("rd", 0) + 2 - np.log2(named("hardware.l1d_kb") * 1024),
            levels("sp", 0, 1, 2) + levels("rd", 0, 1) + 2
            - np.log2(named("hardware.l2_kb") * 1024),
            named("workload.log2_flops") - np.log2(named("hardware.peak_gflops")),
            named("workload.out_log2_size") - levels("sp", 0, 1),
            levels("sp", 0) + levels("rd", 0),
            named("program.sp_axis0_level0_log2") - lanes,
        ])
    return np.where(np.isfinite(X), X, np.nan).astype(np.float32)
