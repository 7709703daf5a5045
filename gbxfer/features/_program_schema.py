"""The program feature columns (see :mod:`gbxfer.features._program` for what each means), the
primitive kinds and the small pure functions that write one primitive into a column vector."""
from __future__ import annotations

import math
import zlib

import orjson

KINDS = ("split", "fuse", "reorder", "parallel", "vectorize", "unroll", "bind", "cache_read",
         "cache_write", "compute_at", "reverse_compute_at", "compute_inline",
         "reverse_compute_inline", "compute_root", "annotate", "decompose_reduction", "rfactor",
         "storage_align", "sample_tile", "sample_categorical", "sample_compute_location",
         "structure", "tensorize", "other")
N_SP_LEVELS, N_RD_LEVELS = 5, 3
N_SP_AXES, N_SP_AXIS_LEVELS = 5, 4
N_RD_AXES, N_RD_AXIS_LEVELS = 3, 2
SCOPES = ("shared", "local", "global")
N_LOCATIONS = 4  # compute locations kept one by one, in sketch order
MAX_TOKENS = 25
N_HASH = 64
N_DECISION_HASH = 32

COLUMNS = (
    [f"count_{k}" for k in KINDS]
    + [f"sp_level{i}_log2" for i in range(N_SP_LEVELS)] + ["sp_inner_max_log2", "n_spatial_splits"]
    + [f"rd_level{i}_log2" for i in range(N_RD_LEVELS)] + ["rd_inner_max_log2",
                                                            "n_reduction_splits"]
    + [f"sp_axis{a}_level{i}_log2" for a in range(N_SP_AXES) for i in range(N_SP_AXIS_LEVELS)]
    + [f"rd_axis{a}_level{i}_log2" for a in range(N_RD_AXES) for i in range(N_RD_AXIS_LEVELS)]
    + ["unroll_log2", "vectorize_log2", "parallel_log2", "bind_block", "bind_thread",
       "bind_vthread", "fetch_vector_log2"]
    + [f"cache_read_{s}" for s in SCOPES] + [f"cache_write_{s}" for s in SCOPES]
    + ["compute_at_depth_mean", "compute_at_depth_max"]
    + ["location_inline", "location_root", "location_loop"]
    + [f"location{j}" for j in range(N_LOCATIONS)]
    + ["rfactor_inner", "rfactor_outer", "rfactor_extent_log2"]
    + [f"tok_{j}" for j in range(N_HASH)]
    + [f"dec_{j}" for j in range(N_DECISION_HASH)]
)
COLUMN = {name: i for i, name in enumerate(COLUMNS)}
KIND_START = COLUMN["count_split"]
SP_LEVEL_START, RD_LEVEL_START = COLUMN["sp_level0_log2"], COLUMN["rd_level0_log2"]
TOKEN_START, DECISION_START = COLUMN["tok_0"], COLUMN["dec_0"]
UNROLL_COLUMN = COLUMN["unroll_log2"]
SP_AXIS_START, RD_AXIS_START = COLUMN["sp_axis0_level0_log2"], COLUMN["rd_axis0_level0_log2"]

MS_KINDS = {
    "Split": "split", "Fuse": "fuse", "Reorder": "reorder", "Parallel": "parallel",
    "Vectorize": "vectorize", "Unroll": "unroll", "Bind": "bind", "CacheRead": "cache_read",
    "CacheWrite": "cache_write", "ReindexCacheRead": "cache_read",
    "ReindexCacheWrite": "cache_write", "ComputeAt": "compute_at",
    "ReverseComputeAt": "reverse_compute_at", "ComputeInline": "compute_inline",
    "ReverseComputeInline": "reverse_compute_inline", "Annotate": "annotate",
    "Unannotate": "annotate", "DecomposeReduction": "decompose_reduction", "RFactor": "rfactor",
    "StorageAlign": "storage_align", "SamplePerfectTile": "sample_tile",
    "SamplePartitionedTile": "sample_tile", "SampleCategorical": "sample_categorical",
    "SampleComputeLocation": "sample_compute_location", "GetSBlock": "structure",
    "GetBlock": "structure", "GetLoops": "structure", "GetChildBlocks": "structure",
    "GetProducers": "structure", "GetConsumers": "structure", "GetOutputBlocks": "structure",
    "EnterPostproc": "structure", "Blockize": "tensorize", "Tensorize": "tensorize",
}
ANSOR_KINDS = {"SP": "split", "FSP": "split", "FFSP": "split", "RE": "reorder", "FU": "fuse",
               "CA": "compute_at", "CI": "compute_inline", "CR": "compute_root",
               "CHR": "cache_read", "CHW": "cache_write", "PR": "annotate", "RF": "rfactor",
               "SA": "storage_align"}
# Ansor annotation codes: 1 unroll, 2 vectorize, 3 parallel, 4 vthread, 5-10 GPU bindings
ANSOR_ANNOTATIONS = {1: "unroll", 2: "vectorize", 3: "parallel", 4: "bind", 5: "bind",
                     6: "bind", 7: "bind", 8: "bind", 9: "bind", 10: "bind"}


LOG2 = {i: math.log2(i) for i in range(1, 4097)}
KIND_COL = {name: KIND_START + KINDS.index(kind) for name, kind in MS_KINDS.items()}
OTHER_COL = KIND_START + KINDS.index("other")
DEPTH_MEAN, DEPTH_MAX = COLUMN["compute_at_depth_mean"], COLUMN["compute_at_depth_max"]
FETCH_COLUMN = COLUMN["fetch_vector_log2"]
RFACTOR_EXTENT = COLUMN["rfactor_extent_log2"]


def location_entries(decision: int, ordinal: int | None) -> tuple[list, list]:
    """(columns, values) of one compute location: -2 inlines the block, -1 leaves it at the
    root, k >= 0 puts it under loop k; the ``ordinal``-th location of its sketch (None: not
    known) also sets ``location<ordinal>`` to the decision + 3 (0 stays "no such location")."""
    kind = {-2: "location_inline", -1: "location_root"}.get(decision, "location_loop")
    cols, vals = [COLUMN[kind]], [1.0]
    if ordinal is not None and ordinal < N_LOCATIONS:
        cols.append(COLUMN[f"location{ordinal}"])
        vals.append(float(decision + 3))
    return cols, vals


def log2(x) -> float:
    value = LOG2.get(x)
    if value is not None:
        return value
    return math.log2(x) if x and x > 0 else 0.0


def token_bucket(*parts) -> int:
    return zlib.crc32(orjson.dumps(parts)) % N_HASH


def decision_bucket(position, decision) -> int:
    return zlib.crc32(orjson.dumps([position, decision])) % N_DECISION_HASH


def scope_column(prefix: str, scope) -> int | None:
    scope = str(scope).split(".")[0]
    return COLUMN.get(f"{prefix}_{scope}")


def axis_positions(n_parts: list[int]) -> list[int]:
    """For splits with these numbers of parts (in schedule order), each split's axis index
    counted from the last split of the same role (spatial: 4+ parts, reduction: fewer)."""
    spatial = [n >= 4 for n in n_parts]
    out, seen = [], {True: 0, False: 0}
    totals = {True: sum(spatial), False: len(spatial) - sum(spatial)}
    for is_spatial in spatial:
        out.append(totals[is_spatial] - 1 - seen[is_spatial])
        seen[is_spatial] += 1
    return out


SP_INNER_MAX, N_SP_SPLITS_COLUMN = COLUMN["sp_inner_max_log2"], COLUMN["n_spatial_splits"]
RD_INNER_MAX, N_RD_SPLITS_COLUMN = COLUMN["rd_inner_max_log2"], COLUMN["n_reduction_splits"]


def tile_logs(factors) -> list[float]:
    """log2 of a split's tile factors (given outermost first), innermost first."""
    return [LOG2.get(f) or log2(f) for f in reversed(factors)]


def add_split(vec, factors, axis: int = -1) -> None:
    """Tile factors of one split (outermost first) into the level sums, the innermost maximum,
    the split count and, for ``axis`` >= 0 (counted from the last axis of its role), the
    by-axis columns. ``vec`` maps columns to values."""
    logs = tile_logs(factors)
    if len(factors) >= 4:
        base, n_levels = SP_LEVEL_START, N_SP_LEVELS
        inner, count = SP_INNER_MAX, N_SP_SPLITS_COLUMN
    else:
        base, n_levels = RD_LEVEL_START, N_RD_LEVELS
        inner, count = RD_INNER_MAX, N_RD_SPLITS_COLUMN
    for level in range(min(len(logs), n_levels)):
        vec[base + level] += logs[level]
    if logs and logs[0] > vec[inner]:
        vec[inner] = logs[0]
    vec[count] += 1
    set_axis(vec, factors, axis, logs)


def set_axis(vec, factors, axis: int, logs=None) -> None:
    """The by-axis columns of one split, for ``axis`` >= 0 (Ansor sets them once all of a
    program's splits are known)."""
    logs = tile_logs(factors) if logs is None else logs
    if len(factors) >= 4:
        axis_base, n_axes, n_levels = SP_AXIS_START, N_SP_AXES, N_SP_AXIS_LEVELS
    else:
        axis_base, n_axes, n_levels = RD_AXIS_START, N_RD_AXES, N_RD_AXIS_LEVELS
    if 0 <= axis < n_axes:
        for level in range(min(len(logs), n_levels)):
            vec[axis_base + axis * n_levels + level] = logs[level]


def bind_column(axis: str) -> int:
    """The column a MetaSchedule thread binding counts in, by its thread axis."""
    return COLUMN["bind_block" if axis.startswith("blockIdx") else "bind_vthread"
                  if axis.startswith("vthread") else "bind_thread"]
