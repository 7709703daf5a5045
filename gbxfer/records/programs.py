"""Program identity and primitive sequences.

A program is identified by its task and its canonical text, independent of the hardware it was
measured on (docs/dataset.md): MetaSchedule traces with their decisions, or Ansor
step lists. Instruction names are normalised across TVM versions before hashing, so the same
schedule written by an older TVM and by TVM 0.27 gets the same ``program_id``.
"""
from __future__ import annotations

import hashlib

import orjson

# Older TVM names of MetaSchedule instructions -> the TVM 0.27 names.
METASCHEDULE_RENAMES = {"GetBlock": "GetSBlock"}

# Ansor / TenSet step codes -> primitive names (auto_scheduler/transform_step.cc record keys).
ANSOR_STEP_NAMES = {
    "AN": "Annotation",
    "FU": "Fuse",
    "PR": "Pragma",
    "RE": "Reorder",
    "SP": "Split",
    "FSP": "FollowSplit",
    "FFSP": "FollowFusedSplit",
    "SA": "StorageAlign",
    "CA": "ComputeAt",
    "CI": "ComputeInline",
    "CR": "ComputeRoot",
    "CHR": "CacheRead",
    "CHW": "CacheWrite",
    "RF": "Rfactor",
}


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


def canonical_json(obj) -> str:
    """Compact JSON with no whitespace (orjson's spelling): the text that identifies a program."""
    return orjson.dumps(obj).decode("utf-8")


def program_id(task_key: str, canonical_text: str) -> str:
    """16 hex digits identifying a program of a task, independent of hardware."""
    return _digest(task_key + "\n" + canonical_text)


def record_id(program_id_: str, hardware: str) -> str:
    """16 hex digits identifying one (program, hardware profile) record."""
    return _digest(program_id_ + "@" + hardware)


def trace_primitives(trace) -> list[str]:
    """Instruction names of a MetaSchedule trace ``[insts, decisions]``, in their 0.27 spelling.

    Raises ``ValueError`` when an instruction is not a list that starts with its name.
    """
    try:
        names = [inst[0] for inst in trace[0]]
    except (TypeError, IndexError, KeyError):
        raise ValueError("each trace instruction must be [name, inputs, attrs, outputs]") from None
    if not all(isinstance(n, str) for n in names):
        raise ValueError("each trace instruction must start with its name (a string)")
    return [METASCHEDULE_RENAMES.get(n, n) for n in names]


def canonical_trace_text(trace_text: str) -> str:
    """Canonical text of a trace given as compact JSON: instruction names in their 0.27 spelling."""
    for old, new in METASCHEDULE_RENAMES.items():
        trace_text = trace_text.replace(f'["{old}",', f'["{new}",')
    return trace_text


def ansor_primitives(steps) -> list[str]:
    """Primitive names of an Ansor step list; unknown step codes are kept as they are."""
    return [ANSOR_STEP_NAMES.get(step[0], step[0]) for step in steps]
