"""What ``--skip-bad`` skips beyond bad lines: unreadable files and folders, damaged datasets;
each a one-line error without it."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_bad_input import _expect_error, _log

from gbxfer import GbxferError, SchemaVersionError, ingest
from gbxfer.manifests import _digest


def _no_entry(monkeypatch, name="locked"):
    """Folders called ``name`` listed but not entered (read without execute; root reads all)."""
    stat = os.stat

    def no_entry(path, *args, **kwargs):
        if isinstance(path, (str, os.PathLike)) and Path(path).parent.name == name:
            raise PermissionError(13, "Permission denied", str(path))
        return stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", no_entry)


@pytest.mark.parametrize("tenset", [False, True])
def test_a_source_folder_that_cannot_be_entered_is_one_line(ansor_lines, tmp_path, monkeypatch,
                                                            tenset):
    source = tmp_path / ("measure_records" if tenset else "locked")
    (source / "cpu-a" if tenset else source).mkdir(parents=True)
    _no_entry(monkeypatch, source.name)
    error = _expect_error(source, None, "no-data")
    assert error.message == "folder not readable (Permission denied)"
    good = _log(tmp_path, ansor_lines[:4], "good.json")
    ds = ingest([good, source], skip_bad=True)
    assert len(ds) == 4 and ds.manifest["skipped"] == {"no-data": 1}


def test_a_tenset_tree_that_cannot_be_entered_is_one_line(ansor_lines, tmp_path, monkeypatch):
    top = tmp_path / "top"
    (top / "measure_records" / "cpu-a").mkdir(parents=True)
    _log(top / "measure_records" / "cpu-a", ansor_lines[:4], "good.json")
    _no_entry(monkeypatch, "measure_records")
    error = _expect_error(top / "measure_records", None, "no-data", top)
    assert error.message == "folder not readable (Permission denied)"


def test_a_tenset_tree_that_cannot_be_listed_is_one_line(ansor_lines, tmp_path, monkeypatch):
    tree = tmp_path / "measure_records"
    (tree / "cpu-a").mkdir(parents=True)
    for name in ("scandir", "listdir"):  # (pathlib lists with either, by Python version)
        def no_listing(path=".", _list=getattr(os, name)):  # entered, not listed
            if str(path).endswith("measure_records"):
                raise PermissionError(13, "Permission denied", str(path))
            return _list(path)

        monkeypatch.setattr(os, name, no_listing)
    error = _expect_error(tree, None, "no-data", tmp_path)
    assert error.message == "folder not readable (Permission denied)"


def test_an_unreadable_hidden_folder_of_a_tenset_tree_is_left_out(ansor_lines, tmp_path,
                                                                  monkeypatch):
    platform = tmp_path / "measure_records" / "cpu-a"
    (platform / ".ipynb_checkpoints").mkdir(parents=True)
    _log(platform, ansor_lines[:4], "good.json")
    _log(platform / ".ipynb_checkpoints", ansor_lines[:4], "good.json")
    _no_entry(monkeypatch, ".ipynb_checkpoints")
    ds = ingest([tmp_path / "measure_records"])  # no error: hidden folders are not read
    assert len(ds) == 4 and not ds.manifest["skipped"]


def test_skip_bad_does_not_skip_a_dataset_of_another_schema(ansor_lines, tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    _log(folder, ansor_lines[:4], "good.json")
    ingest([_log(tmp_path, ansor_lines[4:6], "more.json")]).save(folder / "ds")
    manifest = folder / "ds" / "manifest.json"
    content = {**json.loads(manifest.read_text()), "schema_version": 99}
    manifest.write_text(json.dumps({**content, "sha256": _digest(content)}))  # not damaged
    with pytest.raises(SchemaVersionError, match="schema version 99"):
        ingest([folder], skip_bad=True)  # not damaged: a newer gbxfer's, which the user needs


@pytest.mark.parametrize("jobs", [1, 2])
def test_skip_bad_skips_a_dangling_link_among_good_ones(ansor_lines, tmp_path, jobs):
    folder = tmp_path / "logs"
    folder.mkdir()
    _log(folder, ansor_lines[:4], "good.json")
    (folder / "gone.json").symlink_to(tmp_path / "nowhere.json")
    error = _expect_error(folder / "gone.json", None, "unreadable-file", folder)
    assert error.message == f"a link to {tmp_path / 'nowhere.json'}, which does not exist"
    ds = ingest([folder], skip_bad=True, jobs=jobs)
    assert len(ds) == 4
    assert ds.manifest["skipped"] == {"unreadable-file": 1}


def test_skip_bad_skips_a_folder_it_cannot_list(ansor_lines, tmp_path, monkeypatch):
    folder = tmp_path / "logs"
    (folder / "locked").mkdir(parents=True)
    _log(folder, ansor_lines[:4], "good.json")
    _log(folder / "locked", ansor_lines[4:6], "more.json")
    scandir = os.scandir

    def no_access(path="."):  # what a folder without read access gives (root reads all)
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", no_access)
    error = _expect_error(folder / "locked", None, "no-data", folder)
    assert error.message == "folder not readable (Permission denied)"
    ds = ingest([folder], skip_bad=True)
    assert len(ds) == 4 and ds.manifest["skipped"] == {"no-data": 1}


@pytest.mark.parametrize("tenset", [False, True])
def test_skip_bad_skips_a_folder_it_can_list_but_not_enter(ansor_lines, tmp_path, monkeypatch,
                                                           tenset):
    top = tmp_path / "measure_records" if tenset else tmp_path / "logs"
    folder = top / "cpu-a" if tenset else top
    (folder / "locked").mkdir(parents=True)
    _log(folder, ansor_lines[:4], "good.json")
    _log(folder / "locked", ansor_lines[4:6], "more.json")
    _no_entry(monkeypatch)
    error = _expect_error(folder / "locked", None, "no-data", top)
    assert error.message == "folder not readable (Permission denied)"
    ds = ingest([top], skip_bad=True)
    assert len(ds) == 4 and ds.manifest["skipped"] == {"no-data": 1}


@pytest.mark.parametrize("jobs", [1, 2])
def test_skip_bad_skips_a_damaged_dataset_among_good_logs(ansor_lines, tmp_path, jobs):
    folder = tmp_path / "logs"
    folder.mkdir()
    _log(folder, ansor_lines[:4], "good.json")
    ingest([_log(tmp_path, ansor_lines[4:6], "more.json")]).save(folder / "ds")
    table = next((folder / "ds").glob("records-*.parquet"))
    table.write_bytes(table.read_bytes()[:-8])  # cut short: its checksum no longer matches
    with pytest.raises(GbxferError, match="records-"):
        ingest([folder], jobs=jobs)
    ds = ingest([folder], skip_bad=True, jobs=jobs)
    assert len(ds) == 4 and ds.manifest["skipped"] == {"bad-dataset": 1}
    example = ds.manifest["skip_examples"][0]  # the dataset named once, then its file
    assert example.startswith(f"{folder / 'ds'}: records-") and example.count(str(folder)) == 1
