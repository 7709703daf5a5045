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
- compute locations: ``location_inline`` / ``_root`` / ``_loop`` count the blocks each sampled
  location inlines, leaves at the root or puts under a loop (Ansor: its CI / CR / CA steps),
  and ``location<j>`` (j < :data:`N_LOCATIONS`) is the j-th sampled location of the sketch + 3
  (1 inline, 2 root, 3 + k under loop k; 0 where the sketch samples fewer; MetaSchedule only);
- reductions split for parallelism (MetaSchedule's rfactor rule): ``rfactor_inner`` /
  ``rfactor_outer`` count rfactors of a split's innermost / an outer loop, and
  ``rfactor_extent_log2`` is log2 of the largest sampled extent of an rfactor-ed loop (0 for
  Ansor step lists, whose RF steps count only in ``count_rfactor``);
- ``tok_<j>``: a position-aware hashed encoding of the first :data:`MAX_TOKENS` scheduling
  primitives (structure look-ups such as GetLoops left out): each token (kind, position,
  arguments: tile factors, annotation values, decisions) adds 1 to one of :data:`N_HASH`
  buckets (CRC-32, stable across processes);
- ``dec_<j>``: every sampling decision (or Ansor split) with its position, hashed the same way
  into :data:`N_DECISION_HASH` buckets, so that programs differing in any decision differ here.

The module is the public featurizer; its layers live beside it: the columns and what one
primitive writes (``_program_schema``), the sparse accumulator (``_program_parts``), MetaSchedule
traces (``_program_traces``) and Ansor step lists (``_program_steps``).
"""
from __future__ import annotations

import re
from collections import defaultdict

import numpy as np
import orjson

from ._program_parts import Parts
from ._program_schema import COLUMNS, axis_positions, set_axis
from ._program_steps import ANSOR_STEP_GAP, ansor_step
from ._program_traces import (PRINTED_DECISION, PRINTED_POSTPROC, SketchPlan, postproc_part,
                              postproc_start, printed_postproc_part)

__all__ = ["COLUMNS", "ProgramFeaturizer"]
DECISIONS_START = re.compile(r"\]\],\[\[-?\d")  # end of the instructions, start of the decisions


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
        self._parts = Parts()
        self._plans: dict = {}  # sketch key (text or bytes) -> SketchPlan
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

    # ---------------------------------------------- programs as lists of part ids
    def _text(self, source_format: str, text: str) -> list[int]:
        if source_format == "metaschedule":
            return self._metaschedule_text(text)
        return self._ansor_text(text)

    def _plan(self, key, insts) -> SketchPlan:
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = SketchPlan(insts, self._parts, self._splits)
        return plan

    def _postproc_id(self, key, insts) -> int:
        part = self._postproc.get(key)
        if part is None:
            part = self._postproc[key] = self._parts.add(postproc_part(insts))
        return part

    def _trace(self, trace) -> list[int]:
        insts, decisions = trace[0], trace[1]
        split = postproc_start(insts)
        plan = self._plan(orjson.dumps(insts[:split]), insts[:split])
        postproc = insts[split:]
        return plan.program(decisions, self._postproc_id(orjson.dumps(postproc), postproc))

    def _printed_trace(self, text: str, trace_of, i: int) -> list[int]:
        cut = text.find(PRINTED_POSTPROC)
        head, tail = (text, "") if cut < 0 else (text[:cut], text[cut:])
        values = PRINTED_DECISION.findall(head)
        key = PRINTED_DECISION.sub("decision=?", head)
        sketch, trace = self._printed.get(key, False), None
        if sketch is False:  # first sight: keep it if the printed form agrees with the JSON
            trace = trace_of(i)
            insts, decisions = trace[0], trace[1]
            split = postproc_start(insts)
            agree = ([orjson.loads(v) for v in values] == [d for _, d in decisions]
                     and postproc_part(insts[split:]) == printed_postproc_part(tail))
            self._printed[key] = sketch = ((self._plan(orjson.dumps(insts[:split]),
                                                       insts[:split]),
                                            [j for j, _ in decisions]) if agree else None)
        if sketch is None:
            return self._trace(trace if trace is not None else trace_of(i))
        plan, indices = sketch
        part = self._postproc.get(tail)
        if part is None:
            part = self._postproc[tail] = self._parts.add(printed_postproc_part(tail))
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
            split = postproc_start(insts)
            plan = self._plan(key, insts[:split])
        # The postprocessing instructions repeat across programs too: count them once per
        # distinct text, and parse only the decisions (they start at ",[[<index>").
        boundary = DECISIONS_START.search(text, pos)
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
        steps = ANSOR_STEP_GAP.split(inner) if inner else []
        last = len(steps) - 1
        ids, splits = [], []
        cache = self._ansor_steps
        for position, part_text in enumerate(steps):
            key = (position, part_text)
            hit = cache.get(key)
            if hit is None:
                step = orjson.loads(part_text if position == last else part_text + "]")
                vec, depths, factors = ansor_step(position, step)
                hit = cache[key] = (self._parts.add(vec, depths), factors)
            ids.append(hit[0])
            if hit[1] is not None:
                splits.append(hit[1])
        for factors, axis in zip(splits, axis_positions([len(f) for f in splits])):
            key = (factors, axis)
            part = self._axes.get(key)
            if part is None:
                vec = defaultdict(float)
                set_axis(vec, factors, axis)
                part = self._axes[key] = self._parts.add(vec)
            ids.append(part)
        return ids
