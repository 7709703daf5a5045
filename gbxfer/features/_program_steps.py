"""Ansor / TenSet step lists as program feature parts: one part per step."""
from __future__ import annotations

import math
import re
from collections import defaultdict

from ._program_schema import (ANSOR_ANNOTATIONS, ANSOR_KINDS, COLUMN, DECISION_START, KIND_START,
                              KINDS, MAX_TOKENS, TOKEN_START, UNROLL_COLUMN, add_split,
                              decision_bucket, log2, scope_column, token_bucket)

ANSOR_STEP_GAP = re.compile(r'\],(?=\[")')  # between two steps of a compact step list


def ansor_step(position: int, step) -> tuple:
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
            vec[COLUMN[col]] += 1
    elif code == "SP" and len(step) > 4 and isinstance(step[4], list):
        lengths = [f for f in step[4] if isinstance(f, int)]
        extent = step[3] if isinstance(step[3], int) else 0
        inner = math.prod(lengths) if lengths else 1
        outer = extent // inner if extent and inner else 1
        factors = (outer, *lengths)
        add_split(vec, factors)
        args = lengths
    elif code == "PR" and len(step) > 3 and "$" in str(step[3]):
        value = int(str(step[3]).split("$")[1] or 0)
        vec[UNROLL_COLUMN] = log2(1 + value)
        kind, args = "unroll", [value]
    elif code in ("CHR", "CHW") and len(step) > 2:
        col = scope_column("cache_read" if code == "CHR" else "cache_write", step[2])
        if col is not None:
            vec[col] += 1
        args = [step[2]]
    elif code == "CA" and len(step) > 3 and isinstance(step[3], int):
        depths = (step[3],)
    if code in ("CA", "CI", "CR"):  # where a stage is computed: at a loop, inlined, at root
        vec[COLUMN[{"CA": "location_loop", "CI": "location_inline",
                    "CR": "location_root"}[code]]] += 1
    vec[KIND_START + KINDS.index(kind)] += 1
    vec[DECISION_START + decision_bucket(position, step)] += 1
    if position < MAX_TOKENS:
        vec[TOKEN_START + token_bucket(kind, position, args)] += 1
    return vec, depths, factors
