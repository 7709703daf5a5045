"""Readers of foreign measurement formats: MetaSchedule databases and Ansor/TenSet logs.

Each reader adds measurements to a :class:`RecordBuilder`, which merges them into records;
:func:`gbxfer.ingest` picks the reader for each source.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..dataset import Dataset
from ._ansor import describe_workload_key, is_ansor_log, read_ansor_log
from ._builder import RecordBuilder
from ._metaschedule import is_metaschedule_database, read_metaschedule_database

__all__ = ["load_metaschedule_database", "load_ansor_logs", "read_metaschedule_database",
           "read_ansor_log", "is_metaschedule_database", "is_ansor_log", "RecordBuilder",
           "describe_workload_key"]


def load_metaschedule_database(folder, hardware=None, skip_bad=False) -> Dataset:
    """One MetaSchedule database folder as a dataset."""
    builder = RecordBuilder(skip_bad=skip_bad)
    read_metaschedule_database(Path(folder), builder, hardware)
    return builder.build()


def load_ansor_logs(paths, hardware=None, skip_bad=False) -> Dataset:
    """Ansor/TenSet log files as a dataset."""
    builder = RecordBuilder(skip_bad=skip_bad)
    for path in [paths] if isinstance(paths, (str, os.PathLike)) else paths:
        read_ansor_log(Path(path), builder, hardware)
    return builder.build()
