"""Studies on a real PostgreSQL server: three `gbxfer study` workers started by the same
command share one study; the storage counts the budget; a worker killed mid-trial does not
stall the others. Marked ``postgres``: `.ci/run` starts a throwaway server (`.ci/postgres`) and
sets GBXFER_POSTGRES_URL; run alone, a missing server fails rather than skips."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter

import optuna
import pytest
from optuna.trial import TrialState

from gbxfer.study import sqlalchemy_url

pytestmark = pytest.mark.postgres
CONFIG = "blocks: [program, workload, hardware]\nparams: {n_estimators: 10, num_leaves: 7}\n"


@pytest.fixture(scope="module")
def postgres_url() -> str:
    url = os.environ.get("GBXFER_POSTGRES_URL")
    if not url:
        pytest.fail("tests marked postgres need a PostgreSQL server: set GBXFER_POSTGRES_URL "
                    "(`.ci/postgres start DIR` starts a throwaway one and prints its URL)")
    return url


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from gbxfer.cli import main

    folder = tmp_path_factory.mktemp("pg")
    assert main(["prune", "bundled", "--keep", "0.05", "--method", "random", "--out",
                 str(folder / "tiny"), "-q"]) == 0
    (folder / "config.yaml").write_text(CONFIG)
    return folder


def _worker(url, name, folder, trials=15):
    """One worker, the same command for every one of them."""
    argv = [sys.executable, "-m", "gbxfer", "study", "model", str(folder / "tiny"), "--trials",
            str(trials), "--storage", url, "--study-name", name, "--config",
            str(folder / "config.yaml"), "-q"]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _finish(workers, timeout=600):
    for w in workers:
        out, err = w.communicate(timeout=timeout)
        assert w.returncode == 0, err[-2000:]


def _trials(url, name):
    return optuna.load_study(study_name=name, storage=sqlalchemy_url(url)).trials


def _report(trials) -> dict:
    done = [t for t in trials if t.state == TrialState.COMPLETE]
    params = [tuple(sorted(t.params.items())) for t in done]
    return {"complete": len(done), "duplicates": len(params) - len(set(params)),
            "running": sum(t.state in (TrialState.RUNNING, TrialState.WAITING) for t in trials),
            "per_worker": Counter(t.user_attrs.get("worker") for t in done)}


def test_three_workers_run_the_budget_once(postgres_url, tiny):
    name = f"three-{uuid.uuid4().hex[:8]}"
    _finish([_worker(postgres_url, name, tiny) for _ in range(3)])
    report = _report(_trials(postgres_url, name))
    print(f"\n3 workers x --trials 15 on PostgreSQL: {report}")
    assert report["complete"] == 15 and report["duplicates"] == 0 and report["running"] == 0
    assert len(report["per_worker"]) == 3  # every worker did its share
    assert sum(report["per_worker"].values()) == 15


def test_a_worker_killed_mid_trial_does_not_stall_the_study(postgres_url, tiny):
    name = f"killed-{uuid.uuid4().hex[:8]}"
    workers = [_worker(postgres_url, name, tiny) for _ in range(3)]
    victim = workers[0]
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # kill it while one of its trials runs
        trials = _trials(postgres_url, name) if _study_exists(postgres_url, name) else []
        mine = [t for t in trials if t.state == TrialState.RUNNING
                and t.user_attrs.get("worker", "").endswith(f":{victim.pid}")]
        if mine:
            break
        time.sleep(0.05)
    assert mine, "the worker never ran a trial"
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    start = time.monotonic()
    _finish(workers[1:])
    trials = _trials(postgres_url, name)
    report = _report(trials)
    print(f"\nworker {victim.pid} killed in trial {mine[0].number}: {report}, the others "
          f"finished {time.monotonic() - start:.0f} s later")
    assert report["complete"] == 15 and report["duplicates"] == 0 and report["running"] == 0
    assert trials[mine[0].number].state == TrialState.FAIL  # failed by its stale heartbeat
    retried = [t for t in trials if t.system_attrs.get("failed_trial") == mine[0].number]
    # run again elsewhere with the parameters it had drawn (a kill between two suggestions
    # leaves only some of them; the retry draws the rest)
    assert retried and trials[mine[0].number].params.items() <= retried[0].params.items()


def _study_exists(url, name) -> bool:
    summaries = optuna.get_all_study_summaries(sqlalchemy_url(url))
    return any(s.study_name == name for s in summaries)
