"""MetaSchedule traces (stored JSON, live lists or printed text) as program feature parts: a
sketch's fixed instructions, its postprocessing, one part per sampling decision."""
from __future__ import annotations

import re
import zlib
from collections import defaultdict

import orjson

from ._program_parts import Parts, vector_entries
from ._program_schema import (COLUMN, DECISION_START, FETCH_COLUMN, KIND_COL, KIND_START, KINDS,
                              MAX_TOKENS, MS_KINDS, N_DECISION_HASH, N_HASH, OTHER_COL,
                              RFACTOR_EXTENT, TOKEN_START, UNROLL_COLUMN, add_split,
                              axis_positions, bind_column, location_entries, log2, scope_column)

def printed_name(name: str) -> str:
    """MetaSchedule instruction kind -> its method name in a printed trace."""
    return {"GetSBlock": "get_sblock", "RFactor": "rfactor"}.get(
        name, re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower())


PRINTED_KIND_COL = {printed_name(name): col for name, col in KIND_COL.items()}
PRINTED_CALL = re.compile(r"sch\.(\w+)\((.*)\)\s*$", re.M)
PRINTED_DECISION = re.compile(r"decision=(\[[^\]]*\]|-?\d+)")
PRINTED_UNROLL = re.compile(r'ann_key="pragma_auto_unroll_max_step", ann_val=(\d+)\b')
PRINTED_AXIS = re.compile(r'thread_axis="([^"]*)"')
PRINTED_POSTPROC = "sch.enter_postproc()"


def printed_postproc_part(text: str) -> dict:
    """:func:`postproc_part` of the instructions printed in ``text`` (``str(trace)`` from
    ``sch.enter_postproc()`` on)."""
    vec = defaultdict(float)
    for name, args in PRINTED_CALL.findall(text):
        vec[PRINTED_KIND_COL.get(name, OTHER_COL)] += 1
        if name == "bind":
            found = PRINTED_AXIS.search(args)
            axis = found.group(1) if found else ""
            vec[bind_column(axis)] += 1
        elif name == "annotate":
            found = PRINTED_UNROLL.search(args)
            if found:
                vec[UNROLL_COLUMN] = max(vec[UNROLL_COLUMN], log2(1 + int(found.group(1))))
    return vec


def postproc_part(insts) -> dict:
    """Instructions after EnterPostproc (they vary with the decisions): kinds, binds, unroll."""
    vec = defaultdict(float)
    for inst in insts:
        name = inst[0]
        vec[KIND_COL.get(name, OTHER_COL)] += 1
        if name == "Bind":
            axis = str(inst[2][0]) if inst[2] else ""
            vec[bind_column(axis)] += 1
        elif name == "Annotate" and inst[2] and inst[2][0] == "pragma_auto_unroll_max_step":
            value = inst[1][1] if len(inst[1]) > 1 else 0
            if isinstance(value, int):
                vec[UNROLL_COLUMN] = max(vec[UNROLL_COLUMN], log2(1 + value))
    return vec


class SketchPlan:
    """What one trace sketch (its instructions up to EnterPostproc) contributes, precomputed.

    All programs of one design-space sketch share those instructions and differ in decisions
    and in the postprocessing instructions, so a program is the sketch's fixed part, its
    postprocessing part and one part per decision (cached: programs share decisions).
    """

    def __init__(self, insts, parts: Parts, splits: dict):
        self.parts = parts
        self.splits = splits  # (factors, axis) -> entries, shared by the plans
        self._ids: dict[tuple, int] = {}  # (index, decision) -> part id
        self.decision_kind: dict[int, tuple] = {}
        # tile sampling index -> the positions of its factors whose loops are rfactor-ed
        self.rfactor_of: dict[int, list[int]] = {}
        samples: dict[str, tuple[int, int]] = {}  # tile variable -> (index, position)
        split_loops: dict[str, tuple] = {}  # loop -> (position, parts, factor variables)
        n_locations = 0
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
            static[KIND_START + KINDS.index(kind)] += 1
            if name == "SamplePerfectTile":
                self.decision_kind[index] = ("tile",)
                samples.update((str(o), (index, p)) for p, o in enumerate(outputs))
            elif name == "Split" and inputs:
                split_loops.update((str(o), (p, len(outputs), inputs[1:]))
                                   for p, o in enumerate(outputs))
            elif name == "RFactor" and inputs and str(inputs[0]) in split_loops:
                self._rfactor(static, split_loops[str(inputs[0])], samples)
            elif name == "SampleCategorical" and attrs:
                key = uses.get(outputs[0], "") if outputs else ""
                self.decision_kind[index] = ("categorical", attrs[0], key)
            elif name == "SampleComputeLocation":
                self.decision_kind[index] = ("location", n_locations)
                n_locations += 1
            elif name == "Bind" and attrs:
                static[bind_column(str(attrs[0]))] += 1
            elif name in ("CacheRead", "CacheWrite") and len(attrs) > 1:
                col = scope_column("cache_read" if name == "CacheRead" else "cache_write", attrs[1])
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
                static[TOKEN_START + seed % N_HASH] += 1
        self.static_id = parts.add(static, [d for d in depths if isinstance(d, int) and d >= 0])
        tiles = [(i, insts[i][2][0] if insts[i][2] else 0) for i, how in
                 sorted(self.decision_kind.items()) if how[0] == "tile"]
        for (index, _), axis in zip(tiles, axis_positions([n for _, n in tiles])):
            self.decision_kind[index] = ("tile", axis)

    def _rfactor(self, static, split_loop: tuple, samples: dict) -> None:
        """An rfactor of a loop made by a split: whether it is the split's innermost loop,
        and which sampled factor (its extent) the decision will give."""
        position, parts, factors = split_loop
        static[COLUMN["rfactor_inner" if position == parts - 1 else "rfactor_outer"]] += 1
        sampled = samples.get(str(factors[position])) if position < len(factors) else None
        if sampled is not None:
            self.rfactor_of.setdefault(sampled[0], []).append(sampled[1])

    @staticmethod
    def _annotation(static, key: str, value) -> None:
        if not isinstance(value, int):
            return
        col = {"pragma_auto_unroll_max_step": "unroll_log2",
               "meta_schedule.vectorize": "vectorize_log2",
               "meta_schedule.parallel": "parallel_log2"}.get(key)
        if col is not None:
            static[COLUMN[col]] = max(static[COLUMN[col]], log2(1 + value))

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
        cols = [DECISION_START + zlib.crc32(text, index) % N_DECISION_HASH]
        seed = self.token_seed.get(index)
        if seed is not None:
            cols.append(TOKEN_START + zlib.crc32(text, seed) % N_HASH)
        vals = [1.0] * len(cols)
        how = self.decision_kind.get(index)
        if how is None:
            return self.parts.add_entries(cols, vals)
        if how[0] == "tile" and isinstance(decision, list):
            try:
                add_cols, add_vals, max_cols, max_vals = split_entries(
                    tuple(decision), how[1], self.splits)
            except TypeError:  # not a list of factors
                return self.parts.add_entries(cols, vals)
            extents = [log2(decision[q]) for q in self.rfactor_of.get(index, ())
                       if q < len(decision) and isinstance(decision[q], int) and decision[q] > 0]
            if extents:
                max_cols, max_vals = [*max_cols, RFACTOR_EXTENT], [*max_vals, max(extents)]
            return self.parts.add_entries(cols + add_cols, vals + add_vals, max_cols, max_vals)
        if how[0] == "categorical" and isinstance(decision, int):
            candidates, key = how[1], how[2]
            value = candidates[decision] if 0 <= decision < len(candidates) else 0
            if key in ("meta_schedule.unroll_explicit", "meta_schedule.unroll_implicit"):
                value = log2(1 + value)
                return self.parts.add_entries(cols, vals, (UNROLL_COLUMN,) if value else (),
                                              (value,) if value else ())
            if key == "meta_schedule.cooperative_fetch":
                value = log2(value)
                return self.parts.add_entries(cols, vals, (FETCH_COLUMN,) if value else (),
                                              (value,) if value else ())
        elif how[0] == "location" and isinstance(decision, int):
            location_cols, location_vals = location_entries(decision, how[1])
            return self.parts.add_entries(cols + location_cols, vals + location_vals,
                                          depths=(max(decision, 0),))
        return self.parts.add_entries(cols, vals)


def split_entries(factors: tuple, axis: int, cache: dict) -> tuple:
    """The entries (see :func:`vector_entries`) of one split's tile factors (see
    :func:`add_split`), cached in ``cache`` (one per featurizer): every program and sketch
    that samples the same factors for the same axis shares them."""
    key = (factors, axis)
    entries = cache.get(key)
    if entries is None:
        vec = defaultdict(float)
        add_split(vec, factors, axis)
        entries = cache[key] = vector_entries(vec)
    return entries


def postproc_start(insts) -> int:
    """Index of a trace's EnterPostproc instruction (its length when it has none)."""
    return next((i for i, inst in enumerate(insts) if inst[0] == "EnterPostproc"), len(insts))
