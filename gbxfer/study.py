"""Optuna studies over model or transfer hyper-parameters, scored by the evaluation harness.

The objective never sees evaluation data: a model study cross-validates by task inside the
training part of the split it is given; a transfer study cross-validates inside the shots.
Studies live in any Optuna storage (a SQLite file by default, ``postgresql://...`` for many
workers); rerunning with the same name continues the study up to ``n_trials`` finished trials.
"""
from __future__ import annotations

import dataclasses
import datetime
import logging
import os
import socket
import threading
import time
import warnings

import numpy as np
import optuna
from optuna.trial import TrialState

from .records.dataset import Dataset
from .errors import GbxferError
from .features import build
from .model import ModelConfig
from .splits import SplitSpec
from .training import evaluate, train, training_part
from .transfer import TransferConfig, cross_validate

log = logging.getLogger("gbxfer")


class _QuietInterrupt(logging.Filter):
    """Drops Optuna's two warnings about a trial that Ctrl-C stopped (its traceback, then the
    value it failed with, logged right after on the same thread): the command says
    "interrupted" on one line, and the trial is failed in the storage as before, so a rerun
    continues the study. Every other warning passes, a later trial of the same number too."""

    def __init__(self):
        super().__init__()
        self.stopped: dict[int, str] = {}  # thread -> "Trial N failed with value "

    def filter(self, record: logging.LogRecord) -> bool:
        message, thread = record.getMessage(), threading.get_ident()
        if record.exc_info and isinstance(record.exc_info[1], KeyboardInterrupt):
            self.stopped[thread] = message.split(" failed with ", 1)[0] + " failed with value "
            return False
        return not message.startswith(self.stopped.pop(thread, "\0"))


logging.getLogger("optuna.study._optimize").addFilter(_QuietInterrupt())


def model_space(trial: optuna.Trial) -> dict:
    """A trial's booster parameters. Row sampling is among them since 2026-12-06: every one of
    the 20 best trials of scripts/tune_config.py's two studies drew each tree on 60-75% of the
    rows. A leaf's least programs are searched as counts (5-60), so a config exported from a
    study holds a count where the shipped configs hold a fraction of the training rows."""
    return {"n_estimators": trial.suggest_int("n_estimators", 100, 600, step=50),
            "learning_rate": trial.suggest_float("learning_rate", 0.02, 0.3, log=True),
            "num_leaves": trial.suggest_int("num_leaves", 15, 127, log=True),
            "min_child_samples": trial.suggest_int("min_child_samples", 5, 60, log=True),
            "subsample": trial.suggest_float("subsample", 0.5, 1.0),
            "colsample_bytree": trial.suggest_float("colsample_bytree", 0.4, 1.0),
            "reg_lambda": trial.suggest_float("reg_lambda", 1e-3, 10.0, log=True),
            "label": trial.suggest_categorical("label", ["throughput", "rank"])}


def transfer_space(trial: optuna.Trial) -> dict:
    space = {"mode": trial.suggest_categorical("mode", ["continue", "retrain"]),
             "target_weight": trial.suggest_float("target_weight", 1.0, 100.0, log=True),
             "temperature": trial.suggest_float("temperature", 0.05, 10.0, log=True),
             "source_fraction": trial.suggest_float("source_fraction", 0.1, 1.0)}
    if space["mode"] == "continue":  # retrain uses the source model's rounds and rate
        space.update(extra_rounds=trial.suggest_int("extra_rounds", 10, 200, log=True),
                     learning_rate=trial.suggest_float("learning_rate", 0.01, 0.3, log=True))
    return space


HEARTBEAT_SECS = 5  # a worker's running trial says it is alive this often
GRACE_SECS = 30  # ... and is taken for killed after this long without a word
UNBORN_SECS = 90  # a trial with no parameters yet after this long lost its worker before its
# first heartbeat (a live one suggests its parameters within milliseconds of starting)
POLL_SECS = 2.0
FINISHED = (TrialState.COMPLETE,)
TAKEN = (TrialState.COMPLETE, TrialState.RUNNING, TrialState.WAITING)


class TrialSeededSampler(optuna.samplers.BaseSampler):
    """Optuna's TPE sampler, seeded per trial from ``(seed, trial number)``.

    The storage numbers trials uniquely, so workers sharing a study never draw the same
    parameters (each process seeding its own TPE with ``seed`` would make them replay each
    other, and a resumed study replay its first trials), while one worker with one seed draws
    the same trials every run.
    """

    def __init__(self, seed: int = 0):
        self.seed = seed
        self._number, self._tpe = None, None

    def _sampler(self, trial) -> optuna.samplers.TPESampler:
        if trial.number != self._number:
            state = np.random.SeedSequence([self.seed % 2**64, trial.number]).generate_state(1)[0]
            self._number, self._tpe = trial.number, optuna.samplers.TPESampler(seed=int(state))
        return self._tpe

    def infer_relative_search_space(self, study, trial):
        return self._sampler(trial).infer_relative_search_space(study, trial)

    def sample_relative(self, study, trial, search_space):
        return self._sampler(trial).sample_relative(study, trial, search_space)

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self._sampler(trial).sample_independent(study, trial, param_name,
                                                       param_distribution)

    def before_trial(self, study, trial) -> None:
        # the trial's first heartbeat, as soon as it exists: Optuna beats only once the
        # objective starts, and a trial killed before its first beat would never go stale
        storage = study._storage
        if getattr(storage, "get_heartbeat_interval", lambda: None)():
            storage.record_heartbeat(trial._trial_id)
        self._sampler(trial).before_trial(study, trial)

    def after_trial(self, study, trial, state, values) -> None:
        self._sampler(trial).after_trial(study, trial, state, values)


def sqlalchemy_url(url: str) -> str:
    """``url`` with the driver gbxfer installs for it (the ``postgres`` extra's psycopg 3 for a
    plain ``postgresql://``; SQLAlchemy's default there is psycopg2)."""
    if url.startswith("postgresql://"):
        return "postgresql+psycopg://" + url[len("postgresql://"):]
    return url


def study_storage(url: str | None):
    """The storage of ``url`` (None: in memory, for one process): a database with Optuna's
    heartbeat, so that a trial whose worker was killed is failed after :data:`GRACE_SECS` and
    run again with its parameters. ``postgresql://`` opens with psycopg 3 (``pip install
    'gbxfer[postgres]'``)."""
    if url is None:
        return optuna.storages.InMemoryStorage()
    url = sqlalchemy_url(url)
    engine = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else None
    with warnings.catch_warnings():  # heartbeats are "experimental" in Optuna
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        retry = getattr(optuna.storages, "RetryHeartbeatStaleTrialCallback", None)
        callback = ({"heartbeat_stale_trial_callback": retry(max_retry=3)} if retry else
                    {"failed_trial_callback": optuna.storages.RetryFailedTrialCallback(3)})
        for attempt in range(5):
            try:
                return optuna.storages.RDBStorage(url, engine_kwargs=engine,
                                                  heartbeat_interval=HEARTBEAT_SECS,
                                                  grace_period=GRACE_SECS, **callback)
            except Exception:  # noqa: BLE001 - workers creating one database's tables race
                if attempt == 4:  # (a unique-constraint error for all but one): not a race
                    raise
                time.sleep(0.2 * (attempt + 1))


def open_study(name: str, storage: str | None, seed: int,
               objective: dict | None = None) -> optuna.Study:
    """The study ``name``, created or continued. ``objective`` names what its trials score
    (kind, metric, seed, digests of the data and model); a study of that name run on another
    objective is an error, since its trials' values would not compare with this run's."""
    study = optuna.create_study(study_name=name, storage=study_storage(storage),
                                direction="maximize", load_if_exists=True,
                                sampler=TrialSeededSampler(seed))
    held = study.user_attrs.get("objective")
    if objective is None:
        return study
    if held is None:  # a new study (or one of a version that did not record it)
        study.set_user_attr("objective", objective)
    elif held != objective:
        keys = list(objective) + [key for key in held if key not in objective]
        differ = [f"{key} {held.get(key)!r} there, {objective.get(key)!r} here"
                  for key in keys if held.get(key) != objective.get(key)]
        raise GbxferError(f"study {name!r} in this storage scores another objective "
                          f"({'; '.join(differ)}): continue it with the arguments that "
                          "created it, or choose another --study-name")
    return study


def digest(*parts) -> str:
    """A short SHA-256 of datasets' records (ids and latencies), arrays and plain values
    (mappings by key; numbers as floats, so that 1 and 1.0 agree)."""
    import hashlib
    import json

    import pandas as pd

    def plain(value):
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, (int, float, np.number)) and not isinstance(value, (bool, np.bool_)):
            return float(value)
        return value if value is None or isinstance(value, (str, bool)) else repr(value)

    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, Dataset):
            part = pd.util.hash_pandas_object(part.records[["record_id", "latency"]],
                                              index=False).to_numpy()
        h.update(part.tobytes() if isinstance(part, np.ndarray) else
                 json.dumps(plain(part)).encode())
    return h.hexdigest()[:16]


def _run(study: optuna.Study, objective, n_trials: int) -> optuna.Study:
    """Run trials until the storage holds ``n_trials`` finished ones, whatever other workers
    do: a trial starts only while fewer than ``n_trials`` are finished, running or queued with
    a lower number (numbers are the storage's order, so concurrent workers agree on who is
    over budget); a worker with nothing to start waits for the others' trials to finish or,
    if their worker died, to go stale and be queued again. A worker stops after ``n_trials``
    of its own trials failed (an objective with no score)."""
    def within_budget(trial):
        trials = study.get_trials(deepcopy=False)
        ahead = [t for t in trials if t.number < trial.number and t.state in TAKEN]
        if len(ahead) >= n_trials:
            raise optuna.TrialPruned("the budget is taken by other trials")
        # two workers failing one stale trial at once (SQLite) both queue a retry of it
        origin = next(t for t in trials if t.number == trial.number).system_attrs.get(
            "failed_trial")
        if origin is not None and any(t.system_attrs.get("failed_trial") == origin
                                      for t in ahead):
            raise optuna.TrialPruned(f"a retry of trial {origin} is queued or ran already")
        trial.set_user_attr("worker", f"{socket.gethostname()}:{os.getpid()}")  # who ran it
        return objective(trial)

    failed = []
    while len(failed) < n_trials:
        with warnings.catch_warnings():  # a no-op on storages without heartbeat
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            optuna.storages.fail_stale_trials(study)
        _fail_unborn_trials(study)
        trials = study.get_trials(deepcopy=False)
        if sum(t.state in FINISHED for t in trials) >= n_trials:
            break
        if sum(t.state in TAKEN for t in trials) >= n_trials and not any(
                t.state == TrialState.WAITING for t in trials):  # a queued one is run next
            time.sleep(POLL_SECS)
            continue
        try:
            study.optimize(within_budget, n_trials=1, catch=(), callbacks=[
                lambda _, t: failed.append(t.number) if t.state == TrialState.FAIL else None])
        except (ValueError, AssertionError) as exc:  # not the objective's: Optuna's own
            told = exc if isinstance(exc, ValueError) else exc.__context__
            if not str(told).startswith("Cannot tell a"):  # "... FAIL trial.": failed meanwhile
                raise
            log.warning("a trial of this worker was taken for killed (its heartbeat came later "
                        "than %d s) and queued again; its retry counts instead", GRACE_SECS)
    if not any(t.state == TrialState.COMPLETE for t in study.trials):
        raise GbxferError(f"no trial of study {study.study_name!r} finished with a score (too "
                          "few shots or groups to cross-validate?)")
    return study


def _fail_unborn_trials(study: optuna.Study) -> None:
    """Fail running trials that never got a parameter: their worker died between the trial's
    creation and its first heartbeat, so Optuna's heartbeat check never sees them."""
    now = datetime.datetime.now()
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if not t.params and t.datetime_start is not None and (
                now - t.datetime_start).total_seconds() > UNBORN_SECS:
            study.tell(t.number, state=TrialState.FAIL, skip_if_finished=True)


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

    what = {"kind": "model", "metric": metric, "seed": seed, "folds": folds,
            "holdout": split.to_dict() if split else None, "data": digest(part),
            "config": digest(list(config.blocks), config.params, config.attention,
                             config.descriptor_dropout)}
    return _run(open_study(name, storage, seed, what), objective, n_trials)


def study_transfer(model, source: Dataset, target: Dataset, shots, n_trials: int, name: str,
                   storage: str, seed: int = 0, metric: str = "pca") -> optuna.Study:
    """Tune :class:`TransferConfig` by 2-fold CV inside the shots
    (:func:`gbxfer.transfer.cross_validate`; each trial's transfer unguarded: the study is the
    check). The metric defaults to PCA (top-1 of a group of two shots is a coin flip). The
    first trial is the default config; the source model's own scores on the
    same folds are kept too (study user attribute ``source_only``), so that
    :func:`chosen_transfer` can pick among no adaptation, the default and the best trial."""
    shots = np.asarray(shots)
    # built once: every trial's folds select rows of them and relabel
    source_features, target_features = build(source, model.blocks), build(target, model.blocks)

    def validate(config: TransferConfig) -> tuple[list, dict]:
        return cross_validate(model, source, target, shots, config, seed, metric,
                              source_features, target_features)

    def objective(trial):
        reports, by_group = validate(TransferConfig(**transfer_space(trial), guard=False))
        for key in ("pca", "top1", "top5"):
            trial.set_user_attr(key, float(np.mean([r[key] for r in reports])))
        trial.set_user_attr("by_group", by_group)
        return float(np.mean([r[metric] for r in reports]))

    what = {"kind": "transfer", "metric": metric, "seed": seed,
            "data": digest(source, target, shots),
            "model": digest(sorted(model.train_record_ids), model.hardware, model.columns,
                            model.ranker.get_params())}
    study = open_study(name, storage, seed, what)
    if "source_only" not in study.user_attrs:
        study.set_user_attr("source_only", validate(TransferConfig(extra_rounds=0))[1])
    if not study.trials:
        study.enqueue_trial(_default_params(), skip_if_exists=True)
    return _run(study, objective, n_trials)


def _default_params() -> dict:
    """The default :class:`TransferConfig` as study parameters (the first trial's)."""
    default = TransferConfig()
    return {key: getattr(default, key) for key in (
        "mode", "target_weight", "temperature", "source_fraction", "extra_rounds",
        "learning_rate")}


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
    # the default trial, wherever a retry or another worker put it
    default = next((t for t in done if t.params == _default_params()), done[0])
    best = max(done, key=lambda t: t.value)
    candidates = [(TransferConfig(extra_rounds=0), study.user_attrs.get("source_only")),
                  (TransferConfig(**default.params, guard=False),
                   default.user_attrs.get("by_group")),
                  (TransferConfig(**best.params, guard=False), best.user_attrs.get("by_group"))]
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
