"""Workers sharing one study: distinct trials, the budget counted by the storage, a killed
worker's trial failed after its heartbeat stops and run again."""
from __future__ import annotations

import threading
import time

import optuna
from optuna.trial import TrialState

from gbxfer import study as study_module
from gbxfer.study import _run, open_study


def _objective(trial):
    time.sleep(0.05)
    return trial.suggest_float("x", 0, 1) + trial.suggest_int("k", 1, 1000)


def _params(study):
    return [tuple(sorted(t.params.items())) for t in study.trials
            if t.state == TrialState.COMPLETE]


def test_workers_sharing_a_study_run_distinct_trials_within_the_budget(tmp_path):
    storage = f"sqlite:///{tmp_path / 's.db'}"
    open_study("s", storage, 0)  # created once, as the first worker does
    workers = [threading.Thread(target=_run, args=(open_study("s", storage, 0), _objective, 6))
               for _ in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    trials = optuna.load_study(study_name="s", storage=storage).trials
    done = _params(optuna.load_study(study_name="s", storage=storage))
    assert len(done) == 6 and len(set(done)) == 6
    assert not [t for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]


def test_one_worker_with_one_seed_draws_the_same_trials(tmp_path):
    runs = [_params(_run(open_study("s", f"sqlite:///{tmp_path / f'{i}.db'}", 3), _objective,
                         4)) for i in range(2)]
    assert runs[0] == runs[1]
    other = _params(_run(open_study("s", f"sqlite:///{tmp_path / 'o.db'}", 4), _objective, 4))
    assert other != runs[0]


def test_a_continued_study_does_not_replay_its_first_trials(tmp_path):
    storage = f"sqlite:///{tmp_path / 's.db'}"
    _run(open_study("s", storage, 0), _objective, 3)
    done = _params(_run(open_study("s", storage, 0), _objective, 6))
    assert len(done) == 6 and len(set(done)) == 6


def test_a_killed_workers_trial_is_failed_and_run_again(tmp_path, monkeypatch):
    monkeypatch.setattr(study_module, "HEARTBEAT_SECS", 1)
    monkeypatch.setattr(study_module, "GRACE_SECS", 2)
    storage = f"sqlite:///{tmp_path / 's.db'}"
    study = open_study("s", storage, 0)
    killed = study.ask()  # a worker starts a trial and dies before its objective runs
    killed.suggest_float("x", 0, 1)
    killed.suggest_int("k", 1, 1000)
    start = time.monotonic()
    _run(open_study("s", storage, 0), _objective, 3)
    trials = optuna.load_study(study_name="s", storage=storage).trials
    assert trials[0].state == TrialState.FAIL
    assert len(_params(study)) == 3 and len(set(_params(study))) == 3
    assert killed.params in [t.params for t in trials[1:] if t.state == TrialState.COMPLETE]
    assert not [t for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    assert time.monotonic() - start >= 2  # it waited for the heartbeat to go stale


def test_a_study_whose_trials_never_score_stops_with_an_error(tmp_path):
    import pytest

    from gbxfer.errors import GbxferError

    storage = f"sqlite:///{tmp_path / 's.db'}"
    with pytest.raises(GbxferError, match="no trial"):
        _run(open_study("s", storage, 0), lambda t: float("nan"), 3)
    assert len(optuna.load_study(study_name="s", storage=storage).trials) == 3


def test_a_negative_seed_seeds_like_any_other(tmp_path):
    done = _params(_run(open_study("s", f"sqlite:///{tmp_path / 's.db'}", -1), _objective, 2))
    assert len(set(done)) == 2


def test_a_trial_killed_before_its_first_heartbeat_is_failed_too(tmp_path, monkeypatch):
    monkeypatch.setattr(study_module, "UNBORN_SECS", 1)
    storage = f"sqlite:///{tmp_path / 's.db'}"
    study = open_study("s", storage, 0)
    study._storage.create_new_trial(study._study_id)  # created, then its worker died
    time.sleep(1.5)
    _run(open_study("s", storage, 0), _objective, 2)
    trials = optuna.load_study(study_name="s", storage=storage).trials
    assert trials[0].state == TrialState.FAIL and len(_params(study)) == 2


def test_a_trial_taken_for_killed_while_alive_does_not_stop_its_worker(tmp_path):
    storage = f"sqlite:///{tmp_path / 's.db'}"
    study = open_study("s", storage, 0)

    def failed_by_another_worker(trial):  # as fail_stale_trials does to a late heartbeat
        value = _objective(trial)
        if trial.number == 0:
            study.tell(0, state=TrialState.FAIL)
        return value
    _run(study, failed_by_another_worker, 2)
    assert len(_params(study)) == 2


def test_an_objective_error_still_stops_the_study(tmp_path):
    import pytest

    def broken(trial):
        raise ValueError("a bug in the objective")
    with pytest.raises(ValueError, match="a bug"):
        _run(open_study("s", f"sqlite:///{tmp_path / 's.db'}", 0), broken, 2)


def test_a_trial_retried_twice_runs_once(tmp_path):
    storage = f"sqlite:///{tmp_path / 's.db'}"
    study = open_study("s", storage, 0)
    for _ in range(2):  # what two workers failing one stale trial together leave queued
        study.enqueue_trial({"x": 0.5, "k": 7})
    for t in study.get_trials(deepcopy=False):
        study._storage.set_trial_system_attr(t._trial_id, "failed_trial", 0)
    _run(study, _objective, 3)
    done = _params(study)
    assert len(done) == 3 and len(set(done)) == 3


def test_ctrl_c_in_a_trial_stops_the_study_without_optunas_traceback(tmp_path, caplog,
                                                                     monkeypatch):
    import pytest

    def interrupted(trial):
        trial.suggest_float("x", 0, 1)
        raise KeyboardInterrupt

    def broken(trial):
        raise ValueError("a bug in the objective")

    # to caplog (pytest >= 9.2 also captures loggers that do not propagate: records may come
    # twice, so messages are counted distinct)
    monkeypatch.setattr(optuna.logging.get_logger("optuna"), "propagate", True)
    caplog.set_level("WARNING", logger="optuna")
    storage = f"sqlite:///{tmp_path / 's.db'}"
    with pytest.raises(KeyboardInterrupt):
        _run(open_study("s", storage, 0), interrupted, 2)
    assert not [r for r in caplog.records if "Trial 0" in r.getMessage()], caplog.text
    with pytest.raises(ValueError):  # a real error is still reported, with its traceback
        _run(open_study("s", storage, 0), broken, 2)
    told = [r for r in caplog.records if "Trial 1 failed" in r.getMessage()]
    assert len({r.getMessage() for r in told}) == 2 and told[0].exc_info is not None
    study = optuna.load_study(study_name="s", storage=storage)
    assert [t.state for t in study.trials] == [TrialState.FAIL, TrialState.FAIL]
    with pytest.raises(ValueError):  # another study's trial 0: its failure is reported too
        _run(open_study("t", storage, 0), broken, 2)
    told = [r for r in caplog.records if "Trial 0 failed" in r.getMessage()]
    assert len({r.getMessage() for r in told}) == 2 and told[0].exc_info is not None
