"""The numpy attention learns hardware -> weights; gating is saved with the model."""
from __future__ import annotations

import numpy as np
import pytest

from gbxfer import SplitSpec, ingest
from gbxfer.model import SavedModel
from gbxfer.model._attention import HardwareAttention, feature_groups
from gbxfer.training import evaluate, train


def test_attention_fits_target_distributions():
    rng = np.random.default_rng(0)
    H = rng.normal(size=(6, 4))
    T = np.eye(3)[[0, 1, 2, 0, 1, 2]] * 0.8 + 0.2 / 3
    att = HardwareAttention(steps=800).fit(H, T)
    assert (att.distribution(H).argmax(1) == T.argmax(1)).all()
    assert np.allclose(att.weights(H).sum(1), 3)


def test_attention_rejects_non_distributions():
    with pytest.raises(ValueError, match="distribution"):
        HardwareAttention().fit(np.ones((2, 3)), np.ones((2, 2)))


def test_unknown_descriptor_fields_sit_at_the_mean():
    H = np.array([[1.0, np.nan], [3.0, 5.0]])
    att = HardwareAttention(steps=50).fit(H, np.array([[0.5, 0.5], [0.9, 0.1]]))
    assert np.isfinite(att.distribution(np.array([[np.nan, np.nan]]))).all()


def test_feature_groups_split_blocks_into_families():
    groups = feature_groups(["program.count_split", "program.sp_axis0_level1_log2",
                             "workload.op_conv2d", "hardware.cores"])
    assert groups == ["program.count", "program.sp_axis", "workload.op", "hardware.cores"]


def test_gated_model_trains_saves_and_scores_unseen_hardware(ansor_dir, tmp_path):
    ds = ingest([ansor_dir / "gpu_a100", ansor_dir / "gpu_rtx3080", ansor_dir / "cpu_x86"])
    config = {"blocks": ["program", "workload", "hardware"], "params": {"n_estimators": 20},
              "attention": {"steps": 100, "probe_estimators": 10}}
    model = train(ds, config, SplitSpec.parse("by-hardware:cuda-sm_86"))
    assert model.gate is not None and model.gate.importance_.shape[0] == 2
    weights = model.gate.attention_.weights(model.gate.attention_.mean_[None, :])
    assert weights.shape[1] == len(model.gate.names_)
    model.save(tmp_path / "m")
    again = SavedModel.load(tmp_path / "m")
    assert again.gate.profiles_ == model.gate.profiles_ and len(model.gate.profiles_) == 2
    a, b = evaluate(model, ds), evaluate(again, ds)
    assert a["pca"] == b["pca"] and 0 <= a["pca"] <= 1


def test_gating_leaves_out_a_profile_whose_programs_are_alone_on_their_tasks():
    from gbxfer.model._attention import GroupGate

    rng = np.random.default_rng(0)
    columns = ["program.a", "program.b", "workload.c", "hardware.clock_ghz", "hardware.cores"]
    X = rng.normal(size=(90, len(columns)))
    X[:60, 3:], X[60:80, 3:], X[80:, 3:] = [1.0, 2.0], [3.0, 4.0], [5.0, 8.0]
    hardware = np.array(["p"] * 60 + ["q"] * 20 + ["alone"] * 10)
    groups = np.concatenate([np.repeat(np.arange(6), 10), np.repeat([6, 7], 10),
                             np.arange(8, 18)])  # "alone": ten groups of one program
    y = rng.random(90)
    gate = GroupGate(steps=20, probe_estimators=5).fit(X, y, groups, hardware, columns)
    assert gate.importance_.shape[0] == 2 and gate.profiles_ == ["p", "q"]
    with pytest.raises(ValueError, match="group of two"):
        GroupGate(steps=20, probe_estimators=5).fit(X[80:], y[80:], groups[80:],
                                                    hardware[80:], columns)
