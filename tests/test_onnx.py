"""gbxfer tune --onnx: an ONNX model imported, tuned, compiled into a library and checked against
ONNX Runtime; every model it cannot take is refused in one line before anything is written.

The models are built in code with ``onnx.helper`` (``onnx_models``): a residual block (conv, batch
norm, ReLU, add) and an attention block (matmuls, softmax). The layouts a model is tuned in:
``test_onnx_layouts``."""
from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
import pytest
from conftest import write_host_profile

tvm = pytest.importorskip("tvm")
onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.tvm

from onnx import TensorProto, helper  # noqa: E402
from onnx_models import (SMALL, TINY, attention_block, residual_block, run_error,  # noqa: E402
                         write_model)


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    return write_host_profile(tmp_path_factory.mktemp("profile"))


@pytest.fixture(scope="module")
def residual_run(tmp_path_factory, profile):
    """A residual block with a dynamic batch, fixed by --input-shape and tuned for 8 trials."""
    from gbxfer.cli import main

    folder = tmp_path_factory.mktemp("residual")
    model = residual_block(folder / "residual.onnx", batch="N")
    out = folder / "run"
    assert main(["tune", "--onnx", str(model), "--input-shape", "x=1,8,16,16", "--hardware",
                 str(profile), "--trials", "8", *TINY, "--out", str(out)]) == 0
    return out


def test_tuned_onnx_model_is_a_loadable_library(residual_run):
    from tvm import relax

    library = tvm.runtime.load_module(str(residual_run / "module.so"))
    vm = relax.VirtualMachine(library, tvm.cpu())
    x = np.random.default_rng(0).standard_normal((1, 8, 16, 16)).astype("float32")
    y = vm["main"](tvm.runtime.tensor(x)).numpy()
    assert y.shape == (1, 8, 16, 16) and np.all(y >= x - 1e-5)  # ReLU(...) + x
    assert not [p.name for p in residual_run.iterdir() if p.name.startswith(".")]  # no temp


def test_tuned_onnx_model_matches_onnxruntime_and_both_are_timed(residual_run):
    summary = json.loads((residual_run / "summary.json").read_text())
    assert summary["outputs_match"] and summary["outputs"]["y"]["within_tolerance"]
    assert 0 <= summary["max_abs_diff"]["y"] < 1e-3
    assert summary["tolerance"]["rtol"] == 1e-3 and summary["tolerance"]["atol"] == 1e-4
    assert summary["input_shapes"] == {"x": [1, 8, 16, 16]}
    assert summary["onnx"].endswith("residual.onnx")
    assert summary["tvm_ms"] > 0 and summary["onnx_runtime_ms"] > 0
    assert summary["speedup"] == pytest.approx(summary["onnx_runtime_ms"] / summary["tvm_ms"])
    # the profile's thread count, on both sides (the host profile: 1 thread)
    assert summary["threads"] == {"tvm": 1, "onnx_runtime": 1}
    assert summary["trials"] >= 8 and summary["budget"] == {"trials": 8}  # + a last batch
    assert summary["layout"] == "nhwc"  # the default: convolutions channels-last


def test_tuned_onnx_model_has_its_database_and_curve(residual_run):
    from gbxfer import ingest

    curve = pd.read_csv(residual_run / "curve.csv")
    assert curve["trials"].max() >= 8
    assert (residual_run / "curve.png").stat().st_size > 0
    assert ingest([residual_run / "metaschedule"]).records["valid"].sum() >= 1


def test_attention_block_tuned_for_minutes_matches_onnxruntime(tmp_path, profile):
    """--minutes: the run ends by itself (its trial cap is effectively unlimited) soon after
    the minutes are spent."""
    from gbxfer.cli import main

    model = attention_block(tmp_path / "attention.onnx")
    out = tmp_path / "run"
    assert main(["tune", "--onnx", str(model), "--hardware", str(profile), "--minutes", "0.1",
                 *TINY, "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["budget"] == {"minutes": 0.1} and summary["trials"] >= 1
    assert summary["parallel_within"] == 0.02  # the default of network builds
    assert summary["seconds"] < 6 + 60  # the budget, the last batch and the pool shutting down
    assert pd.read_csv(out / "curve.csv")["seconds"].iloc[-1] < 6 + 60
    assert set(summary["outputs"]) == {"attention", "weights"} and summary["outputs_match"]
    assert tvm.runtime.load_module(str(out / "module.so")) is not None


def test_onnx_model_tuned_with_the_gbxfer_cost_model(tmp_path, profile):
    """The default cost model, the pretrained gbxfer model, guides the search."""
    from gbxfer.cli import main

    model = attention_block(tmp_path / "attention.onnx")
    out = tmp_path / "run"
    assert main(["tune", "--onnx", str(model), "--hardware", str(profile), "--trials", "16",
                 *SMALL, "--parallel-within", "0", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cost_model"] == "gbxfer" and summary["outputs_match"]
    assert summary["parallel_within"] == 0  # built as tuned
    assert summary["cost_model_seconds"]["predict"] > 0 and summary["trials"] >= 16


def test_shape_known_only_at_run_time_is_refused_before_anything_is_written(tmp_path, profile,
                                                                            capsys):
    value = helper.make_tensor_value_info
    nodes = [helper.make_node("NonZero", ["x"], ["where"]),
             helper.make_node("Cast", ["where"], ["y"], to=TensorProto.FLOAT)]
    model = write_model(tmp_path / "nonzero.onnx", nodes, [value("x", TensorProto.FLOAT, [1, 4])],
                        [value("y", TensorProto.FLOAT, [2, "n"])])
    line = run_error(["tune", "--onnx", str(model), "--hardware", str(profile), "--trials", "8",
                      "--out", str(tmp_path / "run"), "-q"], capsys)
    assert "nonzero.onnx" in line and "known only at run time" in line
    assert not (tmp_path / "run").exists()


def test_dynamic_dimension_is_refused_before_anything_is_written(tmp_path, profile, capsys):
    model = residual_block(tmp_path / "dynamic.onnx", batch="batch")
    line = run_error(["tune", "--onnx", str(model), "--hardware", str(profile),
                      "--trials", "8", "--out", str(tmp_path / "run"), "-q"], capsys)
    assert "input 'x' has a dynamic dimension 'batch'" in line
    assert "--input-shape x=1,8,16,16" in line
    assert not (tmp_path / "run").exists()


def test_input_shape_of_an_input_the_model_lacks_lists_its_inputs(tmp_path, profile, capsys):
    model = residual_block(tmp_path / "residual.onnx")
    line = run_error(["tune", "--onnx", str(model), "--input-shape", "image=1,8,16,16",
                      "--hardware", str(profile), "--trials", "8",
                      "--out", str(tmp_path / "run"), "-q"], capsys)
    assert "no input 'image'" in line and "its inputs: x" in line
    assert not (tmp_path / "run").exists()


def test_input_shape_that_contradicts_a_static_dimension_is_refused(tmp_path, profile, capsys):
    model = residual_block(tmp_path / "residual.onnx", batch="N")
    line = run_error(["tune", "--onnx", str(model), "--input-shape", "x=1,3,16,16",
                      "--hardware", str(profile), "--trials", "8",
                      "--out", str(tmp_path / "run"), "-q"], capsys)
    assert "x=1,3,16,16" in line and "[N, 8, 16, 16]" in line
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("option", [["--input-shape", "data=1,224,224,3"],
                                    ["--layout", "nhwc"]])
def test_onnx_options_without_onnx_are_refused(tmp_path, profile, capsys, option):
    line = run_error(["tune", "--relax", "resnet18", *option, "--hardware", str(profile),
                      "--trials", "8", "--out", str(tmp_path / "run"), "-q"], capsys)
    assert option[0] in line and "--onnx" in line
    assert not (tmp_path / "run").exists()


def test_operators_the_frontend_cannot_convert_are_named(tmp_path, profile, capsys):
    # Celu is a standard ONNX operator TVM 0.27's Relax frontend lacks
    nodes = [helper.make_node("Celu", ["x"], ["c"], name="celu_0"),
             helper.make_node("GbxferNoSuchOp", ["c"], ["y"])]
    value = helper.make_tensor_value_info
    model = write_model(tmp_path / "exotic.onnx", nodes, [value("x", TensorProto.FLOAT, [1, 4])],
                        [value("y", TensorProto.FLOAT, [1, 4])])
    line = run_error(["tune", "--onnx", str(model), "--hardware", str(profile),
                      "--trials", "8", "--out", str(tmp_path / "run"), "-q"], capsys)
    assert "Celu (node 'celu_0')" in line and "GbxferNoSuchOp" in line
    assert not (tmp_path / "run").exists()


def test_file_that_is_no_onnx_model_is_refused(tmp_path, profile, capsys):
    (tmp_path / "notes.onnx").write_text("not an onnx model\n")
    line = run_error(["tune", "--onnx", str(tmp_path / "notes.onnx"), "--hardware",
                      str(profile), "--trials", "8", "--out", str(tmp_path / "run"), "-q"],
                     capsys)
    assert "notes.onnx: not an ONNX model" in line
    assert not (tmp_path / "run").exists()


def test_model_onnxruntime_cannot_load_is_refused_before_tuning(tmp_path, profile, capsys):
    value = helper.make_tensor_value_info
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "future",
                              [value("x", TensorProto.FLOAT, [1, 4])],
                              [value("y", TensorProto.FLOAT, [1, 4])])
    model = tmp_path / "future.onnx"  # an opset no ONNX Runtime release supports yet
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 99)]), str(model))
    line = run_error(["tune", "--onnx", str(model), "--hardware", str(profile), "--trials", "8",
                      "--out", str(tmp_path / "run"), "-q"], capsys)
    assert "future.onnx: ONNX Runtime" in line and "cannot load it" in line
    assert not (tmp_path / "run").exists()


def test_onnx_without_onnxruntime_names_the_extra(tmp_path, profile, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if not installed
    model = residual_block(tmp_path / "residual.onnx")
    line = run_error(["tune", "--onnx", str(model), "--hardware", str(profile), "--trials",
                      "8", "--out", str(tmp_path / "run"), "-q"], capsys)
    assert "pip install 'gbxfer[tvm,onnx]'" in line
    assert not (tmp_path / "run").exists()


def test_outputs_compare_within_a_tolerance_of_their_scale():
    from gbxfer.tvm._onnx import compare_outputs

    expected = np.array([100.0, 1.0, 0.0, np.nan])
    close = expected + np.array([5e-3, 5e-3, 5e-3, 0.0])  # within 1e-4 x 100 + 1e-3 x |e|
    report = compare_outputs(["a"], [close], [expected])["a"]
    assert report["within_tolerance"] and report["scale"] == 100.0
    assert report["max_abs_diff"] == pytest.approx(5e-3)
    far = expected + np.array([0.0, 0.0, 0.2, 0.0])
    assert not compare_outputs(["a"], [far], [expected])["a"]["within_tolerance"]
    assert not compare_outputs(["a"], [np.zeros(3)], [np.zeros(4)])["a"]["within_tolerance"]


def test_invalid_graph_is_refused_in_one_line_with_the_checkers_finding(tmp_path, profile,
                                                                         capfd):
    """A dangling edge: the frontend's warning and its half-built BlockBuilder's C++ warning
    (logged when freed) stay off stderr; the checker's finding is in the error line."""
    import gc

    from gbxfer.cli import main

    value = helper.make_tensor_value_info
    model = write_model(tmp_path / "dangling.onnx",
                        [helper.make_node("Add", ["x", "ghost"], ["y"])],
                        [value("x", TensorProto.FLOAT, [1, 4])],
                        [value("y", TensorProto.FLOAT, [1, 4])])
    assert main(["tune", "--onnx", str(model), "--hardware", str(profile), "--trials", "8",
                 "--out", str(tmp_path / "run"), "-q"]) == 2
    gc.collect()  # whatever the failed import left behind, freed now
    err = capfd.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "BlockBuilder" not in err, err
    assert err.startswith("gbxfer tune: error: ") and "dangling.onnx" in err
    assert "onnx.checker: Nodes in a graph must be topologically sorted" in err
    assert not (tmp_path / "run").exists()


def test_model_with_no_kernels_is_refused_before_anything_is_written(tmp_path, profile, capsys):
    value = helper.make_tensor_value_info
    model = write_model(tmp_path / "identity.onnx", [], [value("x", TensorProto.FLOAT, [1, 4])],
                        [value("x", TensorProto.FLOAT, [1, 4])])  # the input is the output
    line = run_error(["tune", "--onnx", str(model), "--hardware", str(profile), "--trials", "8",
                      "--out", str(tmp_path / "run"), "-q"], capsys)
    assert "identity.onnx: the network has no kernels to tune" in line
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("option", [["--seed", "-1"], ["--seed", str(2 ** 64)],
                                    ["--trials", str(10 ** 23)],
                                    ["--population", str(2 ** 40)],
                                    ["--min-repeat-ms", str(2 ** 40)],
                                    ["--input-shape", "x=100000000000000000000,8,16,16"]])
def test_integers_tvm_cannot_take_are_argument_errors(tmp_path, profile, capsys, option):
    """Rather than a TypeError from TVM (or NumPy) once OUT is written."""
    from gbxfer.cli import main

    model = residual_block(tmp_path / "residual.onnx", batch="N")
    argv = ["tune", "--onnx", str(model), "--hardware", str(profile), "--out",
            str(tmp_path / "run"), "-q", *option]
    if option[0] != "--trials":
        argv += ["--trials", "8"]
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option[0]}" in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()


def test_a_folder_given_as_the_model_is_named_as_one(tmp_path, profile, capsys):
    from gbxfer.cli import main

    (tmp_path / "model.onnx").mkdir()
    with pytest.raises(SystemExit):
        main(["tune", "--onnx", str(tmp_path / "model.onnx"), "--hardware", str(profile),
              "--trials", "8", "--out", str(tmp_path / "run")])
    assert "is a folder, not an ONNX file" in capsys.readouterr().err
