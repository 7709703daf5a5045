"""Ingest of the real third-party logs and databases reproduces the counts their READMEs give:
on the samples in tests/data (counts from tests/data/README.md) and, marked ``shared_data``, on
the whole files in ../shared/data (counts from their own READMEs)."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from gbxfer import ingest
from gbxfer.cli import main

FULL = pytest.param("full", marks=pytest.mark.shared_data)
# (lines, distinct programs, failed lines) per hardware family
ANSOR_COUNTS = {
    "sample": {"cuda-sm_80": (651, 592, 32), "cuda-sm_86": (337, 337, 8),
               "llvm-generic": (878, 855, 23)},
    "full": {"cuda-sm_80": (8211, 7244, 32), "cuda-sm_86": (4077, 4077, 8),
             "llvm-generic": (8401, 8313, 23)},
}
ON_BOTH_GPUS = {"sample": 102, "full": 995}  # full README: pooling 879 + matmul 39 + ... >= 995
MS_COUNTS = {  # lines, records, valid records, tasks, valid measurements
    "sample": (276, 250, 134, 5, 154),
    "full": (20089, 19337, 14956, 20, 15450),
}


@pytest.fixture(params=["sample", FULL])
def source(request):
    """("sample" or "full", the Ansor folder, the MetaSchedule folder)."""
    if request.param == "sample":
        return "sample", request.getfixturevalue("ansor_dir"), request.getfixturevalue(
            "ms_a100_dir")
    return "full", request.getfixturevalue("shared_ansor_dir"), request.getfixturevalue(
        "shared_ms_a100_dir")


def test_ansor_folders_give_the_lines_and_programs_of_their_readme(source, tmp_path, capsys):
    which, ansor_dir, _ = source
    out = tmp_path / "ds"
    assert main(["ingest", str(ansor_dir), "--out", str(out), "-q"]) == 0
    capsys.readouterr()
    assert main(["info", str(out), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    hw = info["hardware"]
    for family, (n_lines, n_records, n_failed) in ANSOR_COUNTS[which].items():
        assert (hw[family]["n_lines"], hw[family]["n_records"]) == (n_lines, n_records), family
        assert hw[family]["n_failed"] == n_failed, family
        assert hw[family]["family"] == family
    assert info["n_lines"] == sum(c[0] for c in ANSOR_COUNTS[which].values())


def test_ansor_gpu_logs_share_programs_across_devices(source):
    which, ansor_dir, _ = source
    ds = ingest([ansor_dir / "gpu_a100", ansor_dir / "gpu_rtx3080"])
    per_program = ds.records.groupby("program_id")["hardware"].nunique()
    if which == "sample":
        assert (per_program == 2).sum() == ON_BOTH_GPUS[which]
    else:
        assert (per_program == 2).sum() >= ON_BOTH_GPUS[which]


def test_older_metaschedule_database_ingests_with_trace_and_shapes(source):
    which, _, ms_dir = source
    ds = ingest([ms_dir])
    s = ds.summary()
    n_lines, n_records, n_valid, n_tasks, n_measured = MS_COUNTS[which]
    assert (s["n_lines"], s["n_records"], s["n_valid"], s["n_tasks"]) == (
        n_lines, n_records, n_valid, n_tasks)
    assert int(ds.records["n_measurements"].sum() - ds.records["n_failed"].sum()) == n_measured
    tasks = ds.tasks
    assert all(len(json.loads(a)) >= 2 for a in tasks["args"])  # argument shapes of each task
    assert (tasks["workload_format"] == "tvm-json").all()
    assert set(ds.records["hardware"]) == {"cuda-sm_80"}


def test_older_instruction_names_are_normalised(ms_a100_dataset):
    primitives = ms_a100_dataset.records["primitives"].iloc[0]
    assert "GetSBlock" in list(primitives)
    assert "GetBlock" not in list(primitives)
    assert '"GetBlock"' in ms_a100_dataset.records["program"].iloc[0]  # raw trace kept as is


def test_failed_measurements_are_flagged_not_dropped(ms_a100_dataset):
    r = ms_a100_dataset.records
    failed = r[~r["valid"]]
    assert len(failed) == MS_COUNTS["sample"][1] - MS_COUNTS["sample"][2]
    assert failed["latency"].isna().all()
    assert (failed["error"] == "build-or-run-failed").all()
    assert (r.loc[r["valid"], "latency"] > 0).all()


def test_tvm027_tune_tir_database_ingests_every_record(example_db):
    n_lines = sum(1 for line in open(example_db / "database_tuning_record.json") if line.strip())
    ds = ingest([example_db])
    assert ds.summary()["n_lines"] == n_lines
    assert ds.records["valid"].any()
    assert ds.records["hardware"].iloc[0].startswith("llvm-")
    assert ds.records["hardware"].iloc[0].endswith("-1c")


def test_tenset_tree_leaves_hidden_folders_out_reads_a_log_beside_the_platforms_and_refuses_a_name(
        ansor_dir, tmp_path):
    from gbxfer import InputError

    tree = tmp_path / "measure_records"
    log = ansor_dir / "gpu_rtx3080" / "ansor_relu.json.gz"
    for folder in ("rtx3080", ".ipynb_checkpoints"):
        (tree / folder).mkdir(parents=True)
        shutil.copy(log, tree / folder / "relu.json.gz")
    alone = ingest([tree])
    assert set(alone.records["hardware"]) == {"rtx3080"}  # the hidden copy is not read
    shutil.copy(log, tree / "beside.json.gz")  # named by its lines' targets
    both = ingest([tree])
    assert len(both.records) == 2 * len(alone.records)
    assert set(both.records["hardware"]) - {"rtx3080"} and "rtx3080" in set(
        both.records["hardware"])
    (tree / "bad name").mkdir()
    with pytest.raises(InputError, match="platform folder name must not hold spaces"):
        ingest([tree])
    assert len(ingest([tree], skip_bad=True).records) == len(both.records)
    assert set(ingest([tree], hardware=("mine", None)).records["hardware"]) == {"mine"}


def test_tenset_tree_takes_hardware_from_platform_folder(ansor_dir, tmp_path):
    tree = tmp_path / "tenset" / "measure_records" / "rtx3080"
    tree.mkdir(parents=True)
    shutil.copy(ansor_dir / "gpu_rtx3080" / "ansor_relu.json.gz", tree / "relu.json")
    ds = ingest([tmp_path / "tenset"])
    assert set(ds.records["hardware"]) == {"rtx3080"}
    assert set(ds.records["hardware_family"]) == {"cuda-sm_86"}


def test_hardware_option_overrides_name_and_family(ansor_dir):
    ds = ingest([ansor_dir / "gpu_rtx3080" / "ansor_relu.json.gz"], hardware=("rtx", "ampere"))
    assert set(ds.records["hardware"]) == {"rtx"}
    assert set(ds.records["hardware_family"]) == {"ampere"}


def test_duplicate_lines_merge_their_repeats(ansor_lines, tmp_path):
    log = tmp_path / "twice.json"
    log.write_bytes(ansor_lines[0] + ansor_lines[0])
    ds = ingest([log])
    assert len(ds) == 1
    rec = ds.records.iloc[0]
    assert rec["n_measurements"] == 2
    first_costs = json.loads(ansor_lines[0])["r"][0]
    assert len(rec["costs"]) == 2 * len(first_costs)
    assert np.isclose(rec["latency"], np.median(first_costs * 2))


def test_merging_a_dataset_with_itself_pools_repeats(ansor_a100_dataset):
    from gbxfer import Dataset
    merged = Dataset.concat([ansor_a100_dataset, ansor_a100_dataset])
    assert len(merged) == len(ansor_a100_dataset)
    assert merged.records["n_measurements"].sum() == 2 * ansor_a100_dataset.records[
        "n_measurements"].sum()
    assert merged.records["valid"].sum() == ansor_a100_dataset.records["valid"].sum()
