"""Training and honest evaluation of cost models on datasets.

``train`` fits on the training part of a split (or on everything), and records the split spec
and the training record ids in the model. ``evaluate`` always leaves out every record the model
trained on and, when the model carries a split spec, re-applies it to the dataset it is given
and scores only the test part.
"""
from __future__ import annotations

import numpy as np

from .dataset import Dataset
from .errors import GbxferError
from .features import build
from .metrics import ranking_report
from .model import GBCostRanker, SavedModel
from .model._attention import GroupGate
from .splits import SplitSpec, paired_test_mask


def training_part(dataset: Dataset, split: SplitSpec | None) -> Dataset:
    valid = dataset.filter(valid=True)
    if split is None:
        return valid
    return valid.select(~split.test_mask(valid))


def train(dataset: Dataset, config: dict, split: SplitSpec | None = None,
          target: str | None = None, seed: int = 0, sample_weight=None) -> SavedModel:
    """Fit one model on ``dataset``'s valid records of ``target`` (a profile; None = all)."""
    if target is not None:
        if target not in dataset.hardware:
            raise GbxferError(f"no records of hardware {target!r}; hardware in the dataset: "
                              f"{', '.join(dataset.hardware)}")
        dataset = dataset.filter(hardware=target)
    part = training_part(dataset, split)
    if len(part) == 0:
        raise GbxferError("nothing to train on: the training part is empty")
    fm = build(part, config["blocks"])
    params = {"random_state": seed, **config["params"]}
    r = fm.records
    X, gate = fm.X, None
    if config.get("attention"):
        gate = GroupGate(**{"random_state": seed, **config["attention"]}).fit(
            fm.X, r["label"].to_numpy(), r["group"].to_numpy(), r["hardware"].to_numpy(),
            fm.columns)
        X = gate.transform(fm.X, fm.columns)
    ranker = GBCostRanker(**params).fit(X, r["label"], groups=r["group"],
                                        sample_weight=sample_weight)
    return SavedModel(ranker, fm.columns, sorted(part.hardware),
                      split.to_dict() if split else None, r["record_id"].tolist(), gate=gate)


def evaluation_part(model: SavedModel, dataset: Dataset) -> tuple[Dataset, np.ndarray]:
    """The valid records ``model`` may be scored on, and which of them are paired (by-hardware:
    measured on a training family too)."""
    valid = dataset.filter(valid=True)
    mask = ~valid.records["record_id"].isin(set(model.train_record_ids)).to_numpy()
    paired = np.zeros(len(valid), dtype=bool)
    if model.split:
        spec = SplitSpec.from_dict(model.split)
        test = spec.test_mask(valid)
        if spec.kind == "by-hardware":
            paired = paired_test_mask(valid, test)
        mask &= test
    if not mask.any():
        raise GbxferError("nothing left to evaluate: every record of this dataset was in the "
                          "model's training data or outside its split's test part")
    return valid.select(mask), paired[mask]


def score(model: SavedModel, dataset: Dataset) -> tuple[np.ndarray, object]:
    fm = build(dataset, model.blocks)
    return model.predict(fm.X, fm.columns), fm


def evaluate(model: SavedModel, dataset: Dataset, hardware: str | None = None) -> dict:
    """Ranking quality of ``model`` on the records of ``dataset`` it did not train on."""
    if hardware is not None:
        dataset = dataset.filter(hardware=hardware)
    part, paired = evaluation_part(model, dataset)
    scores, fm = score(model, part)
    r = fm.records
    weights = r["weight"].to_numpy()
    report = ranking_report(r["latency"], scores, r["group"], weights)
    report["n_tasks"] = int(r["task_key"].nunique())
    report["split"] = model.split
    report["by_hardware"] = {
        hw: ranking_report(g["latency"], scores[g.index], g["group"], weights[g.index])
        for hw, g in r.groupby("hardware")}
    report["by_task"] = {
        f"{task}|{hw}": ranking_report(g["latency"], scores[g.index], g["group"])
        for (task, hw), g in r.groupby(["task_key", "hardware"])}
    if model.split and model.split.get("kind") == "by-hardware":
        for name, mask in (("paired", paired), ("unpaired", ~paired)):
            if mask.any():
                g = r[mask]
                report[name] = ranking_report(g["latency"], scores[mask], g["group"],
                                              weights[mask])
    return report
