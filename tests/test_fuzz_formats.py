"""Mutated real Ansor lines, MetaSchedule tuning records and workload entries give an InputError
or records in their domain: never another exception, never a record out of its domain.

The mutations (field level: another type, a bad number, a wrong shape, a deleted or inserted
value, an odd string at a random JSON path; byte level: flips, cuts, splices) and the domain
checker are those of scripts/fuzz_formats.py, which runs them longer; here Hypothesis draws each
case's mutation and random choices, with a fixed seed (derandomize), and shrinks a failure.
"""
from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path

from conftest import load_script
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gbxfer import ingest

EXAMPLES = 500  # per format: the file runs in about 30 s on two cores
fuzz = load_script("fuzz_formats")


@functools.cache
def _samples():
    return fuzz.Samples()


def _check(fmt: str, mutation: str, rng) -> None:
    files = fuzz.make_case(_samples(), fmt, mutation, rng)
    with tempfile.TemporaryDirectory() as tmp:
        result = fuzz.run_case(files, Path(tmp) / "case")
    shown = fuzz._mutated_file(files, fmt)[:1500]
    assert result["untyped"] == "", f"{result['untyped']}\n{shown}"
    assert result["problems"] == [], f"{result['problems'][:3]}\n{shown}"


FUZZ = settings(derandomize=True, max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FUZZ
@given(mutation=st.sampled_from(fuzz.MUTATIONS), rng=st.randoms())
def test_mutated_ansor_lines_give_input_errors_or_records_in_domain(mutation, rng):
    _check("ansor", mutation, rng)


@FUZZ
@given(mutation=st.sampled_from(fuzz.MUTATIONS), rng=st.randoms())
def test_mutated_metaschedule_records_give_input_errors_or_records_in_domain(mutation, rng):
    _check("ms-record", mutation, rng)


@FUZZ
@given(mutation=st.sampled_from(fuzz.MUTATIONS), rng=st.randoms())
def test_mutated_metaschedule_workloads_give_input_errors_or_records_in_domain(mutation, rng):
    _check("ms-workload", mutation, rng)


def test_domain_checker_accepts_the_real_samples(ansor_dir, ms_a100_dir, example_db):
    for source in (ansor_dir, ms_a100_dir, example_db):
        assert fuzz.record_problems(ingest([source])) == []


def test_domain_checker_finds_each_kind_of_record_out_of_domain(example_db):
    ds = ingest([example_db])
    for column, value, expected in [
            ("costs", [[-1.0]] * len(ds), "costs"),
            ("target", ['{"mcpu": "znver3"}'] * len(ds), "target"),
            ("hardware", [""] * len(ds), "hardware"),
            ("latency", [float("inf")] * len(ds), "latency")]:
        bad = ingest([example_db])
        bad.records[column] = value
        assert any(expected in p for p in fuzz.record_problems(bad)), column
    ds.tasks["args"] = json.dumps([["float32", [128, -1]]])
    assert any("args" in p for p in fuzz.record_problems(ds))
