"""Ingest in several processes gives the serial ingest's dataset bit for bit, and its errors.

Chunks are made 3 lines long, so that even the vendored samples and the fuzzer's 3-line cases
are cut into several chunks read by different processes.
"""
from __future__ import annotations

import random
import shutil

import pandas as pd
import pytest
from conftest import load_script

from gbxfer import ingest
from gbxfer.errors import GbxferError, InputError
from gbxfer.records import _parallel

fuzz = load_script("fuzz_formats")


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    monkeypatch.setattr(_parallel, "CHUNK", 3)


def outcome(sources, **options):
    """The dataset's tables and manifest, or the error's type and text."""
    try:
        d = ingest(sources, **options)
    except GbxferError as exc:
        return type(exc).__name__, str(exc)
    return d.records, d.tasks, d.manifest


def assert_same(serial, parallel):
    assert type(serial) is type(parallel)
    if isinstance(serial[0], str):
        assert serial == parallel
        return
    pd.testing.assert_frame_equal(serial[0], parallel[0], check_exact=True)
    pd.testing.assert_frame_equal(serial[1], parallel[1], check_exact=True)
    assert serial[2] == parallel[2]


def test_real_logs_databases_and_datasets_ingest_the_same_in_parallel(
        ansor_dir, ms_a100_dir, example_db, ansor_a100_dataset, tmp_path):
    ansor_a100_dataset.save(tmp_path / "dataset")
    sources = [ansor_dir, ms_a100_dir, tmp_path / "dataset", example_db]
    serial = outcome(sources)
    assert len(serial[0]) > 1000
    assert len(serial[2]["sources"]) >= 4
    for jobs in (2, 3):
        assert_same(serial, outcome(sources, jobs=jobs))


def test_a_folder_of_everything_and_a_tenset_tree_ingest_the_same(ansor_dir, ms_a100_dir,
                                                                   tmp_path):
    mixed = tmp_path / "mixed"
    shutil.copytree(ansor_dir, mixed / "logs")
    shutil.copytree(ms_a100_dir, mixed / "db")
    (mixed / "empty").mkdir()
    tree = tmp_path / "measure_records"
    for log in sorted(ansor_dir.rglob("*.json")):
        (tree / log.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copy(log, tree / log.parent.name / log.name)
    for sources in ([mixed], [tree], [mixed / "empty"]):
        for skip_bad in (False, True):
            assert_same(outcome(sources, skip_bad=skip_bad),
                        outcome(sources, skip_bad=skip_bad, jobs=2))


@pytest.mark.parametrize("fmt", fuzz.FORMATS)
def test_mutated_files_give_the_same_dataset_or_error_in_parallel(fmt, tmp_path):
    """A bad line in any chunk: the same first error, or the same lines skipped."""
    samples, rng = fuzz.Samples(), random.Random(7)
    for i in range(30):
        files = fuzz.make_case(samples, fmt, fuzz.MUTATIONS[i % len(fuzz.MUTATIONS)], rng)
        for name in ("log.json", "database_tuning_record.json"):  # several chunks: the bad
            if name in files:  # line falls in one of them (a bad workload in all)
                files[name] = files[name] * 3
        folder = tmp_path / str(i)
        folder.mkdir()
        for name, data in files.items():
            (folder / name).write_bytes(data)
        source = folder / "log.json" if "log.json" in files else folder
        for skip_bad in (False, True):
            assert_same(outcome([source], skip_bad=skip_bad),
                        outcome([source], skip_bad=skip_bad, jobs=2))


def test_input_errors_survive_the_trip_from_a_worker():
    import pickle

    error = pickle.loads(pickle.dumps(InputError("f.json", 3, "bad-cost", "cost is -1")))
    assert (error.path, error.line, error.reason, str(error)) == (
        "f.json", 3, "bad-cost", "f.json:3: cost is -1")


def test_jobs_must_be_a_positive_integer(ansor_dir):
    for jobs in (0, -1, 1.5, True):
        with pytest.raises(GbxferError, match="jobs must be a positive integer"):
            ingest([ansor_dir], jobs=jobs)


def test_workers_are_no_more_than_chunks_or_cpus(ansor_dir, monkeypatch):
    """A fork pool starts all its workers at once: --jobs 100000 must not fork 100000."""
    started = []
    real = _parallel.ProcessPoolExecutor

    def recording(max_workers, **options):
        started.append(max_workers)
        return real(max_workers, **options)

    monkeypatch.setattr(_parallel, "ProcessPoolExecutor", recording)
    monkeypatch.setattr(_parallel, "CHUNK", 10 ** 6)  # one chunk per log
    log = min(ansor_dir.rglob("*.json*"))
    assert_same(outcome([log]), outcome([log], jobs=100_000))
    assert started == [1]
    monkeypatch.setattr(_parallel, "usable_cpus", lambda: 3)
    outcome([ansor_dir], jobs=100_000)
    assert started[-1] == 3


@pytest.mark.parametrize("block_size", [1, 2, 5, 64, 1 << 20])
@pytest.mark.parametrize("text", [b"a\nbb\n\nccc\nd", b"a\nbb\n\nccc\nd\n", b"\n\n\nx\n", b""])
def test_a_chunk_starts_at_its_line_whatever_the_blocks(text, block_size):
    import io
    from gbxfer.records.formats._lines import _lines_from
    lines = text.splitlines(keepends=True)
    for start in range(1, len(lines) + 3):
        got = list(_lines_from(io.BytesIO(text), start, block_size))
        assert got == lines[start - 1:], (start, got)
