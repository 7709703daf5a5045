"""gbxfer tune --onnx and --relax: the layouts a network is tuned and built in: its convolutions
channels-last or as the model has them (``--layout``), its weights packed or as stored
(``--weight-layout``), and runs recorded before either option existed."""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import write_host_profile

tvm = pytest.importorskip("tvm")
pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.tvm

from onnx import TensorProto, helper  # noqa: E402
from onnx_models import (TINY, attention_block, dense_block, residual_block,  # noqa: E402
                         run_error, write_model)
from gbxfer.errors import GbxferError  # noqa: E402


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    return write_host_profile(tmp_path_factory.mktemp("profile"))


def test_convolutions_converted_to_channels_last_or_kept_as_they_are(tmp_path, profile):
    """nhwc (the default): the conv task is NHWC with HWIO weights (the suite's layout), the
    network still takes and gives NCHW; --layout as-is keeps NCHW and matches ONNX Runtime."""
    from gbxfer.cli import main
    from gbxfer.tvm._networks import extract_tasks, prepare
    from gbxfer.tvm._onnx import load_onnx

    model = residual_block(tmp_path / "residual.onnx")
    for layout, data, weights in [("nhwc", [1, 16, 16, 8], [3, 3, 8, 8]),
                                  ("as-is", [1, 8, 16, 16], [8, 8, 3, 3])]:
        tasks = extract_tasks(prepare(load_onnx(model, layout=layout).mod),
                              tvm.target.Target({"kind": "llvm"}))
        conv = [t for t in tasks if "conv2d" in t.task_name]
        shapes = [[int(d) for d in p.ty.shape] for f in conv[0].dispatched[0].functions.values()
                  for p in f.params]
        assert len(conv) == 1 and shapes[:2] == [data, weights]
    out = tmp_path / "run"
    assert main(["tune", "--onnx", str(model), "--layout", "as-is", "--hardware", str(profile),
                 "--trials", "8", *TINY, "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["layout"] == "as-is" and summary["outputs_match"]
    assert summary["max_abs_diff"]["y"] < 1e-3
    run = json.loads((out / "run.json").read_text())
    assert "transpose" not in run["tasks_tuned"] and "layout" not in run  # as runs before nhwc


def test_convolutions_tvm_cannot_convert_are_one_line(tmp_path, profile, monkeypatch, capsys):
    from tvm import relax

    def refuse(_):
        raise RuntimeError("InternalError: Cannot convert when exactly one layout is unknown")

    monkeypatch.setattr(relax.transform, "ConvertLayout", refuse)
    line = run_error(["tune", "--onnx", str(residual_block(tmp_path / "residual.onnx")),
                      "--hardware", str(profile), "--trials", "8",
                      "--out", str(tmp_path / "run"), "-q"], capsys)
    assert "cannot convert its convolutions to nhwc" in line and "--layout as-is" in line
    assert not (tmp_path / "run").exists()


def test_a_model_without_convolutions_is_tuned_as_it_is(tmp_path):
    from gbxfer.tvm._onnx import load_onnx

    network = load_onnx(attention_block(tmp_path / "attention.onnx"), layout="nhwc")
    assert network.layout == "as-is" and not network.convolutions  # and weights as stored


def test_a_run_started_before_a_default_changed_says_how_to_continue(tmp_path):
    from gbxfer.cli._tune_run import RUN, earlier_curve

    (tmp_path / RUN).write_text(json.dumps({"seed": 0}))  # as-is: no layout recorded
    (tmp_path / "summary.json").write_text(json.dumps({"trials": 8}))
    with pytest.raises(GbxferError, match="add --layout as-is to continue it"):
        earlier_curve(tmp_path, {"seed": 0, "layout": "nhwc"}, None)
    with pytest.raises(GbxferError, match="add --layout as-is --weight-layout as-is to "
                                          "continue it"):  # both options at once
        earlier_curve(tmp_path, {"seed": 0, "layout": "nhwc", "weight_layout": "packed"}, None)


def test_packed_weights_are_rearranged_once_and_the_interface_is_unchanged(tmp_path, profile,
                                                                          capsys):
    """--weight-layout packed: the kernels are tuned as tasks that read their weights (and
    biases) rearranged, other workloads than as-is; the build folds the rearrangement into the
    constants, so the library's main never rearranges, takes the model's inputs alone and
    matches ONNX Runtime; a packed run is not continued as an as-is one."""
    from tvm import relax
    from tvm.s_tir import meta_schedule as ms

    from gbxfer.cli import main
    from gbxfer.tvm._networks import compile_network, extract_tasks, prepare
    from gbxfer.tvm._onnx import load_onnx

    model = dense_block(tmp_path / "dense.onnx")
    mod = load_onnx(model).mod
    target = tvm.target.Target({"kind": "llvm"})
    free = {packed: sorted(tuple(f.attrs["layout_free_buffers"]) for t in
                           extract_tasks(prepare(mod, packed), target)
                           for f in t.dispatched[0].functions.values()
                           if f.attrs and "layout_free_buffers" in f.attrs)
            for packed in (False, True)}
    assert free == {False: [], True: [(1, 2), (1, 2)]}  # W and b of both layers
    out = tmp_path / "run"
    argv = ["tune", "--onnx", str(model), "--weight-layout", "packed", "--hardware",
            str(profile), "--trials", "16", *TINY, "--parallel-within", "0", "--out", str(out)]
    assert main(argv) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["weight_layout"] == "packed" and summary["outputs_match"]
    assert json.loads((out / "run.json").read_text())["weight_layout"] == "packed"
    records = (out / "metaschedule" / "database_tuning_record.json").read_text()
    assert "layout_rewrite_preproc" in records  # MetaSchedule rewrote the weights' layout
    database = ms.database.JSONDatabase(work_dir=str(out / "metaschedule"))
    text = compile_network(mod, database, target, 0.0, packed=True).as_text()
    assert "prepacked" in text and "weight_prepack" not in text  # rearranged at build only
    vm = relax.VirtualMachine(tvm.runtime.load_module(str(out / "module.so")), tvm.cpu())
    x = np.random.default_rng(0).standard_normal((1, 8, 16)).astype("float32")
    assert vm["main"](tvm.runtime.tensor(x)).numpy().shape == (1, 8, 16)  # x in, y out
    capsys.readouterr()
    line = run_error([a for a in argv if a not in ("--weight-layout", "packed")]
                     + ["--trials", "32"], capsys)
    assert "other arguments" in line and "--weight-layout" in line


def test_packed_weights_of_channels_last_convolutions(tmp_path, profile):
    """A convolution network is packed by default (in NHWC, the default layout): the conv task
    reads its weights rearranged, the build folds that into the constants and matches ONNX
    Runtime."""
    from tvm.s_tir import meta_schedule as ms

    from gbxfer.cli import main
    from gbxfer.tvm._networks import compile_network
    from gbxfer.tvm._onnx import load_onnx

    model = residual_block(tmp_path / "residual.onnx")
    out = tmp_path / "run"
    assert main(["tune", "--onnx", str(model), "--hardware", str(profile), "--trials", "8",
                 *TINY, "--parallel-within", "0", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["weight_layout"] == "packed" and summary["layout"] == "nhwc"
    assert summary["outputs_match"] and summary["scheduled_functions"][0] >= 1
    records = (out / "metaschedule" / "database_tuning_record.json").read_text()
    assert "layout_rewrite_preproc" in records
    database = ms.database.JSONDatabase(work_dir=str(out / "metaschedule"))
    text = compile_network(load_onnx(model, layout="nhwc").mod, database,
                           tvm.target.Target({"kind": "llvm"}), 0.0, packed=True).as_text()
    assert "prepacked" in text and "weight_prepack" not in text


def test_a_network_without_constant_weights_is_tuned_as_it_is(tmp_path, profile, capsys):
    """Nothing to pack (as a model without convolutions keeps its layout): tuned and recorded
    as-is, said on stderr, and the run continues with or without the option; weights given as
    parameters are refused."""
    from tvm import relax

    from gbxfer.cli import main
    from gbxfer.tvm._networks import packable, prepare

    x, w = (relax.Var(name, relax.TensorType(shape, "float32"))
            for name, shape in (("x", (8, 16)), ("w", (16, 16))))
    builder = relax.BlockBuilder()
    with builder.function("main", [x, w], attrs={"num_input": 1}):
        builder.emit_func_output(builder.emit(relax.op.matmul(x, w)))
    with pytest.raises(GbxferError, match="takes 1 weights as parameters beyond its num_input"):
        packable(prepare(builder.get(), packed=True))
    relu = write_model(tmp_path / "relu.onnx", [helper.make_node("Relu", ["x"], ["y"])],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
    out = tmp_path / "run"

    def tune(trials: int, *option: str) -> int:
        return main(["tune", "--onnx", str(relu), *option, "--hardware", str(profile),
                     "--trials", str(trials), *TINY, "--out", str(out)])

    assert tune(8, "--weight-layout", "packed") == 0
    assert "no kernel reads a constant weight; tuned as-is" in capsys.readouterr().err
    assert json.loads((out / "summary.json").read_text())["weight_layout"] == "as-is"
    assert "weight_layout" not in json.loads((out / "run.json").read_text())
    assert tune(16, "--weight-layout", "packed") == 0 and tune(24) == 0  # continued both ways
    assert json.loads((out / "summary.json").read_text())["continued_from"]


def test_packed_weights_are_for_cpu_profiles(tmp_path, capsys):
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("name: gpu\nfamily: gpu\ntarget: {kind: cuda, arch: sm_80}\nthreads: 1\n"
                   "description: a GPU (test profile)\n")
    line = run_error(["tune", "--relax", "resnet18", "--weight-layout", "packed", "--hardware",
                      str(gpu), "--trials", "8", "--out", str(tmp_path / "run"), "-q"], capsys)
    assert "--weight-layout packed is for CPUs" in line and "cuda" in line
    assert not (tmp_path / "run").exists()


def test_packed_weights_take_a_network(tmp_path, profile, capsys):
    line = run_error(["tune", "--suite", "networks", "--weight-layout", "packed",
                      "--hardware", str(profile), "--trials", "8",
                      "--out", str(tmp_path / "run"), "-q"], capsys)
    assert "--weight-layout" in line and "--onnx" in line
    assert not (tmp_path / "run").exists()


def test_runs_from_before_an_option_continue_at_its_former_value():
    """A run recorded before --layout and --weight-layout existed is the same run as one given
    their former values (as-is), and not one given another."""
    from argparse import Namespace

    from gbxfer.cli._tune_run import identity

    before = {"seed": 0, "cost_model": "xgb", "input_shape": None, "onnx": None}
    run = identity(Namespace(**before), ["t"], [1.0])
    assert identity(Namespace(**before, layout="as-is", weight_layout="as-is"), ["t"],
                    [1.0]) == run
    assert identity(Namespace(**before, layout="as-is", weight_layout="packed"), ["t"],
                    [1.0]) == {**run, "weight_layout": "packed"}
