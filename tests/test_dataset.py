"""Datasets on disk: round trip, atomic replacement, schema versions, selection and groups."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from gbxfer import Dataset, GbxferError, SchemaVersionError


def test_save_and_load_round_trip(ansor_a100_dataset, tmp_path):
    ansor_a100_dataset.save(tmp_path / "ds")
    loaded = Dataset.load(tmp_path / "ds")
    a, b = ansor_a100_dataset.records, loaded.records
    assert list(a["record_id"]) == list(b["record_id"])
    assert np.array_equal(a["latency"].to_numpy(), b["latency"].to_numpy(), equal_nan=True)
    assert list(a["primitives"].iloc[5]) == list(b["primitives"].iloc[5])
    assert list(a["costs"].iloc[5]) == list(b["costs"].iloc[5])
    assert len(loaded.tasks) == len(ansor_a100_dataset.tasks)


def test_killed_write_leaves_the_old_dataset(ansor_a100_dataset, tmp_path, monkeypatch):
    path = tmp_path / "ds"
    old = ansor_a100_dataset.filter(hardware="cuda-sm_80").select(np.arange(10))
    old.save(path)

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # the process dies before the manifest is replaced

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        ansor_a100_dataset.save(path)
    monkeypatch.undo()
    assert len(Dataset.load(path)) == 10
    ansor_a100_dataset.save(path)  # the next write cleans up what the killed one left
    assert len(Dataset.load(path)) == len(ansor_a100_dataset)
    assert len(list(path.glob("*.parquet"))) == 2


def test_other_schema_version_names_both_versions(ansor_a100_dataset, tmp_path):
    path = ansor_a100_dataset.save(tmp_path / "ds")
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["schema_version"] = 99
    (path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(SchemaVersionError, match="schema version 99.*version 2 and 3"):
        Dataset.load(path)


def test_refuses_to_write_into_a_foreign_folder(ansor_a100_dataset, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(GbxferError, match="refusing to write"):
        ansor_a100_dataset.save(tmp_path)


def test_filter_by_task_hardware_and_validity(ansor_a100_dataset):
    task = ansor_a100_dataset.records["task_key"].iloc[0]
    sub = ansor_a100_dataset.filter(task=task, valid=True)
    assert set(sub.records["task_key"]) == {task}
    assert sub.records["valid"].all()
    assert list(sub.tasks["task_key"]) == [task]
    assert len(ansor_a100_dataset.filter(hardware="nowhere")) == 0


def test_groups_are_task_by_hardware(ansor_a100_dataset):
    keys = [key for key, _ in ansor_a100_dataset.groups()]
    assert len(keys) == 7
    assert all(hw == "cuda-sm_80" for _, hw in keys)


def test_concat_merges_records_valid_when_any_repeat_is(ansor_a100_dataset):
    r = ansor_a100_dataset.records
    failed = Dataset(r[~r["valid"]].head(1), ansor_a100_dataset.tasks)
    fake_valid_rows = failed.records.copy()
    fake_valid_rows["valid"] = True
    fake_valid_rows["costs"] = [np.array([0.5, 0.7])]
    fake_valid_rows["n_failed"] = 0
    fake_valid_rows["error"] = ""
    merged = Dataset.concat([failed, Dataset(fake_valid_rows, ansor_a100_dataset.tasks)])
    rec = merged.records.iloc[0]
    assert len(merged) == 1
    assert bool(rec["valid"]) and rec["latency"] == pytest.approx(0.6)
    assert rec["n_failed"] == 1 and rec["n_measurements"] == 2


def test_machine_comes_from_the_target_or_from_ingest(ansor_dir):
    from gbxfer import ingest
    derived = ingest([ansor_dir / "gpu_a100"])
    assert derived.machines == ["cuda-sm_80"]  # the target names no model: its architecture
    named = ingest([ansor_dir / "gpu_a100"], machine="NVIDIA A100-SXM4-40GB")
    assert named.machines == ["NVIDIA A100-SXM4-40GB"]
    assert named.summary()["machines"]["NVIDIA A100-SXM4-40GB"]["hardware"] == ["cuda-sm_80"]


def test_a_target_model_names_the_machine():
    from gbxfer.records.targets import machine_identity
    assert machine_identity("cuda -arch=sm_86 -model=rtx3080") == "rtx3080"
    assert machine_identity("cuda -arch=sm_86 -model=unknown") == "cuda-sm_86"
    assert machine_identity({"kind": "llvm", "mcpu": "znver4"}) == "llvm-znver4"
    assert machine_identity("{}") == "unknown"


def test_one_profile_name_on_two_machines_is_refused(ansor_a100_dataset):
    other = Dataset(ansor_a100_dataset.records.assign(machine="another A100"),
                    ansor_a100_dataset.tasks)
    with pytest.raises(GbxferError, match="'cuda-sm_80' is on more than one machine"):
        Dataset.concat([ansor_a100_dataset, other])  # would merge their measurements


def test_schema_2_dataset_loads_with_an_unknown_machine(ansor_a100_dataset, tmp_path):
    import pyarrow.parquet as pq
    from gbxfer.manifests import file_entry, switch_manifest
    path = ansor_a100_dataset.save(tmp_path / "ds")
    manifest = json.loads((path / "manifest.json").read_text())
    name = manifest["tables"]["records"]
    table = pq.read_table(path / name).drop(["machine"])
    pq.write_table(table, path / "records-0123456789ab.parquet")
    manifest["tables"]["records"] = "records-0123456789ab.parquet"
    manifest["files"] = {n: file_entry(path, n) for n in manifest["tables"].values()}
    manifest["schema_version"] = 2
    del manifest["sha256"]
    switch_manifest(path, manifest, lambda n: False)
    old = Dataset.load(path)
    assert old.machines == ["unknown"] and len(old) == len(ansor_a100_dataset)
    from gbxfer import ingest
    assert ingest([path], machine="NVIDIA A100").machines == ["NVIDIA A100"]


@pytest.mark.parametrize("order", ["sorted", "shuffled"])
def test_a_part_is_read_one_row_group_at_a_time(ansor_a100_dataset, tmp_path, monkeypatch, order):
    import pandas as pd
    import pyarrow.parquet as pq
    from gbxfer.records import dataset as module
    r = ansor_a100_dataset.records
    r = (r.sort_values("task_key", kind="stable") if order == "sorted"
         else r.sample(frac=1.0, random_state=0)).reset_index(drop=True)
    monkeypatch.setattr(module, "ROW_GROUP", {"records": 40, "tasks": 2})
    path = Dataset(r, ansor_a100_dataset.tasks).save(tmp_path / "ds")
    keys = sorted(r["task_key"].unique())[1:3]
    reads, read = [], pq.ParquetFile.read_row_group
    monkeypatch.setattr(pq.ParquetFile, "read_row_group", lambda self, i, columns=None, **kw:
                        reads.append((self.metadata.num_columns, columns))
                        or read(self, i, columns=columns, **kw))
    part = Dataset.load(path, tasks=keys)
    reads_part = [c for n, c in reads if n == len(module.RECORD_SCHEMA)]  # the records file's
    everything = Dataset.load(path).records
    expected = everything[everything["task_key"].isin(keys)].reset_index(drop=True)
    pd.testing.assert_frame_equal(part.records, expected)
    everything = Dataset.load(path).tasks
    pd.testing.assert_frame_equal(part.tasks, everything[everything["task_key"].isin(keys)]
                                  .reset_index(drop=True))
    groups = -(-len(r) // 40)
    reads = reads_part
    whole = [c for c in reads if c != ["task_key"]]  # row groups read beyond their keys
    assert len(whole) <= -(-len(expected) // 40) + 1 if order == "sorted" else len(whole) <= groups
    if order == "sorted":  # the statistics skip the row groups of other tasks unread
        assert len(reads) - len(whole) < groups / 2
    assert Dataset.load(path, tasks=["no such task"]).records.empty


def test_isin_agrees_with_pandas_on_string_columns_and_indexes():
    import pandas as pd

    from gbxfer.records.columns import isin

    column = pd.Series(["a", "b", "c", "a", None], dtype="str")
    for values in ({"a", "c"}, ["b"], pd.Index(["c", "z"]), {"a": 1}, set(), column[:2]):
        expected = column.isin(values).to_numpy()
        assert isin(column, values).dtype == bool
        assert (isin(column, values) == expected).all()
        assert (isin(pd.Index(column), values) == pd.Index(column).isin(values)).all()
