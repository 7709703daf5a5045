"""Every change to a gbxfer dataset or model folder is detected on load: mutated manifests,
Parquet tables, boosters and model metadata give a GbxferError, never another exception and
never a silent load (the cases are scripts/fuzz_files.py's, drawn by Hypothesis with a fixed
seed; the script runs them longer)."""
from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

import pytest
from conftest import load_script
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EXAMPLES = 200  # per file: the file runs in about 20 s on two cores
fuzz = load_script("fuzz_files")
SCRATCH = Path(tempfile.mkdtemp(prefix="gbxfer-fuzz-files-"))  # Hypothesis reuses no tmp_path
atexit.register(shutil.rmtree, SCRATCH, True)


@functools.cache
def _originals():
    return fuzz.make_originals(SCRATCH / "originals")


CASES = [(kind, prefix) for kind, prefixes in fuzz.FILES.items() for prefix in prefixes]


@pytest.mark.parametrize("kind,prefix", CASES, ids=[f"{k}-{p.rstrip('-')}" for k, p in CASES])
@settings(derandomize=True, max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(mutation=st.sampled_from(fuzz.MUTATIONS), rng=st.randoms(use_true_random=False))
def test_every_change_is_detected(kind, prefix, mutation, rng):
    result = fuzz.run_case(_originals(), kind, prefix, mutation, rng, SCRATCH)
    assert result["ok"], result


def test_a_manifest_respaced_without_change_loads_the_same_version(tmp_path):
    import json

    for kind in fuzz.FILES:
        copy = shutil.copytree(_originals()[kind], tmp_path / kind)
        manifest = copy / "manifest.json"
        manifest.write_text(json.dumps(json.loads(manifest.read_text()), indent=4))
        assert fuzz.fingerprint(kind, copy) == fuzz.fingerprint(kind, _originals()[kind])
