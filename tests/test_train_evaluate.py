"""gbxfer train / evaluate / predict / explain on real data; evaluation never sees training data."""
from __future__ import annotations

import json

import pytest

from gbxfer import GbxferError, SplitSpec, ingest
from gbxfer.cli import main
from gbxfer.model import SavedModel, load_models
from gbxfer.training import evaluate, evaluation_part, train

CONFIG = {"blocks": ["program", "workload", "hardware"], "params": {"n_estimators": 30}}


@pytest.fixture(scope="module")
def gpus(ansor_dir, tmp_path_factory):
    ds = ingest([ansor_dir / "gpu_a100", ansor_dir / "gpu_rtx3080"])
    path = tmp_path_factory.mktemp("gpus") / "ds"
    ds.save(path)
    return ds, path


def test_evaluation_leaves_out_training_records_and_keeps_the_test_part(gpus):
    ds, _ = gpus
    model = train(ds, CONFIG, SplitSpec("within-task", 0.3, seed=2))
    part, _ = evaluation_part(model, ds)
    assert not set(part.records["record_id"]) & set(model.train_record_ids)
    assert set(part.records["program_id"]) <= set(
        ds.records["program_id"][SplitSpec("within-task", 0.3, seed=2).test_mask(ds)])


@pytest.mark.parametrize("split", ["within-task", "by-task", "by-hardware:cuda-sm_86"])
def test_features_built_once_give_the_same_model_and_report(gpus, split):
    """train and evaluate on rows of a feature matrix built once (as a study does) equal
    building features for each part: only the labels depend on the part."""
    from gbxfer.features import build

    ds, _ = gpus
    spec = SplitSpec.parse(split, 0.3, seed=1)
    features = build(ds, ["hardware", "program", "workload"])  # other block order, too
    a = train(ds, CONFIG, spec, seed=1)
    b = train(ds, CONFIG, spec, seed=1, features=features)
    assert a.columns == b.columns and a.train_record_ids == b.train_record_ids

    def same(x, y):  # NaN (a group of one) equals NaN here
        return json.dumps(x, sort_keys=True) == json.dumps(y, sort_keys=True)

    assert same(evaluate(a, ds), evaluate(b, ds, features=features))
    for hw in ds.hardware if spec.kind != "by-hardware" else []:  # one profile: no family
        assert same(evaluate(a, ds, hw), evaluate(b, ds, hw, features=features))


def test_a_split_is_applied_to_the_profile_trained_on(gpus):
    """train(target=P) splits P's valid records: holding out a family P lacks is an error,
    not a silent training on all of P."""
    ds, _ = gpus
    with pytest.raises(GbxferError, match="no records of hardware family 'cuda-sm_86'"):
        train(ds, CONFIG, SplitSpec.parse("by-hardware:cuda-sm_86"), target="cuda-sm_80")


def test_a_feature_matrix_of_other_records_is_refused(gpus):
    from gbxfer.features import build

    ds, _ = gpus
    with pytest.raises(GbxferError, match="not the one of this dataset"):
        train(ds, CONFIG, features=build(ds.filter(hardware="cuda-sm_80")))


def test_model_without_split_is_scored_only_on_unseen_records(gpus):
    ds, _ = gpus
    a100 = ds.filter(hardware="cuda-sm_80")
    model = train(a100, CONFIG)
    with pytest.raises(GbxferError, match="nothing left to evaluate"):
        evaluate(model, a100)
    report = evaluate(model, ds)  # the RTX 3080 records are unseen
    assert set(report["by_hardware"]) == {"cuda-sm_86"}


def test_by_hardware_reports_paired_and_unpaired_programs(gpus):
    ds, _ = gpus
    model = train(ds, CONFIG, SplitSpec.parse("by-hardware:cuda-sm_86"))
    assert model.hardware == ["cuda-sm_80"]
    report = evaluate(model, ds)
    assert report["paired"]["n_records"] > 0 and report["unpaired"]["n_records"] > 0
    assert report["paired"]["n_records"] + report["unpaired"]["n_records"] <= \
        report["n_records"] + report["paired"]["n_groups"] + report["unpaired"]["n_groups"]


def test_cli_train_evaluate_predict_explain(gpus, tmp_path, capsys):
    _, path = gpus
    model = tmp_path / "model"
    assert main(["train", str(path), "--out", str(model), "--holdout", "by-task",
                 "--test-fraction", "0.5", "--seed", "3", "-q"]) == 0
    assert main(["evaluate", str(model), str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    for key in ("pca", "top1", "top5", "apeak5", "random_top1", "random_top5", "n_tasks",
                "n_records"):
        assert key in report
    saved = SavedModel.load(model)
    test_tasks = set(ds_tasks for ds_tasks in report["by_task"])
    assert saved.split["kind"] == "by-task" and test_tasks
    assert main(["predict", str(model), str(path), "--out", str(tmp_path / "s.csv")]) == 0
    lines = (tmp_path / "s.csv").read_text().splitlines()
    assert lines[0] == "program_id,hardware,score" and len(lines) > 100
    assert main(["explain", str(model), "--top", "5"]) == 0
    assert "program" in capsys.readouterr().out
    assert (model / "importance.png").stat().st_size > 1000


def test_per_target_models(gpus, tmp_path, capsys):
    _, path = gpus
    model = tmp_path / "per"
    assert main(["train", str(path), "--out", str(model), "--per-target", "--holdout",
                 "within-task", "--test-fraction", "0.3", "-q"]) == 0
    assert set(load_models(model)) == {"cuda-sm_80", "cuda-sm_86"}
    assert main(["evaluate", str(model), str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["by_hardware"]) == {"cuda-sm_80", "cuda-sm_86"}
    assert 0.5 < report["pca"] <= 1 and report["top1"] > report["random_top1"]


def test_one_program_per_group_is_nothing_to_rank(gpus):
    ds, _ = gpus
    first = ~ds.records.duplicated(["task_key", "hardware"]).to_numpy()
    with pytest.raises(GbxferError, match="nothing to rank"):
        train(ds.select(first), CONFIG)


def test_programs_alone_on_their_task_are_not_counted_as_trained_on(gpus):
    ds, _ = gpus
    r = ds.records
    lone = (r["hardware"] == "cuda-sm_86").to_numpy() & ~r.duplicated(
        ["task_key", "hardware"]).to_numpy()  # one program per task on the RTX 3080
    model = train(ds.select((r["hardware"] == "cuda-sm_80").to_numpy() | lone), CONFIG)
    assert model.hardware == ["cuda-sm_80"]
    assert not set(r["record_id"][lone]) & set(model.train_record_ids)


def test_unknown_target_lists_the_hardware(gpus):
    ds, _ = gpus
    with pytest.raises(GbxferError, match="cuda-sm_80"):
        train(ds, CONFIG, target="tpu-v9")


def test_by_machine_model_reports_paired_programs_and_trains_with_dropout(gpus):
    import numpy as np

    from gbxfer import Dataset
    ds, _ = gpus
    named = Dataset(ds.records.assign(machine=np.where(
        ds.records["hardware"] == "cuda-sm_80", "NVIDIA A100", "NVIDIA RTX 3080")), ds.tasks)
    spec = SplitSpec.parse("by-machine:NVIDIA RTX 3080")
    plain = train(named, CONFIG, spec)
    report = evaluate(plain, named)
    assert set(report["by_hardware"]) == {"cuda-sm_86"}
    assert report["paired"]["n_records"] + report["unpaired"]["n_records"] == report["n_records"]
    # one training machine: its measured fields never vary, dropout gives them NaN to learn on
    dropped = train(named, {**CONFIG, "descriptor_dropout": 0.5}, spec)
    assert plain.train_record_ids == dropped.train_record_ids
    assert evaluate(dropped, named)["n_records"] == report["n_records"]
