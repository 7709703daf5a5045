"""Model configs (``configs/model/*.yaml``): feature blocks and estimator parameters."""
from __future__ import annotations

import inspect
from pathlib import Path

import yaml

from ..errors import GbxferError
from ..features import BLOCKS
from ._ranker import GBCostRanker

DEFAULT = {"blocks": ["program", "workload", "hardware"], "params": {}}  # when a config omits


def load_model_config(path=None) -> dict:
    """Validate a model config (a path or a name in configs/model); ``None`` gives
    ``configs/model/default.yaml``."""
    from ..profiles import find_config

    path = find_config("model", "default" if path is None else str(path))
    try:
        doc = yaml.safe_load(Path(path).read_text()) or {}
    except yaml.YAMLError as exc:
        raise GbxferError(f"{path}: not valid YAML ({exc})") from None
    if not isinstance(doc, dict):
        raise GbxferError(f"{path}: a model config is a mapping with 'blocks' and 'params'")
    unknown = sorted(set(doc) - {"blocks", "params", "transfer", "attention"})
    if unknown:
        raise GbxferError(f"{path}: unknown field {unknown[0]!r} (fields: blocks, params, "
                          "transfer, attention)")
    blocks = doc.get("blocks", DEFAULT["blocks"])
    if not isinstance(blocks, list) or not blocks or any(b not in BLOCKS for b in blocks):
        raise GbxferError(f"{path}: 'blocks' must be a list drawn from {', '.join(BLOCKS)}")
    params = doc.get("params") or {}
    allowed = set(inspect.signature(GBCostRanker).parameters)
    bad = sorted(set(params) - allowed)
    if bad:
        raise GbxferError(f"{path}: unknown parameter {bad[0]!r}; parameters: "
                          f"{', '.join(sorted(allowed))}")
    attention = doc.get("attention") or {}
    if not isinstance(attention, dict):
        raise GbxferError(f"{path}: 'attention' must be a mapping of GroupGate parameters")
    if attention and "hardware" not in blocks:
        raise GbxferError(f"{path}: attention gating needs the 'hardware' block")
    return {"blocks": blocks, "params": params, "transfer": doc.get("transfer") or {},
            "attention": attention, "path": str(path)}
