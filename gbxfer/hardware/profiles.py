"""Hardware profiles: the named (target, threads, descriptor) a measurement is taken on.

A profile file (``configs/hardware/NAME.yaml``)::

    name: x86-avx2-1t
    family: x86-avx2              # the ISA (thread variants of one ISA share a family)
    machine: AMD EPYC (zen3)      # the physical machine: CPU model and microarchitecture
    description: ...
    target: {kind: llvm, mcpu: znver3, num-cores: 1}
    threads: 1                    # TVM_NUM_THREADS of the measuring worker
    descriptor: {vector_bits: 256, fma: 1, ...}

Profiles are looked up by path, then by name (:func:`gbxfer.config_files.find_config`).
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import yaml

from ..config_files import PACKAGE_CONFIGS, find_config
from ..errors import GbxferError
from ..records.targets import profile_name_problem

@dataclasses.dataclass(frozen=True)
class HardwareProfile:
    name: str
    family: str
    target: dict
    threads: int
    description: str = ""
    descriptor: dict = dataclasses.field(default_factory=dict)
    path: str = ""
    machine: str = ""  # "" in a profile that does not say: collect names the local machine


# profiles loaded from a path in this process, by name: the records and models that name them
# find their descriptor (gbxfer.features.hardware_descriptor) though no configs/ file has it
_LOADED: dict[str, HardwareProfile] = {}


def load_profile(name_or_path: str) -> HardwareProfile:
    """Load and validate a hardware profile: a path, or a name of configs/hardware or of a
    profile loaded from a path earlier in this process."""
    if name_or_path in _LOADED:
        return _LOADED[name_or_path]
    path = find_config("hardware", name_or_path)
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise GbxferError(f"{path}: not valid YAML ({exc})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise GbxferError(f"{path}: unreadable ({exc})") from None
    if not isinstance(doc, dict):
        raise GbxferError(f"{path}: a profile is a mapping")
    for key, kind in (("name", str), ("family", str), ("target", dict), ("threads", int)):
        if not isinstance(doc.get(key), kind) or isinstance(doc.get(key), bool):
            raise GbxferError(f"{path}: field {key!r} must be a {kind.__name__}, "
                              f"got {doc.get(key)!r}")
    problem = profile_name_problem(doc["name"]) or profile_name_problem(doc["family"])
    if problem:
        raise GbxferError(f"{path}: name {doc['name']!r} or family {doc['family']!r} {problem}")
    if "kind" not in doc["target"]:
        raise GbxferError(f"{path}: target needs a 'kind' (llvm, cuda, ...)")
    if doc["threads"] <= 0:
        raise GbxferError(f"{path}: threads must be positive, got {doc['threads']}")
    descriptor = doc.get("descriptor", {}) or {}
    if not isinstance(descriptor, dict):
        raise GbxferError(f"{path}: descriptor must be a mapping of field -> number")
    for field, value in descriptor.items():  # null or .nan: not measured
        if value is not None and (isinstance(value, bool) or not isinstance(
                value, (int, float)) or value < 0 or value == math.inf):
            raise GbxferError(f"{path}: descriptor field {field!r} must be a number >= 0 "
                              f"(or null: not measured), got {value!r}")
    machine = doc.get("machine", "")
    if not isinstance(machine, str) or (machine and not machine.isprintable()):
        raise GbxferError(f"{path}: field 'machine' must be a printable string (CPU model and "
                          f"microarchitecture, or GPU), got {machine!r}")
    from_path = Path(name_or_path).suffix in (".yaml", ".yml") or "/" in name_or_path
    # a working folder's configs/hardware/NAME.yaml of name NAME overrides gbxfer's own
    override = path.stem == doc["name"] and path.resolve().parent == (
        Path.cwd() / "configs" / "hardware").resolve()
    other = "" if override else shipped_machine(doc["name"], path)
    if other and machine.strip() != other:
        told = f"is for {machine.strip()}" if machine.strip() else "names no machine"
        raise GbxferError(f"{path}: gbxfer's own profile {doc['name']!r} is for {other} and this "
                          f"one {told}: records measured under one name would mix the two "
                          "machines; give this profile a name of its own (its 'name' field)")
    unknown = sorted(set(doc) - {"name", "family", "machine", "target", "threads",
                                 "description", "descriptor"})
    if unknown:
        raise GbxferError(f"{path}: unknown field {unknown[0]!r}")
    profile = HardwareProfile(doc["name"], doc["family"], doc["target"], doc["threads"],
                              str(doc.get("description", "")).strip(), descriptor, str(path),
                              machine.strip())
    if from_path:
        _LOADED[profile.name] = profile
    return profile


def shipped_machine(name: str, path: Path | None = None) -> str:
    """The machine of gbxfer's own profile called ``name`` (its package's configs/hardware,
    not a working folder's, whose files may override it), ``""`` where there is none (or
    ``path`` is that file, or it names no machine). Datasets refuse two machines under one
    profile name when merged (:meth:`~gbxfer.records.dataset.Dataset.concat`); this keeps a
    profile file from starting such a mix."""
    for base in PACKAGE_CONFIGS:
        shipped = base / "hardware" / f"{name}.yaml"
        if shipped.is_file() and not (path is not None and shipped.samefile(path)):
            try:
                doc = yaml.safe_load(shipped.read_text())
            except (OSError, UnicodeDecodeError, yaml.YAMLError):
                return ""
            machine = doc.get("machine") if isinstance(doc, dict) else None
            return machine.strip() if isinstance(machine, str) else ""
    return ""
