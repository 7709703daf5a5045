"""Ingest in several processes, the same dataset bit for bit.

Parsing and checking the lines of logs and databases is what takes the time of an ingest; a
:class:`~gbxfer.records.formats.RecordBuilder` merging them into records is cheap. So each log
file (and each database's records file) is cut into chunks of :data:`CHUNK` lines, worker
processes run the ordinary readers over their chunks with a :class:`_Recorder` that notes what
the readers ask of the builder, and the parent replays the notes into the one builder in
reading order: the calls the builder sees, and so the dataset, are those of a serial ingest.
"""
from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from ..errors import InputError
from .formats import RecordBuilder, read_ansor_log, read_metaschedule_database
from .formats._lines import chunk_starts
from .formats._metaschedule import RECORD_FILE, find_file
from .programs import program_id

CHUNK = 2000  # lines per chunk


class _Stop(Exception):
    """A bad line when bad lines are not skipped: the serial reader stops there too."""


class _Recorder(RecordBuilder):
    """Stands in for the builder in a worker: reads lines ``start`` <= n < ``stop`` of the
    step's main file (every line of others, such as a database's workloads) and notes the
    readers' calls, to be replayed by :func:`_replay`."""

    def __init__(self, skip_bad: bool, main: Path | None, start: int, stop: int | None):
        super().__init__(skip_bad)
        self.main, self.start, self.stop = main, start, stop
        self.events: list[tuple] = []

    def line_range(self, path):
        return (self.start, self.stop) if Path(path) == self.main else (1, None)

    def guard(self, error: InputError) -> None:
        self.events.append(("guard", error))
        if not self.skip_bad:
            raise _Stop

    def add_task(self, task_key: str, **fields) -> None:
        if task_key not in self._tasks:
            self._tasks[task_key] = fields
            self.events.append(("task", task_key, fields))

    def add(self, **measurement) -> None:
        # what crosses to the parent is pickled: the program id instead of the canonical text
        # (a second copy of the program), each primitive name one shared string
        measurement["pid"] = program_id(measurement["task_key"], measurement["canonical"])
        measurement["canonical"] = None
        measurement["primitives"] = [sys.intern(p) for p in measurement["primitives"]]
        self.events.append(("add", measurement))


@contextlib.contextmanager
def fork_pool(workers: int):
    """A pool of ``workers`` forked processes. The parent's objects are kept out of the garbage
    collector's sight while the pool lives (``gc.freeze``), so that a collection in a worker
    does not touch, and so copy, every page of the parent's heap it shares."""
    gc.freeze()
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            yield pool
    finally:
        gc.unfreeze()


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _main_file(step) -> Path | None:
    """The file whose lines a step's chunks share out."""
    return step.path if step.kind == "ansor" else find_file(step.path, RECORD_FILE)


def _read_chunk(step, start: int, stop: int | None, skip_bad: bool):
    """In a worker: the notes of reading one chunk of ``step``, and its source entry."""
    recorder = _Recorder(skip_bad, _main_file(step), start, stop)
    read = read_ansor_log if step.kind == "ansor" else read_metaschedule_database
    try:
        read(step.path, recorder, step.hardware)
    except _Stop:
        pass
    return recorder.events, recorder.sources


def _replay(events, builder: RecordBuilder, main: Path | None, first: bool) -> None:
    """The notes of one chunk, into ``builder``. Only the first chunk of a step replays
    problems of its other files (a database's workloads file, which every chunk reads)."""
    for event in events:
        if event[0] == "add":
            builder.add(**event[1])
        elif event[0] == "task":
            builder.add_task(event[1], **event[2])
        elif first or main is None or Path(event[1].path) == main:
            builder.guard(event[1])


def read_in_parallel(steps, builder: RecordBuilder, datasets: list, progress, jobs: int) -> None:
    """Read ``steps`` (see :func:`gbxfer.records.ingest.read_step`) with ``jobs`` worker
    processes, into ``builder`` and ``datasets`` as a serial reading would."""
    from .ingest import read_step

    chunks = {}  # step index -> [(start, stop)]
    for i, step in enumerate(steps):
        if step.kind in ("ansor", "metaschedule"):
            main = _main_file(step)
            starts = chunk_starts(main, CHUNK) if main is not None else [1]
            chunks[i] = list(zip(starts, [*starts[1:], None]))
    # a fork pool starts all its workers at once: no more than there are chunks to read or
    # CPUs to read them on (the dataset is the same whatever the number)
    workers = max(1, min(jobs, sum(map(len, chunks.values())), usable_cpus()))
    with fork_pool(workers) as pool:
        futures = {i: [pool.submit(_read_chunk, steps[i], start, stop, builder.skip_bad)
                       for start, stop in ranges] for i, ranges in chunks.items()}
        try:
            for i, step in enumerate(steps):
                if i not in futures:
                    read_step(step, builder, datasets, progress)
                    continue
                n_lines = 0
                for k, future in enumerate(futures[i]):
                    events, sources = future.result()
                    _replay(events, builder, _main_file(step), first=k == 0)
                    n_lines += sum(s["n_lines"] for s in sources)
                    progress(sum(s["n_lines"] for s in sources))
                if sources:  # a database folder missing a file has none
                    builder.sources.append({**sources[0], "n_lines": n_lines})
        finally:
            for future in (f for fs in futures.values() for f in fs):
                future.cancel()
