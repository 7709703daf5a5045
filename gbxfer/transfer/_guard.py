"""The transfer guard: a few shots must not make the model worse.

:func:`transfer` first cross-validates the adaptation inside the shots (:func:`cross_validate`:
with 4 or more shots per group, half of every group's shots adapt and the other half score, and
back; with fewer, the tasks are halved) against the source model on the same held-out groups;
it is kept only when its mean gain in the mean of pairwise accuracy and top-1 exceeds one
standard error, else the source model is returned (with the shots recorded). A few shots cannot
then make the model worse beyond the noise of that check. With ``try_pooled`` the guard weighs
pooled retraining (:meth:`TransferConfig.pooled`) the same way and keeps, of the adaptations
that pass, the one with the larger gain; from ``pooled_from`` shots in the median group, pooled
retraining unless it scores worse by one standard error (then the other candidates are not
cross-validated at all). ``fallback="blend"`` makes a guarded
transfer return :meth:`TransferConfig.blended` where no adaptation passes, not the source.
With ``other_tasks`` (the model will rank tasks without shots, as after `gbxfer calibrate`) the
folds are whole tasks at any K and ``pooled_from`` does not apply: a gain on the tasks that
have shots says nothing about the others.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..records.dataset import Dataset
from ..errors import GbxferError
from ..features import FeatureMatrix, build
from ..model import SavedModel
from ..splits import SplitSpec, key_uniform
from ..training import evaluate, features_of
from ._adapt import TransferConfig, _kept, adapt, median_shots, shots_rank


def transfer(model: SavedModel, source: Dataset, target: Dataset, shot_positions,
             config: TransferConfig = TransferConfig(), seed: int = 0,
             holdout: SplitSpec | None = None, source_features: FeatureMatrix | None = None,
             target_features: FeatureMatrix | None = None) -> SavedModel:
    """A new model: ``model`` adapted to the target shots (rows ``shot_positions`` of
    ``target``) by :func:`adapt`, guarded when ``config.guard`` (the module's docstring);
    ``extra["transfer"]["guard_check"]`` records the check (K = 1, no trees added: as
    :func:`adapt`). ``source_features`` and ``target_features``, the feature matrices of the
    whole ``source`` and ``target`` when the caller has them, save building them again."""
    shots = target.select(shot_positions)
    if not (config.guard and config.adapts and shots_rank(shots)):
        return adapt(model, source, target, shot_positions, config, seed, holdout,
                     source_features, target_features)
    target_features = target_features or build(target, list(model.blocks))
    # the shots' features, checked before the check inside the shots (which would take a
    # mismatch for too few shots)
    model.check_columns(features_of(target, model.blocks, shot_positions,
                                    target_features).columns)
    source_features = source_features or build(source, list(model.blocks))
    candidates = {"config": dataclasses.replace(config, guard=False)}
    if config.try_pooled and candidates["config"].pooled() != candidates["config"]:
        candidates["pooled"] = candidates["config"].pooled()
    if config.try_blend and candidates["config"].blended() != candidates["config"]:
        candidates["blend"] = candidates["config"].blended()
    median = median_shots(target, shot_positions)
    # pooled retraining is checked first: where it is kept without beating the source model
    # (pooled_from), the other candidates' retrainings are spared
    pooled_first = {n: candidates[n] for n in sorted(candidates, key=lambda n: n != "pooled")}
    checks = guard_checks(model, source, target, np.asarray(shot_positions), pooled_first,
                          seed, source_features, target_features, by_task=config.other_tasks,
                          stop=lambda n, check: n == "pooled"
                          and _pooled_first(config, check, median))
    first = _pooled_first(config, checks.get("pooled"), median)
    checks = {n: checks[n] for n in candidates if n in checks}
    name = "pooled" if first else max(
        checks, key=lambda n: (checks[n]["adapted"], checks[n]["gain"] or -1.0))
    adapted = first or checks[name]["adapted"]
    check = {**checks[name], "adapted": adapted, "choice": name if adapted else "source",
             **({"pooled_from": config.pooled_from} if first else {}),
             "candidates": {n: {k: c[k] for k in ("adapted", "gain", "se")}
                            for n, c in checks.items()}}
    if not check["adapted"] and config.fallback == "source":
        return _kept(model, shots, config, seed, holdout, check)
    if not check["adapted"]:
        name, candidates[name] = "blend", candidates["config"].blended()
        check["choice"] = "blend"
    adapted = adapt(model, source, target, shot_positions, candidates[name], seed, holdout,
                    source_features, target_features)
    adapted.extra["transfer"]["guard_check"] = check
    return adapted


def shot_folds(target: Dataset, shots: np.ndarray, within_task: bool = False,
               repeat: int = 0) -> np.ndarray:
    """Fold 0 or 1 of each shot.

    By task (default): a task's groups on every target profile stay in one fold (thread
    variants of one ISA measure the same programs, and a fold that adapted on one would score
    the other almost by heart); by program when there is a single task. ``within_task``: each
    group's shots alternate between the folds (in a hashed order of their programs), a program
    in the fold of its first group on every profile: what a transfer that has shots of the very
    tasks it is scored on gains. ``repeat`` r > 0: another split of the same kind (a hashed
    order of the tasks, or of the programs, seeded by r)."""
    records = target.records.iloc[shots]
    if within_task:
        order = key_uniform(records["program_id"].to_numpy(), 1 + repeat)
        fold_of: dict = {}
        for _, rows in records.groupby(["task_key", "hardware"], sort=True).indices.items():
            for i, row in enumerate(rows[np.argsort(order[rows], kind="stable")]):
                fold_of.setdefault(records["program_id"].iloc[row], i % 2)
        return records["program_id"].map(fold_of).to_numpy()
    tasks = np.unique(records["task_key"], return_inverse=True)
    names, index = tasks if len(tasks[0]) >= 2 else np.unique(records["program_id"],
                                                              return_inverse=True)
    if repeat:  # the names in a hashed order, alternating between the folds
        index = np.argsort(np.argsort(key_uniform(names, repeat), kind="stable"))[index]
    return index % 2


def cross_validate(model: SavedModel, source: Dataset, target: Dataset, shots: np.ndarray,
                   config: TransferConfig, seed: int, metric: str,
                   source_features: FeatureMatrix, target_features: FeatureMatrix,
                   within_task: bool = False, repeat: int = 0):
    """``config``'s unguarded adaptation (:func:`adapt`) scored inside the shots: the shots of
    one fold (:func:`shot_folds`) adapt the model, the other fold's shots score it, and back. By
    task, groups keep all their shots (even K = 2 leaves pairs to rank); ``within_task`` halves
    every group; ``repeat`` picks another split (:func:`shot_folds`). Returns the two fold
    reports and ``{group: metric}`` over the held-out groups."""
    fold_of = shot_folds(target, shots, within_task, repeat)
    reports = []
    for fold in (0, 1):
        fit, held = shots[fold_of != fold], shots[fold_of == fold]
        if len(fit) == 0 or len(held) == 0:
            raise GbxferError("too few shots to cross-validate a transfer")
        adapted = adapt(model, source, target, fit, config, seed,
                        source_features=source_features, target_features=target_features)
        reports.append(evaluate(adapted, target.select(held),
                                features=target_features.select_rows(held)))
    by_group = {g: rep[metric] for r in reports for g, rep in r["by_task"].items()
                if np.isfinite(rep[metric])}
    return reports, by_group


GUARD_METRICS = ("pca", "top1")  # the guard's score of a held-out group: their mean


def _by_group(reports) -> dict:
    """``{(fold, group): {metric: value}}`` of the held-out groups of fold reports where every
    :data:`GUARD_METRICS` is finite (within tasks, a group is held out in both folds)."""
    return {(fold, g): rep for fold, r in enumerate(reports) for g, rep in r["by_task"].items()
            if all(np.isfinite(rep[m]) for m in GUARD_METRICS)}


def guard_checks(model: SavedModel, source: Dataset, target: Dataset, shots: np.ndarray,
                 configs: dict, seed: int, source_features: FeatureMatrix,
                 target_features: FeatureMatrix, stop=None, by_task: bool = False) -> dict:
    """``{name: check}``: whether each of ``configs`` (``{name: TransferConfig}``) beats the
    source model inside the shots: the paired per-group differences of the mean of pairwise
    accuracy and top-1 (:data:`GUARD_METRICS`) on the held-out folds (:func:`cross_validate`;
    the source model scored once for all; a group held out in both folds, as within tasks,
    averaged into one sample, as is a group split by program where the target has a single
    task) have a mean above one standard error. Too few shots
    or groups to tell, or a candidate whose adaptation raises: not adapted. ``stop(name,
    check)`` true ends the checks there: the configs after it are not cross-validated.

    With 4 or more shots in the median group the folds halve every group (the gain of shots of
    the tasks scored, as in a transfer to a target whose tasks have shots); with fewer they
    are whole tasks (a group of two halved has no pair left), which measures only what carries
    over to other tasks and so underrates the adaptation; ``by_task``: whole tasks at any K
    (what a model that will rank tasks without shots gains)."""
    within = not by_task and median_shots(target, shots) >= 4

    def scores(config):
        return _by_group(cross_validate(model, source, target, shots, config, seed, "pca",
                                        source_features, target_features, within)[0])

    failed = {"adapted": False, "gain": None, "se": None, "groups": 0}
    try:
        base = scores(TransferConfig(extra_rounds=0))
    except GbxferError:
        return {name: dict(failed) for name in configs}
    def check(config) -> dict:
        try:  # a candidate that cannot adapt (a blend of a blend) fails alone
            by_group = scores(config)
        except GbxferError:
            return dict(failed)
        per_group: dict = {}  # within tasks a group's two held-out halves are one sample
        for fold, g in sorted(set(base) & set(by_group)):
            per_group.setdefault(g, []).append(
                np.mean([by_group[fold, g][m] - base[fold, g][m] for m in GUARD_METRICS]))
        diff = np.array([np.mean(halves) for halves in per_group.values()])
        if len(diff) < 2:
            return {**failed, "groups": len(diff)}
        gain, se = float(diff.mean()), float(diff.std(ddof=1) / np.sqrt(len(diff)))
        return {"adapted": bool(gain > se), "gain": round(gain, 5), "se": round(se, 5),
                "groups": len(diff), "folds": "within tasks" if within else "by task"}

    checks = {}
    for name, config in configs.items():
        checks[name] = check(config)
        if stop is not None and stop(name, checks[name]):
            break
    return checks


def _pooled_first(config: TransferConfig, check: dict | None, median: float) -> bool:
    """Whether the guard keeps pooled retraining without its beating the source model: where
    the median task x profile group has ``config.pooled_from`` shots or more (``median``; then
    the shots outweigh what the check can tell apart), unless it scored worse by one standard
    error; never for a model that will rank other tasks (``config.other_tasks``)."""
    if config.other_tasks or not config.pooled_from or not check or check["gain"] is None:
        return False
    return median >= config.pooled_from and check["gain"] >= -check["se"]
