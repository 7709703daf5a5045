"""An append-only MetaSchedule JSON database that survives SIGKILL.

The files are TVM's own format (``database_workload.json``, ``database_tuning_record.json``):
every line is appended, flushed and fsynced as it is measured, so a killed collection loses at
most the line being written, and :class:`AppendOnlyDatabase` drops such a partial last line when
it opens the folder again.
"""
from __future__ import annotations

import os
from pathlib import Path

import orjson

from ..errors import GbxferError
from ..records.formats._metaschedule import RECORD_FILE, WORKLOAD_FILE, run_latency
from ..records.programs import canonical_json, canonical_trace_text, program_id


def repair(folder: Path) -> None:
    """Cut a partial last line (a killed append) off a MetaSchedule database's two files,
    which TVM's own ``JSONDatabase`` then opens."""
    for name in (WORKLOAD_FILE, RECORD_FILE):
        _repair(Path(folder) / name)


def records_in_order(folder: Path) -> list:
    """A MetaSchedule database's tuning records in the order they were committed (TVM's
    ``get_all_tuning_records`` sorts them by run time), each with its workload's structural
    hash: ``[(hash, TuningRecord), ...]``."""
    import tvm_ffi
    from tvm.s_tir import meta_schedule as ms

    workloads, records = [], []
    for name, parse in ((WORKLOAD_FILE, lambda item: workloads.append(
                            ms.database.Workload.from_json(item))),
                        (RECORD_FILE, lambda item: records.append(
                            (item[0], ms.database.TuningRecord.from_json(
                                item[1], workloads[item[0]]))))):
        for n, line in enumerate(_repair(Path(folder) / name), 1):
            try:
                parse(orjson.loads(line))
            except (ValueError, IndexError, KeyError, TypeError, RuntimeError) as exc:
                raise GbxferError(f"{Path(folder) / name}: line {n} is not a MetaSchedule "
                                  f"record ({type(exc).__name__}); give a new --out "
                                  "folder") from None
    hashes = [str(tvm_ffi.structural_hash(w.mod)) for w in workloads]
    return [(hashes[i], record) for i, record in records]


def _repair(path: Path) -> list[bytes]:
    """Lines of ``path``; a last line without its newline (a killed append) is cut off."""
    if not path.exists():
        path.touch()
        return []
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        keep = data.rfind(b"\n") + 1
        with open(path, "r+b") as f:
            f.truncate(keep)
        data = data[:keep]
    return [line for line in data.split(b"\n") if line.strip()]


class AppendOnlyDatabase:
    """One MetaSchedule database folder, opened for appending measurements."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._workloads: dict[str, int] = {}
        for i, line in enumerate(_repair(self.folder / WORKLOAD_FILE)):
            self._workloads[str(orjson.loads(line)[0])] = i
        self.done: dict[str, set[str]] = {}  # task key -> program ids measured
        self.latency: dict[str, dict[str, float]] = {}  # task key -> program id -> seconds
        index_to_key = {i: k for k, i in self._workloads.items()}
        for line in _repair(self.folder / RECORD_FILE):
            index, record = orjson.loads(line)
            self._note(index_to_key[index], record)

    def workload_index(self, task_key: str, workload_json) -> int:
        """Index of a workload, appending it on first use."""
        if task_key not in self._workloads:
            self._append(WORKLOAD_FILE, workload_json)
            self._workloads[task_key] = len(self._workloads)
        return self._workloads[task_key]

    def add(self, task_key: str, record_json) -> str:
        """Append one tuning record ``[trace, run_secs, target, args_info]``; returns its program id."""
        self._append(RECORD_FILE, [self._workloads[task_key], record_json])
        return self._note(task_key, record_json)

    def _note(self, task_key: str, record_json) -> str:
        pid = record_program_id(task_key, record_json)
        self.done.setdefault(task_key, set()).add(pid)
        latency = run_latency(record_json[1])
        self.latency.setdefault(task_key, {})[pid] = float("inf") if latency is None else latency
        return pid

    def _append(self, name: str, value) -> None:
        with open(self.folder / name, "ab") as f:
            f.write(orjson.dumps(value) + b"\n")
            f.flush()
            os.fsync(f.fileno())


def record_program_id(task_key: str, record_json) -> str:
    """The program id gbxfer's ingest gives this record (same canonical text)."""
    return program_id(task_key, canonical_trace_text(canonical_json(record_json[0])))
