"""Model configs (``configs/model/*.yaml``): feature blocks, estimator parameters, attention
gating and transfer settings, validated into a :class:`ModelConfig`."""
from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from pathlib import Path

import yaml

from ..errors import GbxferError
from ..features import BLOCKS
from ._ranker import LABELS, GBCostRanker

FIELDS = ("blocks", "params", "attention", "transfer", "descriptor_dropout")


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """What to train: feature blocks, :class:`GBCostRanker` parameters, optional attention
    gating (:class:`GroupGate` parameters; needs the hardware block) and the transfer settings
    (:class:`gbxfer.transfer.TransferConfig` fields) that go with it.

    Examples
    --------
    >>> ModelConfig(params={"n_estimators": 50}).blocks
    ('program', 'workload', 'hardware')
    """

    blocks: tuple = ("program", "workload", "hardware")
    params: Mapping = dataclasses.field(default_factory=dict)
    attention: Mapping = dataclasses.field(default_factory=dict)
    transfer: Mapping = dataclasses.field(default_factory=dict)
    descriptor_dropout: float = 0.0  # share of training groups whose measured descriptor
    # fields are hidden (NaN), so that the trees learn where a machine known only by its
    # target goes (gbxfer.training.hide_measured_fields)
    source: str = ""  # the file it came from, for messages

    def __post_init__(self):
        where = f"{self.source}: " if self.source else ""
        blocks = self.blocks
        if isinstance(blocks, str) or not isinstance(blocks, (list, tuple)) or not blocks or any(
                b not in BLOCKS for b in blocks) or len(set(blocks)) < len(blocks):
            raise GbxferError(f"{where}'blocks' must be a list drawn from {', '.join(BLOCKS)}, "
                              "each once")
        object.__setattr__(self, "blocks", tuple(blocks))
        for name in ("params", "attention", "transfer"):
            if not isinstance(getattr(self, name), Mapping):
                raise GbxferError(f"{where}'{name}' must be a mapping")
            object.__setattr__(self, name, dict(getattr(self, name)))
        allowed = set(inspect.signature(GBCostRanker).parameters)
        bad = sorted(set(self.params) - allowed)
        if bad:
            raise GbxferError(f"{where}unknown parameter {bad[0]!r}; parameters: "
                              f"{', '.join(sorted(allowed))}")
        try:  # the values of the numeric parameters (the names are checked above)
            GBCostRanker(**self.params).check_params()
        except ValueError as exc:
            raise GbxferError(f"{where}{exc}") from None
        if self.params.get("label", LABELS[0]) not in LABELS:
            raise GbxferError(f"{where}'label' must be one of {', '.join(LABELS)}, got "
                              f"{self.params['label']!r}")
        if self.attention and "hardware" not in self.blocks:
            raise GbxferError(f"{where}attention gating needs the 'hardware' block")
        dropout = self.descriptor_dropout
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not (
                0.0 <= dropout < 1.0):
            raise GbxferError(f"{where}'descriptor_dropout' must be a number in [0, 1), got "
                              f"{dropout!r}")
        object.__setattr__(self, "descriptor_dropout", float(dropout))

    @classmethod
    def from_dict(cls, doc, source: str = "") -> "ModelConfig":
        """A config from a mapping with some of ``blocks``, ``params``, ``attention``,
        ``transfer``, ``descriptor_dropout``; anything else is an error naming ``source``."""
        where = f"{source}: " if source else ""
        if not isinstance(doc, Mapping):
            raise GbxferError(f"{where}a model config is a mapping with 'blocks' and 'params'")
        unknown = sorted(set(doc) - set(FIELDS))
        if unknown:
            raise GbxferError(f"{where}unknown field {unknown[0]!r} (fields: "
                              f"{', '.join(FIELDS)})")
        return cls(**{k: v for k, v in doc.items() if v is not None}, source=source)

    def to_dict(self) -> dict:
        """The YAML content of this config (what :meth:`from_dict` reads back)."""
        return {"blocks": list(self.blocks), "params": dict(self.params),
                "attention": dict(self.attention), "transfer": dict(self.transfer),
                "descriptor_dropout": self.descriptor_dropout}

    def replace(self, **changes) -> "ModelConfig":
        """A copy with ``changes`` (validated again)."""
        return dataclasses.replace(self, **changes)


def as_model_config(config) -> ModelConfig:
    """``config`` as a :class:`ModelConfig` (one, or a mapping of its fields)."""
    return config if isinstance(config, ModelConfig) else ModelConfig.from_dict(
        config, "model config")


def load_model_config(path=None) -> ModelConfig:
    """The model config at ``path``, or named ``path`` in configs/model; ``None`` gives
    ``configs/model/default.yaml``."""
    from ..config_files import find_config

    path = find_config("model", "default" if path is None else str(path))
    try:
        doc = yaml.safe_load(Path(path).read_text()) or {}
    except yaml.YAMLError as exc:
        raise GbxferError(f"{path}: not valid YAML ({exc})") from None
    return ModelConfig.from_dict(doc, str(path))
