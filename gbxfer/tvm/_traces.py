"""Live MetaSchedule traces in the JSON form the featurizer reads, without paying for
``trace.as_json()`` on every candidate.

An evolutionary round scores thousands of candidates that share a few sketches and differ
only in their sampling decisions. ``as_json()`` plus the conversion to Python costs about
3-4 ms a candidate; printing the trace (``str(trace)``) costs 0.2 ms and shows every decision
as ``decision=...``. So a trace is printed, its decisions are read from the text, and the
text with the decisions blanked out names its sketch; the sketch's instructions (and which of
them carry the decisions) come from ``as_json()`` the first time it is seen, and only if the
printed decisions match the JSON ones there. A trace whose printed form does not match takes
the slow path every time.
"""
from __future__ import annotations

import re

import orjson

from ._json import to_python

_DECISION = re.compile(r"decision=(\[[^\]]*\]|-?\d+)")


class TraceReader:
    """``reader(trace)`` -> ``[instructions, [[instruction index, decision], ...]]``, equal to
    ``to_python(trace.as_json())``."""

    def __init__(self):
        self._sketches: dict[str, tuple | None] = {}  # blanked text -> (insts, indices) | None

    def __call__(self, trace) -> list:
        text = str(trace)
        values = _DECISION.findall(text)
        key = _DECISION.sub("decision=?", text)
        sketch = self._sketches.get(key, False)
        if sketch:
            insts, indices = sketch
            return [insts, [[i, orjson.loads(v)] for i, v in zip(indices, values)]]
        full = to_python(trace.as_json())
        if sketch is False:  # first sight: keep the sketch if the printed decisions agree
            decisions = full[1]
            agree = [orjson.loads(v) for v in values] == [d for _, d in decisions]
            self._sketches[key] = (full[0], [i for i, _ in decisions]) if agree else None
        return full
