"""Ingest measured programs from MetaSchedule databases, Ansor/TenSet logs and gbxfer datasets.

>>> from gbxfer import ingest
>>> ds = ingest(["path/to/ms_database", "tenset/measure_records"])  # doctest: +SKIP
"""
from __future__ import annotations

import os
from pathlib import Path

from tqdm.auto import tqdm

from .dataset import Dataset
from ..errors import GbxferError, InputError
from .formats import (RecordBuilder, is_ansor_log, is_metaschedule_database, read_ansor_log,
                      read_metaschedule_database)
from .targets import profile_name_problem


def ingest(sources, hardware=None, skip_bad=False, progress=False, machine=None) -> Dataset:
    """Read every source into one dataset, merging duplicate records.

    Parameters
    ----------
    sources : str, Path or list of them
        One source or a list of: MetaSchedule database folders, Ansor/TenSet log files or
        folders of them, TenSet trees (``measure_records/<platform>/*.json``) and gbxfer dataset
        folders, in any mix.
    hardware : tuple (name, family or None), optional
        Hardware profile of every record read from logs and databases, overriding the identity
        derived from their targets (``--hardware NAME[:FAMILY]``).
    machine : str, optional
        The physical machine of every record read (``--machine``: a CPU model and
        microarchitecture such as ``"AMD EPYC (zen3)"``, or a GPU name), overriding the one
        derived from targets (:func:`~gbxfer.records.targets.machine_identity`) and the one a
        gbxfer dataset carries.
    skip_bad : bool
        Skip bad lines and files (counted by reason in ``manifest["skipped"]``) instead of
        raising :class:`~gbxfer.errors.InputError` on the first one.
    progress : bool
        Show a progress bar of lines read.
    """
    if isinstance(sources, (str, os.PathLike)):  # one source, not the characters of its name
        sources = [sources]
    hardware = _check_hardware(hardware)
    if machine is not None and (not isinstance(machine, str) or not machine.strip()
                                or not machine.isprintable()):
        raise GbxferError(f"machine must be a non-empty printable name, got {machine!r}")
    builder = RecordBuilder(skip_bad=skip_bad)
    datasets = []
    with tqdm(unit=" lines", disable=None if progress else True, desc="ingest") as bar:
        for source in sources:
            _read_source(Path(source), builder, hardware, datasets, bar.update)
    parts = [builder.build(), *datasets]
    if machine is not None:
        for part in parts:
            part.records["machine"] = machine.strip()
    return Dataset.concat(parts) if datasets else parts[0]


def _check_hardware(hardware):
    """``hardware`` as ``(name, family or None)``, named as :func:`parse_hardware_option` wants."""
    if hardware is None:
        return None
    if not isinstance(hardware, (tuple, list)) or len(hardware) != 2:
        raise GbxferError(f"hardware must be (name, family or None), got {hardware!r}")
    name, family = hardware
    for what, value in (("name", name), ("family", family)):
        problem = profile_name_problem(value) if value or what == "name" else ""
        if problem:
            raise GbxferError(f"hardware {what} {value!r} {problem}")
    return name, family


def _read_source(path: Path, builder, hardware, datasets, progress) -> None:
    if not path.exists():
        raise GbxferError(f"{path}: no such file or folder")
    if path.is_file():
        if path.name.startswith("database_"):
            raise GbxferError(f"{path}: a MetaSchedule database file; pass its folder "
                              f"({path.parent}) to read both of its files")
        read_ansor_log(path, builder, hardware, progress)
        return
    if (path / "manifest.json").is_file():
        datasets.append(Dataset.load(path))
        return
    if is_metaschedule_database(path):
        read_metaschedule_database(path, builder, hardware, progress)
        return
    tenset = path if path.name == "measure_records" else path / "measure_records"
    if tenset.is_dir():
        _read_tenset_tree(tenset, builder, hardware, progress)
        return
    found = False
    for root, dirs, files in os.walk(path):
        dirs.sort()
        root = Path(root)
        if root != path and ((root / "manifest.json").is_file() or is_metaschedule_database(root)):
            _read_source(root, builder, hardware, datasets, progress)
            dirs.clear()
            found = True
            continue
        for name in sorted(files):
            if is_ansor_log(root / name):
                read_ansor_log(root / name, builder, hardware, progress)
                found = True
    if not found:
        builder.guard(InputError(path, None, "no-data",
                                 "no MetaSchedule database, Ansor/TenSet log (*.json, "
                                 "*.json.gz) or gbxfer dataset in this folder"))


def _read_tenset_tree(tree: Path, builder, hardware, progress) -> None:
    """TenSet layout: one folder per platform, whose name is the hardware profile name."""
    platforms = sorted(p for p in tree.iterdir() if p.is_dir())
    if not platforms:
        builder.guard(InputError(tree, None, "no-data", "TenSet tree has no platform folders"))
    for platform in platforms:
        identity = hardware or (platform.name, None)
        for log in sorted(platform.rglob("*.json*")):
            if is_ansor_log(log):
                read_ansor_log(log, builder, identity, progress)
