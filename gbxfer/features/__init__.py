"""Joint features of (program, workload, hardware) records, as a matrix with named blocks.

>>> from gbxfer import load_bundled
>>> from gbxfer.features import build
>>> fm = build(load_bundled(), blocks=["program", "workload", "hardware"])  # doctest: +SKIP
>>> fm.X.shape, fm.block_columns("hardware")[:3]                            # doctest: +SKIP

Blocks:

- ``program``: schedule-primitive features (:mod:`gbxfer.features._program`), no TVM needed;
- ``workload``: operator kind, shapes, FLOPs, bytes (:mod:`gbxfer.features._workload`);
- ``hardware``: the :class:`~gbxfer.hardware.HardwareDescriptor` of each record's profile;
- ``cross``: the program against the hardware and workload (:mod:`gbxfer.features._cross`);
- ``per_store``: TVM's per-store features aggregated per program, read from the dataset's
  precomputed table (``gbxfer features DATASET --per-store`` computes it with TVM; the bundled
  dataset ships it) or given as ``per_store=``; NaN where none was computed (for example where
  the workload IR cannot be loaded).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ..records.dataset import Dataset
from ..errors import GbxferError
from ..hardware.descriptor import FIELDS as HARDWARE_FIELDS
from ..hardware.descriptor import HardwareDescriptor
from ..hardware.profiles import load_profile
from . import _cross, _program, _workload
from ._program import ProgramFeaturizer

BLOCKS = ("program", "workload", "hardware", "cross", "per_store")


@dataclasses.dataclass
class FeatureMatrix:
    """Features of a dataset's records, with their groups and labels.

    Attributes
    ----------
    X : ndarray (n_records, n_features), float32; NaN where a value is unknown.
    columns : list of str, ``"<block>.<name>"``.
    records : DataFrame with ``record_id``, ``program_id``, ``task_key``, ``hardware``,
        ``hardware_family``, ``group`` (task x hardware id), ``latency`` (s, NaN when invalid),
        ``valid``, ``label`` (min latency / latency within the group; 0 when invalid) and
        ``weight`` (the task's weight).
    """

    X: np.ndarray
    columns: list
    records: pd.DataFrame

    @property
    def blocks(self) -> list[str]:
        return list(dict.fromkeys(c.split(".", 1)[0] for c in self.columns))

    def block_columns(self, block: str) -> list[str]:
        return [c for c in self.columns if c.startswith(block + ".")]

    def select_blocks(self, blocks) -> "FeatureMatrix":
        """The columns of ``blocks``, in the order given."""
        missing = [b for b in blocks if b not in self.blocks]
        if missing:
            raise GbxferError(f"the feature matrix has no {missing[0]!r} block "
                              f"(blocks: {', '.join(self.blocks)})")
        keep = [i for b in blocks for i, c in enumerate(self.columns)
                if c.split(".", 1)[0] == b]
        if keep == list(range(len(self.columns))):
            return self
        return FeatureMatrix(self.X[:, keep], [self.columns[i] for i in keep], self.records)

    def select_rows(self, mask) -> "FeatureMatrix":
        """The rows ``mask`` selects (booleans or indices), labels computed among them: a
        label is relative to the fastest valid record of its group in the selection."""
        idx = np.flatnonzero(mask) if np.asarray(mask).dtype == bool else np.asarray(mask)
        records = self.records.iloc[idx].reset_index(drop=True)
        records["label"] = labels(records)
        return FeatureMatrix(self.X[idx], self.columns, records)


def block_columns(block: str, per_store_columns=()) -> list[str]:
    """Column names of one block (``per_store``'s come from its table)."""
    names = {"program": _program.COLUMNS, "workload": _workload.COLUMNS,
             "hardware": HARDWARE_FIELDS, "cross": _cross.COLUMNS}.get(block, per_store_columns)
    return [f"{block}.{c}" for c in names]


def stack_blocks(blocks, n: int, rows: dict) -> np.ndarray:
    """The (n, total width) float32 matrix of ``blocks`` in order: ``rows[block]`` is an (n, k)
    array, a (k,) row shared by all n records, or a function returning either (called only
    for blocks asked for); the ``cross`` block is computed from the program, workload and
    hardware rows."""
    def part(block):
        value = rows[block]() if callable(rows[block]) else rows[block]
        value = np.asarray(value, dtype=np.float32)
        return np.broadcast_to(value, (n, len(value))) if value.ndim == 1 else value

    if "cross" in blocks and "cross" not in rows:
        needed = {b: part(b) for b in _cross.NEEDS}
        index = {c: (b, i) for b in _cross.NEEDS for i, c in enumerate(block_columns(b))}
        rows = {**rows, **needed, "cross": _cross.cross_rows(
            lambda c: needed[index[c][0]][:, index[c][1]].astype(float))}
    parts = [part(block) for block in blocks]
    return np.hstack(parts) if parts else np.empty((n, 0), dtype=np.float32)


def hardware_descriptor(name: str, family: str, target: str, machine: str = "",
                        probed: bool = True) -> HardwareDescriptor:
    """The descriptor of a record's hardware: its profile when one is known by that name
    (configs/hardware, or loaded from a path), else derived from the record's target and
    machine (whose microarchitecture, when it names one, fills what the target does not say).
    ``probed=False``: what a machine known only by its target and machine name gets — the
    profile's thread count, none of its probed fields."""
    try:
        profile = load_profile(name)
    except GbxferError:
        return HardwareDescriptor.from_target(target, name, family, machine=machine)
    overrides = {"threads": profile.threads, **(profile.descriptor if probed else {})}
    return HardwareDescriptor.from_target(profile.target, profile.name, profile.family,
                                          overrides, profile.machine)


def descriptor_rows(records: pd.DataFrame, probed: bool = True) -> np.ndarray:
    """The :func:`hardware_descriptor` vector of every record (one row each), computed once
    per hardware profile."""
    keys = records[["hardware", "hardware_family", "target", "machine"]].drop_duplicates(
        "hardware")
    table = {row.hardware: hardware_descriptor(row.hardware, row.hardware_family, row.target,
                                               row.machine, probed).vector()
             for row in keys.itertuples()}
    return np.stack([table[h] for h in records["hardware"]]) if len(records) else \
        np.empty((0, len(HARDWARE_FIELDS)))


def target_only_rows(records: pd.DataFrame) -> np.ndarray:
    """Every record's descriptor without its probed fields (``probed=False``)."""
    return descriptor_rows(records, probed=False)


def program_block(records: pd.DataFrame, featurizer: ProgramFeaturizer | None = None,
                  n_jobs: int = 1):
    """Program features, computed once per distinct program (they ignore the hardware);
    ``n_jobs`` processes share the tasks (the rows do not depend on how they are split)."""
    first = records.drop_duplicates("program_id")
    if n_jobs > 1 and featurizer is None and first["task_key"].nunique() > 1:
        rows = _parallel_rows(first, n_jobs)
    else:
        rows = (featurizer or ProgramFeaturizer()).transform(first["source_format"].tolist(),
                                                             first["program"].tolist())
    index = pd.Index(first["program_id"]).get_indexer(records["program_id"])
    return rows[index], block_columns("program")


_FORKED: tuple = ()  # (formats, programs) for the forked workers of _parallel_rows


def _featurize(rows) -> np.ndarray:
    formats, programs = _FORKED
    return ProgramFeaturizer().transform([formats[i] for i in rows], [programs[i] for i in rows])


def _parallel_rows(first: pd.DataFrame, n_jobs: int) -> np.ndarray:
    """:class:`ProgramFeaturizer` rows of ``first``'s programs from ``n_jobs`` processes, each
    given whole tasks (whose programs share sketches, which a featurizer caches). The workers
    are forked with the programs in memory: only row numbers and features cross over."""
    from ..records._parallel import fork_pool

    global _FORKED
    sizes = first.groupby("task_key", sort=True).size()
    share = np.zeros(len(sizes), dtype=int)  # the largest tasks first, each to the least loaded
    load = np.zeros(n_jobs)
    for i in np.argsort(-sizes.to_numpy(), kind="stable"):
        share[i] = int(np.argmin(load))
        load[share[i]] += sizes.iloc[i]
    part_of = pd.Series(share, index=sizes.index)[first["task_key"]].to_numpy()
    parts = [np.flatnonzero(part_of == j) for j in range(n_jobs)]
    _FORKED = (first["source_format"].tolist(), first["program"].tolist())
    try:
        with fork_pool(n_jobs) as pool:
            futures = [pool.submit(_featurize, rows) for rows in parts]
            out = np.empty((len(first), len(_program.COLUMNS)), dtype=np.float32)
            for rows, future in zip(parts, futures):
                if len(rows):
                    out[rows] = future.result()
    finally:
        _FORKED = ()
    return out


def workload_block(records: pd.DataFrame, tasks: pd.DataFrame):
    table = {row.task_key: _workload.workload_vector(row.operator, row.args, row.flops)
             for row in tasks.itertuples()}
    missing = np.full(len(_workload.COLUMNS), np.nan)
    X = np.stack([table.get(k, missing) for k in records["task_key"]]) if len(records) else \
        np.empty((0, len(_workload.COLUMNS)))
    return X.astype(np.float32), block_columns("workload")


def hardware_block(records: pd.DataFrame):
    X = descriptor_rows(records)
    return X.astype(np.float32), block_columns("hardware")


def labels(records: pd.DataFrame) -> np.ndarray:
    """min latency / latency within each task x hardware group; 0 for invalid records."""
    latency = records["latency"].where(records["valid"])
    best = latency.groupby([records["task_key"], records["hardware"]]).transform("min")
    return (best / latency).fillna(0.0).to_numpy()


def build(dataset: Dataset, blocks=("program", "workload", "hardware"),
          per_store: pd.DataFrame | None = None, n_jobs: int = 1) -> FeatureMatrix:
    """The feature matrix of every record of ``dataset``, blocks in the order given; the
    program block from ``n_jobs`` processes (the same matrix, bit for bit).

    ``per_store`` is a frame indexed by program id whose columns are per-store features (from
    :func:`gbxfer.tvm.per_store_features`); by default the dataset's own precomputed table.
    Programs it lacks get NaN.
    """
    unknown = [b for b in blocks if b not in BLOCKS]
    if unknown:
        raise GbxferError(f"unknown feature block {unknown[0]!r}; blocks: {', '.join(BLOCKS)}")
    dataset.validate()  # labels from out-of-domain latencies would train without complaint
    r = dataset.records
    rows, columns_of = {}, {}
    for block in [b for b in BLOCKS if b in blocks or (b in _cross.NEEDS and "cross" in blocks)]:
        if block == "program":
            X, cols = program_block(r, n_jobs=n_jobs)
        elif block == "workload":
            X, cols = workload_block(r, dataset.tasks)
        elif block == "hardware":
            X, cols = hardware_block(r)
        elif block == "cross":
            continue  # stack_blocks computes it from the three above
        else:
            per_store = dataset.per_store if per_store is None else per_store
            if per_store is None:
                raise GbxferError("the per_store block needs per-store features, and this "
                                  "dataset has none: compute them with `gbxfer features "
                                  "DATASET --per-store` (needs gbxfer[tvm])")
            X = per_store.reindex(r["program_id"]).to_numpy(dtype=np.float32)
            cols = block_columns("per_store", per_store.columns)
        rows[block] = X
        if block in blocks:
            columns_of[block] = cols
    columns = [c for b in blocks for c in columns_of.get(b, block_columns(b))]
    meta = r[["record_id", "program_id", "task_key", "hardware", "hardware_family", "latency",
              "valid"]].copy()
    meta["group"] = meta["task_key"] + "|" + meta["hardware"]
    meta["label"] = labels(r)
    weights = dict(zip(dataset.tasks["task_key"], dataset.tasks["weight"]))
    meta["weight"] = meta["task_key"].map(weights).fillna(1.0).to_numpy()
    return FeatureMatrix(stack_blocks(blocks, len(r), rows), columns, meta.reset_index(drop=True))
