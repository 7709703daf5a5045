"""A cost model adapted to a target's shots, unguarded: the settings (:class:`TransferConfig`),
the shots (:func:`draw_shots`) and one adaptation (:func:`adapt`).

From a model trained on source hardware and K measured programs per task on the target,
``adapt`` continues boosting from the source booster (mode ``continue``) or trains a new
booster with the source model's settings (mode ``retrain``) on the source records plus the
shots: source records are weighted by how similar their hardware is to the target (an RBF
kernel over standardised hardware descriptors, with a temperature), the shots by
``target_weight``. Labels of the shots are computed among the shots only (the rest of the
target is unknown to the transfer). Mode ``blend`` retrains like ``retrain`` and returns the
source model with the new booster as its :attr:`SavedModel.partner` (their scores averaged).
"""
from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

from ..records.dataset import Dataset
from ..errors import GbxferError
from ..features import FeatureMatrix
from ..metrics import log_comb
from ..model import GBCostRanker, SavedModel
from ..splits import SplitSpec, key_uniform
from ..training import features_of


MODES = ("continue", "retrain", "blend")
FALLBACKS = ("source", "blend")


@dataclasses.dataclass
class TransferConfig:
    """Hyper-parameters of :func:`gbxfer.transfer.transfer` (an Optuna study tunes them)."""

    # continue boosting the source booster, "retrain" from scratch, or "blend": retrain, then
    # average the new booster's scores with the source model's (SavedModel.partner)
    mode: str = "continue"
    target_weight: float = 5.0  # weight of a shot relative to a source record of weight 1
    temperature: float = 1.0  # RBF temperature of source-hardware similarity; 0 = no reweighting
    extra_rounds: int = 60  # trees added on source + shots; 0 (continue) = the source model
    learning_rate: float = 0.05
    source_fraction: float = 1.0  # share of the source records used (seeded draw); 0 = shots only
    rescale_shots: bool = True  # shot labels to the scale of whole groups (see shot_scale)
    num_leaves: int = 0  # leaves of the added trees; 0 = as in the source model
    min_child_samples: int = 0  # records per leaf of the added trees; 0 = as in the source model
    guard: bool = True  # keep the adaptation only if it beats the source inside the shots
    try_pooled: bool = True  # the guard weighs pooled retraining too (see pooled())
    try_blend: bool = False  # the guard weighs the blend too (see blended())
    # what a guarded transfer returns when no adaptation passes its check (and some task has
    # two shots): the source model, or "blend" (blended(): the source averaged with pooled
    # retraining, unchecked)
    fallback: str = "source"
    # from this many shots in the median task x profile group, the guard keeps pooled
    # retraining unless it scores worse by one standard error (0: never; guard_estimates.py;
    # 4 gains on the GPU pair and put a PCA CI below zero-shot on a CPU: docs/benchmarks.md)
    pooled_from: int = 8
    # the adapted model will rank other tasks than the shots' (as after `gbxfer calibrate`):
    # the guard then checks what carries over to other tasks (folds of whole tasks, whatever
    # the shots per group) and pooled_from does not apply
    other_tasks: bool = False

    @property
    def adapts(self) -> bool:
        """Whether this config changes the model at all (not: continue with no trees)."""
        return not (self.mode == "continue" and self.extra_rounds == 0)

    def pooled(self) -> "TransferConfig":
        """Pooled retraining: one model trained anew on the source records and the shots as
        one training set (target weight 1, no reweighting, shot labels as measured), with
        the source model's random state."""
        return dataclasses.replace(self, mode="retrain", target_weight=1.0, temperature=0.0,
                                   rescale_shots=False, source_fraction=1.0)

    def blended(self) -> "TransferConfig":
        """Pooled retraining averaged with the source model (mode ``blend``)."""
        return dataclasses.replace(self.pooled(), mode="blend")

    @classmethod
    def from_dict(cls, d: dict | None) -> "TransferConfig":
        d = d or {}
        unknown = sorted(set(d) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise GbxferError(f"unknown transfer setting {unknown[0]!r}; settings: "
                              f"{', '.join(f.name for f in dataclasses.fields(cls))}")
        config = cls(**d)
        for field in dataclasses.fields(cls):
            value = getattr(config, field.name)
            fits, words = _domain(field.default, field.name)
            if not fits(value):
                raise GbxferError(f"transfer setting {field.name!r} must be {words}, got "
                                  f"{value!r}")
        config = dataclasses.replace(config, **{  # 60.0 in a YAML file: 60 trees
            f.name: int(getattr(config, f.name)) for f in dataclasses.fields(cls)
            if type(f.default) is int and float(getattr(config, f.name)).is_integer()})
        if config.mode not in MODES:
            raise GbxferError(f"unknown transfer mode {config.mode!r}; modes: {', '.join(MODES)}")
        if config.fallback not in FALLBACKS:
            raise GbxferError(f"unknown transfer fallback {config.fallback!r}; fallbacks: "
                              f"{', '.join(FALLBACKS)}")
        return config


def _whole(value) -> bool:
    return float(value).is_integer()


# the numeric transfer settings whose domain is narrower than their type's (an integer >= 0,
# a number >= 0): the test beyond that, and the domain in words
_DOMAINS = {
    "target_weight": (lambda v: v > 0, "a number > 0"),
    "learning_rate": (lambda v: v > 0, "a number > 0"),
    "source_fraction": (lambda v: v <= 1, "a fraction in [0, 1]"),
    "num_leaves": (lambda v: _whole(v) and v != 1,
                   "0 (as in the source model) or an integer >= 2"),
    # as GBCostRanker's: a count or a fraction of the rows
    "min_child_samples": (lambda v: v < 1 or _whole(v),
                          "0 (as in the source model), a count >= 1 or a fraction in (0, 1)"),
}


def _domain(default, name: str) -> tuple:
    """(test, domain in words) of the transfer setting ``name`` whose default is ``default``."""
    if isinstance(default, (bool, str)):
        return (lambda v: type(v) is type(default),
                "true or false" if isinstance(default, bool) else "a name")
    test, words = _DOMAINS.get(name) or ((_whole, "an integer >= 0") if isinstance(
        default, int) else (lambda v: True, "a number >= 0"))
    return (lambda v: not isinstance(v, bool) and isinstance(v, (int, float))
            and math.isfinite(v) and v >= 0 and test(v)), words


def draw_shots(target: Dataset, shots, seed: int = 0,
               holdout: SplitSpec | None = None) -> np.ndarray:
    """Positions of the shot records in ``target.records`` (valid ones only).

    ``shots`` int K: K programs of every task x hardware group; float F: that fraction of the
    valid target records. Drawn only from the training part when ``holdout`` fixes a test part,
    so that every arm and every K meets the same test programs. Deterministic given the seed.
    """
    r = target.records
    pool = r["valid"].to_numpy().copy()
    if holdout is not None:
        pool &= ~holdout.test_mask(target)
    order = key_uniform(r["program_id"].to_numpy(), seed + 7_777)  # a seeded shuffle
    chosen = []
    if isinstance(shots, float) and (not float(shots).is_integer() or shots < 1):
        candidates = np.flatnonzero(pool)
        n = math.ceil(shots * len(candidates))
        return np.sort(candidates[np.argsort(order[candidates], kind="stable")[:n]])
    k = int(shots)
    for _, rows in r[pool].groupby(["task_key", "hardware"]).indices.items():
        positions = np.flatnonzero(pool)[rows]
        chosen.append(positions[np.argsort(order[positions], kind="stable")[:k]])
    return np.sort(np.concatenate(chosen)) if chosen else np.array([], dtype=int)


def expected_best_share(latencies: np.ndarray, k: int) -> float:
    """E[best latency of the group / best latency of k programs drawn from it without
    replacement]: the i-th fastest of n is the best of the draw with probability
    C(n - i, k - 1) / C(n, k)."""
    latencies = np.sort(np.asarray(latencies, dtype=float))
    n = len(latencies)
    if n == 0 or k >= n:
        return 1.0
    i = np.arange(1, n + 1)
    log_p = (log_comb(n - i, k - 1) - log_comb(n, k))
    p = np.where(n - i >= k - 1, np.exp(log_p), 0.0)
    return float((p * latencies[0] / latencies).sum())


def shot_scale(source: Dataset, k: int) -> float:
    """How much a label computed among k shots overstates one computed over a whole group
    (min latency / latency): the mean over the source's task x hardware groups of
    :func:`expected_best_share`. Shot labels are multiplied by it, so that shots and source
    records speak on one scale (a regression objective would otherwise read the target as
    uniformly faster)."""
    r = source.records[source.records["valid"]]
    shares = [expected_best_share(g.to_numpy(), k)
              for _, g in r.groupby(["task_key", "hardware"])["latency"]]
    return float(np.mean(shares)) if shares else 1.0


def hardware_similarity(source_hw: np.ndarray, target_hw: np.ndarray,
                        temperature: float) -> np.ndarray:
    """RBF similarity in (0, 1] of each source descriptor row to the target descriptor, over
    fields standardised across all of them (unknown fields ignored)."""
    H = np.vstack([source_hw, target_hw[None, :]]).astype(float)
    with warnings.catch_warnings():  # a field unknown everywhere has no mean: it is ignored
        warnings.simplefilter("ignore", RuntimeWarning)
        mean, spread = np.nanmean(H, 0), np.nanstd(H, 0)
    Z = np.nan_to_num((H - mean) / np.where(spread > 0, spread, 1.0))
    distance = ((Z[:-1] - Z[-1]) ** 2).mean(1)
    return np.exp(-distance / temperature)


def source_weights(fm_src: FeatureMatrix, target_row: np.ndarray,
                   temperature: float) -> np.ndarray:
    """Each source record's weight in an adaptation: the similarity
    (:func:`hardware_similarity`) of its profile's descriptor to the hardware columns of
    ``target_row`` (a row of a feature matrix with ``fm_src``'s columns), scaled to a mean of
    1."""
    hw_cols = [i for i, c in enumerate(fm_src.columns) if c.startswith("hardware.")]
    profiles = fm_src.records["hardware"].to_numpy()
    names = sorted(set(profiles))
    descriptors = np.stack([fm_src.X[np.flatnonzero(profiles == n)[0], hw_cols] for n in names])
    similarity = dict(zip(names, hardware_similarity(descriptors, target_row[hw_cols],
                                                     temperature)))
    weights = np.array([similarity[p] for p in profiles])
    return weights * (len(weights) / weights.sum())


def median_shots(target: Dataset, shots) -> float:
    """The median number of shots (rows ``shots`` of ``target``) per task x profile group;
    0 without shots."""
    sizes = target.records.iloc[np.asarray(shots)].groupby(["task_key", "hardware"]).size()
    return float(sizes.median()) if len(sizes) else 0.0


def shots_rank(shots: Dataset) -> bool:
    """Whether some task has two of ``shots`` on one profile: shots alone on their task rank
    nothing (a transfer keeps the source model, a study has nothing to score)."""
    return bool(shots.records.duplicated(["task_key", "hardware"]).any())


def adapt(model: SavedModel, source: Dataset, target: Dataset, shot_positions,
          config: TransferConfig, seed: int = 0, holdout: SplitSpec | None = None,
          source_features: FeatureMatrix | None = None,
          target_features: FeatureMatrix | None = None) -> SavedModel:
    """A new model: ``model`` boosted on weighted source records and the target shots (rows
    ``shot_positions`` of ``target``), unguarded (``guard``, ``try_pooled``, ``try_blend``,
    ``fallback`` and ``pooled_from`` are not read). ``source_features`` and
    ``target_features``, the feature matrices of the whole ``source`` and ``target`` when the
    caller has them (a study transfers many times), save building them again. Where no task
    has two shots on one profile (K = 1) the shots rank nothing: the result is the source model
    with the shots recorded, whatever the config, and ``extra["transfer"]["kept_source"]``
    says why."""
    shots = target.select(shot_positions)
    if len(shots) == 0:
        raise GbxferError("no shots: the target has no valid records to draw from")
    fm_tgt = features_of(target, model.blocks, shot_positions, target_features)
    model.check_columns(fm_tgt.columns)
    if not config.adapts:  # no trees added: the source model, with the shots recorded
        return _kept(model, shots, config, seed, holdout)
    if not shots_rank(shots):
        adapted = _kept(model, shots, config, seed, holdout)
        adapted.extra["transfer"]["kept_source"] = "no task has two shots on one profile"
        return adapted
    r = source.records
    keep = r["valid"].to_numpy(dtype=bool) & r["hardware"].isin(model.hardware).to_numpy()
    if config.source_fraction < 1.0:
        keep &= key_uniform(r["record_id"].to_numpy(), seed) < config.source_fraction
    fm_src = features_of(source, model.blocks, keep, source_features)
    source = source.select(keep)
    weights_src = np.ones(len(fm_src.records))
    if config.temperature > 0 and "hardware" in model.blocks and len(fm_src.records):
        weights_src = source_weights(fm_src, fm_tgt.X[0], config.temperature)
    X = np.vstack([fm_src.X, fm_tgt.X])
    y_tgt = fm_tgt.records["label"].to_numpy()
    if config.rescale_shots:  # (a model on label "rank" ranks the shots anew: no effect)
        sizes = fm_tgt.records.groupby("group")["group"].transform("size").to_numpy()
        scales = {k: shot_scale(source, k) for k in np.unique(sizes)}
        y_tgt = y_tgt * np.array([scales[k] for k in sizes])
    y = np.concatenate([fm_src.records["label"], y_tgt])
    groups = np.concatenate([fm_src.records["group"], fm_tgt.records["group"]])
    weights = np.concatenate([weights_src, np.full(len(fm_tgt.records), config.target_weight)])
    X_fit = model.transform(X, model.columns)
    # a retraining keeps the source model's random state (its row and column samples), so
    # that it differs from the source by the shots, not by another fit's luck as well
    # (scripts/compare_refit_seed.py); added trees sample with ``seed``
    params = model.ranker.get_params()
    init_model = None
    if config.mode == "blend" and model.partner is not None:
        raise GbxferError("this model is already a blend: transfer its source model instead")
    if config.mode == "continue":
        params.update(n_estimators=config.extra_rounds, learning_rate=config.learning_rate,
                      random_state=seed)
        init_model = model.ranker.booster_
    if config.num_leaves:
        params["num_leaves"] = config.num_leaves
    if config.min_child_samples:
        params["min_child_samples"] = config.min_child_samples
    ranker = GBCostRanker(**params).fit(X_fit, y, groups=groups, sample_weight=weights,
                                        init_model=init_model)
    if config.mode == "blend":
        return _adapted(model, model.ranker, ranker, shots, config, seed, holdout)
    # continued boosting leaves a blend's partner as it was; a retraining is a model of its own
    return _adapted(model, ranker, model.partner if config.mode == "continue" else None, shots,
                    config, seed, holdout)


def _kept(model: SavedModel, shots: Dataset, config: TransferConfig, seed: int,
          holdout: SplitSpec | None, guard: dict | None = None) -> SavedModel:
    """The source model (its booster and partner) with the shots recorded."""
    return _adapted(model, model.ranker, model.partner, shots, config, seed, holdout, guard)


def _adapted(model: SavedModel, ranker, partner, shots: Dataset, config: TransferConfig,
             seed: int, holdout: SplitSpec | None, guard: dict | None = None) -> SavedModel:
    """The transferred model: ``ranker`` and ``partner`` (or None) with the source's columns,
    and the shots and the split in its metadata (so that evaluation leaves them out)."""
    ids = list(model.train_record_ids) + shots.records["record_id"].tolist()
    return SavedModel(ranker, model.columns, sorted(set(model.hardware) | set(shots.hardware)),
                      holdout.to_dict() if holdout else None, ids,
                      {"transfer": {**dataclasses.asdict(config), "seed": seed,
                                    "n_shots": len(shots),
                                    "shot_record_ids": shots.records["record_id"].tolist(),
                                    "source_split": model.split,
                                    **({"guard_check": guard} if guard else {})}}, model.gate,
                      partner)
