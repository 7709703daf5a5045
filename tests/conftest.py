"""Shared fixtures: samples of real third-party data (tests/data), the full files in
../shared/data for the tests marked ``shared_data``, and small files made from them."""
from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from gbxfer.cli import main

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("GBXFER_SHARED_DATA", REPO.parent / "shared" / "data"))
SAMPLES = REPO / "tests" / "data"  # cut from SHARED by scripts/vendor_test_data.py
EXAMPLE_DB = REPO / "gbxfer" / "data" / "example-metaschedule"


def _shared(name: str) -> Path:
    """A folder of the full third-party data; its absence fails the test (never a skip)."""
    path = SHARED / name
    if not path.is_dir():
        pytest.fail(f"tests marked shared_data need the full third-party data at {path} "
                    "(set GBXFER_SHARED_DATA)", pytrace=False)
    return path


@pytest.fixture(scope="session")
def ansor_dir() -> Path:
    """A sample of every real Ansor log (A100, RTX 3080, x86), same folders and file names."""
    return SAMPLES / "bennu-ansor"


@pytest.fixture(scope="session")
def ms_a100_dir() -> Path:
    """A slice of the older-TVM A100 MetaSchedule database: five workloads and their records."""
    return SAMPLES / "bennu-metaschedule-a100-resnet34"


@pytest.fixture(scope="session")
def shared_ansor_dir() -> Path:
    return _shared("bennu-ansor")


@pytest.fixture(scope="session")
def shared_ms_a100_dir() -> Path:
    return _shared("bennu-metaschedule-a100-resnet34")


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


def load_script(name: str):
    """A module of scripts/ (the fuzz tests run the scripts' cases), loaded from its file."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# the command-line tests' data: two profiles of the bundled dataset, a small part of it
PROFILE, OTHER = "x86-avx2-1t", "x86-avx-1t"  # two profiles of the bundled dataset


def parse_error(argv: list[str], capsys) -> str:
    """The one error line of an argparse rejection of ``argv``."""
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1 and err.rstrip().endswith(errors[0]), err
    return errors[0]


def run_error(argv: list[str], capsys) -> str:
    """The one line ``gbxfer VERB: error: ...`` of a run of ``argv`` that fails."""
    assert main([*argv, "-q"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"gbxfer {argv[0]}: error: ")
    return err.strip()


@pytest.fixture(scope="session")
def small(tmp_path_factory) -> Path:
    """5% of the bundled dataset (drawn at random; not to be written into)."""
    path = tmp_path_factory.mktemp("data") / "small"
    assert main(["prune", "bundled", "--keep", "0.05", "--method", "random", "--out", str(path),
                 "-q"]) == 0
    return path


@pytest.fixture(scope="session")
def model(small, tmp_path_factory) -> Path:
    """A model trained on one profile, PROFILE."""
    path = tmp_path_factory.mktemp("model") / "m"
    assert main(["train", str(small), "--target", PROFILE, "--out", str(path), "-q"]) == 0
    return path


@pytest.fixture(scope="session")
def a_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("files") / "a-file"
    path.write_text("not a folder\n")
    return path
