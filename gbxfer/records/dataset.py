"""Datasets of measured programs: a records table and a tasks table, saved as a folder.

On disk a dataset is a folder holding ``manifest.json`` and the Parquet files it names with their
SHA-256 (``records-<token>.parquet``, ``tasks-<token>.parquet``). Saving writes new files first and
then replaces ``manifest.json`` in one ``os.replace`` (:mod:`gbxfer.manifests`), so a killed write
leaves the old dataset or the new one, never half of one; loading verifies every checksum and
validates the values. The columns are documented in ``docs/dataset.md``.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import GbxferError
from ..manifests import (MANIFEST, file_entry, new_token, prepare_folder, read_manifest,
                         switch_manifest, verify_files)
from ._parts import read_part

SCHEMA_VERSION = 3
READABLE_VERSIONS = (2, 3)  # 2: no machine column (read as "unknown")
FORMAT_NAME = "gbxfer-dataset"
# rows per Parquet row group, the unit a part of the dataset is read in (a task's row holds
# its workload's IR text, tens of kB)
ROW_GROUP = {"records": 65_536, "tasks": 1_024}

RECORD_SCHEMA = pa.schema([
    ("record_id", pa.string()),        # hash of (program_id, hardware)
    ("program_id", pa.string()),       # hash of (task_key, canonical program text)
    ("task_key", pa.string()),
    ("hardware", pa.string()),         # hardware profile name
    ("hardware_family", pa.string()),
    ("machine", pa.string()),          # the physical machine (CPU model and microarchitecture,
                                       # or GPU), shared by the profiles measured on it
    ("target", pa.string()),           # TVM target, canonical JSON
    ("source_format", pa.string()),    # "metaschedule" or "ansor"
    ("program", pa.string()),          # raw trace / step list as JSON text
    ("primitives", pa.list_(pa.string())),  # normalised primitive kinds, in order
    ("costs", pa.list_(pa.float64())),  # every valid repeat, seconds
    ("n_measurements", pa.int32()),    # measurement lines merged into this record
    ("n_failed", pa.int32()),          # of which failed (build/run error, timeout)
    ("latency", pa.float64()),         # median of costs, seconds; NaN when no valid repeat
    ("valid", pa.bool_()),
    ("error", pa.string()),            # error kind of the last failure, "" when none failed
    ("source", pa.string()),           # file of the first measurement
    ("line", pa.int64()),              # its 1-based line
])

TASK_SCHEMA = pa.schema([
    ("task_key", pa.string()),
    ("source_format", pa.string()),
    ("operator", pa.string()),         # e.g. "conv2d_nchw", "matmul"; "" when unknown
    ("description", pa.string()),      # human-readable one-liner
    ("args", pa.string()),             # JSON list of [dtype, shape] of the arguments
    ("flops", pa.float64()),           # floating-point operations per run; NaN when unknown
    ("network", pa.string()),          # comma-separated networks; "" when unknown
    ("weight", pa.float64()),          # occurrences in its network; 1 when unknown
    ("workload_format", pa.string()),  # "tvm-json", "ansor-key" or ""
    ("workload", pa.string()),         # workload IR / key text, stored once per task
])

# what a killed save leaves behind: tables no manifest names yet
_DEBRIS = re.compile(r"(records|tasks|per_store)-[0-9a-f]{12}\.parquet")
RECORD_COLUMNS = RECORD_SCHEMA.names
TASK_COLUMNS = TASK_SCHEMA.names


def _empty(schema: pa.Schema) -> pd.DataFrame:
    return schema.empty_table().to_pandas()


class Dataset:
    """Measured programs: one row per (program, hardware profile) record, plus their tasks.

    Parameters
    ----------
    records : pandas.DataFrame
        One row per record, columns ``RECORD_COLUMNS``.
    tasks : pandas.DataFrame
        One row per task, columns ``TASK_COLUMNS``.
    manifest : dict, optional
        Provenance carried along (sources, skipped lines, commands).
    per_store : pandas.DataFrame, optional
        Precomputed TVM per-store features, one row per program id (index ``program_id``),
        float32 columns (``gbxfer features DATASET --per-store`` computes them); the feature
        matrix reads its ``per_store`` block from here.
    """

    def __init__(self, records: pd.DataFrame | None = None, tasks: pd.DataFrame | None = None,
                 manifest: dict | None = None, per_store: pd.DataFrame | None = None):
        self.records = (_empty(RECORD_SCHEMA) if records is None
                        else records.reset_index(drop=True)[RECORD_COLUMNS])
        self.tasks = (_empty(TASK_SCHEMA) if tasks is None
                      else tasks.reset_index(drop=True)[TASK_COLUMNS])
        self.manifest = dict(manifest or {})
        self.per_store = per_store

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        return (f"Dataset({len(self.records)} records, {self.records['task_key'].nunique()} tasks, "
                f"hardware={sorted(self.records['hardware'].unique())})")

    # ---------------------------------------------------------------- persistence
    @classmethod
    def load(cls, path, tasks=None, verified: bool = False) -> "Dataset":
        """Load a dataset folder written by :meth:`save`: every file checked against the
        manifest's checksum, then its values validated (:meth:`validate`). ``tasks``: only the
        records of these task keys are read (a part, as a Dask worker reads one);
        ``verified``: the checksums were checked already (by whoever hands out the parts)."""
        path = Path(path)
        manifest = read_manifest(path, FORMAT_NAME, READABLE_VERSIONS, "dataset")
        if not verified:
            verify_files(path, manifest)
        tables = manifest.get("tables")
        if not isinstance(tables, dict) or not {"records", "tasks"} <= set(tables) or not all(
                name in manifest["files"] for name in tables.values()):
            raise GbxferError(f"{path / MANIFEST}: 'tables' must name the records and tasks "
                              "files listed in 'files'")
        try:
            schema = (RECORD_SCHEMA if manifest["schema_version"] == SCHEMA_VERSION else
                      RECORD_SCHEMA.remove(RECORD_SCHEMA.get_field_index("machine")))
            records = read_part(path / tables["records"], schema, tasks).to_pandas()
            per_store = (pd.read_parquet(path / tables["per_store"]) if "per_store" in tables
                         and tasks is None else None)
            tasks = read_part(path / tables["tasks"], TASK_SCHEMA, tasks).to_pandas()
        except (pa.ArrowException, OSError, ValueError, KeyError) as exc:  # checksummed
            raise GbxferError(f"{path}: unreadable table ({exc})") from None
        if "machine" not in records:  # schema 2: re-ingest with --machine to name it
            records.insert(RECORD_COLUMNS.index("machine"), "machine", "unknown")
        dataset = cls(records, tasks, manifest, per_store)
        dataset.validate(str(path))
        return dataset

    def save(self, path) -> Path:
        """Write the dataset to folder ``path`` atomically (see the module docstring); the
        folder must be new, empty or a dataset (a user's other files are never removed)."""
        path = Path(path)
        self.validate("the dataset to save")
        prepare_folder(path, FORMAT_NAME, "dataset", _DEBRIS.fullmatch)
        token = new_token()
        tables = {"records": f"records-{token}.parquet", "tasks": f"tasks-{token}.parquet"}
        _write_parquet(self.records, RECORD_SCHEMA, path / tables["records"], "records")
        _write_parquet(self.tasks, TASK_SCHEMA, path / tables["tasks"], "tasks")
        if self.per_store is not None:
            tables["per_store"] = f"per_store-{token}.parquet"
            self.per_store.astype(np.float32).to_parquet(path / tables["per_store"])
        manifest = {**{k: v for k, v in self.manifest.items() if k not in ("files", "saved")},
                    "format": FORMAT_NAME, "schema_version": SCHEMA_VERSION,
                    "tables": tables, "n_records": len(self.records),
                    "files": {name: file_entry(path, name) for name in tables.values()}}
        switch_manifest(path, manifest, _DEBRIS.fullmatch)
        self.manifest = read_manifest(path, FORMAT_NAME, (SCHEMA_VERSION,), "dataset")
        return path

    def validate(self, where: str = "dataset") -> None:
        """Raise :class:`GbxferError` naming the first record out of its domain: record ids
        unique; ids, hardware and task named; a valid record has finite, positive costs and a
        latency among them; an invalid one has no latency; every record's task in the tasks table."""
        r = self.records
        problems = []
        if r["record_id"].duplicated().any():
            problems.append(("duplicate record_id", r["record_id"].duplicated().to_numpy()))
        for column in ("record_id", "program_id", "task_key", "hardware", "machine"):
            problems.append((f"empty {column}",
                             (r[column].fillna("").astype(str).str.len() == 0).to_numpy()))
        valid = r["valid"].to_numpy(dtype=bool)
        latency = r["latency"].to_numpy(dtype=float)
        try:
            costs = [np.zeros(0) if c is None else np.asarray(c, dtype=float).ravel()
                     for c in r["costs"]]
        except (TypeError, ValueError) as exc:
            raise GbxferError(f"{where}: costs must be lists of seconds ({exc})") from None
        sizes = np.array([len(c) for c in costs], dtype=int)
        flat = np.concatenate(costs or [np.zeros(0)])
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])[sizes > 0]
        lowest, highest = np.full(len(r), np.nan), np.full(len(r), np.nan)
        with np.errstate(invalid="ignore"):
            lowest[sizes > 0] = np.minimum.reduceat(flat, starts) if len(flat) else []
            highest[sizes > 0] = np.maximum.reduceat(flat, starts) if len(flat) else []
            sound = (sizes > 0) & np.isfinite(highest) & (lowest > 0)
            problems += [
                ("valid record without finite positive costs", valid & ~sound),
                ("valid record whose latency is not finite and positive",
                 valid & ~(np.isfinite(latency) & (latency > 0))),
                ("valid record whose latency lies outside its costs",
                 valid & sound & ~((lowest <= latency) & (latency <= highest))),
                ("invalid record with a latency", ~valid & ~np.isnan(latency)),
                ("record of a task missing from the tasks table",
                 ~r["task_key"].isin(self.tasks["task_key"]).to_numpy()),
            ]
        _check_machines(r, where)
        for what, bad in problems:
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise GbxferError(
                    f"{where}: {int(bad.sum())} {what} (first: record "
                    f"{r['record_id'].iloc[i]!r}, latency {latency[i]:g}, costs "
                    f"{[float(c) for c in costs[i][:4]]})")

    # ---------------------------------------------------------------- selection
    def filter(self, task=None, hardware=None, family=None, valid=None,
               machine=None) -> "Dataset":
        """Records of the given task key(s), hardware profile(s), family(ies), machine(s) and
        validity."""
        mask = np.ones(len(self.records), dtype=bool)
        for column, wanted in (("task_key", task), ("hardware", hardware),
                               ("hardware_family", family), ("machine", machine)):
            if wanted is not None:
                wanted = [wanted] if isinstance(wanted, str) else list(wanted)
                mask &= self.records[column].isin(wanted).to_numpy()
        if valid is not None:
            mask &= self.records["valid"].to_numpy() == bool(valid)
        return self.select(mask)

    def select(self, mask) -> "Dataset":
        """Records where boolean ``mask`` is true (or at integer positions ``mask``)."""
        records = self.records.iloc[np.flatnonzero(mask) if np.asarray(mask).dtype == bool
                                    else np.asarray(mask)]
        tasks = self.tasks[self.tasks["task_key"].isin(records["task_key"].unique())]
        return Dataset(records, tasks, self.manifest, self.per_store)

    def groups(self):
        """Iterate ``((task_key, hardware), records)`` over task x hardware groups, sorted."""
        yield from self.records.groupby(["task_key", "hardware"], sort=True)

    @property
    def hardware(self) -> list[str]:
        return sorted(self.records["hardware"].unique())

    @property
    def machines(self) -> list[str]:
        return sorted(self.records["machine"].unique())

    # ---------------------------------------------------------------- combination
    @classmethod
    def concat(cls, datasets) -> "Dataset":
        """One dataset from several; duplicate records (same program and hardware) are merged."""
        datasets = list(datasets)
        if not datasets:
            return cls()
        records = pd.concat([d.records for d in datasets], ignore_index=True)
        _check_machines(records, "the datasets to merge")  # before merging their duplicates
        tasks = pd.concat([d.tasks for d in datasets], ignore_index=True)
        manifest = {"sources": [s for d in datasets for s in d.manifest.get("sources", [])],
                    "skipped": _sum_counts(d.manifest.get("skipped", {}) for d in datasets),
                    "commands": [c for d in datasets for c in d.manifest.get("commands", [])]}
        tables = [d.per_store for d in datasets if d.per_store is not None]
        per_store = None
        if tables:
            per_store = pd.concat(tables)
            per_store = per_store[~per_store.index.duplicated(keep="first")]
        return cls(merge_duplicate_records(records),
                   tasks.drop_duplicates("task_key", keep="first"), manifest, per_store)

    # ---------------------------------------------------------------- summaries
    def summary(self) -> dict:
        """Counts overall and per hardware profile, and latency ranges per hardware x task."""
        r = self.records
        by_hw = {}
        for name, g in r.groupby("hardware", sort=True):
            by_hw[name] = {
                "family": str(g["hardware_family"].iloc[0]),
                "machine": str(g["machine"].iloc[0]),
                "n_lines": int(g["n_measurements"].sum()),
                "n_records": int(len(g)),
                "n_valid": int(g["valid"].astype(bool).sum()),
                "n_failed": int((~g["valid"].astype(bool)).sum()),  # object dtype: ~True is -2
                "n_failed_measurements": int(g["n_failed"].sum()),
                "n_tasks": int(g["task_key"].nunique()),
                "n_programs": int(g["program_id"].nunique()),
            }
        groups = []
        for (task, hw), g in self.groups():
            lat = g.loc[g["valid"], "latency"].to_numpy()
            groups.append({
                "task_key": task, "hardware": hw, "n_records": int(len(g)),
                "n_valid": int(len(lat)),
                "latency_min": float(lat.min()) if len(lat) else None,
                "latency_median": float(np.median(lat)) if len(lat) else None,
                "latency_max": float(lat.max()) if len(lat) else None,
            })
        machines = {}
        for name, g in r.groupby("machine", sort=True):
            machines[name] = {"hardware": sorted(g["hardware"].unique()),
                              "n_records": int(len(g)),
                              "n_valid": int(g["valid"].astype(bool).sum()),
                              "n_tasks": int(g["task_key"].nunique())}
        n_hw = r["hardware"].nunique()
        per_program = r.groupby("program_id")["hardware"].nunique()
        return {
            "n_lines": int(r["n_measurements"].sum()),
            "n_records": int(len(r)),
            "n_valid": int(r["valid"].astype(bool).sum()),
            "n_failed": int((~r["valid"].astype(bool)).sum()),
            "n_tasks": int(r["task_key"].nunique()),
            "n_programs": int(r["program_id"].nunique()),
            "n_programs_on_every_hardware": int((per_program == n_hw).sum()) if n_hw else 0,
            "skipped_lines": dict(self.manifest.get("skipped", {})),
            "machines": machines,
            "hardware": by_hw,
            "groups": groups,
        }


def merge_duplicate_records(records: pd.DataFrame) -> pd.DataFrame:
    """Merge rows with the same ``record_id``: repeats pooled, valid when any repeat is valid.

    The merged row keeps the first row's program text and provenance, the pooled valid costs,
    the summed measurement and failure counts, and the median of the pooled costs.
    """
    dup = records["record_id"].duplicated(keep=False).to_numpy()
    if not dup.any():
        return records.reset_index(drop=True)
    merged = []
    for _, g in records[dup].groupby("record_id", sort=False):
        row = g.iloc[0].to_dict()
        costs = np.concatenate([np.asarray(c, dtype=float) for c in g["costs"]])
        errors = [e for e in g["error"] if e]
        row.update(costs=costs, n_measurements=int(g["n_measurements"].sum()),
                   n_failed=int(g["n_failed"].sum()), valid=bool(len(costs)),
                   latency=float(np.median(costs)) if len(costs) else float("nan"),
                   error=errors[-1] if errors else "")
        merged.append(row)
    out = pd.concat([records[~dup], pd.DataFrame(merged, columns=records.columns)],
                    ignore_index=True)
    return out


def _check_machines(records: pd.DataFrame, where: str) -> None:
    """A hardware profile is measured on one machine: the same name on two machines would
    merge their measurements."""
    machines = records.groupby("hardware")["machine"].nunique()
    if (machines > 1).any():
        name = machines.index[machines.to_numpy() > 1][0]
        raise GbxferError(
            f"{where}: hardware profile {name!r} is on more than one machine ("
            f"{', '.join(sorted(records.loc[records['hardware'] == name, 'machine'].unique()))}"
            "); a profile names one machine: name the machine of data that says 'unknown' (gbxfer "
            "ingest OLD --machine 'CPU (uarch)' --out NEW), or rename the other machine's "
            "profiles (gbxfer ingest LOGS --hardware NAME)")


def _write_parquet(frame: pd.DataFrame, schema: pa.Schema, path: Path, table: str) -> None:
    pq.write_table(pa.Table.from_pandas(frame[schema.names], schema=schema, preserve_index=False),
                   path, compression="zstd",  # a fresh name: no manifest names it yet
                   row_group_size=ROW_GROUP[table])


def _sum_counts(dicts) -> dict:
    total: dict = {}
    for d in dicts:
        for k, v in d.items():
            total[k] = total.get(k, 0) + v
    return total


def verified_tasks(path, columns=None) -> pd.DataFrame:
    """The tasks table of the dataset folder ``path`` (its ``columns``, by default all), every
    file's checksum verified first: what hands out parts of a dataset too large to load
    (:meth:`Dataset.load` ``tasks=``) reads."""
    path = Path(path)
    manifest = read_manifest(path, FORMAT_NAME, READABLE_VERSIONS, "dataset")
    verify_files(path, manifest)
    try:
        return pq.read_table(path / manifest["tables"]["tasks"], schema=TASK_SCHEMA,
                             columns=columns).to_pandas()
    except (pa.ArrowException, OSError, ValueError, KeyError, TypeError) as exc:
        raise GbxferError(f"{path}: unreadable tasks table ({exc})") from None


def dataset_size(path) -> int:
    """How many records the dataset folder ``path`` holds (its records table's row count)."""
    manifest = read_manifest(Path(path), FORMAT_NAME, READABLE_VERSIONS, "dataset")
    return pq.ParquetFile(Path(path) / manifest["tables"]["records"]).metadata.num_rows


BUNDLED = Path(__file__).resolve().parents[1] / "data" / "bundled"


def load_bundled() -> Dataset:
    """The dataset collected with ``gbxfer collect`` that ships inside the package."""
    if not (BUNDLED / "manifest.json").exists():
        raise GbxferError(f"the bundled dataset is missing from this installation ({BUNDLED})")
    return Dataset.load(BUNDLED)


def load_dataset(path) -> Dataset:
    """Load a dataset folder (see :class:`Dataset`); the name ``bundled`` loads the bundled one."""
    if str(path) == "bundled" and not Path(path).exists():
        return load_bundled()
    return Dataset.load(path)
