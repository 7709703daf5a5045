"""Training and honest evaluation of cost models on datasets.

``train`` fits on the training part of a split (or on everything), and records the split spec
and the training record ids in the model. ``evaluate`` always leaves out every record the model
trained on and, when the model carries a split spec, re-applies it to the dataset it is given
and scores only the test part.
"""
from __future__ import annotations

import numpy as np

from .records.dataset import Dataset
from .records.columns import isin
from .errors import GbxferError
from .features import HARDWARE_FIELDS, FeatureMatrix, build, target_only_rows
from .metrics import ranking_report
from .model import GBCostRanker, ModelConfig, SavedModel
from .model._attention import GroupGate
from .model._ranker import paired
from .model._config import as_model_config
from .splits import HELD_OUT, SplitSpec, paired_test_mask


def split_test_mask(dataset: Dataset, split: SplitSpec, among: np.ndarray) -> np.ndarray:
    """``split``'s test mask over ``dataset.records``, the split applied to the rows ``among``
    selects (the records a model may use: its checks — a held-out family present, every task
    in a network — see only those); False elsewhere."""
    test = np.zeros(len(among), dtype=bool)
    test[np.flatnonzero(among)] = split.test_mask(dataset.select(among))
    return test


def training_mask(dataset: Dataset, split: SplitSpec | None, target: str | None = None):
    """Rows of ``dataset.records`` a model trains on: the valid ones (of profile ``target``)
    outside ``split``'s test part."""
    mask = dataset.records["valid"].to_numpy(dtype=bool, copy=True)
    if target is not None:
        mask &= (dataset.records["hardware"] == target).to_numpy()
    return mask & ~split_test_mask(dataset, split, mask) if split is not None else mask


def training_part(dataset: Dataset, split: SplitSpec | None) -> Dataset:
    return dataset.select(training_mask(dataset, split))


def features_of(dataset: Dataset, blocks, mask, features: FeatureMatrix | None) -> FeatureMatrix:
    """The feature matrix of the rows ``mask`` selects, labels computed among them: taken from
    ``features`` (the matrix of all of ``dataset``, built once by the caller) or built."""
    if features is None:
        return build(dataset.select(mask), list(blocks))
    if len(features.records) != len(dataset) or not np.array_equal(
            features.records["record_id"].to_numpy(), dataset.records["record_id"].to_numpy()):
        raise GbxferError("the feature matrix given is not the one of this dataset's records")
    return features.select_blocks(blocks).select_rows(mask)


def train(dataset: Dataset, config: ModelConfig | dict, split: SplitSpec | None = None,
          target: str | None = None, seed: int = 0, sample_weight=None,
          features: FeatureMatrix | None = None) -> SavedModel:
    """Fit one model on ``dataset``'s valid records of ``target`` (a profile; None = all)
    with ``config`` (a :class:`ModelConfig`, or a mapping of its fields). ``features``, the
    feature matrix of the whole ``dataset`` when the caller has it, saves building it again:
    only the labels depend on which records train."""
    config = as_model_config(config)
    if target is not None and target not in dataset.hardware:
        raise GbxferError(f"no records of hardware {target!r}; hardware in the dataset: "
                          f"{', '.join(dataset.hardware)}")
    mask = training_mask(dataset, split, target)
    if not mask.any():
        held = ""
        if split is not None and split.kind in HELD_OUT:
            column, what = HELD_OUT[split.kind]
            held = (f": {split.kind}:{split.family} holds out all of the dataset (its {what}s: "
                    f"{', '.join(sorted(dataset.records[column].unique()))}); add data "
                    "measured elsewhere")
        raise GbxferError(f"nothing to train on: the training part is empty{held}")
    fm = features_of(dataset, config.blocks, mask, features)
    if not paired(fm.records["group"].to_numpy()).any():
        raise GbxferError("nothing to rank: no task has two valid programs on one hardware "
                          "profile in the training part")
    params = {"random_state": seed, **config.params}
    r = fm.records
    X, gate = fm.X, None
    if config.descriptor_dropout and "hardware" in config.blocks:
        X = hide_measured_fields(X, fm.columns, r["group"].to_numpy(),
                                 config.descriptor_dropout, seed,
                                 target_only_rows(dataset.records.iloc[np.flatnonzero(mask)]))
    if config.attention:
        gate = GroupGate(**{"random_state": seed, **config.attention}).fit(
            X, r["label"].to_numpy(), r["group"].to_numpy(), r["hardware"].to_numpy(),
            fm.columns)
        X = gate.transform(X, fm.columns)
    ranker = GBCostRanker(**params).fit(X, r["label"], groups=r["group"],
                                        sample_weight=sample_weight)
    learned = r[paired(r["group"].to_numpy())]  # what the ranker learned from
    return SavedModel(ranker, fm.columns, sorted(learned["hardware"].unique()),
                      split.to_dict() if split else None, learned["record_id"].tolist(),
                      gate=gate)


# descriptor fields a target alone does not give: measured by `gbxfer hardware probe`
MEASURED_FIELDS = ("l1d_kb", "l2_kb", "l3_kb", "clock_ghz", "peak_gflops", "mem_gbps")


def hide_measured_fields(X: np.ndarray, columns, groups: np.ndarray, share: float, seed: int,
                         replacement: np.ndarray | None = None) -> np.ndarray:
    """A copy of ``X`` whose :data:`MEASURED_FIELDS` are those of ``replacement`` (one hardware
    descriptor row per record: what each machine would be without its probe,
    :func:`gbxfer.features.target_only_rows`; default NaN) in a random ``share`` of the groups
    (task x hardware; drawn with ``seed``): descriptor-field dropout. The trees then learn
    where a machine known only by its target goes (reference values, NaN where nothing is
    known), instead of sending it down whichever branch such values happened to take."""
    columns = list(columns)
    fields = [f for f in MEASURED_FIELDS if f"hardware.{f}" in columns]
    if not fields or share <= 0:
        return X
    unique = np.unique(groups)
    hidden = np.isin(groups, unique[np.random.default_rng(seed).random(len(unique)) < share])
    X = np.array(X, copy=True)
    for field in fields:
        values = np.nan if replacement is None else replacement[hidden, HARDWARE_FIELDS.index(
            field)]
        X[hidden, columns.index(f"hardware.{field}")] = values
    return X


def evaluation_mask(model: SavedModel, dataset: Dataset) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``dataset.records`` that ``model`` may be scored on (valid, not trained on, in
    its split's test part), and which of them are paired (by-hardware, by-machine: their
    program is measured on training hardware too)."""
    records = dataset.records
    valid = records["valid"].to_numpy(dtype=bool)
    mask = valid & ~isin(records["record_id"], model.train_record_ids)
    paired = np.zeros(len(records), dtype=bool)
    if model.split:
        spec = SplitSpec.from_dict(model.split)
        test = split_test_mask(dataset, spec, valid)
        if spec.kind in HELD_OUT:
            paired = paired_test_mask(dataset, test, among=valid)
        mask &= test
    if not mask.any():
        raise GbxferError("nothing left to evaluate: every record of this dataset was in the "
                          "model's training data (a transfer's shots included) or outside its "
                          "split's test part")
    return mask, paired


def evaluation_part(model: SavedModel, dataset: Dataset) -> tuple[Dataset, np.ndarray]:
    """The valid records ``model`` may be scored on, and which of them are paired."""
    mask, paired = evaluation_mask(model, dataset)
    return dataset.select(mask), paired[mask]


def score(model: SavedModel, dataset: Dataset) -> tuple[np.ndarray, FeatureMatrix]:
    fm = build(dataset, model.blocks)
    return model.predict(fm.X, fm.columns), fm


def evaluate(model: SavedModel, dataset: Dataset, hardware: str | None = None,
             features: FeatureMatrix | None = None) -> dict:
    """Ranking quality of ``model`` on the records of ``dataset`` it did not train on.
    ``features``: the feature matrix of the whole ``dataset``, when the caller has it."""
    if hardware is not None:
        keep = dataset.records["hardware"].isin(np.atleast_1d(hardware)).to_numpy()
        dataset = dataset.select(keep)
        features = features.select_rows(keep) if features is not None else None
    mask, paired = evaluation_mask(model, dataset)
    fm = features_of(dataset, model.blocks, mask, features)
    return evaluation_report(model, model.predict(fm.X, fm.columns), fm.records, paired[mask])


def evaluation_report(model: SavedModel, scores: np.ndarray, r, paired: np.ndarray) -> dict:
    """The evaluation report of ``scores`` for the records ``r`` (a feature matrix's)."""
    weights = r["weight"].to_numpy()
    result = ranking_report(r["latency"], scores, r["group"], weights)
    result["n_tasks"] = int(r["task_key"].nunique())
    result["split"] = model.split
    result["by_hardware"] = {
        hw: ranking_report(g["latency"], scores[g.index], g["group"], weights[g.index])
        for hw, g in r.groupby("hardware")}
    result["by_task"] = {
        f"{task}|{hw}": ranking_report(g["latency"], scores[g.index], g["group"])
        for (task, hw), g in r.groupby(["task_key", "hardware"])}
    if model.split and model.split.get("kind") in HELD_OUT:
        for name, mask in (("paired", paired), ("unpaired", ~paired)):
            if mask.any():
                g = r[mask]
                result[name] = ranking_report(g["latency"], scores[mask], g["group"],
                                              weights[mask])
    return result
