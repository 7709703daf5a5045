"""Trained cost models on disk: one folder, one manifest, switched atomically.

``MODEL/manifest.json`` names every file with its SHA-256 and lists the models the folder holds:
one (``hardware: null``) or one per hardware profile (``gbxfer train --per-target``). Each model
is a sub-folder of the version folder ``v-<token>/`` holding the booster in its library's native
format (``booster.txt``, LightGBM text; ``booster.json``, XGBoost JSON; a blend's second booster
beside it as ``partner.txt`` / ``partner.json``) and ``model.json``: the
estimator's parameters, the feature schema (column names), the hardware profiles seen, the split
spec, the training record ids, the gate and library versions. A per-profile sub-folder is named
by a slug of the profile plus a hash of it: names from data are never used as paths.

Saving writes a whole new version folder, then switches the manifest (:mod:`gbxfer.manifests`):
a save killed at any moment leaves the old model or the new one, whole. Loading verifies every
checksum before a booster file reaches its library, and never unpickles anything; predicting
with features of another schema fails naming the difference.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from pathlib import Path

import numpy as np

from .._version import __version__
from ..errors import GbxferError, SchemaVersionError
from ..manifests import (file_entry, fsync, new_token, prepare_folder, read_json,
                         read_manifest, switch_manifest, verify_files)
from ._attention import GroupGate
from ._ranker import GBCostRanker

FORMAT_NAME = "gbxfer-model"
MODEL_SCHEMA_VERSION = 2
BOOSTER_FILES = {"lightgbm": "booster.txt", "xgboost": "booster.json"}
PARTNER_FILES = {"lightgbm": "partner.txt", "xgboost": "partner.json"}
# the model shipped with gbxfer, trained on the bundled dataset (scripts/make_pretrained.py)
PRETRAINED = Path(__file__).resolve().parents[1] / "data" / "pretrained"
_DEBRIS = re.compile(r"v-[0-9a-f]{12}")  # version folders no manifest names (killed saves)
_KNOWN = {"format", "schema_version", "booster_file", "params", "objective", "n_features",
          "columns", "hardware", "split", "train_record_ids", "versions", "gate", "partner"}


def member_folder(hardware: str | None) -> str:
    """The sub-folder of a model: ``model``, or a slug of its profile plus a short hash."""
    if hardware is None:
        return "model"
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", hardware).strip(".-")[:40] or "profile"
    return f"{slug}-{hashlib.sha256(hardware.encode()).hexdigest()[:8]}"

@dataclasses.dataclass
class SavedModel:
    """A fitted :class:`GBCostRanker` with what it needs to be used and evaluated honestly."""

    ranker: GBCostRanker
    columns: list
    hardware: list = dataclasses.field(default_factory=list)
    split: dict | None = None
    # records evaluation leaves out: those trained on (train: not a group of one), and after a
    # transfer its shots too, used or not
    train_record_ids: list = dataclasses.field(default_factory=list)
    extra: dict = dataclasses.field(default_factory=dict)
    gate: object = None  # a GroupGate applied to the features before the booster
    # a second booster on the same (gated) features whose scores are averaged with the
    # ranker's: a transfer's blend of the source model and pooled retraining (mode "blend")
    partner: GBCostRanker | None = None

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
        """Write this model as the only one in folder ``path`` (see the module docstring)."""
        return save_models(path, {None: self})

    @classmethod
    def load(cls, path) -> "SavedModel":
        """Load the model of a folder holding one model (not per-target models: see
        :func:`load_models`)."""
        models = load_models(path)
        if list(models) != [None]:
            raise GbxferError(f"{path}: holds one model per hardware profile "
                              f"({', '.join(models)}), where one model is expected")
        return models[None]

    def _write(self, folder: Path) -> list[str]:
        """Write the booster and ``model.json`` into new folder ``folder``; their names."""
        import lightgbm
        import sklearn
        import xgboost

        folder.mkdir(parents=True)
        booster_file = BOOSTER_FILES[self.ranker.backend]
        self.ranker.booster_.save_model(str(folder / booster_file))
        files = [booster_file]
        partner = None
        if self.partner is not None:
            partner = {"booster_file": PARTNER_FILES[self.partner.backend],
                       "params": saved_params(self.partner), "objective": self.partner.objective_}
            self.partner.booster_.save_model(str(folder / partner["booster_file"]))
            files.append(partner["booster_file"])
        meta = {
            "format": FORMAT_NAME, "schema_version": MODEL_SCHEMA_VERSION,
            "booster_file": booster_file, "params": saved_params(self.ranker),
            "objective": self.ranker.objective_, "n_features": int(self.ranker.n_features_in_),
            "columns": list(self.columns), "hardware": list(self.hardware),
            "split": self.split, "train_record_ids": list(self.train_record_ids),
            "gate": self.gate.to_dict() if self.gate is not None else None,
            **({"partner": partner} if partner else {}),
            "versions": {"gbxfer": __version__, "lightgbm": lightgbm.__version__,
                         "xgboost": xgboost.__version__, "scikit-learn": sklearn.__version__},
            **self.extra,
        }
        (folder / "model.json").write_text(json.dumps(meta, indent=1))
        return [*files, "model.json"]

    @classmethod
    def _read(cls, folder: Path) -> "SavedModel":
        """The model of a member folder whose files were verified against the manifest."""
        meta = read_json(folder / "model.json")
        try:
            ranker = _read_ranker(folder, meta, BOOSTER_FILES, int(meta["n_features"]))
            partner = (_read_ranker(folder, meta["partner"], PARTNER_FILES, ranker.n_features_in_)
                       if meta.get("partner") else None)
            columns = [str(c) for c in meta["columns"]]
            if len(columns) != ranker.n_features_in_:
                raise ValueError(f"{len(columns)} columns for {ranker.n_features_in_} features")
            gate = GroupGate.from_dict(meta["gate"]) if meta.get("gate") else None
            return cls(ranker, columns, list(meta["hardware"]), meta["split"],
                       list(meta["train_record_ids"]),
                       {k: v for k, v in meta.items() if k not in _KNOWN}, gate, partner)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise GbxferError(f"{folder / 'model.json'}: bad model metadata ({exc!r})") from None

    def transform(self, X, columns) -> np.ndarray:
        """The booster's input for features ``X`` with ``columns``: checked against the
        training schema, then gated when the model has a gate."""
        self.check_columns(columns)
        return self.gate.transform(X, columns) if self.gate is not None else X

    def predict(self, X, columns) -> np.ndarray:
        """Scores (higher = faster) of features ``X`` with ``columns``: the one way a gbxfer
        model predicts, here, in evaluation and inside TVM alike (a blend: the mean of its two
        boosters' scores)."""
        X = self.transform(X, columns)
        scores = self.ranker.predict(X)
        return scores if self.partner is None else (scores + self.partner.predict(X)) / 2


def save_models(path, models: dict) -> Path:
    """Write ``{hardware or None: SavedModel}`` as one model folder (new files, then one
    manifest switch); the folder must be new, empty or a gbxfer model."""
    path = Path(path)
    if not models or (None in models and len(models) > 1):
        raise GbxferError("a model folder holds one model, or one per hardware profile")
    prepare_folder(path, FORMAT_NAME, "model", _DEBRIS.fullmatch)
    version = f"v-{new_token()}"
    members, files = [], {}
    for hardware, model in models.items():
        folder = f"{version}/{member_folder(hardware)}"
        for name in model._write(path / folder):
            files[f"{folder}/{name}"] = file_entry(path, f"{folder}/{name}")
        fsync(path / folder)
        members.append({"hardware": hardware, "folder": folder})
    fsync(path / version)
    switch_manifest(path, {"format": FORMAT_NAME, "schema_version": MODEL_SCHEMA_VERSION,
                           "models": members, "files": files}, _DEBRIS.fullmatch)
    return path


def load_models(path) -> dict:
    """``{hardware profile: SavedModel}`` of a per-target folder, ``{None: SavedModel}`` of a
    folder holding one model; every file verified against the manifest first."""
    path = Path(path)
    if not (path / "manifest.json").exists() and (path / "model.json").is_file():
        raise SchemaVersionError(f"{path}: a model of schema version 1 (model.json at the top), "
                                 f"which gbxfer {__version__} cannot read (it reads version "
                                 f"{MODEL_SCHEMA_VERSION}): train it again")
    manifest = read_manifest(path, FORMAT_NAME, (MODEL_SCHEMA_VERSION,), "model")
    verify_files(path, manifest)
    members = manifest.get("models")
    if not isinstance(members, list) or not members or not all(
            isinstance(m, dict) and isinstance(m.get("folder"), str) and
            isinstance(m.get("hardware"), (str, type(None))) for m in members):
        raise GbxferError(f"{path}: the manifest's 'models' must list folder and hardware")
    models = {}
    for member in members:
        folder, hardware = member["folder"], member["hardware"]
        if hardware in models or not any(name.startswith(f"{folder}/booster.")
                                         for name in manifest["files"]) \
                or f"{folder}/model.json" not in manifest["files"]:
            raise GbxferError(f"{path}: model {folder!r} is listed twice or its files are not "
                              "in the manifest's files")
        models[hardware] = SavedModel._read(path / folder)
    if None in models and len(models) > 1:
        raise GbxferError(f"{path}: the manifest mixes a joint model with per-profile ones")
    return models


def saved_params(ranker: GBCostRanker) -> dict:
    """The estimator's parameters as ``model.json`` keeps them: ``extra_trees`` (2026-12-06)
    only when set, so that a model without it still loads in an older gbxfer."""
    params = ranker.get_params()
    if not params.get("extra_trees"):
        params.pop("extra_trees", None)
    return params


def _read_ranker(folder: Path, meta: dict, files: dict, n_features: int) -> GBCostRanker:
    """The fitted ranker that ``meta`` (params, objective, booster_file) describes."""
    ranker = GBCostRanker(**meta["params"])
    backend = ranker.backend
    if meta["booster_file"] != files.get(backend):
        raise ValueError(f"booster_file {meta['booster_file']!r} for {backend!r}")
    ranker.booster_ = _read_booster(folder / meta["booster_file"], backend)
    ranker.objective_ = str(meta["objective"])
    ranker.n_features_in_ = n_features
    return ranker


def _read_booster(path: Path, backend: str):
    """A booster from a checksummed file, checked for the shape of its format first: LightGBM
    crashes the process on a truncated text model."""
    data = path.read_bytes()
    if backend == "lightgbm":
        import lightgbm as lgb

        text = data.decode("utf-8", errors="strict")
        if not text.startswith("tree\n") or "\nend of trees\n" not in text \
                or "\nend of parameters\n" not in text:
            raise ValueError(f"{path.name} is not a whole LightGBM text model")
        try:
            return lgb.Booster(model_str=text)
        except lgb.basic.LightGBMError as exc:
            raise ValueError(str(exc)) from None
    import xgboost as xgb

    json.loads(data)  # XGBoost JSON: whole before the library reads it
    booster = xgb.Booster()
    try:
        booster.load_model(bytearray(data))
    except xgb.core.XGBoostError as exc:
        raise ValueError(str(exc).splitlines()[0]) from None
    return booster
