"""Model folders and datasets on disk: the new version wins, a killed save leaves the old one
whole, names from data never become paths, every file is checked before it is parsed."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from gbxfer import Dataset, SplitSpec, ingest, train
from gbxfer.errors import GbxferError
from gbxfer.manifests import MANIFEST
from gbxfer.model import SavedModel, load_models, save_models
from gbxfer.model._saved import member_folder

CONFIG = {"blocks": ["program", "workload", "hardware"],
          "params": {"n_estimators": 15, "num_leaves": 7, "min_child_samples": 3}}


@pytest.fixture(scope="module")
def gpus(ansor_dir):
    return ingest([ansor_dir / "gpu_a100", ansor_dir / "gpu_rtx3080"])


@pytest.fixture(scope="module")
def models(gpus):
    """Two per-profile models and one joint model."""
    return ({hw: train(gpus, CONFIG, target=hw) for hw in gpus.hardware},
            train(gpus, CONFIG, SplitSpec("by-task", 0.3, seed=1)))


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def test_a_joint_model_saved_over_per_target_models_replaces_them(models, tmp_path):
    per_target, joint = models
    save_models(tmp_path / "m", per_target)
    joint.save(tmp_path / "m")
    loaded = load_models(tmp_path / "m")
    assert list(loaded) == [None]
    assert loaded[None].train_record_ids == joint.train_record_ids
    assert not any("cuda" in f for f in _files(tmp_path / "m"))  # the old version is gone


def test_per_target_models_saved_over_a_joint_model_replace_it(models, tmp_path):
    per_target, joint = models
    joint.save(tmp_path / "m")
    save_models(tmp_path / "m", per_target)
    assert set(load_models(tmp_path / "m")) == set(per_target)
    with pytest.raises(GbxferError, match="one model per hardware profile"):
        SavedModel.load(tmp_path / "m")


@pytest.mark.parametrize("moment", ["writing a booster", "writing the manifest"])
def test_a_save_killed_midway_leaves_the_old_model_whole(models, tmp_path, monkeypatch,
                                                         moment):
    per_target, joint = models
    save_models(tmp_path / "m", per_target)
    before = _files(tmp_path / "m")

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # stands for kill -9: nothing after this point runs
    if moment == "writing a booster":
        monkeypatch.setattr(type(joint.ranker.booster_), "save_model", killed)
    else:
        monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        joint.save(tmp_path / "m")
    monkeypatch.undo()
    assert set(load_models(tmp_path / "m")) == set(per_target)
    joint.save(tmp_path / "m")  # the rerun completes and clears the debris
    assert list(load_models(tmp_path / "m")) == [None]
    after = _files(tmp_path / "m")
    assert not (after & before) - {MANIFEST}
    assert len({f.split("/")[0] for f in after} - {MANIFEST}) == 1  # no debris left


@pytest.mark.parametrize("name", ["../../../evil", "/tmp/abs-evil", "..", "a/b\\c", "."])
def test_hardware_names_from_data_never_become_paths(models, tmp_path, name):
    _, joint = models
    save_models(tmp_path / "out" / "m", {name: joint, "plain": joint})
    out = tmp_path / "out" / "m"
    assert all(p == out or out in p.parents for p in (tmp_path / "out").rglob("*"))
    assert not Path("/tmp/abs-evil").exists()
    assert set(load_models(tmp_path / "out" / "m")) == {name, "plain"}
    assert "/" not in member_folder(name) and member_folder(name) not in (".", "..")


def test_profiles_whose_slugs_collide_get_their_own_folders():
    names = ["a/b", "a-b", "a b", "a_b", "../a-b"]
    assert len({member_folder(n) for n in names}) == len(names)


def test_a_truncated_lightgbm_booster_is_an_error_not_a_crash(models, tmp_path):
    _, joint = models
    joint.save(tmp_path / "m")
    booster = next((tmp_path / "m").rglob("booster.txt"))
    booster.write_bytes(booster.read_bytes()[: booster.stat().st_size // 2])
    with pytest.raises(GbxferError, match="booster.txt: corrupt"):
        SavedModel.load(tmp_path / "m")


def test_a_truncated_booster_is_refused_before_lightgbm_reads_it(models, tmp_path):
    from gbxfer.model._saved import _read_booster

    _, joint = models
    joint.save(tmp_path / "m")
    text = next((tmp_path / "m").rglob("booster.txt")).read_text()
    for cut in (len(text) // 3, text.index("end of trees"), len(text) - 30):
        (tmp_path / "b.txt").write_text(text[:cut])
        with pytest.raises(ValueError, match="not a whole LightGBM text model"):
            _read_booster(tmp_path / "b.txt", "lightgbm")


@pytest.mark.parametrize("damage", ["truncate", "flip", "delete"])
@pytest.mark.parametrize("which", ["booster.txt", "model.json"])
def test_a_damaged_model_file_is_a_one_line_error(models, tmp_path, damage, which):
    _, joint = models
    joint.save(tmp_path / "m")
    path = next((tmp_path / "m").rglob(which))
    data = bytearray(path.read_bytes())
    if damage == "truncate":
        path.write_bytes(data[:-10])
    elif damage == "flip":
        data[len(data) // 2] ^= 0x10
        path.write_bytes(data)
    else:
        path.unlink()
    with pytest.raises(GbxferError, match=which):
        SavedModel.load(tmp_path / "m")


@pytest.mark.parametrize("edit", [
    lambda m: m.pop("files"), lambda m: m.update(models=[{"folder": 3}]),
    lambda m: m.update(files={"../x": {"sha256": "0", "bytes": 1}}),
    lambda m: m.update(format="gbxfer-dataset")])
def test_an_edited_model_manifest_is_a_one_line_error(models, tmp_path, edit):
    _, joint = models
    joint.save(tmp_path / "m")
    manifest = json.loads((tmp_path / "m" / MANIFEST).read_text())
    edit(manifest)
    (tmp_path / "m" / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(GbxferError):
        SavedModel.load(tmp_path / "m")


def test_a_model_is_never_written_over_a_file_or_a_users_folder(models, tmp_path, gpus):
    _, joint = models
    (tmp_path / "file").write_text("mine")
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "notes.txt").write_text("mine")
    gpus.save(tmp_path / "dataset")
    for out in ("file", "folder", "dataset"):
        with pytest.raises(GbxferError, match="refusing|not a folder"):
            joint.save(tmp_path / out)
    assert (tmp_path / "file").read_text() == (tmp_path / "folder" / "notes.txt").read_text()
    Dataset.load(tmp_path / "dataset")


def test_saving_a_dataset_keeps_the_users_other_files(gpus, tmp_path):
    gpus.save(tmp_path / "ds")
    (tmp_path / "ds" / "notes.parquet").write_text("mine")
    (tmp_path / "ds" / ".hidden").write_text("mine")
    gpus.save(tmp_path / "ds")
    assert (tmp_path / "ds" / "notes.parquet").read_text() == "mine"
    assert (tmp_path / "ds" / ".hidden").read_text() == "mine"
    assert len(list((tmp_path / "ds").glob("records-*.parquet"))) == 1


def test_a_flipped_bit_in_a_dataset_file_is_detected(gpus, tmp_path):
    gpus.save(tmp_path / "ds")
    for path in sorted((tmp_path / "ds").glob("*.parquet")):
        data = path.read_bytes()
        for offset in (len(data) // 7, len(data) // 2, len(data) - 9):
            flipped = bytearray(data)
            flipped[offset] ^= 0x04
            path.write_bytes(flipped)
            with pytest.raises(GbxferError, match=f"{path.name}: corrupt"):
                Dataset.load(tmp_path / "ds")
        path.write_bytes(data)
    Dataset.load(tmp_path / "ds")


@pytest.mark.parametrize("key", ["files", "tables", "format", "schema_version", "n_records"])
def test_an_edited_dataset_manifest_is_a_one_line_error(gpus, tmp_path, key):
    gpus.save(tmp_path / "ds")
    manifest = json.loads((tmp_path / "ds" / MANIFEST).read_text())
    manifest[key] = {"records": 7} if key != "n_records" else 1
    (tmp_path / "ds" / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(GbxferError):
        Dataset.load(tmp_path / "ds")


@pytest.mark.parametrize("latency", [-1.0, np.nan, np.inf, 0.0])
def test_valid_records_with_latencies_out_of_domain_neither_save_nor_train(gpus, tmp_path,
                                                                         latency):
    bad = gpus.select(np.ones(len(gpus), dtype=bool))
    bad.records = bad.records.copy()
    bad.records.loc[np.flatnonzero(bad.records["valid"])[5], "latency"] = latency
    with pytest.raises(GbxferError, match="latency"):
        bad.save(tmp_path / "ds")
    assert not (tmp_path / "ds").exists()
    with pytest.raises(GbxferError, match="latency"):
        train(bad, CONFIG)


@pytest.mark.parametrize("what", ["dataset", "model"])
def test_a_first_save_killed_midway_does_not_block_the_rerun(gpus, models, tmp_path,
                                                             monkeypatch, what):
    thing = gpus if what == "dataset" else models[1]

    def killed(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        thing.save(tmp_path / "out")
    monkeypatch.undo()
    assert any((tmp_path / "out").iterdir())  # the killed save's files, and no manifest
    thing.save(tmp_path / "out")
    loaded = Dataset.load(tmp_path / "out") if what == "dataset" else SavedModel.load(
        tmp_path / "out")
    assert len(loaded.records if what == "dataset" else loaded.columns) > 0
    assert len([e for e in (tmp_path / "out").iterdir() if e.name != MANIFEST]) == (
        2 if what == "dataset" else 1)  # the new version only


def test_a_save_removes_only_files_named_as_gbxfer_names_them(gpus, tmp_path):
    gpus.save(tmp_path / "ds")
    for name in ("tasks", "records", "v-0123456789ab.txt", "records-0123.parquet"):
        (tmp_path / "ds" / name).write_text("mine")
    gpus.save(tmp_path / "ds")
    for name in ("tasks", "records", "v-0123456789ab.txt", "records-0123.parquet"):
        assert (tmp_path / "ds" / name).read_text() == "mine"


def test_a_model_folder_of_schema_version_1_names_its_version(tmp_path):
    from gbxfer.errors import SchemaVersionError

    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "model.json").write_text('{"schema_version": 1}')
    with pytest.raises(SchemaVersionError, match="schema version 1"):
        SavedModel.load(tmp_path / "old")
