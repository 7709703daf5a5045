"""Configuration files (``configs/<kind>/<name>.yaml``: hardware profiles, workload suites,
model configs), found by path or by name.

A name is looked up in ``./configs/<kind>``, then in the configs installed with gbxfer
(``gbxfer/configs``), then in a source checkout's ``configs/``.
"""
from __future__ import annotations

from pathlib import Path

from .errors import GbxferError

# configs/ of a source checkout, or the copy installed as gbxfer/configs
PACKAGE_CONFIGS = [Path(__file__).resolve().parent / "configs",
                   Path(__file__).resolve().parents[1] / "configs"]


def config_dirs(kind: str) -> list[Path]:
    """Folders searched for ``configs/<kind>/`` files, in order."""
    dirs = [Path.cwd() / "configs" / kind, *(base / kind for base in PACKAGE_CONFIGS)]
    return list(dict.fromkeys(d for d in dirs if d.is_dir()))


def find_config(kind: str, name_or_path: str) -> Path:
    """A YAML file given by path or by name (``configs/<kind>/<name>.yaml``)."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        return path
    for folder in config_dirs(kind):
        candidate = folder / f"{name_or_path}.yaml"
        if candidate.is_file():
            return candidate
    known = sorted({p.stem for d in config_dirs(kind) for p in d.glob("*.yaml")})
    if path.exists():
        raise GbxferError(f"{name_or_path}: not a {kind} config (a config is a NAME of "
                          f"{', '.join(known) or 'none'}, or a FILE.yaml)")
    raise GbxferError(f"no {kind} config {name_or_path!r}; known: {', '.join(known) or 'none'}")
