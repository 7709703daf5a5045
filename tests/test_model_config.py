"""Model configs: YAML files validated into a ModelConfig, each bad field named."""
from __future__ import annotations

import pytest

from gbxfer import GbxferError, ModelConfig, load_model_config


def test_shipped_configs_load_as_model_configs():
    default = load_model_config()
    assert isinstance(default, ModelConfig)
    assert default.blocks == ("program", "workload", "hardware", "cross")
    assert (default.params["backend"], default.params["label"]) == ("lightgbm", "rank")
    assert load_model_config("xgboost").params["backend"] == "xgboost"
    assert load_model_config("lambdarank").params["objective"] == "lambdarank"
    large = load_model_config("large")  # the default grown: same features and label
    assert (large.blocks, large.params["label"]) == (default.blocks, "rank")
    assert large.params["n_estimators"] > default.params["n_estimators"]


def test_a_config_round_trips_through_its_dict():
    config = load_model_config("lambdarank").replace(attention={"steps": 10})
    assert ModelConfig.from_dict(config.to_dict()) == config.replace(source="")


@pytest.mark.parametrize("text, message", [
    ("blocks: [program]\nfoo: 1\n", "unknown field 'foo'"),
    ("blocks: [vibes]\n", "'blocks' must be a list drawn from"),
    ("blocks: program\n", "'blocks' must be a list drawn from"),
    ("params: {n_trees: 5}\n", "unknown parameter 'n_trees'"),
    ("params: {label: latency}\n", "'label' must be one of throughput, rank"),
    ("params: [1, 2]\n", "'params' must be a mapping"),
    ("blocks: [program]\nattention: {steps: 5}\n", "attention gating needs the 'hardware'"),
    ("- a list\n", "a model config is a mapping"),
    ("params: {min_child_samples: 0}\n", "min_child_samples must be a count >= 1 or a fraction"),
    ("params: {min_child_samples: 2.5}\n", "min_child_samples must be a count"),
    ("params: {min_child_samples: many}\n", "min_child_samples must be a count"),
    ("descriptor_dropout: 1.0\n", "'descriptor_dropout' must be a number in \\[0, 1\\)"),
    ("descriptor_dropout: yes\n", "'descriptor_dropout' must be a number"),
    ("blocks: [program\n", "not valid YAML"),
])
def test_each_bad_field_is_named_with_the_file(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(GbxferError, match=message) as error:
        load_model_config(path)
    assert str(path) in str(error.value)


def test_configs_are_immutable_and_replace_validates():
    config = ModelConfig()
    with pytest.raises(AttributeError):
        config.blocks = ("program",)
    with pytest.raises(GbxferError, match="unknown parameter"):
        config.replace(params={"bogus": 1})


def test_descriptor_dropout_hides_measured_fields_of_whole_groups():
    import numpy as np

    from gbxfer.features import block_columns
    from gbxfer.training import MEASURED_FIELDS, hide_measured_fields
    columns = block_columns("hardware")
    groups = np.repeat([f"t{i}|hw" for i in range(200)], 3)
    X = np.ones((len(groups), len(columns)), dtype=np.float32)
    hidden = hide_measured_fields(X, columns, groups, 0.3, seed=4)
    measured = [columns.index(f"hardware.{f}") for f in MEASURED_FIELDS]
    rows = np.isnan(hidden[:, measured]).all(axis=1)
    assert 0.2 < rows.mean() < 0.4 and X.sum() == X.size  # a copy; the input is untouched
    for g in np.unique(groups):  # a group is hidden whole or not at all
        assert len(set(rows[groups == g])) == 1
    others = np.delete(hidden, measured, axis=1)
    assert not np.isnan(others).any()  # vector width, FMA, cores stay: the target gives them
    assert np.array_equal(np.isnan(hidden), np.isnan(hide_measured_fields(X, columns, groups,
                                                                           0.3, seed=4)))


def test_descriptor_dropout_gives_hidden_groups_what_their_target_alone_says():
    import numpy as np

    from gbxfer import load_dataset
    from gbxfer.features import build, target_only_rows
    from gbxfer.training import MEASURED_FIELDS, hide_measured_fields

    part = load_dataset("bundled").filter(hardware="x86-avx2-1t")
    fm = build(part, ["hardware"])
    replacement = target_only_rows(part.records)
    hidden = hide_measured_fields(fm.X, fm.columns, fm.records["group"].to_numpy(), 0.5, 0,
                                  replacement)
    clock = fm.columns.index("hardware.clock_ghz")
    changed = hidden[:, clock] != fm.X[:, clock]
    assert 0.3 < changed.mean() < 0.7  # the probed clock, replaced in half of the groups
    assert np.allclose(hidden[changed, clock], 3.3)  # zen3's reference clock
    assert set(MEASURED_FIELDS) >= {"clock_ghz", "peak_gflops"}
