"""Live MetaSchedule traces in the JSON form the featurizer reads, without paying for
``trace.as_json()`` on every candidate.

An evolutionary round scores thousands of candidates that share a few sketches and differ in
their sampling decisions and in what postprocessing added. ``as_json()`` plus the conversion
to Python costs about 3-4 ms a candidate; printing the trace (``str(trace)``) costs 0.2 ms
and shows every decision as ``decision=...``. So a trace is printed and cut at
``sch.enter_postproc()``: the part before, with its decisions blanked out, names the sketch;
the part after names the postprocessing, which takes a handful of forms per sketch. The
instructions of each (and which ones carry the decisions) come from ``as_json()`` the first
time they are seen, kept only if the printed decisions match the JSON ones; after that the
decisions are read from the text. A trace whose printed form does not match takes the slow
path every time.
"""
from __future__ import annotations

import re

import orjson

from ._json import to_python

_DECISION = re.compile(r"decision=(\[[^\]]*\]|-?\d+)")
_POSTPROC = "sch.enter_postproc()"


class TraceReader:
    """``reader(trace)`` -> ``[instructions, [[instruction index, decision], ...]]``, equal to
    ``to_python(trace.as_json())``."""

    def __init__(self):
        self._sketches: dict[str, tuple | None] = {}  # blanked text -> (insts, indices) | None
        self._postprocs: dict[str, list] = {}  # text from enter_postproc -> its instructions

    def __call__(self, trace) -> list:
        text = str(trace)
        cut = text.find(_POSTPROC)
        if cut < 0:
            cut = len(text)
        head, tail = text[:cut], text[cut:]
        values = _DECISION.findall(head)
        key = _DECISION.sub("decision=?", head)
        sketch = self._sketches.get(key, False)
        postproc = self._postprocs.get(tail)
        if sketch and postproc is not None:
            insts, indices = sketch
            return [insts + postproc,
                    [[i, orjson.loads(v)] for i, v in zip(indices, values)]]
        full = to_python(trace.as_json())
        if sketch is False:  # first sight: keep the sketch if the printed decisions agree
            decisions = full[1]
            agree = [orjson.loads(v) for v in values] == [d for _, d in decisions]
            split = next((i for i, inst in enumerate(full[0]) if inst[0] == "EnterPostproc"),
                         len(full[0]))
            self._sketches[key] = (full[0][:split], [i for i, _ in decisions]) if agree \
                else None
        sketch = self._sketches[key]
        if sketch:
            self._postprocs.setdefault(tail, full[0][len(sketch[0]):])
        return full
