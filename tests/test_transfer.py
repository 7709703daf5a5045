"""Few-shot transfer: shots come from the training part only; evaluation skips them."""
from __future__ import annotations

import json

import numpy as np
import pytest

from gbxfer import SplitSpec, ingest
from gbxfer.cli import main
from gbxfer.model import SavedModel
from gbxfer.training import evaluate, train
from gbxfer.transfer import (TransferConfig, draw_shots, expected_best_share,
                             hardware_similarity, shot_scale, transfer)

CONFIG = {"blocks": ["program", "workload", "hardware"], "params": {"n_estimators": 30}}


@pytest.fixture(scope="module")
def gpus(ansor_dir):
    return ingest([ansor_dir / "gpu_a100", ansor_dir / "gpu_rtx3080"])


def test_k_shots_per_group_from_the_training_part_only(gpus):
    target = gpus.filter(hardware="cuda-sm_86")
    holdout = SplitSpec("within-task", 0.5, 1)
    shots = draw_shots(target, 4, seed=3, holdout=holdout)
    chosen = target.records.iloc[shots]
    train_part = target.records[~holdout.test_mask(target) & target.records["valid"]]
    available = train_part.groupby("task_key").size()
    assert (chosen.groupby("task_key").size() == available.clip(upper=4)).all()
    assert not holdout.test_mask(target)[shots].any()
    assert np.array_equal(shots, draw_shots(target, 4, seed=3, holdout=holdout))


def test_fraction_of_shots(gpus):
    target = gpus.filter(hardware="cuda-sm_86")
    shots = draw_shots(target, 0.1, seed=0)
    assert len(shots) == int(np.ceil(0.1 * target.records["valid"].sum()))


def test_similarity_is_one_for_identical_hardware():
    h = np.array([[1.0, 2.0], [5.0, 2.0]])
    s = hardware_similarity(h, np.array([1.0, 2.0]), 1.0)
    assert s[0] == pytest.approx(1.0) and s[1] < 1


def test_transferred_model_is_evaluated_without_its_shots(gpus):
    source = train(gpus, CONFIG, SplitSpec.parse("by-hardware:cuda-sm_86"))
    target = gpus.filter(hardware="cuda-sm_86")
    holdout = SplitSpec("within-task", 0.5, 0)
    shots = draw_shots(target, 8, 0, holdout)
    adapted = transfer(source, gpus, target, shots, TransferConfig(extra_rounds=10), 0, holdout)
    shot_ids = set(target.records["record_id"].iloc[shots])
    assert shot_ids <= set(adapted.train_record_ids)
    report = evaluate(adapted, gpus)
    assert report["n_records"] <= (holdout.test_mask(target) & target.records["valid"]).sum()
    assert 0 <= report["top1"] <= 1


def test_unknown_transfer_setting_is_an_error():
    from gbxfer import GbxferError
    with pytest.raises(GbxferError, match="target_weight"):
        TransferConfig.from_dict({"target_wieght": 3})
    with pytest.raises(GbxferError, match="continue, retrain"):
        TransferConfig.from_dict({"mode": "restart"})


def test_expected_best_share_matches_drawing():
    rng = np.random.default_rng(0)
    latencies = rng.lognormal(size=30)
    assert expected_best_share(latencies, 1) == pytest.approx(np.mean(latencies.min()
                                                                      / latencies))
    for k in (2, 5):
        drawn = [latencies.min() / rng.choice(latencies, k, replace=False).min()
                 for _ in range(40_000)]
        assert expected_best_share(latencies, k) == pytest.approx(np.mean(drawn), rel=0.02)
    assert expected_best_share(latencies, 2) < expected_best_share(latencies, 5) < 1
    assert expected_best_share(latencies, 30) == 1.0


def test_shot_labels_are_rescaled_and_retrain_mode_fits_anew(gpus):
    source = train(gpus, CONFIG, SplitSpec.parse("by-hardware:cuda-sm_86"))
    target = gpus.filter(hardware="cuda-sm_86")
    shots = draw_shots(target, 4, 0)
    assert 0 < shot_scale(gpus.filter(hardware="cuda-sm_80"), 4) < 1
    for mode in ("continue", "retrain"):
        adapted = transfer(source, gpus, target, shots, TransferConfig(mode=mode, guard=False),
                           0)
        trees = adapted.ranker.booster_.num_trees()  # LightGBM, one tree per round
        assert trees == (30 + TransferConfig.extra_rounds if mode == "continue" else 30)


def test_a_retraining_keeps_the_source_models_random_state(gpus):
    """Pooled retraining samples rows and columns as the source model did, whatever the
    transfer's seed (it then differs from the source by the shots, not by another fit);
    continued boosting samples its added trees with the seed."""
    config = {**CONFIG, "params": {"n_estimators": 30, "subsample": 0.7,
                                   "colsample_bytree": 0.7}}
    source = train(gpus, config, SplitSpec.parse("by-hardware:cuda-sm_86"), seed=5)
    target = gpus.filter(hardware="cuda-sm_86")
    shots = draw_shots(target, 4, 0)
    for mode, same in (("retrain", True), ("continue", False)):
        a, b = (transfer(source, gpus, target, shots, TransferConfig(mode=mode, guard=False), s)
                for s in (1, 2))
        assert (a.ranker.random_state == 5) is same
        dumps = [m.ranker.booster_.model_to_string() for m in (a, b)]
        assert (dumps[0] == dumps[1]) is same


def test_cli_transfer(gpus, tmp_path, capsys):
    gpus.save(tmp_path / "ds")
    assert main(["train", str(tmp_path / "ds"), "--holdout", "by-hardware:cuda-sm_86",
                 "--out", str(tmp_path / "src"), "-q"]) == 0
    assert main(["transfer", str(tmp_path / "src"), "--target-data", str(tmp_path / "ds"),
                 "--shots", "4", "--holdout", "within-task", "--out", str(tmp_path / "t"),
                 "-q"]) == 0
    assert main(["evaluate", str(tmp_path / "t"), str(tmp_path / "ds"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["by_hardware"]) <= {"cuda-sm_86", "cuda-sm_80"}
    assert report["split"]["kind"] == "within-task"
    # --other-tasks: the guard holds out whole tasks even with 4 shots a group
    assert main(["transfer", str(tmp_path / "src"), "--target-data", str(tmp_path / "ds"),
                 "--shots", "4", "--other-tasks", "--out", str(tmp_path / "o"), "-q"]) == 0
    meta = SavedModel.load(tmp_path / "o").extra["transfer"]
    assert meta["other_tasks"] and meta["guard_check"]["folds"] == "by task"


def test_cli_transfer_tuned_by_a_study_inside_the_shots(gpus, tmp_path, monkeypatch):
    import gbxfer.study as study_module

    seen = []
    original = study_module.study_transfer

    def spy(model, source, target, shots, *args, **kwargs):
        seen.append(set(target.records["record_id"].iloc[shots]))
        return original(model, source, target, shots, *args, **kwargs)

    monkeypatch.setattr(study_module, "study_transfer", spy)
    gpus.save(tmp_path / "ds")
    assert main(["train", str(tmp_path / "ds"), "--holdout", "by-hardware:cuda-sm_86",
                 "--out", str(tmp_path / "src"), "-q"]) == 0
    assert main(["transfer", str(tmp_path / "src"), "--target-data", str(tmp_path / "ds"),
                 "--shots", "4", "--holdout", "within-task", "--tune", "2", "--other-tasks",
                 "--out", str(tmp_path / "t"), "-q"]) == 0
    model = SavedModel.load(tmp_path / "t")
    shots = set(model.extra["transfer"]["shot_record_ids"])
    assert seen == [shots]  # the study saw exactly the shots
    assert set(model.extra["transfer"]) >= {"target_weight", "temperature", "extra_rounds"}
    assert model.extra["transfer"]["other_tasks"]  # the study's choice keeps --other-tasks


def test_cli_transfer_with_one_shot_per_task_keeps_the_source_model(gpus, tmp_path, capsys):
    gpus.save(tmp_path / "ds")
    assert main(["train", str(tmp_path / "ds"), "--holdout", "by-hardware:cuda-sm_86",
                 "--out", str(tmp_path / "src"), "-q"]) == 0
    capsys.readouterr()
    assert main(["transfer", str(tmp_path / "src"), "--target-data", str(tmp_path / "ds"),
                 "--shots", "1", "--tune", "2", "--out", str(tmp_path / "t")]) == 0
    said = capsys.readouterr().err
    assert "--tune skipped" in said and "kept the source model" in said
    assert SavedModel.load(tmp_path / "t").extra["transfer"]["kept_source"]


def test_zero_extra_rounds_keeps_the_source_model_and_records_the_shots(gpus):
    source = train(gpus, CONFIG, SplitSpec.parse("by-hardware:cuda-sm_86"))
    target = gpus.filter(hardware="cuda-sm_86")
    shots = draw_shots(target, 4, 0)
    kept = transfer(source, gpus, target, shots, TransferConfig(extra_rounds=0), 0)
    X = np.random.default_rng(0).normal(size=(20, len(source.columns)))
    assert np.array_equal(kept.predict(X, source.columns), source.predict(X, source.columns))
    assert set(target.records["record_id"].iloc[shots]) <= set(kept.train_record_ids)


@pytest.mark.parametrize("config", [TransferConfig(guard=False),
                                    TransferConfig(guard=False, source_fraction=0.0),
                                    TransferConfig()])
def test_shots_alone_on_their_tasks_keep_the_source_model(gpus, config):
    source = train(gpus, CONFIG, SplitSpec.parse("by-hardware:cuda-sm_86"))
    target = gpus.filter(hardware="cuda-sm_86")
    shots = draw_shots(target, 1, 0)  # one program per task: nothing to rank
    kept = transfer(source, gpus, target, shots, config, 0)
    X = np.random.default_rng(0).normal(size=(20, len(source.columns)))
    assert np.array_equal(kept.predict(X, source.columns), source.predict(X, source.columns))
    assert kept.extra["transfer"]["kept_source"]
    assert set(target.records["record_id"].iloc[shots]) <= set(kept.train_record_ids)


def _study_with(source_only, default, best):
    """An in-memory study whose trials carry per-group scores, as study_transfer leaves them."""
    import optuna

    from gbxfer.study import chosen_transfer

    study = optuna.create_study(direction="maximize")
    study.set_user_attr("source_only", dict(enumerate(source_only)))
    weight = optuna.distributions.FloatDistribution(1.0, 100.0, log=True)
    for value, scores in ((5.0, default), (40.0, best)):
        study.add_trial(optuna.trial.create_trial(
            params={"target_weight": value}, distributions={"target_weight": weight},
            value=float(np.mean(scores)), user_attrs={"by_group": dict(enumerate(scores))}))
    return chosen_transfer(study)


def test_the_study_moves_away_from_simpler_configs_only_beyond_one_standard_error():
    noisy = [1, 0, 1, 0, 1, 0, 1, 0]
    # the best trial wins three groups and loses two: within the noise
    assert _study_with(noisy, noisy, [0, 1, 0, 1, 1, 0, 1, 1]).extra_rounds == 0
    # the default is as good as the best, no adaptation is clearly worse
    chosen = _study_with([0] * 8, [1] * 7 + [0], [1] * 8)
    assert (chosen.extra_rounds, chosen.target_weight) == (60, 5.0)
    # the best trial wins every group: it is taken
    assert _study_with([0] * 8, [0] * 8, [1] * 8).target_weight == 40.0


def _guarded(gpus, monkeypatch, source_scores, adapted_scores, pooled_scores=None,
             config=TransferConfig(), k=4, raising_mode=None, halves=False, folds=None):
    """A guarded transfer whose check inside the shots sees these per-group scores (pooled
    retraining: ``pooled_scores``, default as the configured adaptation's); candidates of
    mode ``raising_mode`` raise inside the check; ``halves``: every group held out in both
    folds with the same scores (as within tasks); ``folds``, a list, gets each check's
    ``within_task``."""
    import gbxfer.transfer._guard as guard_module
    from gbxfer.errors import GbxferError

    def fake(model, source, target, shots, config, *args):
        if folds is not None:
            folds.append(args[-1])
        if config.mode == raising_mode:
            raise GbxferError(f"cannot adapt in mode {raising_mode}")
        scores = (source_scores if not config.adapts else
                  pooled_scores if config.mode == "retrain" and pooled_scores else
                  adapted_scores)
        by_task = {f"t{i}|hw": {"pca": v, "top1": v} for i, v in enumerate(scores)}
        return [{"by_task": by_task}] * (2 if halves else 1), {g: v["pca"]
                                                              for g, v in by_task.items()}

    monkeypatch.setattr(guard_module, "cross_validate", fake)
    source = train(gpus, CONFIG, SplitSpec.parse("by-hardware:cuda-sm_86"))
    target = gpus.filter(hardware="cuda-sm_86")
    shots = draw_shots(target, k, 0)
    return source, transfer(source, gpus, target, shots, config, 0)


def test_the_guard_keeps_the_source_model_unless_the_shots_show_a_gain(gpus, monkeypatch):
    source, kept = _guarded(gpus, monkeypatch, [0.7, 0.6, 0.8], [0.71, 0.58, 0.81])
    X = np.random.default_rng(0).normal(size=(20, len(source.columns)))
    assert np.array_equal(kept.predict(X, source.columns), source.predict(X, source.columns))
    assert kept.extra["transfer"]["guard_check"]["adapted"] is False
    source, adapted = _guarded(gpus, monkeypatch, [0.7, 0.6, 0.8], [0.8, 0.7, 0.88])
    assert not np.array_equal(adapted.predict(X, source.columns),
                              source.predict(X, source.columns))
    guard = adapted.extra["transfer"]["guard_check"]
    assert guard["adapted"] is True and guard["gain"] == pytest.approx(0.0933, abs=1e-3)


def test_the_guard_takes_pooled_retraining_when_it_gains_more_inside_the_shots(gpus,
                                                                             monkeypatch):
    _, adapted = _guarded(gpus, monkeypatch, [0.7, 0.6, 0.8], [0.8, 0.7, 0.88],
                          [0.9, 0.8, 0.95])
    guard = adapted.extra["transfer"]["guard_check"]
    assert guard["choice"] == "pooled" and adapted.extra["transfer"]["mode"] == "retrain"
    assert guard["candidates"]["config"]["adapted"] and guard["gain"] == pytest.approx(0.1833,
                                                                                       abs=1e-3)
    # a pooled gain within the noise does not outvote a configured transfer that passes
    _, adapted = _guarded(gpus, monkeypatch, [0.7, 0.6, 0.8], [0.8, 0.7, 0.88],
                          [0.9, 0.5, 0.85])
    assert adapted.extra["transfer"]["guard_check"]["choice"] == "config"
    assert adapted.extra["transfer"]["mode"] == "continue"
    # with try_pooled off, the guard weighs the configured transfer alone
    _, adapted = _guarded(gpus, monkeypatch, [0.7, 0.6, 0.8], [0.8, 0.7, 0.88],
                          [0.9, 0.8, 0.95], TransferConfig(try_pooled=False))
    assert list(adapted.extra["transfer"]["guard_check"]["candidates"]) == ["config"]
    assert adapted.extra["transfer"]["mode"] == "continue"


def test_a_group_held_out_in_both_halves_is_one_sample(gpus, monkeypatch):
    """Gains +0.10, -0.04, +0.04: above one standard error only if each group's two halves
    counted as two samples."""
    scores = [0.7, 0.6, 0.8], [0.8, 0.56, 0.84], [0.7, 0.6, 0.8]
    _, kept = _guarded(gpus, monkeypatch, *scores, halves=True)
    guard = kept.extra["transfer"]["guard_check"]
    assert guard["choice"] == "source" and guard["candidates"]["config"]["adapted"] is False
    assert guard["groups"] == 3
    assert guard["gain"] == pytest.approx(0.0333, abs=1e-3)
    assert guard["se"] == pytest.approx(0.0406, abs=1e-3)


def test_from_eight_shots_a_group_the_guard_keeps_pooled_retraining_unless_it_loses(
        gpus, monkeypatch):
    no_gain = [0.7, 0.6, 0.8], [0.7, 0.6, 0.8]
    _, adapted = _guarded(gpus, monkeypatch, *no_gain, [0.69, 0.62, 0.79], k=8)
    guard = adapted.extra["transfer"]["guard_check"]
    assert (guard["choice"], guard["pooled_from"]) == ("pooled", 8)
    assert guard["adapted"] and not guard["candidates"]["pooled"]["adapted"]
    assert adapted.extra["transfer"]["mode"] == "retrain"
    assert list(guard["candidates"]) == ["pooled"]  # the configured transfer never retrained
    # worse by more than a standard error, or fewer shots, or switched off: the source model,
    # every candidate checked
    for pooled, k, config in (([0.6, 0.5, 0.7], 8, TransferConfig()),
                              ([0.69, 0.62, 0.79], 4, TransferConfig()),
                              ([0.69, 0.62, 0.79], 8, TransferConfig(pooled_from=0)),
                              ([0.69, 0.62, 0.79], 8, TransferConfig(other_tasks=True))):
        _, kept = _guarded(gpus, monkeypatch, *no_gain, pooled, config, k)
        assert kept.extra["transfer"]["guard_check"]["choice"] == "source"
        assert list(kept.extra["transfer"]["guard_check"]["candidates"]) == ["config", "pooled"]


def test_a_model_for_other_tasks_is_checked_on_tasks_it_did_not_adapt_on(gpus, monkeypatch):
    """From 4 shots a group the check halves every group, unless the model will rank other
    tasks than the shots' (`gbxfer calibrate`): then its folds are whole tasks at any K."""
    for config, within in ((TransferConfig(), True), (TransferConfig(other_tasks=True), False)):
        for k in (2, 8):
            folds = []
            _guarded(gpus, monkeypatch, [0.7, 0.6, 0.8], [0.8, 0.7, 0.88], config=config, k=k,
                     folds=folds)
            assert folds and set(folds) == {within and k >= 4}


def test_a_candidate_that_cannot_adapt_fails_alone(gpus, monkeypatch):
    """A blend of a blend raises inside its check; pooled retraining is still weighed, with
    or without the pooled-first shortcut."""
    for k in (4, 8):
        _, model = _guarded(gpus, monkeypatch, [0.7, 0.6, 0.8], [0.71, 0.58, 0.81],
                            [0.9, 0.8, 0.95], TransferConfig(try_blend=True), k,
                            raising_mode="blend")
        guard = model.extra["transfer"]["guard_check"]
        assert guard["choice"] == "pooled"
        assert k == 8 or guard["candidates"]["blend"]["gain"] is None


@pytest.mark.parametrize("config", [TransferConfig(), TransferConfig(guard=False)])
def test_features_of_other_records_are_an_error_guarded_or_not(gpus, config):
    """Not a failed check inside the shots that quietly keeps the source model."""
    from gbxfer.errors import GbxferError
    from gbxfer.features import build

    source = train(gpus, CONFIG, SplitSpec.parse("by-hardware:cuda-sm_86"))
    target = gpus.filter(hardware="cuda-sm_86")
    other = build(gpus.filter(hardware="cuda-sm_80"), list(source.blocks))
    with pytest.raises(GbxferError, match="not the one of this dataset"):
        transfer(source, gpus, target, draw_shots(target, 4, 0), config, 0,
                 target_features=other)


def test_the_guard_keeps_the_source_model_when_the_shots_cannot_tell(gpus):
    source = train(gpus, CONFIG, SplitSpec.parse("by-hardware:cuda-sm_86"))
    target = gpus.filter(hardware="cuda-sm_86")
    one_task = target.filter(task=target.records["task_key"].iloc[0])
    shots = draw_shots(one_task, 2, 0)  # one group of two: no fold has anything to score
    kept = transfer(source, gpus, one_task, shots, TransferConfig(), 0)
    assert kept.extra["transfer"]["guard_check"]["adapted"] is False
    assert kept.ranker is source.ranker


def test_within_task_folds_halve_every_group_and_keep_a_program_in_one_fold():
    from gbxfer import load_dataset
    from gbxfer.transfer import shot_folds

    bundled = load_dataset("bundled")
    target = bundled.filter(family="x86-avx2")  # two thread variants: the same programs
    shots = draw_shots(target, 4, 0)
    folds = shot_folds(target, shots, within_task=True)
    records = target.records.iloc[shots].assign(fold=folds)
    per_group = records.groupby(["task_key", "hardware"])["fold"].agg(["sum", "size"])
    assert (per_group["sum"] * 2 == per_group["size"]).all()  # 2 + 2 of every 4
    assert (records.groupby("program_id")["fold"].nunique() == 1).all()
    by_task = shot_folds(target, shots)
    assert (records.assign(fold=by_task).groupby("task_key")["fold"].nunique() == 1).all()


def test_a_repeat_draws_another_split_of_the_same_kind():
    from gbxfer import load_dataset
    from gbxfer.transfer import shot_folds

    target = load_dataset("bundled").filter(family="x86-avx2")
    shots = draw_shots(target, 4, 0)
    records = target.records.iloc[shots]
    for within in (True, False):
        again = records.assign(fold=shot_folds(target, shots, within_task=within, repeat=1))
        assert (again["fold"] != shot_folds(target, shots, within)).any()
        assert abs(again["fold"].mean() - 0.5) < 0.05
        key = "program_id" if within else "task_key"
        assert (again.groupby(key)["fold"].nunique() == 1).all()


def test_a_blend_averages_the_source_with_pooled_retraining_and_survives_a_save(gpus,
                                                                                tmp_path):
    source = train(gpus, CONFIG, SplitSpec.parse("by-hardware:cuda-sm_86"))
    target = gpus.filter(hardware="cuda-sm_86")
    shots = draw_shots(target, 4, 0)
    blend = transfer(source, gpus, target, shots, TransferConfig(guard=False).blended(), 0)
    pooled = transfer(source, gpus, target, shots, TransferConfig(guard=False).pooled(), 0)
    X = np.random.default_rng(0).normal(size=(20, len(source.columns)))
    assert blend.ranker is source.ranker and blend.partner is not None
    assert np.allclose(blend.predict(X, source.columns), (source.predict(X, source.columns)
                                                          + pooled.predict(X, source.columns)) / 2)
    blend.save(tmp_path / "m")
    again = SavedModel.load(tmp_path / "m")
    assert np.allclose(again.predict(X, source.columns), blend.predict(X, source.columns))
    assert set(target.records["record_id"].iloc[shots]) <= set(again.train_record_ids)
    # a continued blend keeps its partner; a blend is not blended again
    more = transfer(blend, gpus, target, shots, TransferConfig(guard=False), 0)
    assert more.partner is blend.partner
    with pytest.raises(Exception, match="already a blend"):
        transfer(blend, gpus, target, shots, TransferConfig(guard=False).blended(), 0)


def test_the_guard_falls_back_to_the_blend_when_asked(gpus, monkeypatch):
    source, model = _guarded(gpus, monkeypatch, [0.7, 0.6, 0.8], [0.71, 0.58, 0.81],
                             config=TransferConfig(fallback="blend"))
    guard = model.extra["transfer"]["guard_check"]
    assert guard["adapted"] is False and guard["choice"] == "blend"
    assert model.ranker is source.ranker and model.partner is not None
    assert model.extra["transfer"]["mode"] == "blend"
    # shots that rank nothing still keep the source model
    target = gpus.filter(hardware="cuda-sm_86")
    kept = transfer(source, gpus, target, draw_shots(target, 1, 0),
                    TransferConfig(fallback="blend"), 0)
    assert kept.partner is None and kept.extra["transfer"]["kept_source"]
    with pytest.raises(Exception, match="fallback"):
        TransferConfig.from_dict({"fallback": "pooled"})


def test_the_guard_weighs_the_blend_when_asked(gpus, monkeypatch):
    _, model = _guarded(gpus, monkeypatch, [0.7, 0.6, 0.8], [0.71, 0.58, 0.81],
                        config=TransferConfig(try_blend=True))
    guard = model.extra["transfer"]["guard_check"]
    assert list(guard["candidates"]) == ["config", "pooled", "blend"]
