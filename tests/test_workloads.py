"""Workload suites and hardware profiles are validated on load, with errors naming the field."""
from __future__ import annotations

import pytest

from gbxfer import GbxferError
from gbxfer.hardware import load_profile
from gbxfer.records.suite import OPERATORS, load_suite, operator_flops

from conftest import REPO

SUITE = REPO / "configs" / "workloads" / "networks.yaml"


NETWORKS = {"resnet50", "mobilenet_v2", "bert_base", "resnet18", "convnext_t", "yolov8n",
            "llama2_7b_prefill", "llama2_7b_decode", "whisper_tiny_encoder", "efficientnet_b0",
            "vit_b16"}


def test_bundled_suite_covers_eleven_networks_and_the_operator_kinds():
    suite = load_suite(SUITE)
    assert len(suite.tasks) >= 120
    networks = {n for t in suite.tasks for n in t.network.split(",")}
    assert networks == NETWORKS
    ops = {t.op for t in suite.tasks}
    assert {"conv2d", "depthwise_conv2d", "dense", "batch_matmul", "softmax", "conv1d",
            "layer_norm", "rms_norm", "dense_gelu", "dense_silu_mul"} <= ops
    assert len({t.name for t in suite.tasks}) == len(suite.tasks)


@pytest.mark.parametrize("network, gflops", [
    ("resnet50", 8.2), ("convnext_t", 8.9), ("yolov8n", 8.7),  # published: 4.1, 4.5 GMAC; 8.7
    ("llama2_7b_prefill", 2 * 202e6 * 128 / 1e9),  # 2 FLOPs per weight per token
    ("efficientnet_b0", 2 * 0.39), ("vit_b16", 2 * 17.56),  # published GMACs
])
def test_networks_have_their_published_flops(network, gflops):
    tasks, weights = load_suite(SUITE).network(network)
    total = sum(t.flops * w for t, w in zip(tasks.tasks, weights, strict=True)) / 1e9
    assert total == pytest.approx(gflops, rel=0.03)


def test_a_task_shared_by_networks_is_one_task_with_summed_weight():
    suite = load_suite(SUITE)
    (shared,) = [t for t in suite.tasks if t.name == "conv2d_1_56_56_64_64_3_1_1"]
    assert shared.network == "resnet50,resnet18"
    assert shared.weight == 3 + 4


def test_a_network_is_its_tasks_weighted_by_occurrences_there():
    suite = load_suite(SUITE)
    assert set(suite.networks) == NETWORKS
    resnet18, weights = suite.network("resnet18")
    by_name = dict(zip((t.name for t in resnet18.tasks), weights, strict=True))
    assert by_name["conv2d_1_56_56_64_64_3_1_1"] == 4  # not its 7 over both ResNets
    assert "softmax_1536_128" not in by_name and len(by_name) == 14
    with pytest.raises(GbxferError, match="no network named 'resnet19'.*resnet18"):
        suite.network("resnet19")


def test_flops_by_hand():
    assert operator_flops("dense", {"M": 2, "N": 3, "K": 4}) == 2 * 2 * 3 * 4
    conv = {"N": 1, "H": 8, "W": 8, "CI": 3, "CO": 5, "kernel": 3, "stride": 1, "padding": 1}
    assert operator_flops("conv2d", conv) == 2 * 8 * 8 * 5 * 3 * 9
    conv1d = {"N": 1, "L": 9, "CI": 3, "CO": 5, "kernel": 3, "stride": 2, "padding": 1}
    assert operator_flops("conv1d", conv1d) == 2 * 5 * 5 * 3 * 3  # 5 outputs
    assert operator_flops("layer_norm", {"M": 2, "N": 3}) == 8 * 6
    assert operator_flops("dense_gelu", {"M": 2, "N": 3, "K": 4}) == 2 * 2 * 3 * 4 + 6 * 6


def test_every_operator_module_has_the_suite_argument_shapes():
    """The shapes the dataset's tasks table stores are those of the TVM function measured."""
    import json

    from tvm.s_tir import meta_schedule as ms

    from gbxfer.tvm._task_modules import task_module

    suite = load_suite(SUITE)
    smallest = {}
    for task in sorted(suite.tasks, key=lambda t: t.flops):
        smallest.setdefault(task.op, task)
    assert set(smallest) == set(OPERATORS) - {"avg_pool2d"}  # every kind but one is used
    for task in smallest.values():
        args = ms.arg_info.ArgInfo.from_prim_func(task_module(task)["main"])
        shapes = [[int(d) for d in arg.shape] for arg in args]
        assert shapes == [shape for _, shape in json.loads(task.args)], task.name


def _suite(tmp_path, body: str):
    path = tmp_path / "s.yaml"
    path.write_text("networks:\n  net:\n" + body)
    return path


@pytest.mark.parametrize("body, message", [
    ("    - {op: convolution, shape: {M: 1}}\n", "unknown operator 'convolution'"),
    ("    - {op: dense, shape: {M: 1, N: 2}}\n", "'K' is missing"),
    ("    - {op: dense, shape: {M: 1, N: 2, K: -3}}\n", "'K' must be a positive integer"),
    ("    - {op: dense, shape: {M: 1, N: 2, K: 3, Z: 1}}\n", "unknown shape field 'Z'"),
    ("    - {op: dense, shape: {M: 1, N: 2, K: 3}, weight: 0}\n", "'weight' must be positive"),
    ("    - {op: conv2d, shape: {N: 1, H: 2, W: 2, CI: 1, CO: 1, kernel: 5}}\n",
     "does not fit"),
])
def test_bad_suite_entries_name_the_task_and_field(tmp_path, body, message):
    path = _suite(tmp_path, body)
    with pytest.raises(GbxferError) as info:
        load_suite(path)
    assert message.replace("must be positive", "must be a positive number") in str(info.value) \
        or message in str(info.value)
    assert "network 'net', task 1" in str(info.value)


def test_profiles_say_what_they_are():
    for name in ("x86-avx2-1t", "x86-avx2-2t", "x86-avx-1t", "x86-sse42-1t"):
        profile = load_profile(name)
        assert "one physical CPU" in profile.description
        assert profile.target["kind"] == "llvm" and "mcpu" in profile.target
        assert profile.machine == "AMD EPYC (zen3)"  # four profiles, one machine
    assert load_profile("x86-avx2-1t").family == load_profile("x86-avx2-2t").family


def test_unknown_profile_lists_the_known_ones():
    with pytest.raises(GbxferError, match="x86-avx2-1t"):
        load_profile("pdp-11")


def test_bad_profile_field(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("name: p\nfamily: f\ntarget: llvm\nthreads: 1\n")
    with pytest.raises(GbxferError, match="'target' must be a dict"):
        load_profile(str(path))


def test_a_profile_machine_is_a_name(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("name: p\nfamily: f\nmachine: [zen3]\ntarget: {kind: llvm}\nthreads: 1\n")
    with pytest.raises(GbxferError, match="'machine' must be a printable string"):
        load_profile(str(path))


def test_suite_show_lists_the_tasks_to_collect_first(capsys):
    from gbxfer.cli import main

    assert main(["suite", "show", "networks", "--first", "16", "--names"]) == 0
    first = capsys.readouterr().out.strip().split(",")
    suite = {t.name: t for t in load_suite(SUITE).tasks}
    assert len(set(first)) == 16 and set(first) <= set(suite)
    kinds = [suite[name].op for name in first]
    # herding follows how common each kind is (conv2d: about half the suite), over 5+ kinds
    assert 5 <= kinds.count("conv2d") <= 11 and len(set(kinds)) >= 5
    assert main(["suite", "show", "networks", "--first", "16", "--names"]) == 0
    assert capsys.readouterr().out.strip().split(",") == first  # deterministic
    assert main(["suite", "show", "networks", "--first", "16", "--names", "--method",
                 "coreset"]) == 0
    spread = capsys.readouterr().out.strip().split(",")
    assert len({suite[name].op for name in spread}) >= 8  # the medoids spread over the kinds
    assert main(["suite", "show", "networks", "--method", "coreset"]) == 2  # needs --first
    assert main(["suite", "show", "networks", "--network", "llama2_7b_decode", "--json"]) == 0
    import json
    shown = json.loads(capsys.readouterr().out)["tasks"]
    assert {t["task"] for t in shown} == {t.name for t in load_suite(SUITE).network(
        "llama2_7b_decode")[0].tasks}
    assert main(["suite", "show", "networks", "--network", "gpt5"]) == 2
    assert "no network named 'gpt5'" in capsys.readouterr().err
