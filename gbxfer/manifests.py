"""The folders gbxfer writes (datasets, models): a ``manifest.json`` naming every file with its
SHA-256, switched in one ``os.replace``.

Writing puts the new files in place under fresh names first, then replaces the manifest, then
removes the previous version's files (gbxfer's own names only): a write killed at any moment
leaves the old version or the new one whole. Reading checks the format, the schema version and every file's size and
checksum before anything parses the files, so a truncated or flipped file is a one-line error,
never a crash in a parser.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
import shutil
import uuid
from pathlib import Path

from ._version import __version__
from .errors import GbxferError, SchemaVersionError

MANIFEST = "manifest.json"
TOKEN = re.compile(r"[0-9a-f]{12}")


def new_token() -> str:
    """A fresh name part for the files of one saved version."""
    return uuid.uuid4().hex[:12]


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fsync(path: Path) -> None:
    """Flush a file (or a folder's entries) to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def file_entry(folder: Path, name: str) -> dict:
    """The manifest entry of ``folder/name`` once written: flushed, sized and hashed."""
    path = folder / name
    fsync(path)
    return {"bytes": path.stat().st_size, "sha256": sha256(path)}


def prepare_folder(path: Path, format_name: str, what: str, debris) -> None:
    """Make ``path`` ready to receive a ``format_name`` folder: an error when it is a file, a
    folder holding anything but a gbxfer manifest of this kind, its files and ``debris(name)``
    entries (gbxfer's own names, left by a killed write), so nothing of the user's is ever
    overwritten or removed."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise GbxferError(f"{path}: exists and is not a folder; choose another output for the "
                          f"{what}")
    if not path.is_dir():
        path.mkdir(parents=True)
        fsync(path.parent)
        return
    if not (path / MANIFEST).is_file():
        foreign = [e.name for e in path.iterdir() if not _ours(e.name, debris)]
        if foreign:
            raise GbxferError(f"{path}: folder holds {foreign[0]!r} and no gbxfer {what}; "
                              "refusing to write into it")
        return
    try:
        old = json.loads((path / MANIFEST).read_bytes())
    except (ValueError, UnicodeDecodeError):
        old = None
    if not isinstance(old, dict) or old.get("format") != format_name:
        kind = old.get("format") if isinstance(old, dict) else "an unreadable manifest"
        raise GbxferError(f"{path}: holds {kind!r}, not a gbxfer {what}; refusing to "
                          "overwrite it")


def _ours(name: str, debris) -> bool:
    return bool(debris(name) or re.fullmatch(r"\.manifest-[0-9a-f]{12}\.tmp", name))


def switch_manifest(path: Path, manifest: dict, debris) -> None:
    """Replace ``path/manifest.json`` by ``manifest`` in one step, then remove gbxfer's own
    entries (``debris(name)``: earlier versions, files of killed writes) that it does not
    name; nothing else in the folder is touched."""
    path = Path(path)
    manifest = {**manifest, "gbxfer_version": __version__,
                "saved": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    manifest["sha256"] = _digest(manifest)
    tmp = path / f".manifest-{new_token()}.tmp"
    tmp.write_text(json.dumps(manifest, indent=1))
    fsync(tmp)
    os.replace(tmp, path / MANIFEST)
    fsync(path)
    keep = {Path(name).parts[0] for name in manifest["files"]}
    for entry in path.iterdir():
        if entry.name not in keep and _ours(entry.name, debris):
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()


def write_file(path: Path, write) -> None:
    """Write one output file whole or not at all: ``write(temporary path)``, then a rename."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{new_token()}.tmp")
    try:
        write(tmp)
        fsync(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def owning_folder(path: Path) -> Path | None:
    """The gbxfer folder (its manifest's format ``gbxfer-...``) that ``path`` lies in, if any:
    its files are gbxfer's to write."""
    for folder in Path(path).resolve().parents:
        try:
            manifest = json.loads((folder / MANIFEST).read_bytes())
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        if isinstance(manifest, dict) and str(manifest.get("format", "")).startswith("gbxfer-"):
            return folder
    return None


def read_manifest(path: Path, format_name: str, versions, what: str) -> dict:
    """The manifest of a ``format_name`` folder, checked: readable, of the right format, of a
    schema version in ``versions``, with a ``files`` mapping."""
    path = Path(path)
    manifest_path = path / MANIFEST
    if not path.exists():
        raise GbxferError(f"{path}: no such {what} (no such file or folder)")
    if not manifest_path.is_file():
        raise GbxferError(f"{path}: not a gbxfer {what} (no {MANIFEST})")
    try:
        manifest = json.loads(manifest_path.read_bytes())
    except (ValueError, UnicodeDecodeError) as exc:
        raise GbxferError(f"{manifest_path}: unreadable manifest ({exc})") from None
    if not isinstance(manifest, dict):
        raise GbxferError(f"{manifest_path}: a manifest is a JSON object")
    if manifest.get("format") != format_name:
        raise GbxferError(f"{manifest_path}: format is {manifest.get('format')!r}, expected "
                          f"{format_name!r}")
    version = manifest.get("schema_version")
    if version not in versions:
        raise SchemaVersionError(
            f"{path}: {what} schema version {version!r} cannot be read by gbxfer "
            f"{__version__}, which reads version "
            f"{' and '.join(str(v) for v in sorted(versions))}")
    if manifest.get("sha256") != _digest(manifest):
        raise GbxferError(f"{manifest_path}: corrupt (its content differs from its SHA-256)")
    if not isinstance(manifest.get("files"), dict):
        raise GbxferError(f"{manifest_path}: 'files' must map names to checksums")
    return manifest


def _digest(manifest: dict) -> str:
    """SHA-256 of a manifest's content but its own checksum (key order and spacing aside)."""
    content = {k: v for k, v in manifest.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(content, sort_keys=True, separators=(",", ":"))
                          .encode()).hexdigest()


def verify_files(path: Path, manifest: dict) -> None:
    """Check that every file the manifest names is there, inside ``path``, with its size and
    SHA-256: anything else is a one-line error naming the file."""
    path = Path(path)
    for name, entry in manifest["files"].items():
        if (not isinstance(name, str) or not isinstance(entry, dict) or Path(name).is_absolute()
                or ".." in Path(name).parts or not isinstance(entry.get("sha256"), str)):
            raise GbxferError(f"{path / MANIFEST}: bad file entry {name!r}: {entry!r}")
        file = path / name
        if not file.is_file():
            raise GbxferError(f"{file}: missing (named in {MANIFEST})")
        if file.stat().st_size != entry.get("bytes") or sha256(file) != entry["sha256"]:
            raise GbxferError(f"{file}: corrupt (its size or SHA-256 differs from {MANIFEST}'s)")


def read_json(path: Path) -> dict:
    """A JSON object from a file already verified; anything else is a one-line error."""
    try:
        value = json.loads(Path(path).read_bytes())
    except (ValueError, UnicodeDecodeError) as exc:
        raise GbxferError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise GbxferError(f"{path}: expected a JSON object")
    return value
