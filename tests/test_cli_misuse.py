"""Options that would be ignored, files gbxfer owns, and a study or a transfer continued on
other terms: each a one-line error (or kept consistent), never a silent surprise."""
from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from conftest import PROFILE, parse_error, run_error

from gbxfer.cli import main
from gbxfer.cli._common import model_path
from gbxfer.errors import GbxferError
from gbxfer.model import PRETRAINED, ModelConfig, SavedModel, load_model_config
from gbxfer.transfer import TransferConfig


@pytest.mark.parametrize("argv", [
    ["train", "{small}", "--out", "{tmp}/m", "--test-fraction", "0.3"],
    ["transfer", "{model}", "--target-data", "{small}", "--shots", "2", "--test-fraction",
     "0.3", "--out", "{tmp}/t"],
    ["study", "model", "{small}", "--test-fraction", "0.3", "--trials", "1", "--storage",
     "sqlite:///{tmp}/s.db"],
], ids=lambda argv: argv[0])
def test_test_fraction_without_holdout_is_refused(argv, model, small, tmp_path, capsys):
    argv = [a.format(model=model, small=small, tmp=tmp_path) for a in argv]
    line = run_error(argv, capsys)
    assert "--test-fraction" in line and "--holdout" in line
    assert not any(tmp_path.iterdir())


def test_target_with_per_target_is_refused(small, tmp_path, capsys):
    line = run_error(["train", str(small), "--target", PROFILE, "--per-target", "--out",
                      str(tmp_path / "m")], capsys)
    assert "--per-target" in line and "--target" in line


@pytest.mark.parametrize("name", ["manifest.json", "scores.csv", "sub/scores.csv", "*/x.csv"])
def test_a_file_inside_a_gbxfer_folder_is_refused(model, small, name, capsys):
    if name.startswith("*"):  # into the folder of the saved version's files
        name = name.replace("*", next(p.name for p in model.iterdir() if p.is_dir()))
    before = (model / "manifest.json").read_bytes()
    line = parse_error(["predict", str(model), str(small), "--out", str(model / name)], capsys)
    assert "inside the gbxfer folder" in line
    assert (model / "manifest.json").read_bytes() == before
    line = parse_error(["features", str(small), "--out", str(small / name)], capsys)
    assert "inside the gbxfer folder" in line


def test_predict_writes_csv_only(capsys):
    assert ".csv" in parse_error(["predict", "M", "DATA", "--out", "s.parquet"], capsys)


def test_features_file_of_another_kind_and_repeated_blocks_are_refused(capsys):
    assert ".parquet or .csv" in parse_error(["features", "DATA", "--out", "f.txt"], capsys)
    assert "each once" in parse_error(["features", "DATA", "--out", "f.csv", "--blocks",
                                       "program,program"], capsys)


def test_prune_into_its_own_input_is_refused(small, capsys):
    line = run_error(["prune", str(small), "--keep", "0.5", "--out", str(small)], capsys)
    assert "DATASET itself" in line


def test_tune_model_with_another_cost_model_is_refused(capsys):
    line = run_error(["tune", "--suite", "networks", "--hardware", PROFILE, "--trials", "2",
                      "--out", "OUT", "--cost-model", "xgb", "--model", "m"], capsys)
    assert "--model" in line and "xgb" in line


def test_pretrained_names_the_shipped_model(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert model_path("pretrained") == PRETRAINED
    assert SavedModel.load(model_path("pretrained")).columns
    (tmp_path / "pretrained").mkdir()  # a folder of that name here wins, as for 'bundled'
    assert model_path("pretrained") == Path("pretrained")


@pytest.mark.parametrize("params, word", [
    ({"n_estimators": -5}, "n_estimators"), ({"num_leaves": "abc"}, "num_leaves"),
    ({"learning_rate": 0}, "learning_rate"), ({"subsample": 1.5}, "subsample"),
    ({"n_estimators": 2.5}, "n_estimators"), ({"reg_lambda": float("nan")}, "reg_lambda")])
def test_model_parameters_outside_their_domain_are_refused(params, word):
    with pytest.raises(GbxferError, match=word):
        ModelConfig(params=params)
    assert ModelConfig(params={"n_estimators": 5, "subsample": 1.0}).params


def test_repeated_blocks_in_a_config_are_refused():
    with pytest.raises(GbxferError, match="each once"):
        ModelConfig(blocks=["program", "program"])


@pytest.mark.parametrize("setting", [
    {"extra_rounds": -3}, {"learning_rate": 0}, {"target_weight": "x"}, {"guard": "yes"},
    {"source_fraction": 2}, {"num_leaves": 1}, {"pooled_from": 1.5}])
def test_transfer_settings_outside_their_domain_are_refused(setting):
    with pytest.raises(GbxferError, match=next(iter(setting))):
        TransferConfig.from_dict(setting)
    assert TransferConfig.from_dict({"extra_rounds": 2.0}).extra_rounds == 2  # YAML's 2.0


def test_a_config_path_that_is_no_config_says_so(a_file):
    with pytest.raises(GbxferError, match="not a model config"):
        load_model_config(str(a_file))


def test_transfer_without_holdout_keeps_the_source_split(small, tmp_path):
    """The saved model carries it (evaluate then scores both on the same part); the guard's
    check inside the shots does not (it scores the shots, which the split would drop)."""
    assert main(["train", str(small), "--target", PROFILE, "--holdout", "within-task",
                 "--out", str(tmp_path / "m"), "-q"]) == 0
    assert main(["transfer", str(tmp_path / "m"), "--target-data", str(small), "--hardware",
                 "x86-avx-1t", "--shots", "4", "--out", str(tmp_path / "t"), "-q"]) == 0
    source, moved = SavedModel.load(tmp_path / "m"), SavedModel.load(tmp_path / "t")
    assert source.split["kind"] == "within-task" and moved.split == source.split
    guard = moved.extra["transfer"]["guard_check"]
    assert guard["gain"] is not None and guard["groups"] >= 20  # every shot group scored


def test_a_source_split_the_target_lacks_is_not_carried(small, tmp_path, capsys):
    assert main(["train", str(small), "--holdout", "by-hardware:x86-sse42", "--out",
                 str(tmp_path / "m"), "-q"]) == 0
    from gbxfer.records.dataset import load_dataset

    data = load_dataset(small)
    data.filter(hardware=["x86-avx-1t", "x86-avx2-1t"]).save(tmp_path / "d")
    assert main(["transfer", str(tmp_path / "m"), "--target-data", str(tmp_path / "d"),
                 "--hardware", "x86-avx-1t", "--shots", "2", "--out", str(tmp_path / "t")]) == 0
    assert "does not apply" in capsys.readouterr().err
    assert SavedModel.load(tmp_path / "t").split is None


def test_a_study_continued_on_another_objective_is_refused(small, tmp_path, capsys):
    storage = f"sqlite:///{tmp_path / 's.db'}"
    common = ["study", "model", str(small), "--storage", storage, "--trials", "1",
              "--holdout", "by-task", "--test-fraction", "0.3"]
    assert main([*common, "-q"]) == 0
    assert main([*common, "-q"]) == 0  # the same objective continues
    line = run_error([*common, "--metric", "pca"], capsys)
    assert "another objective" in line and "metric 'top1' there, 'pca' here" in line
    line = run_error([*common[:-4], "--holdout", "within-task"], capsys)
    assert "holdout" in line and "within-task" in line


def test_evaluate_warns_when_some_profiles_are_zero_shot(model, small, capsys):
    assert main(["evaluate", str(model), str(small)]) == 0
    err = capsys.readouterr().err
    assert "not in the model's training data" in err and "zero-shot" in err


def test_transfer_warns_onto_a_profile_the_model_trained_on(model, small, tmp_path, capsys):
    assert main(["transfer", str(model), "--target-data", str(small), "--hardware", PROFILE,
                 "--shots", "2", "--out", str(tmp_path / "t")]) == 0
    assert f"trained on {PROFILE} already" in capsys.readouterr().err


def test_a_bad_transfer_section_names_its_config(model, small, tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text("transfer: {extra_rounds: -3}\n")
    line = run_error(["transfer", str(model), "--target-data", str(small), "--shots", "2",
                      "--config", str(config), "--out", str(tmp_path / "t")], capsys)
    assert str(config) in line and "extra_rounds" in line


def test_model_path_rejects_an_empty_name():
    with pytest.raises(argparse.ArgumentTypeError):
        model_path("")


def test_predict_on_hardware_the_model_never_saw_warns(model, small, tmp_path, capsys):
    from gbxfer.records.dataset import load_dataset

    other = tmp_path / "other"
    data = load_dataset(small)
    data.filter(hardware=[h for h in data.hardware if h != PROFILE]).save(other)
    assert main(["predict", str(model), str(other), "--out", str(tmp_path / "s.csv")]) == 0
    assert "zero-shot" in capsys.readouterr().err


def test_a_config_that_is_no_yaml_is_one_error_line(small, tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("params: {n_estimators: 5\nblocks: [\n")
    line = run_error(["train", str(small), "--config", str(bad), "--out", str(tmp_path / "m")],
                     capsys)
    assert "not valid YAML" in line


def test_suite_first_beyond_the_suite_says_so(capsys):
    assert main(["suite", "show", "networks", "--first", "100000", "--names"]) == 0
    captured = capsys.readouterr()
    assert "all listed" in captured.err and len(captured.out.split(",")) >= 120


@pytest.mark.parametrize("verb", [
    ["collect", "--suite", "networks", "--hardware", PROFILE, "--programs", "2"],
    ["tune", "--suite", "networks", "--hardware", PROFILE, "--trials", "2"],
    ["calibrate", "--hardware", PROFILE, "--minutes", "1"],
], ids=lambda argv: argv[0])
def test_a_run_into_a_model_or_dataset_folder_is_refused(verb, model, small, capsys):
    for folder in (model, small, small / "sub"):
        line = parse_error([*verb, "--out", str(folder)], capsys)
        assert "is a gbxfer model or dataset" in line


@pytest.mark.parametrize("argv", [
    ["tune", "--suite", "networks", "--hardware", PROFILE, "--trials", "2", "--out", "O",
     "--tasks", ""],
    ["tune", "--suite", "networks", "--hardware", PROFILE, "--trials", "2", "--out", "O",
     "--network", " "],
    ["collect", "--suite", "networks", "--hardware", PROFILE, "--programs", "2", "--out", "O",
     "--tasks", "a,,b"],
    ["calibrate", "--minutes", "1", "--out", "O", "--tasks", ""],
    ["suite", "show", "networks", "--network", ""],
    ["calibrate", "--minutes", "1", "--out", "O", "--seed", "-5"],
], ids=lambda argv: " ".join(argv[:1] + argv[-2:-1]))
def test_empty_names_and_negative_seeds_are_refused(argv, capsys):
    """An empty --tasks or --network would otherwise mean every task."""
    assert argv[-2] in parse_error(argv, capsys)


def test_evaluate_of_a_held_out_hardware_split_does_not_warn(small, tmp_path, capsys):
    assert main(["train", str(small), "--holdout", "by-hardware:x86-sse42", "--out",
                 str(tmp_path / "m"), "-q"]) == 0
    assert main(["evaluate", str(tmp_path / "m"), str(small)]) == 0
    assert "zero-shot" not in capsys.readouterr().err


def test_collect_refuses_a_profile_named_twice(tmp_path, capsys):
    line = run_error(["collect", "--suite", "networks", "--hardware", f"{PROFILE},{PROFILE}",
                      "--programs", "2", "--tasks", "softmax_32_128", "--out",
                      str(tmp_path / "c")], capsys)
    assert "named twice" in line


@pytest.mark.parametrize("descriptor, word", [
    ("{clock_ghz: fast}", "clock_ghz"), ("{clock_ghz: -3}", "clock_ghz"),
    ("{peak_gflops: .inf}", "peak_gflops"), ("{clock_ghz: null}", None),
    ("{clock_ghz: .nan}", None), ("{threads: 1024}", None)])
def test_a_profile_with_a_bad_descriptor_is_refused(descriptor, word, tmp_path):
    """Null or NaN: not measured (as a probe writes a clock it could not read); a GPU's
    descriptor threads are threads per block."""
    from gbxfer.hardware.profiles import load_profile

    path = tmp_path / "p.yaml"
    path.write_text("name: my-1t\nfamily: x86-avx2\ntarget: {kind: llvm, mcpu: znver3}\n"
                    f"threads: 1\ndescriptor: {descriptor}\n")
    if word is None:
        assert load_profile(str(path)).name == "my-1t"
        return
    with pytest.raises(GbxferError, match=word):
        load_profile(str(path))


def test_ingest_reads_a_source_named_twice_once(tmp_path, capsys):
    from gbxfer import load_dataset

    sample = tmp_path / "one"
    assert main(["prune", "bundled", "--keep", "0.01", "--method", "random", "--out",
                 str(sample), "-q"]) == 0
    assert main(["ingest", str(sample), str(sample), "--out", str(tmp_path / "o")]) == 0
    assert "named more than once" in capsys.readouterr().err
    assert len(load_dataset(tmp_path / "o")) == len(load_dataset(sample))


def test_online_with_another_cost_model_is_refused(capsys):
    line = run_error(["tune", "--suite", "networks", "--hardware", PROFILE, "--trials", "2",
                      "--out", "OUT", "--cost-model", "random", "--online", "blend"], capsys)
    assert "--online" in line and "random" in line


def test_herding_takes_no_seed(capsys):
    line = run_error(["suite", "show", "networks", "--first", "3", "--seed", "99"], capsys)
    assert "herding" in line and "--seed" in line
    assert main(["suite", "show", "networks", "--first", "3", "--seed", "99", "--method",
                 "random", "--names"]) == 0


def test_probe_refuses_more_threads_than_cores(capsys):
    import os

    line = run_error(["hardware", "probe", "--threads", str((os.cpu_count() or 1) + 1)],
                     capsys)
    assert "cores" in line


@pytest.mark.parametrize("mcpu", ["nonsense", "", "znver99"])
def test_probe_refuses_a_cpu_llvm_does_not_know(mcpu, capsys):
    line = parse_error(["hardware", "probe", "--mcpu", mcpu], capsys)
    assert "--mcpu" in line and repr(mcpu) in line


@pytest.mark.parametrize("isa, mcpu", [("avx512", "znver3"), ("avx2-fma", "skylake-avx512"),
                                       ("sse4.2", "haswell"), ("avx", "x86-64-v3")])
def test_probe_refuses_a_cpu_of_another_isa(isa, mcpu, capsys):
    line = run_error(["hardware", "probe", "--isa", isa, "--mcpu", mcpu], capsys)
    assert f"--mcpu {mcpu} builds" in line and f"--isa {isa} is" in line


def test_probe_mcpu_matches_its_isa():
    from gbxfer.cli._hardware import check_mcpu

    for isa, mcpu in [("avx512", "skylake-avx512"), ("avx2-fma", "znver3"),
                      ("avx2-fma", "x86-64-v3"), ("avx", "sandybridge"), ("sse4.2", "nehalem")]:
        check_mcpu(mcpu, isa)  # no error
    with pytest.raises(GbxferError, match=r"256-bit vector FMA code \(avx2-fma\), and --isa "
                                          "sse4.2 is 128-bit vector"):
        check_mcpu("znver3", "sse4.2")


def test_probe_mcpu_needs_isa(capsys):
    assert "--mcpu needs --isa" in run_error(["hardware", "probe", "--mcpu", "znver3"], capsys)


def test_probe_warns_of_a_cpu_it_cannot_check(monkeypatch, caplog):
    from gbxfer.cli._hardware import check_mcpu
    from gbxfer.hardware import microarch

    monkeypatch.setattr(microarch, "from_mcpu", lambda mcpu: None)  # a CPU newer than archspec
    check_mcpu("sierraforest", "avx512")
    assert "archspec cannot tell this CPU's vector ISA" in caplog.text


def test_probe_mcpu_check_falls_back_to_archspec_without_tvm(monkeypatch):
    import sys

    from gbxfer.cli._hardware import mcpu_option

    monkeypatch.setitem(sys.modules, "tvm.target.codegen", None)  # import raises ImportError
    assert mcpu_option("znver3") == "znver3"
    for mcpu in ("nonsense", "neoverse-n1", "power9", "zen3", "x86_64"):  # archspec's, not LLVM's
        with pytest.raises(argparse.ArgumentTypeError, match="install gbxfer"):
            mcpu_option(mcpu)
