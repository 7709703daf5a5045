"""Pieces shared by the CLI verbs."""
from __future__ import annotations

import argparse
import datetime as _dt
import platform
import shlex
import sys
from pathlib import Path

from .._version import __version__
from ..records.dataset import BUNDLED, Dataset, load_dataset


def existing_path(text: str) -> Path:
    """A file or folder that exists; ``bundled`` names the bundled dataset's folder."""
    path = Path(text)
    if text == "bundled" and not path.exists():
        return BUNDLED
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text}: no such file or folder")
    return path


def load_dataset_arg(text: str) -> Dataset:
    """A DATASET argument: a dataset folder, or ``bundled`` for the dataset gbxfer ships."""
    return load_dataset(text)


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
