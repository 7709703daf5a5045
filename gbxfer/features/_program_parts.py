"""A sparse accumulator of program feature vectors: contributions registered once, programs
assembled many at a time with numpy."""
from __future__ import annotations

import numpy as np

from ._program_schema import (COLUMN, COLUMNS, DEPTH_MAX, DEPTH_MEAN, N_RD_AXES, N_RD_AXIS_LEVELS,
                              N_SP_AXES, N_SP_AXIS_LEVELS, RD_AXIS_START, RD_INNER_MAX,
                              RFACTOR_EXTENT, SP_AXIS_START, SP_INNER_MAX)

MAX_COLUMNS = frozenset([SP_INNER_MAX, RD_INNER_MAX, RFACTOR_EXTENT] + [COLUMN[c] for c in (
    "unroll_log2", "vectorize_log2", "parallel_log2", "fetch_vector_log2")])
# The by-axis columns are written once per program (each split has its own axis index) over
# zeros, so "set" and "maximum" agree on them.
MAX_COLUMNS |= frozenset(range(SP_AXIS_START, SP_AXIS_START + N_SP_AXES * N_SP_AXIS_LEVELS))
MAX_COLUMNS |= frozenset(range(RD_AXIS_START, RD_AXIS_START + N_RD_AXES * N_RD_AXIS_LEVELS))


def vector_entries(vec: dict) -> tuple:
    """``(add columns, add values, max columns, max values)`` of the non-zero entries of a
    contribution ``vec`` (column -> value, as written into zeros)."""
    add_cols, add_vals, max_cols, max_vals = [], [], [], []
    for col, value in vec.items():
        if value:
            if col in MAX_COLUMNS:
                max_cols.append(col)
                max_vals.append(value)
            else:
                add_cols.append(col)
                add_vals.append(value)
    return add_cols, add_vals, max_cols, max_vals


class Parts:
    """Contributions to feature vectors, each registered once under an integer id.

    A part holds additive entries (counts, level sums, hash buckets), maximum entries (the
    ``*_max`` / ``*log2`` annotation columns and the by-axis tile columns) and compute-at
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
        return self.add_entries(*vector_entries(vec), depths)

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
            out[seen, DEPTH_MEAN] = (np.bincount(at_rows, weights=depths, minlength=n)[seen]
                                      / count[seen])
            deepest = np.full(n, -np.inf)
            np.maximum.at(deepest, at_rows, depths)
            out[seen, DEPTH_MAX] = deepest[seen]
        return out.astype(np.float32)

    @staticmethod
    def _expand(parts, rows, ptr) -> tuple[np.ndarray, np.ndarray]:
        """The row and the position of every entry of the given parts (CSR expansion)."""
        ptr = np.asarray(ptr, dtype=np.int64)
        start, count = ptr[parts], ptr[parts + 1] - ptr[parts]
        offsets = np.repeat(start - np.cumsum(count) + count, count)
        return np.repeat(rows, count), offsets + np.arange(len(offsets))
