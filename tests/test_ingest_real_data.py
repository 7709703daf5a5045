"""Ingest of the real third-party logs and databases reproduces the counts their READMEs give."""
from __future__ import annotations

import json
import shutil

import numpy as np

from gbxfer import ingest
from gbxfer.cli import main


def test_ansor_folders_give_the_lines_and_programs_of_their_readme(ansor_dir, tmp_path, capsys):
    out = tmp_path / "ds"
    assert main(["ingest", str(ansor_dir), "--out", str(out), "-q"]) == 0
    capsys.readouterr()
    assert main(["info", str(out), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    hw = info["hardware"]
    assert (hw["cuda-sm_80"]["n_lines"], hw["cuda-sm_80"]["n_records"]) == (8211, 7244)
    assert (hw["cuda-sm_86"]["n_lines"], hw["cuda-sm_86"]["n_records"]) == (4077, 4077)
    assert (hw["llvm-generic"]["n_lines"], hw["llvm-generic"]["n_records"]) == (8401, 8313)
    assert hw["cuda-sm_80"]["n_failed"] == 32
    assert hw["cuda-sm_86"]["n_failed"] == 8
    assert hw["llvm-generic"]["n_failed"] == 23
    assert hw["cuda-sm_80"]["family"] == "cuda-sm_80"
    assert info["n_lines"] == 8211 + 4077 + 8401


def test_ansor_gpu_logs_share_programs_across_devices(ansor_dir):
    ds = ingest([ansor_dir / "gpu_a100", ansor_dir / "gpu_rtx3080"])
    per_program = ds.records.groupby("program_id")["hardware"].nunique()
    assert (per_program == 2).sum() >= 995  # README: pooling 879 + matmul 39 + reduce 70 + relu 7


def test_older_metaschedule_database_ingests_with_trace_and_shapes(ms_a100_dataset):
    s = ms_a100_dataset.summary()
    assert s["n_lines"] == 20089
    assert s["n_records"] == 19337
    assert s["n_valid"] == 14956
    assert s["n_tasks"] == 20
    assert int(ms_a100_dataset.records["n_measurements"].sum()
               - ms_a100_dataset.records["n_failed"].sum()) == 15450
    tasks = ms_a100_dataset.tasks
    assert all(len(json.loads(a)) >= 2 for a in tasks["args"])  # argument shapes of each task
    assert (tasks["workload_format"] == "tvm-json").all()
    assert set(ms_a100_dataset.records["hardware"]) == {"cuda-sm_80"}


def test_older_instruction_names_are_normalised(ms_a100_dataset):
    primitives = ms_a100_dataset.records["primitives"].iloc[0]
    assert "GetSBlock" in list(primitives)
    assert "GetBlock" not in list(primitives)
    assert '"GetBlock"' in ms_a100_dataset.records["program"].iloc[0]  # raw trace kept as is


def test_failed_measurements_are_flagged_not_dropped(ms_a100_dataset):
    r = ms_a100_dataset.records
    failed = r[~r["valid"]]
    assert len(failed) == 19337 - 14956
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
