"""A trained cost model on disk: the booster in its native format plus JSON metadata.

``MODEL/`` holds ``booster.txt`` (LightGBM text) or ``booster.json`` (XGBoost JSON) and
``model.json``: the estimator's parameters, the feature schema (blocks and column names), the
hardware profiles seen, the split spec, the training record ids, and library versions. Loading
never unpickles anything; loading against features with another schema fails naming the
difference.
"""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import numpy as np

from .._version import __version__
from ..errors import GbxferError, SchemaVersionError
from ._attention import GroupGate
from ._ranker import GBCostRanker

MODEL_SCHEMA_VERSION = 1


@dataclasses.dataclass
class SavedModel:
    """A fitted :class:`GBCostRanker` with what it needs to be used and evaluated honestly."""

    ranker: GBCostRanker
    columns: list
    hardware: list = dataclasses.field(default_factory=list)
    split: dict | None = None
    train_record_ids: list = dataclasses.field(default_factory=list)
    extra: dict = dataclasses.field(default_factory=dict)
    gate: object = None  # a GroupGate applied to the features before the booster

    @property
    def blocks(self) -> list[str]:
        return list(dict.fromkeys(c.split(".", 1)[0] for c in self.columns))

    def check_columns(self, columns) -> None:
        """Raise unless ``columns`` are exactly the training features, in order."""
        columns = list(columns)
        if columns == list(self.columns):
            return
        missing = [c for c in self.columns if c not in set(columns)]
        extra = [c for c in columns if c not in set(self.columns)]
        detail = (f"missing {missing[:5]}" if missing else "") + (
            f"{'; ' if missing else ''}unexpected {extra[:5]}" if extra else "")
        raise GbxferError("features do not match the model's feature schema: "
                          + (detail or "same columns in another order"))

    def save(self, path) -> Path:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        booster_file = "booster.txt" if self.ranker.backend == "lightgbm" else "booster.json"
        stem, suffix = booster_file.split(".")
        tmp = path / f".{stem}.tmp.{suffix}"  # XGBoost picks its format from the suffix
        self.ranker.booster_.save_model(str(tmp))
        os.replace(tmp, path / booster_file)
        for other in ("booster.txt", "booster.json"):  # a previous model of the other backend
            if other != booster_file and (path / other).exists():
                (path / other).unlink()
        import lightgbm
        import sklearn
        import xgboost

        meta = {
            "format": "gbxfer-model", "schema_version": MODEL_SCHEMA_VERSION,
            "booster_file": booster_file, "params": self.ranker.get_params(),
            "objective": self.ranker.objective_, "n_features": int(self.ranker.n_features_in_),
            "columns": list(self.columns), "hardware": list(self.hardware),
            "split": self.split, "train_record_ids": list(self.train_record_ids),
            "gate": self.gate.to_dict() if self.gate is not None else None,
            "versions": {"gbxfer": __version__, "lightgbm": lightgbm.__version__,
                         "xgboost": xgboost.__version__, "scikit-learn": sklearn.__version__},
            **self.extra,
        }
        tmp = path / ".model.json.tmp"
        tmp.write_text(json.dumps(meta, indent=1))
        os.replace(tmp, path / "model.json")
        return path

    @classmethod
    def load(cls, path) -> "SavedModel":
        path = Path(path)
        meta_path = path / "model.json"
        if not meta_path.is_file():
            raise GbxferError(f"{path}: not a gbxfer model (no model.json)")
        meta = json.loads(meta_path.read_text())
        if meta.get("schema_version") != MODEL_SCHEMA_VERSION:
            raise SchemaVersionError(f"{path}: model schema version {meta.get('schema_version')}"
                                     f" cannot be read by gbxfer {__version__}, which reads "
                                     f"version {MODEL_SCHEMA_VERSION}")
        ranker = GBCostRanker(**meta["params"])
        booster_path = str(path / meta["booster_file"])
        if ranker.backend == "lightgbm":
            import lightgbm as lgb

            ranker.booster_ = lgb.Booster(model_file=booster_path)
        else:
            import xgboost as xgb

            ranker.booster_ = xgb.Booster()
            ranker.booster_.load_model(booster_path)
        ranker.objective_ = meta["objective"]
        ranker.n_features_in_ = meta["n_features"]
        known = {"format", "schema_version", "booster_file", "params", "objective",
                 "n_features", "columns", "hardware", "split", "train_record_ids", "versions",
                 "gate"}
        gate = GroupGate.from_dict(meta["gate"]) if meta.get("gate") else None
        return cls(ranker, meta["columns"], meta["hardware"], meta["split"],
                   meta["train_record_ids"], {k: v for k, v in meta.items() if k not in known},
                   gate)

    def transform(self, X, columns) -> np.ndarray:
        """The booster's input for features ``X`` with ``columns``: checked against the
        training schema, then gated when the model has a gate."""
        self.check_columns(columns)
        return self.gate.transform(X, columns) if self.gate is not None else X

    def predict(self, X, columns) -> np.ndarray:
        """Scores (higher = faster) of features ``X`` with ``columns``: the one way a gbxfer
        model predicts, here, in evaluation and inside TVM alike."""
        return self.ranker.predict(self.transform(X, columns))
