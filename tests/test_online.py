"""Online updates: the run's own measurements outrank a wrong prior, and leave a right one."""
from __future__ import annotations

import numpy as np
import pytest

from gbxfer.errors import GbxferError
from gbxfer.model import GBCostRanker, SavedModel
from gbxfer.online import OnlineModel, batch_ranks, blend

COLUMNS = [f"program.f{i}" for i in range(4)]


def _latency(X, sign):
    return np.exp(sign * X[:, 0] + 0.1 * X[:, 1])


@pytest.fixture(scope="module")
def prior():
    """A prior that learnt 'latency grows with f0' on its own machine."""
    X = np.random.default_rng(0).normal(size=(400, 4))
    latency = _latency(X, +1)
    label = latency.min() / latency
    ranker = GBCostRanker(n_estimators=40, random_state=0).fit(X, label)
    return SavedModel(ranker, COLUMNS)


def _run(model, sign, rounds=8, batch=16, seed=1):
    """A replayed search over a pool of 1,000 candidates: each round measures the batch the
    model ranks best among those not measured yet; returns the best latency found after every
    round over the pool's best."""
    rng = np.random.default_rng(seed)
    pool = rng.normal(size=(1000, 4))
    latency = _latency(pool, sign)
    left = np.ones(len(pool), bool)
    curve = []
    for _ in range(rounds):
        chosen = np.flatnonzero(left)[np.argsort(-model.score(pool[left], "task"), kind="stable")[:batch]]
        left[chosen] = False
        model.observe(pool[chosen], latency[chosen], "task")
        curve.append(latency[~left].min() / latency.min())
    return curve


def test_batch_ranks_and_blend():
    assert np.allclose(batch_ranks([3.0, 1.0, 2.0]), [1.0, 0.0, 0.5])
    assert np.allclose(batch_ranks([1.0, 1.0]), [0.5, 0.5]) and batch_ranks([7.0])[0] == 0.5
    assert np.allclose(blend([1, 2, 3], [3, 2, 1], 0.5), 0.5)
    assert np.allclose(blend([1, 2, 3], None, 0.5), [0, 0.5, 1])
    assert np.allclose(blend(None, [3, 2, 1], 0.0), [1, 0.5, 0])


@pytest.mark.parametrize("seed,mode", [(1, "blend"), (2, "blend"), (1, "choose")])
def test_a_wrong_prior_gives_way_to_the_runs_own_data(prior, seed, mode):
    """Where the order is reversed, the blend moves its weight to the session model as soon as
    that ranks the new rounds better, and finds the pool's best in a few rounds; the prior
    refined alone is still far off."""
    blended = OnlineModel(prior, COLUMNS, mode, min_samples=16)
    curve = _run(blended, sign=-1, seed=seed)
    refine = _run(OnlineModel(prior, COLUMNS, "refine", min_samples=16), sign=-1, seed=seed)
    frozen = _run(OnlineModel(prior, COLUMNS, "prior"), sign=-1, seed=seed)
    assert frozen[-1] > 20  # the prior alone never gets near
    assert min(w for _, w in blended.weights[1:4]) >= 0.75
    assert curve[3] < 1.5 and refine[3] > 10 * curve[3]


@pytest.mark.parametrize("mode", ["blend", "choose"])
def test_a_right_prior_keeps_the_lead(prior, mode):
    blended = OnlineModel(prior, COLUMNS, mode, min_samples=16)
    assert _run(blended, sign=+1) == [1.0] * 8  # the pool's best, from the first round
    assert np.mean([w for _, w in blended.weights]) < 0.5


def test_modes(prior):
    frozen = OnlineModel(prior, COLUMNS, "prior")
    _run(frozen, sign=-1, rounds=3)
    assert frozen.refined is prior and frozen.session is None and len(frozen.costs) == 48
    refine = OnlineModel(prior, COLUMNS, "refine")
    _run(refine, sign=-1, rounds=3)
    assert refine.session is None and refine.refined is not prior and set(refine.weights) == {("task", 0)}
    with pytest.raises(GbxferError, match="needs a prior"):
        OnlineModel(None, COLUMNS, "refine")
    with pytest.raises(GbxferError, match="online mode"):
        OnlineModel(prior, COLUMNS, "average")


def test_cold_start_is_random_then_learns():
    cold = OnlineModel(None, COLUMNS, min_samples=32, seed=3)
    X = np.random.default_rng(5).normal(size=(16, 4))
    first = cold.score(X, "t")
    assert np.array_equal(first, OnlineModel(None, COLUMNS, min_samples=32, seed=3).score(X, "t"))
    cold.observe(X, _latency(X, -1), "t")
    assert cold.session is None  # 16 < 32
    curve = _run(cold, sign=-1, rounds=4)
    assert cold.session is not None and cold.weight_of("task") == 1 and curve[-1] < 1.5


def test_failed_measurements_are_skipped_and_a_saved_run_restores(prior):
    model = OnlineModel(prior, COLUMNS, "blend", min_samples=8)
    X = np.random.default_rng(2).normal(size=(12, 4))
    costs = _latency(X, -1)
    costs[[0, 5]] = [np.nan, np.inf]
    model.observe(X, costs, "t")
    model.observe(X[:0], costs[:0], "t")  # nothing measured
    assert len(model.costs) == 10 and model.rounds == [0] * 10
    _run(model, sign=-1, rounds=3)
    again = OnlineModel(prior, COLUMNS, "blend", min_samples=8)
    again.restore(model.state())
    test = np.random.default_rng(9).normal(size=(50, 4))
    assert again.weight == model.weight and set(model.weight) == {"t", "task"}
    for task in ("t", "task"):
        assert np.allclose(again.score(test, task), model.score(test, task))
    # in mode blend a new task is ranked by the refined prior, even one that ranked the run's
    # rounds worse than chance (until 2026-12-05 it started at random then)
    assert np.allclose(again.score(test, "unseen"), batch_ranks(
        again.refined.predict(test, COLUMNS)))


def test_tasks_measured_before_the_models_exist_get_their_weight(prior):
    """Rounds below min_samples fit nothing; once the models exist, every task measured so
    far gets a weight (and is no longer treated as new)."""
    model = OnlineModel(prior, COLUMNS, min_samples=16)
    rng = np.random.default_rng(4)
    for task in ("a", "b"):
        X = rng.normal(size=(8, 4))
        model.observe(X, _latency(X, -1), task)
    assert set(model.weight) == {"a", "b"}


def test_a_run_saved_before_rounds_were_kept_still_loads(prior):
    X = np.random.default_rng(6).normal(size=(20, 4))
    old = {"X": X, "costs": _latency(X, -1), "groups": np.array(["t"] * 20)}
    model = OnlineModel(prior, COLUMNS, min_samples=8)
    model.restore(old)
    assert model.rounds == list(range(20)) and model.session is not None
    assert model.weight == {"t": 0.0}  # nothing scored before it was seen


def test_a_blended_prior_is_refined_with_its_partner(prior):
    X = np.random.default_rng(1).normal(size=(400, 4))
    partner = GBCostRanker(n_estimators=20, random_state=1).fit(X, -X[:, 1])
    blended = SavedModel(prior.ranker, COLUMNS, partner=partner)
    refine = OnlineModel(blended, COLUMNS, "refine")
    _run(refine, sign=-1, rounds=3)
    assert refine.refined.partner is partner
    assert np.allclose(blended.predict(X, COLUMNS),
                       (prior.predict(X, COLUMNS) + partner.predict(X)) / 2)


def test_local_mode_fits_each_task_on_its_own_measurements(prior):
    """Two tasks that disagree (one reversed, one as the prior learnt): mode ``local`` ranks
    each by models of its own measurements; a task not measured yet gets the prior as it was
    before the run; a saved run restores the same models."""
    from gbxfer.metrics import pairwise_accuracy

    rng = np.random.default_rng(3)
    local = OnlineModel(prior, COLUMNS, "local", min_samples=16)
    for _ in range(6):
        for task, sign in (("reversed", -1), ("kept", +1)):
            X = rng.normal(size=(16, 4))
            local.observe(X, _latency(X, sign), task)
    X = rng.normal(size=(8, 4))
    local.observe(X, _latency(X, -1), "few")  # fewer than min_samples: still the prior's
    test = np.random.default_rng(8).normal(size=(200, 4))

    def accuracy(model, task, sign):
        return pairwise_accuracy(_latency(test, sign), model.score(test, task), np.zeros(200))

    assert set(local.local) == {"reversed", "kept"} and local.session is None
    assert accuracy(local, "reversed", -1) > 0.8 and accuracy(local, "kept", +1) > 0.8
    for task in ("new", "few"):
        assert np.allclose(local.score(test, task), batch_ranks(prior.predict(test, COLUMNS)))
    again = OnlineModel(prior, COLUMNS, "local", min_samples=16)
    again.restore(local.state())
    assert again.weight == local.weight and set(again.local) == set(local.local)
    for task in ("reversed", "kept", "few"):
        assert np.allclose(again.score(test, task), local.score(test, task))


def _two_opposite_tasks(prior, mode):
    """A run over two tasks with opposite orders (``reversed`` and ``kept``), 6 rounds each."""
    rng = np.random.default_rng(3)
    model = OnlineModel(prior, COLUMNS, mode, min_samples=16)
    for _ in range(6):
        for task, sign in (("reversed", -1), ("kept", +1)):
            X = rng.normal(size=(16, 4))
            model.observe(X, _latency(X, sign), task)
    return model


def _accuracies(model):
    from gbxfer.metrics import pairwise_accuracy

    test = np.random.default_rng(8).normal(size=(200, 4))
    return [pairwise_accuracy(_latency(test, sign), model.score(test, task), np.zeros(200))
            for task, sign in (("reversed", -1), ("kept", +1))]


@pytest.mark.parametrize("with_prior", [True, False])
def test_choose_mode_ranks_each_task_by_the_pair_that_ranked_it_better(prior, with_prior):
    """Two tasks with opposite orders in one run: run-wide models, fitted on both, cannot rank
    both; mode ``choose`` moves each task to the pair of models that ranked its latest rounds
    better before seeing them (here its own) and ranks both as ``local`` does; without a prior
    it compares the two session models."""
    prior = prior if with_prior else None
    chosen = _two_opposite_tasks(prior, "choose")
    assert chosen.pair == {"reversed": "local", "kept": "local"}
    accuracy = _accuracies(chosen)
    assert min(accuracy) > 0.8 and min(_accuracies(_two_opposite_tasks(prior, "blend"))) < 0.7
    assert np.allclose(accuracy, _accuracies(_two_opposite_tasks(prior, "local")), atol=0.02)


def test_local_mode_without_a_prior_ranks_by_each_tasks_session_model():
    local = _two_opposite_tasks(None, "local")
    assert local.pair_of("kept") == "local" and min(_accuracies(local)) > 0.8


def test_the_pair_a_task_starts_with(prior):
    assert OnlineModel(prior, COLUMNS).mode == "choose"  # the default since 2026-12-05
    assert OnlineModel(prior, COLUMNS, "choose").pair_of("new") == "run"
    assert OnlineModel(prior, COLUMNS, "local").pair_of("new") == "local"
    assert OnlineModel(prior, COLUMNS, "blend").pair_of("new") == "run"


def test_choose_mode_restores_its_choices(prior):
    chosen = _two_opposite_tasks(prior, "choose")
    again = OnlineModel(prior, COLUMNS, "choose", min_samples=16)
    again.restore(chosen.state())
    test = np.random.default_rng(9).normal(size=(50, 4))
    assert again.pair == chosen.pair and again.weight == chosen.weight
    assert np.allclose(again.score(test, "kept"), chosen.score(test, "kept"))


@pytest.mark.parametrize("mode,columns", [("blend", [0, 1]), ("local", [2, 3])])
def test_a_run_saved_with_one_pairs_scores_still_loads(prior, mode, columns):
    """Runs saved before 2026-12-06 kept the scores of the pair of models that ranked them."""
    model = OnlineModel(prior, COLUMNS, mode, min_samples=8)
    rng = np.random.default_rng(7)
    for _ in range(3):
        X = rng.normal(size=(8, 4))
        model.observe(X, _latency(X, -1), "t")
    state = model.state()
    old = {**state, "seen": state["seen"][:, columns]}
    again = OnlineModel(prior, COLUMNS, mode, min_samples=8)
    again.restore(old)
    assert np.array_equal(np.array(again.seen), np.array(model.seen), equal_nan=True)
    assert again.weight == model.weight


def test_an_empty_saved_run_restores_and_a_malformed_one_is_refused(prior):
    empty = OnlineModel(prior, COLUMNS)
    again = OnlineModel(prior, COLUMNS)
    again.restore(empty.state())
    assert again.seen == [] and again.refined is prior
    X = np.random.default_rng(1).normal(size=(4, 4))
    bad = {"X": X, "costs": _latency(X, -1), "groups": np.array(["t"] * 4),
           "rounds": np.zeros(4, int), "seen": np.zeros((4, 3))}
    with pytest.raises(GbxferError, match="3 columns"):
        again.restore(bad)


@pytest.mark.parametrize("better,expected", [(2, "local"), (0, "run")])
def test_choose_ranks_new_tasks_by_the_prior_that_ranked_first_rounds_better(prior, better,
                                                                            expected):
    """Before a task has models of its own, mode ``choose`` has scored its rounds with the prior
    refined on the other tasks (column 0) and the prior as it was (column 2): a task not
    measured yet goes to whichever ranked those rounds better; rounds scored by a task's own
    session model (column 3) do not count."""
    model = OnlineModel(prior, COLUMNS, "choose")
    costs = np.tile([1.0, 2.0, 3.0, 4.0], 4)
    seen = np.full((16, 4), np.nan)
    seen[:, [0, 2]] = costs[:, None]  # both wrong: higher scores for slower programs
    seen[:4, better] = -costs[:4]  # ... except one, in the round before own models
    seen[4:, 3] = 0.0  # three rounds after the task's own models existed
    seen[4:, 2 - better] = -costs[4:]  # where the other was right: not counted
    model.costs, model.rounds = list(costs), list(np.repeat(range(4), 4))
    model.seen = [tuple(row) for row in seen]
    assert model.choose_first_pair() == expected
