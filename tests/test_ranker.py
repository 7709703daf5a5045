"""GBCostRanker is a scikit-learn estimator that ranks real programs within groups."""
from __future__ import annotations

import numpy as np
import pytest
import sklearn
from joblib import dump, load
from sklearn.base import clone
from sklearn.model_selection import GroupKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.estimator_checks import check_estimator

from gbxfer.features import build
from gbxfer.metrics import pairwise_accuracy, random_baseline, topk_score
from gbxfer.model import GBCostRanker


@pytest.mark.parametrize("backend", ["lightgbm", "xgboost"])
def test_passes_sklearn_estimator_checks(backend):
    est = GBCostRanker(backend=backend, n_estimators=5)
    check_estimator(est, expected_failed_checks=GBCostRanker.EXPECTED_FAILED_CHECKS[backend])


@pytest.fixture(scope="module")
def ansor_cpu(ansor_dir):
    from gbxfer import ingest
    fm = build(ingest([ansor_dir / "cpu_x86"]))
    return fm.select_rows(fm.records["valid"].to_numpy())


@pytest.mark.parametrize("backend, objective", [
    ("lightgbm", "lambdarank"), ("lightgbm", "regression"), ("xgboost", "rank:pairwise"),
    ("xgboost", "rank:ndcg"), ("xgboost", "regression")])
def test_ranks_held_out_programs_better_than_random(ansor_cpu, backend, objective):
    r = ansor_cpu.records
    rng = np.random.default_rng(0)
    test = rng.random(len(r)) < 0.3
    model = GBCostRanker(backend=backend, objective=objective, n_estimators=60)
    model.fit(ansor_cpu.X[~test], r["label"][~test], groups=r["group"][~test])
    score = model.predict(ansor_cpu.X[test])
    lat, groups = r["latency"][test].to_numpy(), r["group"][test].to_numpy()
    assert pairwise_accuracy(lat, score, groups) > 0.55  # random: 0.5
    assert topk_score(lat, score, groups, 1) > random_baseline(topk_score, lat, groups, k=1)


def test_group_kfold_cross_validation_and_pipeline(ansor_cpu):
    r = ansor_cpu.records
    with sklearn.config_context(enable_metadata_routing=True):
        ranker = GBCostRanker(n_estimators=30).set_fit_request(groups=True).set_score_request(
            groups=True)
        pipe = make_pipeline(FunctionTransformer(), ranker)
        scores = cross_val_score(pipe, ansor_cpu.X, r["label"], cv=GroupKFold(n_splits=3),
                                 params={"groups": r["group"]})
    assert len(scores) == 3 and np.all(scores > 0.5)  # PCA on whole held-out groups


def test_clone_and_joblib_round_trip(ansor_cpu, tmp_path):
    r = ansor_cpu.records
    model = GBCostRanker(n_estimators=20, num_leaves=15).fit(ansor_cpu.X, r["label"],
                                                            groups=r["group"])
    assert clone(model).get_params()["num_leaves"] == 15
    dump(model, tmp_path / "m.joblib")
    again = load(tmp_path / "m.joblib")
    assert np.allclose(again.predict(ansor_cpu.X[:50]), model.predict(ansor_cpu.X[:50]))


def test_same_seed_same_model(ansor_cpu):
    r = ansor_cpu.records
    a = GBCostRanker(n_estimators=20, subsample=0.7, random_state=3).fit(
        ansor_cpu.X, r["label"], groups=r["group"]).predict(ansor_cpu.X[:100])
    b = GBCostRanker(n_estimators=20, subsample=0.7, random_state=3).fit(
        ansor_cpu.X, r["label"], groups=r["group"]).predict(ansor_cpu.X[:100])
    assert np.array_equal(a, b)


@pytest.mark.parametrize("backend, objective", [
    ("lightgbm", "lambdarank"), ("xgboost", "rank:pairwise"), ("xgboost", "regression")])
def test_float32_features_train_the_model_float64_does(ansor_cpu, backend, objective):
    """Features are fitted as given (float32, without a float64 copy) and XGBoost trains on
    quantile bins alone: the model is the one float64 input trains."""
    r = ansor_cpu.records
    assert ansor_cpu.X.dtype == np.float32
    weight = np.random.default_rng(2).random(len(r)) + 0.5
    models = [GBCostRanker(backend=backend, objective=objective, n_estimators=15).fit(
        X, r["label"], groups=r["group"], sample_weight=weight)
        for X in (ansor_cpu.X, ansor_cpu.X.astype(np.float64))]
    assert np.array_equal(models[0].predict(ansor_cpu.X), models[1].predict(ansor_cpu.X))


def test_boosting_on_from_a_prior_scores_the_values_not_their_bins():
    """Continued boosting scores the new rows with the prior's trees on their values: the
    model xgb.train makes on a DMatrix (on a QuantileDMatrix the prior's trees would see each
    bin's lower bound once a feature has more values than bins)."""
    import xgboost as xgb
    rng = np.random.default_rng(0)
    X = rng.random((2000, 2))
    y = (1 + np.sin(6 * X[:, 0]) * X[:, 1]) / 2
    prior = GBCostRanker(backend="xgboost", objective="regression", n_estimators=30).fit(
        X[:1000], y[:1000])
    X2, y2 = X[1000:], y[1000:]
    model = GBCostRanker(backend="xgboost", objective="regression", n_estimators=5).fit(
        X2, y2, init_model=prior.booster_)
    order = np.argsort(-y2, kind="stable")  # fit's canonical row order (one group)
    reference = xgb.train(model.xgboost_params("regression", len(y2)),
                          xgb.DMatrix(X2[order], label=y2[order]), 5, xgb_model=prior.booster_)
    assert np.allclose(model.predict(X2), reference.predict(xgb.DMatrix(X2)), atol=1e-6)


def test_rows_need_not_be_sorted_by_group(ansor_cpu):
    r = ansor_cpu.records
    perm = np.random.default_rng(1).permutation(len(r))
    in_order = GBCostRanker(n_estimators=15).fit(ansor_cpu.X, r["label"], groups=r["group"])
    shuffled = GBCostRanker(n_estimators=15).fit(ansor_cpu.X[perm], r["label"].to_numpy()[perm],
                                                 groups=r["group"].to_numpy()[perm])
    assert np.allclose(in_order.predict(ansor_cpu.X), shuffled.predict(ansor_cpu.X))


@pytest.mark.parametrize("bad, message", [
    (dict(X=np.array([[np.inf, 1.0]] * 4)), "infinity"),
    (dict(groups=np.array([0, 0, 1])), "groups has 3 entries"),
    (dict(y=np.array([0.5, np.nan, 1, 1])), "NaN"),
    (dict(sample_weight=np.array([1.0, -1, 1, 1])), "non-negative"),
])
def test_bad_input_is_a_clear_error(bad, message):
    args = dict(X=np.ones((4, 2)), y=np.array([0.2, 1.0, 0.5, 1.0]),
                groups=np.array([0, 0, 1, 1]))
    args.update(bad)
    with pytest.raises(ValueError, match=message):
        GBCostRanker(n_estimators=2).fit(args["X"], args["y"], groups=args["groups"],
                                         sample_weight=args.get("sample_weight"))


def test_unknown_objective_names_the_backends_objectives():
    with pytest.raises(ValueError, match="lambdarank"):
        GBCostRanker(objective="rank:pairwise").fit(np.ones((4, 2)), np.ones(4))


@pytest.mark.parametrize("backend", ["lightgbm", "xgboost"])
def test_saved_model_round_trip_without_pickle(ansor_cpu, tmp_path, backend):
    from gbxfer.model import SavedModel

    r = ansor_cpu.records
    ranker = GBCostRanker(backend=backend, n_estimators=20).fit(ansor_cpu.X, r["label"],
                                                               groups=r["group"])
    saved = SavedModel(ranker, ansor_cpu.columns, ["llvm-generic"], {"kind": "by-task"},
                       list(r["record_id"][:10]))
    saved.save(tmp_path / "m")
    assert not list((tmp_path / "m").glob("*.pkl")) and not list((tmp_path / "m").glob("*.joblib"))
    again = SavedModel.load(tmp_path / "m")
    assert again.train_record_ids == list(r["record_id"][:10])
    assert np.allclose(again.predict(ansor_cpu.X[:30], ansor_cpu.columns),
                       ranker.predict(ansor_cpu.X[:30]))


def test_loading_against_another_feature_schema_names_the_difference(ansor_cpu):
    from gbxfer import GbxferError
    from gbxfer.model import SavedModel

    r = ansor_cpu.records
    ranker = GBCostRanker(n_estimators=5).fit(ansor_cpu.X, r["label"], groups=r["group"])
    saved = SavedModel(ranker, ansor_cpu.columns)
    with pytest.raises(GbxferError, match="missing \\['program.count_split'"):
        saved.predict(ansor_cpu.X[:, 1:], ansor_cpu.columns[1:])


@pytest.mark.parametrize("backend", ["lightgbm", "xgboost"])
def test_feature_importances_are_each_features_total_gain(ansor_cpu, backend):
    r = ansor_cpu.records
    model = GBCostRanker(backend=backend, n_estimators=20).fit(ansor_cpu.X, r["label"],
                                                              groups=r["group"])
    gain = model.feature_importances_
    assert gain.shape == (ansor_cpu.X.shape[1],) and (gain >= 0).all() and gain.sum() > 0
    used = np.flatnonzero(gain)
    assert np.all(np.nanstd(ansor_cpu.X[:, used], axis=0) > 0)  # a constant never splits


def test_is_a_ranker_not_a_regressor_and_scores_pairwise_accuracy(ansor_cpu):
    from sklearn.base import is_regressor

    r = ansor_cpu.records
    model = GBCostRanker(n_estimators=20).fit(ansor_cpu.X, r["label"], groups=r["group"])
    assert not is_regressor(model)
    latency, scores = r["latency"].to_numpy(), model.predict(ansor_cpu.X)
    assert model.score(ansor_cpu.X, r["label"], groups=r["group"]) == pytest.approx(
        pairwise_accuracy(latency, scores, r["group"].to_numpy()))


def test_group_ranks_are_expected_percentiles_of_each_groups_order():
    from gbxfer.model._ranker import group_ranks

    y = np.array([0.2, 1.0, 0.5, 0.3, 1.0, 0.3, 0.7, 0.4, 0.4])
    codes = np.array([7, 7, 7, 3, 3, 3, 5, 9, 9])
    expected = np.array([1, 3, 2, 1.5, 3, 1.5, 1, 1.5, 1.5]) / np.array([4, 4, 4, 4, 4, 4, 2, 3, 3])
    assert np.allclose(group_ranks(y, codes), expected)
    perm = np.random.default_rng(0).permutation(len(y))  # interleaved groups, any row order
    assert np.allclose(group_ranks(y[perm], codes[perm]), expected[perm])


@pytest.mark.parametrize("backend", ["lightgbm", "xgboost"])
def test_rank_label_learns_the_order_within_groups_not_the_values(ansor_cpu, backend):
    r = ansor_cpu.records
    y = r["label"].to_numpy()
    groups = r["group"].to_numpy()
    codes = np.unique(groups, return_inverse=True)[1]
    squashed = y ** 4 * (1 + codes % 3)  # same order within every group, other values
    args = dict(backend=backend, objective="regression", label="rank", n_estimators=20)
    a = GBCostRanker(**args).fit(ansor_cpu.X, y, groups=groups)
    b = GBCostRanker(**args).fit(ansor_cpu.X, squashed, groups=groups)
    assert np.allclose(a.predict(ansor_cpu.X), b.predict(ansor_cpu.X))
    plain = GBCostRanker(**{**args, "label": "throughput"}).fit(ansor_cpu.X, y, groups=groups)
    assert not np.allclose(a.predict(ansor_cpu.X), plain.predict(ansor_cpu.X))
    from gbxfer.model._ranker import group_ranks  # the rank label is the ranks, row for row

    perm = np.random.default_rng(2).permutation(len(y))
    on_ranks = GBCostRanker(**{**args, "label": "throughput"}).fit(
        ansor_cpu.X[perm], group_ranks(y, codes)[perm], groups=groups[perm])
    assert np.allclose(a.predict(ansor_cpu.X), on_ranks.predict(ansor_cpu.X))


def test_mixed_label_is_the_mean_of_the_rank_and_the_throughput():
    from gbxfer.model._ranker import group_ranks, training_labels

    y = np.array([0.2, 1.0, 0.5, 1.0, 0.9])
    codes = np.array([0, 0, 0, 1, 1])
    mixed = training_labels(y, codes, "rank+throughput")
    assert np.allclose(mixed, (group_ranks(y, codes) + y) / 2)
    assert np.array_equal(np.argsort(mixed[:3]), np.argsort(y[:3]))  # the order within a group
    grades = training_labels(y, codes, "rank+throughput", levels=31)
    assert grades.dtype.kind == "i" and grades.max() < 31


def test_extra_trees_draws_lightgbm_thresholds_and_xgboost_refuses_it(ansor_cpu):
    X, y, groups = ansor_cpu.X, ansor_cpu.records["label"], ansor_cpu.records["group"]
    plain = GBCostRanker(n_estimators=20, objective="regression").fit(X, y, groups=groups)
    extra = GBCostRanker(n_estimators=20, objective="regression", extra_trees=True)
    extra.fit(X, y, groups=groups)
    assert extra.booster_.params["extra_trees"] is True
    assert not np.allclose(plain.predict(X), extra.predict(X))
    assert pairwise_accuracy(ansor_cpu.records["latency"], extra.predict(X), groups) > 0.6
    with pytest.raises(ValueError, match="extra_trees is a LightGBM parameter"):
        GBCostRanker(backend="xgboost", extra_trees=True, n_estimators=2).fit(X, y)


@pytest.mark.parametrize("backend", ["lightgbm", "xgboost"])
def test_min_child_samples_as_a_fraction_of_the_training_rows(ansor_cpu, backend):
    X, y, groups = ansor_cpu.X, ansor_cpu.records["label"], ansor_cpu.records["group"]
    assert GBCostRanker(min_child_samples=0.001).min_child_count(10_500) == 11  # rounded up
    assert GBCostRanker(min_child_samples=0.001).min_child_count(10) == 1
    assert GBCostRanker(min_child_samples=7).min_child_count(10_500) == 7
    n = len(y)
    fraction = GBCostRanker(backend=backend, objective="regression", n_estimators=20,
                            min_child_samples=0.05).fit(X, y, groups=groups)
    count = GBCostRanker(backend=backend, objective="regression", n_estimators=20,
                         min_child_samples=int(np.ceil(0.05 * n))).fit(X, y, groups=groups)
    assert np.array_equal(fraction.predict(X), count.predict(X))
    if backend == "xgboost":  # its min_child_weight (1e-3 a program) binds ranking hessians only
        return
    coarse = GBCostRanker(backend=backend, objective="regression", n_estimators=20,
                          min_child_samples=0.5).fit(X, y, groups=groups)
    assert not np.array_equal(fraction.predict(X), coarse.predict(X))


def test_saved_params_name_extra_trees_only_when_set():
    from gbxfer.model._saved import saved_params

    assert "extra_trees" not in saved_params(GBCostRanker())  # an older gbxfer loads it
    assert saved_params(GBCostRanker(extra_trees=True))["extra_trees"] is True
    assert GBCostRanker(**saved_params(GBCostRanker())).get_params() == GBCostRanker().get_params()


def test_unknown_label_names_the_labels():
    with pytest.raises(ValueError, match="throughput, rank"):
        GBCostRanker(label="latency", n_estimators=2).fit(np.ones((4, 2)), np.ones(4))


@pytest.mark.parametrize("backend, objective", [("lightgbm", "regression"),
                                                ("xgboost", "regression"),
                                                ("lightgbm", "lambdarank")])
def test_a_group_of_one_is_left_out(ansor_cpu, backend, objective):
    r = ansor_cpu.records
    y, groups = r["label"].to_numpy(), r["group"].to_numpy()
    args = dict(backend=backend, objective=objective, label="rank", n_estimators=20)
    plain = GBCostRanker(**args).fit(ansor_cpu.X, y, groups=groups)
    # a few programs alone in their groups, each the "best" of its group: no ranking
    # information, and under regression a label that would teach that they are fast
    rows = np.arange(0, len(y), max(1, len(y) // 7))[:7]
    X = np.vstack([ansor_cpu.X, ansor_cpu.X[rows]])
    with_single = GBCostRanker(**args).fit(
        X, np.concatenate([y, np.ones(len(rows))]),
        groups=np.concatenate([groups, [f"alone-{i}" for i in range(len(rows))]]))
    assert np.allclose(plain.predict(ansor_cpu.X), with_single.predict(ansor_cpu.X))
    with pytest.raises(ValueError, match="every group holds one sample"):
        GBCostRanker(**args).fit(ansor_cpu.X[:5], y[:5], groups=np.arange(5))
    # weight only on the programs left out: nothing to learn from
    with pytest.raises(ValueError, match="all zero"):
        GBCostRanker(**args).fit(ansor_cpu.X[:5], y[:5], groups=[0, 0, 1, 1, 2],
                                 sample_weight=[0, 0, 0, 0, 1])
