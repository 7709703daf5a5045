"""Records: measured programs (one per program and hardware profile), their datasets on disk,
the readers of foreign measurement formats, and the workload suites that gbxfer collects.

- :mod:`~gbxfer.records.programs` — program identity (task + canonical text) and primitives;
- :mod:`~gbxfer.records.targets` — TVM targets and the hardware identity derived from them;
- :mod:`~gbxfer.records.formats` — MetaSchedule databases and Ansor/TenSet logs;
- :mod:`~gbxfer.records.dataset` — :class:`Dataset`, its Parquet files and manifest;
- :mod:`~gbxfer.records.columns` — fast membership tests on its string columns;
- :mod:`~gbxfer.records.ingest` — :func:`ingest`, any mix of sources into one dataset;
- :mod:`~gbxfer.records.suite` — workload suites (``configs/workloads/*.yaml``).
"""
from .dataset import BUNDLED, Dataset, load_bundled, load_dataset
from .ingest import ingest
from .suite import Suite, Task, load_suite

__all__ = ["BUNDLED", "Dataset", "Suite", "Task", "ingest", "load_bundled", "load_dataset",
           "load_suite"]
