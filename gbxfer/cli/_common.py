"""Pieces shared by the CLI verbs."""
from __future__ import annotations

import argparse
import datetime as _dt
import math
import os
import platform
import shlex
import sys
from pathlib import Path

from .._version import __version__
from ..errors import GbxferError
from ..manifests import MANIFEST, owning_folder
from ..records.dataset import BUNDLED, Dataset, load_dataset
from ..splits import SplitSpec


def existing_path(text: str) -> Path:
    """A file or folder that exists; ``bundled`` names the bundled dataset's folder."""
    path = input_path(text)
    if text == "bundled" and not path.exists():
        return BUNDLED
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text}: no such file or folder")
    return path


# argparse ``type=`` functions: each raises ArgumentTypeError, which argparse prints as one
# line naming the option; anything else raised there would escape main() as a traceback.

def _integer(text: str, domain: str, ok) -> int:
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not ok(value):
        raise argparse.ArgumentTypeError(f"expected {domain}, got {text!r}")
    return value


def _number(text: str, domain: str, ok) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and ok(value)):
        raise argparse.ArgumentTypeError(f"expected {domain}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1."""
    return _integer(text, "an integer >= 1", lambda v: v >= 1)


def non_negative_int(text: str) -> int:
    """An integer >= 0."""
    return _integer(text, "an integer >= 0", lambda v: v >= 0)


def positive_float(text: str) -> float:
    """A finite number > 0."""
    return _number(text, "a number > 0", lambda v: v > 0)


def fraction(text: str) -> float:
    """A number strictly between 0 and 1."""
    return _number(text, "a fraction 0 < F < 1", lambda v: 0 < v < 1)


def keep_fraction(text: str) -> float:
    """A number in (0, 1]: 1 keeps everything."""
    return _number(text, "a fraction 0 < F <= 1", lambda v: 0 < v <= 1)


def share(text: str) -> float:
    """A number in [0, 1)."""
    return _number(text, "a share 0 <= F < 1", lambda v: 0 <= v < 1)


def shots_option(text: str) -> int | float:
    """``--shots``: an integer K >= 1 (programs per task x hardware group, returned as int)
    or a fraction 0 < F < 1 of the valid target records (returned as float). A number written
    with a point or an exponent is a fraction, so ``1.0`` and ``2.0`` are rejected rather than
    read as "all" or as K."""
    try:
        value = int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if 0.0 < value < 1.0:  # False for nan
            return value
    else:
        if value >= 1:
            return value
    raise argparse.ArgumentTypeError(
        f"expected an integer K >= 1 or a fraction 0 < F < 1, got {text!r}")


SHOTS_HELP = ("an integer K >= 1: K programs of every task x hardware group of the target; or "
              "a fraction 0 < F < 1 (written with a point, e.g. 0.1): that share of the "
              "target's valid records; 0, negatives, 1.0 and non-integers above 1 are errors")


def input_path(text: str) -> Path:
    """A MODEL or DATASET argument: never empty (``Path("")`` would be the current folder)."""
    if not text:
        raise argparse.ArgumentTypeError("expected a path, got an empty string")
    return Path(text)


def _check_parents(path: Path, text: str, itself: bool = False) -> None:
    """The nearest existing ancestor of ``path`` (or ``path`` itself, with ``itself``: an
    output folder written into) must be a folder this process may write in (missing ones are
    created when writing, as ``mkdir -p`` does)."""
    for parent in ([path] if itself else []) + list(path.parents):
        if parent.exists():
            if not parent.is_dir():
                raise argparse.ArgumentTypeError(f"{text}: {parent} is not a folder")
            if not os.access(parent, os.W_OK | os.X_OK):  # found before any work, not after
                raise argparse.ArgumentTypeError(f"{text}: cannot write in {parent}")
            return


def output_folder(text: str) -> Path:
    """A folder to write (a model or a dataset): not an existing file; missing parent folders
    are created."""
    path = input_path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: exists and is not a folder")
    _check_parents(path, text, itself=True)
    return path


def output_file(text: str) -> Path:
    """A file to write: not an existing folder, nor inside a gbxfer model or dataset folder
    (whose files its manifest names and checks); missing parent folders are created, as for
    output folders."""
    path = input_path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: is a folder; expected a file name")
    owner = owning_folder(path)
    if owner is not None:
        raise argparse.ArgumentTypeError(f"{text}: inside the gbxfer folder {owner} (its "
                                         f"{MANIFEST} names its files); write it elsewhere")
    _check_parents(path, text)
    return path


MODEL_HELP = ("a model folder, or 'pretrained': the shipped model (unless a folder of that name "
              "is here)")


def model_path(text: str) -> Path:
    """A MODEL argument: a model folder, or ``pretrained`` for the model gbxfer ships (unless
    a folder of that name is here, as for ``bundled``)."""
    from ..model import PRETRAINED

    path = input_path(text)
    return PRETRAINED if text == "pretrained" and not path.exists() else path


def holdout_split(args, default_fraction: float) -> SplitSpec | None:
    """``--holdout`` sized by ``--test-fraction`` (``default_fraction`` when not given) and
    seeded by ``--seed``; ``--test-fraction`` without ``--holdout`` is an error, not ignored."""
    if args.holdout is None:
        if args.test_fraction is not None:
            raise GbxferError("--test-fraction sizes the --holdout split: give --holdout too")
        return None
    fraction = default_fraction if args.test_fraction is None else args.test_fraction
    return SplitSpec.parse(args.holdout, fraction, args.seed)


def run_folder(text: str) -> Path:
    """A folder a collection, calibration or tuning run writes into (its own layout): not a
    file, not a gbxfer model or dataset, nor inside one."""
    path = output_folder(text)
    owner = owning_folder(path / MANIFEST)  # the folder itself, or one it lies in
    if owner is not None:
        raise argparse.ArgumentTypeError(f"{text}: {owner} is a gbxfer model or dataset; a "
                                         "run writes into a folder of its own")
    return path


def name_list(text: str) -> str:
    """``--tasks A,B``: one or more non-empty comma-separated names (an empty value would
    otherwise mean 'all')."""
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected NAME[,NAME...], got {text!r}")
    return ",".join(names)


def a_name(text: str) -> str:
    """A non-empty name (``--network``)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a name, got an empty string")
    return text


def task_names(dataset) -> dict:
    """Each task key's description (``conv2d N=1 H=56 ...``), where the tasks table has one."""
    tasks = dataset.tasks
    if "description" not in tasks:
        return {}
    return {key: text for key, text in zip(tasks["task_key"], tasks["description"]) if text}


def csv_file(text: str) -> Path:
    """A .csv file to write."""
    path = output_file(text)
    if path.suffix != ".csv":
        raise argparse.ArgumentTypeError(f"{text}: expected a name ending in .csv")
    return path


def load_dataset_arg(text: str) -> Dataset:
    """A DATASET argument: a dataset folder, or ``bundled`` for the dataset gbxfer ships."""
    return load_dataset(text)


def require_hardware(dataset: Dataset, name: str, where: str = "the dataset") -> None:
    """Raise unless ``dataset`` holds records of hardware profile ``name`` (``--hardware``)."""
    if name not in dataset.hardware:
        raise GbxferError(f"--hardware {name!r}: no records of this profile in {where}; its "
                          f"profiles: {', '.join(dataset.hardware) or '-'}")


def command_stamp() -> dict:
    """The command line, date and machine, as recorded in manifests and results."""
    return {"argv": shlex.join(["gbxfer", *sys.argv[1:]]),
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "machine": f"{platform.node()} {platform.machine()} {platform.processor()}".strip(),
            "gbxfer_version": __version__}


def format_table(rows: list[dict], columns: list[str]) -> str:
    """A plain-text table with a header row; floats to 4 significant digits."""
    def cell(v):
        if isinstance(v, float):
            return f"{v:.4g}"
        return "-" if v is None else str(v)
    body = [[cell(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(b[i]) for b in body)) if body else len(c)
              for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(v.ljust(w) for v, w in zip(b, widths)) for b in body]
    return "\n".join(lines)
