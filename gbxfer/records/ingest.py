"""Ingest measured programs from MetaSchedule databases, Ansor/TenSet logs and gbxfer datasets.

>>> from gbxfer import ingest
>>> ds = ingest(["path/to/ms_database", "tenset/measure_records"])  # doctest: +SKIP
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from tqdm.auto import tqdm

from .dataset import Dataset
from ..errors import GbxferError, InputError, SchemaVersionError
from .formats import (RecordBuilder, is_ansor_log, is_metaschedule_database, read_ansor_log,
                      read_metaschedule_database)
from .targets import profile_name_problem


def ingest(sources, hardware=None, skip_bad=False, progress=False, machine=None,
           jobs: int = 1) -> Dataset:
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
        Skip bad lines, files, unreadable folders and damaged gbxfer datasets (counted by
        reason in ``manifest["skipped"]``) instead of raising on the first one.
    progress : bool
        Show a progress bar of lines read.
    jobs : int
        Processes that parse the logs' and databases' lines (in chunks); the dataset is the
        same, bit for bit, whatever their number.
    """
    if isinstance(sources, (str, os.PathLike)):  # one source, not the characters of its name
        sources = [sources]
    hardware = _check_hardware(hardware)
    if machine is not None and (not isinstance(machine, str) or not machine.strip()
                                or not machine.isprintable()):
        raise GbxferError(f"machine must be a non-empty printable name, got {machine!r}")
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise GbxferError(f"jobs must be a positive integer, got {jobs!r}")
    steps: list[Step] = []
    for source in sources:
        _plan(Path(source), hardware, steps)
    builder = RecordBuilder(skip_bad=skip_bad)
    datasets: list[Dataset] = []
    with tqdm(unit=" lines", disable=None if progress else True, desc="ingest") as bar:
        if jobs > 1 and sum(s.kind in ("ansor", "metaschedule") for s in steps):
            from ._parallel import read_in_parallel

            read_in_parallel(steps, builder, datasets, bar.update, jobs)
        else:
            for step in steps:
                read_step(step, builder, datasets, bar.update)
    parts = [builder.build(), *datasets]
    if machine is not None:
        for part in parts:
            part.records["machine"] = machine.strip()
    return Dataset.concat(parts) if datasets else parts[0]


class Step(NamedTuple):
    """One thing to read, in reading order: an Ansor log file, a MetaSchedule database
    folder, a gbxfer dataset, or a folder with nothing to read (``message`` says why)."""

    kind: str  # "ansor", "metaschedule", "dataset" or "nothing"
    path: Path
    hardware: tuple | None = None
    message: str = ""


def read_step(step: Step, builder, datasets, progress) -> None:
    """Read ``step`` into ``builder`` (logs and databases) or ``datasets``."""
    if step.kind == "dataset":
        try:
            datasets.append(Dataset.load(step.path))
        except SchemaVersionError:  # a version this gbxfer cannot read (a newer one's?): said
            raise
        except (GbxferError, OSError) as error:  # damaged: skipped like a bad log with skip_bad
            if not builder.skip_bad:
                raise
            message = str(error).removeprefix(f"{step.path}: ").replace(f"{step.path}{os.sep}", "")
            builder.guard(InputError(step.path, None, "bad-dataset", message))
    elif step.kind == "nothing":
        builder.guard(InputError(step.path, None, "no-data", step.message))
    elif step.kind == "ansor":
        read_ansor_log(step.path, builder, step.hardware, progress)
    else:
        read_metaschedule_database(step.path, builder, step.hardware, progress)


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


def _plan(path: Path, hardware, steps: list) -> None:
    """Append the :class:`Step` s that source ``path`` holds to ``steps``, in reading order."""
    if not path.exists():
        raise GbxferError(f"{path}: no such file or folder")
    if path.is_file():
        if path.name.startswith("database_"):
            raise GbxferError(f"{path}: a MetaSchedule database file; pass its folder "
                              f"({path.parent}) to read both of its files")
        steps.append(Step("ansor", path, hardware))
        return
    if not _enterable(path, steps):
        return
    if (path / "manifest.json").is_file():
        steps.append(Step("dataset", path))
        return
    if is_metaschedule_database(path):
        steps.append(Step("metaschedule", path, hardware))
        return
    tenset = path if path.name == "measure_records" else path / "measure_records"
    if tenset.is_dir():
        _plan_tenset_tree(tenset, hardware, steps)
        return
    before = len(steps)
    for root, dirs, files in _walk(path, steps):
        if root != path and ((root / "manifest.json").is_file() or is_metaschedule_database(root)):
            _plan(root, hardware, steps)
            dirs.clear()
            continue
        steps += [Step("ansor", root / name, hardware) for name in files
                  if is_ansor_log(root / name)]
    if len(steps) == before:  # (an unreadable folder is its own step: said once)
        steps.append(Step("nothing", path, message="no MetaSchedule database, Ansor/TenSet log "
                          "(*.json, *.json.gz) or gbxfer dataset in this folder"))


def _plan_tenset_tree(tree: Path, hardware, steps: list) -> None:
    """TenSet layout: one folder per platform, whose name is the hardware profile name; a log
    beside them names its hardware by its lines' targets. Hidden files and folders are left
    out (``.ipynb_checkpoints`` copies would count every measurement twice)."""
    if not _enterable(tree, steps):
        return
    try:
        platforms = sorted(p for p in tree.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError as error:  # entered, not listed
        steps.append(_unreadable(tree, error))
        return
    before = len(steps)
    steps += [Step("ansor", log, hardware) for log in sorted(tree.glob("*.json*"))
              if _is_log(log, tree)]
    for platform in platforms:
        problem = "" if hardware else profile_name_problem(platform.name)
        if problem:
            steps.append(Step("nothing", platform, message=f"platform folder name {problem} "
                              "(it names its records' hardware; or pass --hardware)"))
        elif not os.access(platform, os.R_OK | os.X_OK):
            steps.append(Step("nothing", platform, message="platform folder not readable"))
        else:
            logs = [root / name for root, _, files in _walk(platform, steps, hidden=False)
                    for name in files]
            steps += [Step("ansor", log, hardware or (platform.name, None))
                      for log in sorted(logs) if _is_log(log, tree)]
    if len(steps) == before:
        where = "platform folders" if not platforms else "Ansor/TenSet log in its platform folders"
        steps.append(Step("nothing", tree, message=f"TenSet tree has no {where}"))


def _walk(top: Path, steps: list, hidden: bool = True):
    """``os.walk`` over ``top`` in sorted order as ``(Path, dirs, files)``, hidden folders left
    out unless ``hidden``; a folder it cannot list or enter is a skippable "folder not
    readable" step in ``steps`` instead of an error."""
    def unlisted(error: OSError) -> None:
        steps.append(_unreadable(Path(error.filename), error))

    for root, dirs, files in os.walk(top, onerror=unlisted):
        root = Path(root)
        if not _enterable(root, steps):
            dirs.clear()
            continue
        dirs[:] = sorted(d for d in dirs if hidden or not d.startswith("."))
        yield root, dirs, sorted(files)


def _enterable(folder: Path, steps: list) -> bool:
    """Whether the entries of ``folder`` can be looked at (a folder that can be listed but not
    entered cannot); where not, a skippable "folder not readable" step in ``steps``."""
    try:
        os.stat(folder / "manifest.json", follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError as error:
        steps.append(_unreadable(folder, error))
        return False
    return True


def _unreadable(folder: Path, error: OSError) -> Step:
    return Step("nothing", folder, message=f"folder not readable ({error.strerror or error})")


def _is_log(path: Path, tree: Path) -> bool:
    """An Ansor log file of a TenSet tree, outside hidden folders and not itself hidden."""
    return (is_ansor_log(path) and not path.is_dir()
            and not any(part.startswith(".") for part in path.relative_to(tree).parts))
