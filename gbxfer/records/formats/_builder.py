"""Accumulates measurements into records, merging repeats of the same program on one hardware."""
from __future__ import annotations

import collections
import statistics

import pandas as pd

from ..dataset import RECORD_COLUMNS, TASK_COLUMNS, Dataset
from ...errors import InputError
from ..programs import program_id, record_id
from ..targets import machine_identity
from ._lines import json_lines


class RecordBuilder:
    """Collect measurements (one per source line) into a :class:`Dataset`.

    Two measurements of the same program on the same hardware profile become one record whose
    costs pool both; it is valid when any of them is valid, and its failures are counted.
    """

    def __init__(self, skip_bad: bool = False):
        self.skip_bad = skip_bad
        self._records: dict[str, dict] = {}
        self._tasks: dict[str, dict] = {}
        self.skipped = collections.Counter()
        self.skip_examples: list[str] = []
        self.sources: list[dict] = []

    def guard(self, error: InputError) -> None:
        """Raise ``error``, or count it as a skipped line when ``skip_bad`` is set."""
        if not self.skip_bad:
            raise error
        self.skipped[error.reason] += 1
        if len(self.skip_examples) < 20:
            self.skip_examples.append(str(error))

    def lines(self, path):
        """``(line_number, value)`` of a JSON-lines file (of :meth:`line_range`); bad lines and
        files go through :meth:`guard`."""
        try:
            for number, value in json_lines(path, *self.line_range(path)):
                if isinstance(value, InputError):
                    self.guard(value)
                else:
                    yield number, value
        except InputError as error:
            self.guard(error)

    def line_range(self, path) -> tuple[int, int | None]:
        """The lines of ``path`` to read: ``start`` <= number < ``stop`` (None: to the end)."""
        return 1, None

    def has_task(self, task_key: str) -> bool:
        return task_key in self._tasks

    def add_task(self, task_key: str, **fields) -> None:
        """Describe a task once; later descriptions of the same key are ignored."""
        if task_key not in self._tasks:
            row = {"task_key": task_key, "source_format": "", "operator": "", "description": "",
                   "args": "[]", "flops": float("nan"), "network": "", "weight": 1.0,
                   "workload_format": "", "workload": ""}
            row.update(fields)
            self._tasks[task_key] = row

    def add(self, *, task_key, canonical, raw, primitives, costs, error, hardware, family,
            target, source_format, source, line, pid=None) -> None:
        """Add one measurement; ``costs`` are valid repeats (seconds), ``error`` is "" unless
        failed; ``pid``: the program id of ``canonical`` when computed already."""
        pid = pid or program_id(task_key, canonical)
        rid = record_id(pid, hardware)
        rec = self._records.get(rid)
        if rec is None:
            self._records[rid] = {
                "record_id": rid, "program_id": pid, "task_key": task_key, "hardware": hardware,
                "hardware_family": family, "target": target, "source_format": source_format,
                "program": raw, "primitives": primitives, "costs": list(costs) if not error else [],
                "n_measurements": 1, "n_failed": int(bool(error)), "error": error,
                "source": str(source), "line": line,
            }
            return
        rec["n_measurements"] += 1
        if error:
            rec["n_failed"] += 1
            rec["error"] = error
        else:
            rec["costs"].extend(costs)

    def build(self) -> Dataset:
        rows = list(self._records.values())
        for rec in rows:
            rec["valid"] = bool(rec["costs"])
            rec["latency"] = statistics.median(rec["costs"]) if rec["costs"] else float("nan")
        records = pd.DataFrame(rows, columns=RECORD_COLUMNS)
        machines = {t: machine_identity(t) for t in records["target"].unique()}
        records["machine"] = records["target"].map(machines).astype(object)
        tasks = pd.DataFrame(list(self._tasks.values()), columns=TASK_COLUMNS)
        manifest = {"sources": self.sources, "skipped": dict(self.skipped),
                    "skip_examples": self.skip_examples}
        return Dataset(records, tasks, manifest)
