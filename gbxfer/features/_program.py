"""Program features read from the schedule primitives themselves (after TLP): no TVM needed.

One representation for MetaSchedule traces and Ansor step lists: a fixed-length vector of

- ``count_<kind>``: how many primitives of each kind (:data:`KINDS`; MetaSchedule instructions
  and Ansor steps map onto the same kinds; unknown primitives count as ``other``);
- tile factors by loop role: ``sp_level<i>_log2`` / ``rd_level<i>_log2`` sum log2 of the
  factor at tile level i (0 = innermost) over the spatial / reduction splits; a split of 4 or
  more parts is spatial, fewer is reduction (multi-level tiling: SSRSRS on CPU, SSSRRSRS on
  GPU), and MetaSchedule's ``tiling_structure`` annotation decides where it is present;
  ``sp_inner_max_log2``, ``rd_inner_max_log2``; ``n_spatial_splits``, ``n_reduction_splits``;
- tile factors by axis: ``sp_axis<a>_level<i>_log2`` (a = 0 for the last spatial axis of the
  schedule, which is the one vectorized, 1 for the one before, ...; i = 0 innermost) and
  ``rd_axis<a>_level<i>_log2`` likewise for reduction axes;
- annotations: ``unroll_log2`` = log2(1 + max auto-unroll step), ``vectorize_log2`` = log2(1 +
  max vectorize extent annotated), ``parallel_log2`` (likewise), thread bindings
  ``bind_block``, ``bind_thread``, ``bind_vthread``, ``fetch_vector_log2`` (GPU cooperative
  fetch vector lanes);
- cache stages by scope ``cache_read_<scope>`` / ``cache_write_<scope>`` (shared, local,
  global), and compute-at depth ``compute_at_depth_mean`` / ``_max`` (loop index chosen; -1 root
  and -2 inline count as 0);
- ``tok_<j>``: a position-aware hashed encoding of the first :data:`MAX_TOKENS` scheduling
  primitives (structure look-ups such as GetLoops left out): each token (kind, position,
  arguments: tile factors, annotation values, decisions) adds 1 to one of :data:`N_HASH`
  buckets (CRC-32, stable across processes);
- ``dec_<j>``: every sampling decision (or Ansor split) with its position, hashed the same way
  into :data:`N_DECISION_HASH` buckets, so that programs differing in any decision differ here.
"""
from __future__ import annotations

import math
import re
import zlib
from collections import defaultdict

import numpy as np
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
    + [f"tok_{j}" for j in range(N_HASH)]
    + [f"dec_{j}" for j in range(N_DECISION_HASH)]
)
COL = {name: i for i, name in enumerate(COLUMNS)}
COUNT0 = COL["count_split"]
SP0, RD0, TOK0 = COL["sp_level0_log2"], COL["rd_level0_log2"], COL["tok_0"]
DEC0 = COL["dec_0"]
UNROLL = COL["unroll_log2"]
_DECISIONS = re.compile(r"\]\],\[\[-?\d")  # end of the instructions, start of the decisions
SPAX0, RDAX0 = COL["sp_axis0_level0_log2"], COL["rd_axis0_level0_log2"]

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


_LOG2 = {i: math.log2(i) for i in range(1, 4097)}
KIND_COL = {name: COUNT0 + KINDS.index(kind) for name, kind in MS_KINDS.items()}
OTHER_COL = COUNT0 + KINDS.index("other")


def _log2(x) -> float:
    value = _LOG2.get(x)
    if value is not None:
        return value
    return math.log2(x) if x and x > 0 else 0.0


def _token_bucket(*parts) -> int:
    return zlib.crc32(orjson.dumps(parts)) % N_HASH


def _decision_bucket(position, decision) -> int:
    return zlib.crc32(orjson.dumps([position, decision])) % N_DECISION_HASH


def _scope_col(prefix: str, scope) -> int | None:
    scope = str(scope).split(".")[0]
    return COL.get(f"{prefix}_{scope}")


def _axis_positions(n_parts: list[int]) -> list[int]:
    """For splits with these numbers of parts (in schedule order), each split's axis index
    counted from the last split of the same role (spatial: 4+ parts, reduction: fewer)."""
    spatial = [n >= 4 for n in n_parts]
    out, seen = [], {True: 0, False: 0}
    totals = {True: sum(spatial), False: len(spatial) - sum(spatial)}
    for is_spatial in spatial:
        out.append(totals[is_spatial] - 1 - seen[is_spatial])
        seen[is_spatial] += 1
    return out


_SP_MAX, _SP_N = COL["sp_inner_max_log2"], COL["n_spatial_splits"]
_RD_MAX, _RD_N = COL["rd_inner_max_log2"], COL["n_reduction_splits"]


def _add_split(vec, factors, axis: int = -1) -> None:
    """Tile factors of one split (outermost first) into the level sums, the innermost maximum,
    the split count and, for ``axis`` >= 0 (counted from the last axis of its role), the
    by-axis columns. ``vec`` is a list."""
    logs = [_LOG2.get(f) or _log2(f) for f in reversed(factors)]  # innermost first
    if len(factors) >= 4:
        base, n_levels, inner, count = SP0, N_SP_LEVELS, _SP_MAX, _SP_N
        axis_base, n_axes, n_axis_levels = SPAX0, N_SP_AXES, N_SP_AXIS_LEVELS
    else:
        base, n_levels, inner, count = RD0, N_RD_LEVELS, _RD_MAX, _RD_N
        axis_base, n_axes, n_axis_levels = RDAX0, N_RD_AXES, N_RD_AXIS_LEVELS
    for level in range(min(len(logs), n_levels)):
        vec[base + level] += logs[level]
    if logs and logs[0] > vec[inner]:
        vec[inner] = logs[0]
    vec[count] += 1
    if 0 <= axis < n_axes:
        start = axis_base + axis * n_axis_levels
        for level in range(min(len(logs), n_axis_levels)):
            vec[start + level] = logs[level]


_MAX_COLS = frozenset([_SP_MAX, _RD_MAX] + [COL[c] for c in (
    "unroll_log2", "vectorize_log2", "parallel_log2", "fetch_vector_log2")])
# The by-axis columns are written once per program (each split has its own axis index) over
# zeros, so "set" and "maximum" agree on them.
_MAX_COLS |= frozenset(range(SPAX0, SPAX0 + N_SP_AXES * N_SP_AXIS_LEVELS)) | frozenset(
    range(RDAX0, RDAX0 + N_RD_AXES * N_RD_AXIS_LEVELS))
_DEPTH_MEAN, _DEPTH_MAX = COL["compute_at_depth_mean"], COL["compute_at_depth_max"]
_FETCH = COL["fetch_vector_log2"]


def _entries(vec: dict) -> tuple:
    """``(add columns, add values, max columns, max values)`` of the non-zero entries of a
    contribution ``vec`` (column -> value, as written into zeros)."""
    add_cols, add_vals, max_cols, max_vals = [], [], [], []
    for col, value in vec.items():
        if value:
            if col in _MAX_COLS:
                max_cols.append(col)
                max_vals.append(value)
            else:
                add_cols.append(col)
                add_vals.append(value)
    return add_cols, add_vals, max_cols, max_vals


class _Parts:
    """Contributions to feature vectors, each registered once under an integer id.

    A part holds additive entries (counts, level sums, hash buckets), maximum entries (the
    ``*_max`` / ``*_log2`` annotation columns and the by-axis tile columns) and compute-at
    depths. A program is the list of its parts' ids — a sketch's fixed instructions, its
    postprocessing, one part per sampling decision or Ansor step — and :meth:`assemble` turns
    many programs into rows at once with numpy, so the per-program Python work is a few
    dictionary look-ups.
    """

    def __init__(self):
        self.add_ptr, self.add_col, self.add_val = [0], [], []
        self.max_ptr, self.max_col, self.max_val = [0], [], []
        self.depth_ptr, self.depth_val = [0], []

    def __len__(self) -> int:
        return len(self.add_ptr) - 1

    def add(self, vec: dict, depths=()) -> int:
        """Register the contribution ``vec`` (column -> value, as written into zeros)."""
        return self.add_entries(*_entries(vec), depths)

    def add_entries(self, add_cols, add_vals, max_cols=(), max_vals=(), depths=()) -> int:
        """Register a contribution given as additive and maximum (columns, values)."""
        self.add_col += add_cols
        self.add_val += add_vals
        self.add_ptr.append(len(self.add_col))
        self.max_col += max_cols
        self.max_val += max_vals
        self.max_ptr.append(len(self.max_col))
        self.depth_val += depths
        self.depth_ptr.append(len(self.depth_val))
        return len(self.add_ptr) - 2

    def assemble(self, programs: list[list[int]]) -> np.ndarray:
        """One float32 row per program (a list of part ids)."""
        n, width = len(programs), len(COLUMNS)
        lengths = np.fromiter(map(len, programs), dtype=np.int64, count=n)
        parts = np.fromiter((i for ids in programs for i in ids), dtype=np.int64,
                            count=int(lengths.sum()))
        rows = np.repeat(np.arange(n, dtype=np.int64), lengths)
        out = np.zeros(n * width)
        at_rows, at = self._expand(parts, rows, self.add_ptr)
        out += np.bincount(at_rows * width + np.asarray(self.add_col, dtype=np.int64)[at],
                           weights=np.asarray(self.add_val)[at], minlength=n * width)
        at_rows, at = self._expand(parts, rows, self.max_ptr)
        np.maximum.at(out, at_rows * width + np.asarray(self.max_col, dtype=np.int64)[at],
                      np.asarray(self.max_val)[at])
        out = out.reshape(n, width)
        at_rows, at = self._expand(parts, rows, self.depth_ptr)
        if len(at):
            depths = np.asarray(self.depth_val, dtype=np.float64)[at]
            count = np.bincount(at_rows, minlength=n)
            seen = count > 0
            out[seen, _DEPTH_MEAN] = (np.bincount(at_rows, weights=depths, minlength=n)[seen]
                                      / count[seen])
            deepest = np.full(n, -np.inf)
            np.maximum.at(deepest, at_rows, depths)
            out[seen, _DEPTH_MAX] = deepest[seen]
        return out.astype(np.float32)

    @staticmethod
    def _expand(parts, rows, ptr) -> tuple[np.ndarray, np.ndarray]:
        """The row and the position of every entry of the given parts (CSR expansion)."""
        ptr = np.asarray(ptr, dtype=np.int64)
        start, count = ptr[parts], ptr[parts + 1] - ptr[parts]
        offsets = np.repeat(start - np.cumsum(count) + count, count)
        return np.repeat(rows, count), offsets + np.arange(len(offsets))


def _snake(name: str) -> str:
    """MetaSchedule instruction kind -> its method name in a printed trace."""
    return {"GetSBlock": "get_sblock", "RFactor": "rfactor"}.get(
        name, re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower())


PRINTED_KIND_COL = {_snake(name): col for name, col in KIND_COL.items()}
_PRINTED_CALL = re.compile(r"sch\.(\w+)\((.*)\)\s*$", re.M)
_PRINTED_DECISION = re.compile(r"decision=(\[[^\]]*\]|-?\d+)")
_PRINTED_UNROLL = re.compile(r'ann_key="pragma_auto_unroll_max_step", ann_val=(\d+)\b')
_PRINTED_AXIS = re.compile(r'thread_axis="([^"]*)"')
PRINTED_POSTPROC = "sch.enter_postproc()"


def _postproc_part_text(text: str) -> dict:
    """:func:`_postproc_part` of the instructions printed in ``text`` (``str(trace)`` from
    ``sch.enter_postproc()`` on)."""
    vec = defaultdict(float)
    for name, args in _PRINTED_CALL.findall(text):
        vec[PRINTED_KIND_COL.get(name, OTHER_COL)] += 1
        if name == "bind":
            found = _PRINTED_AXIS.search(args)
            axis = found.group(1) if found else ""
            vec[COL["bind_block" if axis.startswith("blockIdx") else "bind_vthread"
                    if axis.startswith("vthread") else "bind_thread"]] += 1
        elif name == "annotate":
            found = _PRINTED_UNROLL.search(args)
            if found:
                vec[UNROLL] = max(vec[UNROLL], _log2(1 + int(found.group(1))))
    return vec


def _postproc_part(insts) -> dict:
    """Instructions after EnterPostproc (they vary with the decisions): kinds, binds, unroll."""
    vec = defaultdict(float)
    for inst in insts:
        name = inst[0]
        vec[KIND_COL.get(name, OTHER_COL)] += 1
        if name == "Bind":
            axis = str(inst[2][0]) if inst[2] else ""
            vec[COL["bind_block" if axis.startswith("blockIdx") else "bind_vthread"
                    if axis.startswith("vthread") else "bind_thread"]] += 1
        elif name == "Annotate" and inst[2] and inst[2][0] == "pragma_auto_unroll_max_step":
            value = inst[1][1] if len(inst[1]) > 1 else 0
            if isinstance(value, int):
                vec[UNROLL] = max(vec[UNROLL], _log2(1 + value))
    return vec


class _MetaSchedulePlan:
    """What one trace sketch (its instructions up to EnterPostproc) contributes, precomputed.

    All programs of one design-space sketch share those instructions and differ in decisions
    and in the postprocessing instructions, so a program is the sketch's fixed part, its
    postprocessing part and one part per decision (cached: programs share decisions).
    """

    def __init__(self, insts, parts: _Parts, splits: dict):
        self.parts = parts
        self.splits = splits  # (factors, axis) -> entries, shared by the plans
        self._ids: dict[tuple, int] = {}  # (index, decision) -> part id
        self.decision_kind: dict[int, tuple] = {}
        static = defaultdict(float)
        tokens: list[tuple[int, int]] = []  # (instruction index, bucket seed)
        uses: dict[str, str] = {}  # sampled variable -> annotation key that consumes it
        for inst in insts:
            if inst[0] == "Annotate" and len(inst[1]) > 1 and isinstance(inst[1][1], str):
                uses[inst[1][1]] = str(inst[2][0]) if inst[2] else ""
        depths = []
        for index, inst in enumerate(insts):
            name, inputs, attrs, outputs = (list(inst) + [[], [], []])[:4]
            kind = MS_KINDS.get(name, "other")
            static[COUNT0 + KINDS.index(kind)] += 1
            if name == "SamplePerfectTile":
                self.decision_kind[index] = ("tile",)
            elif name == "SampleCategorical" and attrs:
                key = uses.get(outputs[0], "") if outputs else ""
                self.decision_kind[index] = ("categorical", attrs[0], key)
            elif name == "SampleComputeLocation":
                self.decision_kind[index] = ("location",)
            elif name == "Bind" and attrs:
                axis = str(attrs[0])
                col = ("bind_block" if axis.startswith("blockIdx") else "bind_vthread"
                       if axis.startswith("vthread") else "bind_thread")
                static[COL[col]] += 1
            elif name in ("CacheRead", "CacheWrite") and len(attrs) > 1:
                col = _scope_col("cache_read" if name == "CacheRead" else "cache_write", attrs[1])
                if col is not None:
                    static[col] += 1
            elif name == "Annotate" and attrs and len(inputs) > 1:
                self._annotation(static, str(attrs[0]), inputs[1])
            elif name in ("ComputeAt", "ReverseComputeAt") and len(attrs) > 1:
                depths.append(attrs[1])
            if kind != "structure" and len(tokens) < MAX_TOKENS:
                args = attrs if kind in ("annotate", "bind", "cache_read", "cache_write") else []
                tokens.append((index, zlib.crc32(orjson.dumps([kind, len(tokens), args]))))
        # tokens of instructions without a decision are the same for every program of the
        # sketch: count them once; the others are hashed with their decision per program
        self.token_seed: dict[int, int] = {}
        for index, seed in tokens:
            if insts[index][0].startswith("Sample"):
                self.token_seed[index] = seed
            else:
                static[TOK0 + seed % N_HASH] += 1
        self.static_id = parts.add(static, [d for d in depths if isinstance(d, int) and d >= 0])
        tiles = [(i, insts[i][2][0] if insts[i][2] else 0) for i, how in
                 sorted(self.decision_kind.items()) if how[0] == "tile"]
        for (index, _), axis in zip(tiles, _axis_positions([n for _, n in tiles])):
            self.decision_kind[index] = ("tile", axis)

    @staticmethod
    def _annotation(static, key: str, value) -> None:
        if not isinstance(value, int):
            return
        col = {"pragma_auto_unroll_max_step": "unroll_log2",
               "meta_schedule.vectorize": "vectorize_log2",
               "meta_schedule.parallel": "parallel_log2"}.get(key)
        if col is not None:
            static[COL[col]] = max(static[COL[col]], _log2(1 + value))

    def program(self, decisions, postproc_id: int) -> list[int]:
        """The part ids of one program of this sketch."""
        ids = [self.static_id, postproc_id]
        cache = self._ids
        for index, decision in decisions:
            try:
                key = (index, decision if isinstance(decision, int) else tuple(decision))
                part = cache.get(key)
            except TypeError:  # nested lists: key on the text
                key = (index, orjson.dumps(decision))
                part = cache.get(key)
            if part is None:
                part = cache[key] = self._decision(index, decision)
            ids.append(part)
        return ids

    def _decision(self, index, decision) -> int:
        """The part of one sampling decision: its hash buckets, and what it decides."""
        text = orjson.dumps(decision)
        cols = [DEC0 + zlib.crc32(text, index) % N_DECISION_HASH]
        seed = self.token_seed.get(index)
        if seed is not None:
            cols.append(TOK0 + zlib.crc32(text, seed) % N_HASH)
        vals = [1.0] * len(cols)
        how = self.decision_kind.get(index)
        if how is None:
            return self.parts.add_entries(cols, vals)
        if how[0] == "tile" and isinstance(decision, list):
            try:
                add_cols, add_vals, max_cols, max_vals = _split_entries(
                    tuple(decision), how[1], self.splits)
            except TypeError:  # not a list of factors
                return self.parts.add_entries(cols, vals)
            return self.parts.add_entries(cols + add_cols, vals + add_vals, max_cols, max_vals)
        if how[0] == "categorical" and isinstance(decision, int):
            candidates, key = how[1], how[2]
            value = candidates[decision] if 0 <= decision < len(candidates) else 0
            if key in ("meta_schedule.unroll_explicit", "meta_schedule.unroll_implicit"):
                value = _log2(1 + value)
                return self.parts.add_entries(cols, vals, (UNROLL,) if value else (),
                                              (value,) if value else ())
            if key == "meta_schedule.cooperative_fetch":
                value = _log2(value)
                return self.parts.add_entries(cols, vals, (_FETCH,) if value else (),
                                              (value,) if value else ())
        elif how[0] == "location" and isinstance(decision, int):
            return self.parts.add_entries(cols, vals, depths=(max(decision, 0),))
        return self.parts.add_entries(cols, vals)


def _split_entries(factors: tuple, axis: int, cache: dict) -> tuple:
    """The entries (see :func:`_entries`) of one split's tile factors (see
    :func:`_add_split`), cached in ``cache`` (one per featurizer): every program and sketch
    that samples the same factors for the same axis shares them."""
    key = (factors, axis)
    entries = cache.get(key)
    if entries is None:
        vec = defaultdict(float)
        _add_split(vec, factors, axis)
        entries = cache[key] = _entries(vec)
    return entries


def _set_axis(vec, factors, axis: int) -> None:
    """Only the by-axis columns of one split (Ansor: after all splits are known)."""
    logs = [_LOG2.get(f) or _log2(f) for f in reversed(factors)]
    if len(factors) >= 4:
        axis_base, n_axes, n_levels = SPAX0, N_SP_AXES, N_SP_AXIS_LEVELS
    else:
        axis_base, n_axes, n_levels = RDAX0, N_RD_AXES, N_RD_AXIS_LEVELS
    if 0 <= axis < n_axes:
        for level in range(min(len(logs), n_levels)):
            vec[axis_base + axis * n_levels + level] = logs[level]


_ANSOR_STEP = re.compile(r'\],(?=\[")')  # between two steps of a compact step list


def _ansor_step(position: int, step) -> tuple:
    """``(contribution, compute-at depths, split factors or None)`` of one Ansor step at its
    position (every step is a token: the first MAX_TOKENS count in the hashed encoding)."""
    vec = defaultdict(float)
    depths, factors = (), None
    code = step[0]
    kind = ANSOR_KINDS.get(code, "other")
    args: list = []
    if code == "AN" and len(step) > 3:
        kind = ANSOR_ANNOTATIONS.get(step[3], "annotate")
        args = [step[3]]
        if kind == "bind":
            col = ("bind_vthread" if step[3] == 4 else "bind_block"
                   if step[3] in (5, 7, 9) else "bind_thread")
            vec[COL[col]] += 1
    elif code == "SP" and len(step) > 4 and isinstance(step[4], list):
        lengths = [f for f in step[4] if isinstance(f, int)]
        extent = step[3] if isinstance(step[3], int) else 0
        inner = math.prod(lengths) if lengths else 1
        outer = extent // inner if extent and inner else 1
        factors = (outer, *lengths)
        _add_split(vec, factors)
        args = lengths
    elif code == "PR" and len(step) > 3 and "$" in str(step[3]):
        value = int(str(step[3]).split("$")[1] or 0)
        vec[UNROLL] = _log2(1 + value)
        kind, args = "unroll", [value]
    elif code in ("CHR", "CHW") and len(step) > 2:
        col = _scope_col("cache_read" if code == "CHR" else "cache_write", step[2])
        if col is not None:
            vec[col] += 1
        args = [step[2]]
    elif code == "CA" and len(step) > 3 and isinstance(step[3], int):
        depths = (step[3],)
    vec[COUNT0 + KINDS.index(kind)] += 1
    vec[DEC0 + _decision_bucket(position, step)] += 1
    if position < MAX_TOKENS:
        vec[TOK0 + _token_bucket(kind, position, args)] += 1
    return vec, depths, factors


class ProgramFeaturizer:
    """Turns programs (stored trace or step-list JSON text, or live traces) into
    :data:`COLUMNS` vectors.

    Caches what programs share (sketches, decisions, steps); the caches are dropped between
    batches once they exceed ``max_parts`` contributions. A featurizer is cheap to create.
    """

    columns = COLUMNS

    def __init__(self, max_parts: int = 1_000_000):
        self.max_parts = max_parts
        self._reset()

    def _reset(self) -> None:
        self._parts = _Parts()
        self._plans: dict = {}  # sketch key (text or bytes) -> _MetaSchedulePlan
        self._postproc: dict = {}  # postprocessing text (JSON or printed) -> part id
        self._ansor_steps: dict[tuple, tuple] = {}  # (position, text) -> (part id, factors)
        self._axes: dict[tuple, int] = {}  # (factors, axis) -> part id of the by-axis columns
        self._splits: dict[tuple, tuple] = {}  # (factors, axis) -> entries, shared by plans
        # printed traces: sketch text with blanked decisions -> (plan, decision indices) or
        # None where the printed form did not match the JSON one
        self._printed: dict[str, tuple | None] = {}

    # ------------------------------------------------------------------ batches
    def transform(self, source_formats, texts) -> np.ndarray:
        """One row per stored program (float32)."""
        return self._rows([self._text(fmt, text) for fmt, text in zip(source_formats, texts)])

    def transform_traces(self, traces) -> np.ndarray:
        """One row per MetaSchedule trace given as Python lists (``trace.as_json()``)."""
        return self._rows([self._trace(trace) for trace in traces])

    def transform_printed(self, texts, trace_of) -> np.ndarray:
        """One row per live MetaSchedule trace given as its printed text (``str(trace)``,
        0.2 ms, against 3-4 ms for ``as_json()`` and its conversion); ``trace_of(i)`` gives
        the i-th trace as Python lists, asked for only the first time a sketch is seen (and
        every time for a sketch whose printed decisions or postprocessing do not match the
        JSON form). Rows equal :meth:`transform_traces` on the same traces."""
        return self._rows([self._printed_trace(text, trace_of, i)
                           for i, text in enumerate(texts)])

    def _rows(self, programs) -> np.ndarray:
        rows = self._parts.assemble(programs)
        if len(self._parts) > self.max_parts:
            self._reset()
        return rows

    # ------------------------------------------------------------ one program
    # (each call assembles a batch of one: featurize many programs with the batch methods)
    def metaschedule(self, trace) -> np.ndarray:
        return self.transform_traces([trace])[0]

    def metaschedule_text(self, text: str) -> np.ndarray:
        return self._rows([self._metaschedule_text(text)])[0]

    def ansor(self, steps) -> np.ndarray:
        return self.ansor_text(orjson.dumps(steps).decode())

    def ansor_text(self, text: str) -> np.ndarray:
        return self._rows([self._ansor_text(text)])[0]

    def from_text(self, source_format: str, text: str) -> np.ndarray:
        return self._rows([self._text(source_format, text)])[0]

    # ---------------------------------------------- programs as lists of part ids
    def _text(self, source_format: str, text: str) -> list[int]:
        if source_format == "metaschedule":
            return self._metaschedule_text(text)
        return self._ansor_text(text)

    def _plan(self, key, insts) -> _MetaSchedulePlan:
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = _MetaSchedulePlan(insts, self._parts, self._splits)
        return plan

    def _postproc_id(self, key, insts) -> int:
        part = self._postproc.get(key)
        if part is None:
            part = self._postproc[key] = self._parts.add(_postproc_part(insts))
        return part

    def _trace(self, trace) -> list[int]:
        insts, decisions = trace[0], trace[1]
        split = next((i for i, inst in enumerate(insts) if inst[0] == "EnterPostproc"),
                     len(insts))
        plan = self._plan(orjson.dumps(insts[:split]), insts[:split])
        postproc = insts[split:]
        return plan.program(decisions, self._postproc_id(orjson.dumps(postproc), postproc))

    def _printed_trace(self, text: str, trace_of, i: int) -> list[int]:
        cut = text.find(PRINTED_POSTPROC)
        head, tail = (text, "") if cut < 0 else (text[:cut], text[cut:])
        values = _PRINTED_DECISION.findall(head)
        key = _PRINTED_DECISION.sub("decision=?", head)
        sketch, trace = self._printed.get(key, False), None
        if sketch is False:  # first sight: keep it if the printed form agrees with the JSON
            trace = trace_of(i)
            insts, decisions = trace[0], trace[1]
            split = next((j for j, inst in enumerate(insts) if inst[0] == "EnterPostproc"),
                         len(insts))
            agree = ([orjson.loads(v) for v in values] == [d for _, d in decisions]
                     and _postproc_part(insts[split:]) == _postproc_part_text(tail))
            self._printed[key] = sketch = ((self._plan(orjson.dumps(insts[:split]),
                                                       insts[:split]),
                                            [j for j, _ in decisions]) if agree else None)
        if sketch is None:
            return self._trace(trace if trace is not None else trace_of(i))
        plan, indices = sketch
        part = self._postproc.get(tail)
        if part is None:
            part = self._postproc[tail] = self._parts.add(_postproc_part_text(tail))
        return plan.program([(j, orjson.loads(v)) for j, v in zip(indices, values)], part)

    def _metaschedule_text(self, text: str) -> list[int]:
        """Parses only what varies between programs of a sketch once that sketch has been
        seen (the text up to EnterPostproc is its key)."""
        pos = text.find('["EnterPostproc"')
        if pos < 0:
            return self._trace(orjson.loads(text))
        key = text[:pos]
        plan = self._plans.get(key)
        if plan is None:
            insts = orjson.loads(text)[0]
            split = next(i for i, inst in enumerate(insts) if inst[0] == "EnterPostproc")
            plan = self._plan(key, insts[:split])
        # The postprocessing instructions repeat across programs too: count them once per
        # distinct text, and parse only the decisions (they start at ",[[<index>").
        boundary = _DECISIONS.search(text, pos)
        if boundary is None:
            postproc, decisions = orjson.loads("[[" + text[pos:])
            return plan.program(decisions, self._postproc_id(orjson.dumps(postproc), postproc))
        end = boundary.start() + 1  # just after the last instruction
        postproc_text = text[pos:end]
        part = self._postproc.get(postproc_text)
        if part is None:
            part = self._postproc_id(postproc_text, orjson.loads("[" + postproc_text + "]"))
        return plan.program(orjson.loads(text[end + 2:-1]), part)

    def _ansor_text(self, text: str) -> list[int]:
        """A step list given as compact JSON text (as datasets store it): each step's part is
        cached by (position, step text)."""
        inner = text[1:-1]
        steps = _ANSOR_STEP.split(inner) if inner else []
        last = len(steps) - 1
        ids, splits = [], []
        cache = self._ansor_steps
        for position, part_text in enumerate(steps):
            key = (position, part_text)
            hit = cache.get(key)
            if hit is None:
                step = orjson.loads(part_text if position == last else part_text + "]")
                vec, depths, factors = _ansor_step(position, step)
                hit = cache[key] = (self._parts.add(vec, depths), factors)
            ids.append(hit[0])
            if hit[1] is not None:
                splits.append(hit[1])
        for factors, axis in zip(splits, _axis_positions([len(f) for f in splits])):
            key = (factors, axis)
            part = self._axes.get(key)
            if part is None:
                vec = defaultdict(float)
                _set_axis(vec, factors, axis)
                part = self._axes[key] = self._parts.add(vec)
            ids.append(part)
        return ids
