"""Optuna studies: resumable, several workers, best parameters exported as a usable config."""
from __future__ import annotations

import pytest
import yaml

from gbxfer import ingest
from gbxfer.cli import main


@pytest.fixture(scope="module")
def gpus_path(ansor_dir, tmp_path_factory):
    path = tmp_path_factory.mktemp("g") / "ds"
    ingest([ansor_dir / "gpu_a100", ansor_dir / "gpu_rtx3080"]).save(path)
    return path


def test_model_study_continues_and_exports(gpus_path, tmp_path):
    import optuna

    storage = f"sqlite:///{tmp_path / 's.db'}"
    common = ["study", "model", str(gpus_path), "--storage", storage, "--study-name", "m",
              "--holdout", "by-task", "--test-fraction", "0.3", "-q"]
    assert main([*common, "--trials", "1"]) == 0
    assert main([*common, "--trials", "2", "--export", str(tmp_path / "best.yaml")]) == 0
    study = optuna.load_study(study_name="m", storage=storage)
    assert len(study.trials) == 2  # the second run continued the first
    assert {"pca", "top1", "top5"} <= set(study.trials[0].user_attrs)
    config = yaml.safe_load((tmp_path / "best.yaml").read_text())
    assert set(config["params"]) >= {"num_leaves", "learning_rate"}
    assert main(["train", str(gpus_path), "--config", str(tmp_path / "best.yaml"), "--out",
                 str(tmp_path / "m"), "-q"]) == 0


def test_transfer_study_exports_a_transfer_section(gpus_path, tmp_path):
    assert main(["train", str(gpus_path), "--holdout", "by-hardware:cuda-sm_86", "--out",
                 str(tmp_path / "src"), "-q"]) == 0
    assert main(["study", "transfer", str(gpus_path), "--model", str(tmp_path / "src"),
                 "--shots", "6", "--holdout", "within-task", "--test-fraction", "0.5",
                 "--trials", "2", "--storage", f"sqlite:///{tmp_path / 't.db'}",
                 "--export", str(tmp_path / "t.yaml"), "-q"]) == 0
    config = yaml.safe_load((tmp_path / "t.yaml").read_text())
    assert set(config["transfer"]) >= {"target_weight", "temperature", "extra_rounds"}
    import optuna

    from gbxfer.transfer import TransferConfig
    first = optuna.load_study(study_name="gbxfer",
                              storage=f"sqlite:///{tmp_path / 't.db'}").trials[0].params
    assert first == {k: getattr(TransferConfig(), k) for k in first}  # the default goes first
    assert first["mode"] == "continue"
    assert main(["transfer", str(tmp_path / "src"), "--target-data", str(gpus_path),
                 "--shots", "6", "--holdout", "within-task", "--config", str(tmp_path / "t.yaml"),
                 "--out", str(tmp_path / "t"), "-q"]) == 0


def test_transfer_study_keeps_each_task_in_one_fold_across_profiles(gpus_path, monkeypatch):
    """Two target profiles measure the same tasks: a fold adapting on a task's shots on one
    profile must not score that task on the other."""
    import gbxfer.study as study_module
    import gbxfer.transfer._guard as guard_module
    from gbxfer import SplitSpec, load_dataset
    from gbxfer.training import train
    from gbxfer.transfer import draw_shots

    gpus = load_dataset(gpus_path)
    model = train(gpus, {"blocks": ["program", "workload", "hardware"],
                         "params": {"n_estimators": 10}}, SplitSpec.parse("by-hardware:cuda-sm_86"))
    shots = draw_shots(gpus, 4, 0)
    fit_tasks = []
    original = guard_module.adapt

    def spy(model, source, target, fit, *args, **kwargs):
        fit_tasks.append(frozenset(target.records["task_key"].iloc[fit]))
        return original(model, source, target, fit, *args, **kwargs)

    monkeypatch.setattr(guard_module, "adapt", spy)
    study_module.study_transfer(model, gpus, gpus, shots, 1, "folds", None)
    assert len(gpus.hardware) == 2 and len(fit_tasks) == 4  # no adaptation, then one trial
    assert not fit_tasks[0] & fit_tasks[1]  # the two folds adapt on disjoint tasks


def test_postgresql_urls_open_with_psycopg_3_and_the_dashboard_command_names_it(capsys):
    from gbxfer.cli import main
    from gbxfer.study import sqlalchemy_url
    assert sqlalchemy_url("postgresql://u@h:5432/db") == "postgresql+psycopg://u@h:5432/db"
    assert sqlalchemy_url("postgresql+psycopg2://u@h/db") == "postgresql+psycopg2://u@h/db"
    assert sqlalchemy_url("sqlite:///s.db") == "sqlite:///s.db"
    assert main(["study", "--dashboard", "--storage", "postgresql://u@h/db"]) == 0
    assert capsys.readouterr().out.startswith("optuna-dashboard postgresql+psycopg://u@h/db")
    assert main(["study", "--storage", "sqlite:///s.db"]) == 2
    assert "needs KIND (model or transfer) and DATASET" in capsys.readouterr().err
