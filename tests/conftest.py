"""Shared fixtures: the real third-party data in ../shared/data and small files made from it."""
from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("GBXFER_SHARED_DATA", REPO.parent / "shared" / "data"))
EXAMPLE_DB = REPO / "gbxfer" / "data" / "example-metaschedule"


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"third-party data not found at {path} (set GBXFER_SHARED_DATA)")
    return path


@pytest.fixture(scope="session")
def ansor_dir() -> Path:
    return _need(SHARED / "bennu-ansor")


@pytest.fixture(scope="session")
def ms_a100_dir() -> Path:
    return _need(SHARED / "bennu-metaschedule-a100-resnet34")


@pytest.fixture(scope="session")
def example_db() -> Path:
    return EXAMPLE_DB


@pytest.fixture(scope="session")
def ansor_lines(ansor_dir) -> list[bytes]:
    """The raw lines of a real RTX 3080 Ansor log (matmul)."""
    with gzip.open(ansor_dir / "gpu_rtx3080" / "ansor_matmul.json.gz", "rb") as f:
        return [line for line in f if line.strip()]


@pytest.fixture(scope="session")
def ansor_a100_dataset(ansor_dir):
    from gbxfer import ingest
    return ingest([ansor_dir / "gpu_a100"])


@pytest.fixture(scope="session")
def ms_a100_dataset(ms_a100_dir):
    from gbxfer import ingest
    return ingest([ms_a100_dir])


def write_host_profile(folder: Path) -> Path:
    """A 1-thread hardware profile of this machine's CPU (needs TVM), for collection and
    tuning tests."""
    from tvm.target import codegen

    path = folder / "host-1t.yaml"
    path.write_text(f"name: host-1t\nfamily: host\ntarget: {{kind: llvm, mcpu: "
                    f"{codegen.llvm_get_system_cpu()}, num-cores: 1}}\nthreads: 1\n"
                    "description: this machine, 1 thread (test profile)\n")
    return path
