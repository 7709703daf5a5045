"""Optuna studies over model or transfer hyper-parameters, scored by the evaluation harness.

The objective never sees evaluation data: a model study cross-validates by task inside the
training part of the split it is given; a transfer study cross-validates inside the shots.
Studies live in any Optuna storage (a SQLite file by default, ``postgresql://...`` for many
workers); rerunning with the same name continues the study up to ``n_trials`` finished trials.
"""
from __future__ import annotations

import dataclasses
import logging

import numpy as np
import optuna

from .records.dataset import Dataset
from .errors import GbxferError
from .features import build
from .model import ModelConfig
from .splits import SplitSpec
from .training import evaluate, train, training_part
from .transfer import TransferConfig, transfer

log = logging.getLogger("gbxfer")


def model_space(trial: optuna.Trial) -> dict:
    return {"n_estimators": trial.suggest_int("n_estimators", 100, 600, step=50),
            "learning_rate": trial.suggest_float("learning_rate", 0.02, 0.3, log=True),
            "num_leaves": trial.suggest_int("num_leaves", 15, 127, log=True),
            "min_child_samples": trial.suggest_int("min_child_samples", 5, 60, log=True),
            "colsample_bytree": trial.suggest_float("colsample_bytree", 0.4, 1.0),
            "reg_lambda": trial.suggest_float("reg_lambda", 1e-3, 10.0, log=True)}


def transfer_space(trial: optuna.Trial) -> dict:
    space = {"mode": trial.suggest_categorical("mode", ["continue", "retrain"]),
             "target_weight": trial.suggest_float("target_weight", 1.0, 100.0, log=True),
             "temperature": trial.suggest_float("temperature", 0.05, 10.0, log=True),
             "source_fraction": trial.suggest_float("source_fraction", 0.1, 1.0)}
    if space["mode"] == "continue":  # retrain uses the source model's rounds and rate
        space.update(extra_rounds=trial.suggest_int("extra_rounds", 10, 200, log=True),
                     learning_rate=trial.suggest_float("learning_rate", 0.01, 0.3, log=True))
    return space


def _run(study: optuna.Study, objective, n_trials: int) -> optuna.Study:
    done = len([t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE])
    if n_trials > done:
        study.optimize(objective, n_trials=n_trials - done)
    if not any(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials):
        raise GbxferError(f"no trial of study {study.study_name!r} finished with a score (too "
                          "few shots or groups to cross-validate?)")
    return study


def open_study(name: str, storage: str, seed: int) -> optuna.Study:
    return optuna.create_study(study_name=name, storage=storage, direction="maximize",
                               load_if_exists=True, sampler=optuna.samplers.TPESampler(seed=seed))


def study_model(dataset: Dataset, config: ModelConfig, n_trials: int, name: str, storage: str,
                split: SplitSpec | None = None, folds: int = 3, seed: int = 0,
                metric: str = "top1") -> optuna.Study:
    """Tune the estimator's parameters by ``folds``-fold by-task CV inside the training part."""
    part = training_part(dataset, split)
    features = build(part, list(config.blocks))  # once: each fold selects rows, relabels

    def objective(trial):
        params = {**config.params, **model_space(trial)}
        scores, reports = [], []
        for fold in range(folds):
            inner = SplitSpec("by-task", 1.0 / folds, seed * 100 + fold)
            test = inner.test_mask(part)
            if not test.any() or test.all():  # a hashed task split can come out empty
                continue
            model = train(part, config.replace(params=params), inner, seed=seed,
                          features=features)
            report = evaluate(model, part, features=features)
            scores.append(report[metric])
            reports.append(report)
        if not reports:
            raise GbxferError("no cross-validation fold has both train and test tasks: the "
                              "training part has too few tasks for a model study")
        for key in ("pca", "top1", "top5"):
            trial.set_user_attr(key, float(np.mean([r[key] for r in reports])))
        return float(np.mean(scores))

    return _run(open_study(name, storage, seed), objective, n_trials)


def study_transfer(model, source: Dataset, target: Dataset, shots, n_trials: int, name: str,
                   storage: str, seed: int = 0, metric: str = "pca") -> optuna.Study:
    """Tune :class:`TransferConfig` by 2-fold CV inside the shots: the shots of half of the
    tasks adapt the model, the other half's shots score it, and back (with a single task, its
    programs are split instead). A task's groups on every target profile stay in one fold:
    thread variants of one ISA measure the same programs, and a fold that adapted on one of
    them would score the other almost by heart. A fold's groups keep all their K shots, so
    even K = 2 leaves pairs to rank. The metric defaults to PCA (top-1 of a group of two shots is
    a coin flip). The first trial is the default config; the source model's own scores on the
    same folds are kept too (study user attribute ``source_only``), so that
    :func:`chosen_transfer` can pick among no adaptation, the default and the best trial."""
    shot_records = target.records.iloc[shots]
    tasks = np.unique(shot_records["task_key"], return_inverse=True)
    by = tasks if len(tasks[0]) >= 2 else np.unique(shot_records["program_id"],
                                                    return_inverse=True)
    fold_of = by[1] % 2
    # built once: every trial's folds select rows of them and relabel
    source_features, target_features = build(source, model.blocks), build(target, model.blocks)

    def cross_validate(config: TransferConfig) -> tuple[list, dict]:
        reports = []
        for fold in (0, 1):
            fit, held = shots[fold_of != fold], shots[fold_of == fold]
            if len(fit) == 0 or len(held) == 0:
                raise GbxferError("too few shots to cross-validate a transfer study")
            adapted = transfer(model, source, target, fit, config, seed,
                               source_features=source_features, target_features=target_features)
            reports.append(evaluate(adapted, target.select(held),
                                    features=target_features.select_rows(held)))
        by_group = {g: rep[metric] for r in reports for g, rep in r["by_task"].items()
                    if np.isfinite(rep[metric])}
        return reports, by_group

    def objective(trial):
        reports, by_group = cross_validate(TransferConfig(**transfer_space(trial)))
        for key in ("pca", "top1", "top5"):
            trial.set_user_attr(key, float(np.mean([r[key] for r in reports])))
        trial.set_user_attr("by_group", by_group)
        return float(np.mean([r[metric] for r in reports]))

    study = open_study(name, storage, seed)
    if "source_only" not in study.user_attrs:
        study.set_user_attr("source_only", cross_validate(TransferConfig(extra_rounds=0))[1])
    if not study.trials:
        default = TransferConfig()
        study.enqueue_trial({key: getattr(default, key) for key in (
            "mode", "target_weight", "temperature", "source_fraction", "extra_rounds",
            "learning_rate")})
    return _run(study, objective, n_trials)


def chosen_transfer(study: optuna.Study) -> TransferConfig:
    """The transfer config a study supports, by the one-standard-error rule over its groups.

    Candidates from simplest to most tuned: no adaptation (the source model), the default
    config (the study's first trial), the best trial. Each is compared with the best on the
    held-out shot groups both scored (paired differences of the study's metric); the simplest
    whose mean is within one standard error of the best's is chosen. With a handful of shots
    the cross-validation is noisy, and a tuned config has to beat the simpler ones by more than
    that noise to be taken.
    """
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    if not done:
        raise GbxferError(f"study {study.study_name!r} has no finished trial")
    best = max(done, key=lambda t: t.value)
    candidates = [(TransferConfig(extra_rounds=0), study.user_attrs.get("source_only")),
                  (TransferConfig(**done[0].params), done[0].user_attrs.get("by_group")),
                  (TransferConfig(**best.params), best.user_attrs.get("by_group"))]
    reference = candidates[-1][1] or {}
    for config, by_group in candidates:
        common = sorted(set(by_group or {}) & set(reference))
        if len(common) < 2:
            continue
        diff = np.array([reference[g] - by_group[g] for g in common])
        if diff.mean() <= diff.std(ddof=1) / np.sqrt(len(diff)):
            return config
    return candidates[-1][0]


def best_config(study: optuna.Study, kind: str, base: ModelConfig) -> dict:
    """The config YAML content with the best trial's parameters."""
    if kind == "model":
        return {"blocks": list(base.blocks), "params": {**base.params, **study.best_params}}
    return {"blocks": list(base.blocks), "params": dict(base.params),
            "transfer": dataclasses.asdict(chosen_transfer(study))}
