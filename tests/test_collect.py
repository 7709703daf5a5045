"""gbxfer collect measures real programs with TVM: resumable after SIGKILL, and over RPC."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from conftest import write_host_profile

tvm = pytest.importorskip("tvm")
pytestmark = pytest.mark.tvm

SUITE = """name: tiny
networks:
  toy:
    - {op: dense, shape: {M: 16, N: 32, K: 16}, weight: 2}
"""


@pytest.fixture(scope="module")
def configs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("configs")
    (folder / "tiny.yaml").write_text(SUITE)
    write_host_profile(folder)
    (folder / "sse-2t.yaml").write_text(
        "name: sse-2t\nfamily: sse\nmachine: profile-named box\n"
        "target: {kind: llvm, mcpu: nehalem, num-cores: 1}\nthreads: 2\n"
        "description: SSE4.2 code, 2 threads (test profile)\n")
    return folder


def _collect(configs, out, *extra, programs=5, hardware="host-1t"):
    count = ["--programs", str(programs)] if programs else []
    return [sys.executable, "-m", "gbxfer", "collect", "--suite", str(configs / "tiny.yaml"),
            "--hardware", str(configs / f"{hardware}.yaml"), *count,
            "--out", str(out), "--batch-size", "1", "--repeats", "1", "--min-repeat-ms", "1",
            "-q", *extra]


def _records(out):
    path = out / "metaschedule" / "host-1t" / "database_tuning_record.json"
    return path.read_bytes().splitlines() if path.exists() else []


def test_killed_collection_resumes_without_loss_or_repeats(configs, tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen(_collect(configs, out), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.time() + 240
    while len(_records(out)) < 1 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = _records(out)
    assert 1 <= len(before) < 5, "kill with one measurement done and one pending"

    result = subprocess.run(_collect(configs, out), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    after = _records(out)
    assert after[:len(before)] == before  # nothing finished was lost or rewritten
    assert len(after) == 5
    from gbxfer import load_dataset
    ds = load_dataset(out / "dataset")
    assert len(ds) == 5 and ds.records["program_id"].is_unique
    assert set(ds.records["hardware"]) == {"host-1t"}
    from gbxfer.hardware.probe import host_machine
    assert ds.machines == [host_machine()]  # the profile names none: this machine
    assert ds.records["valid"].all()
    task = ds.tasks.iloc[0]
    assert task["operator"] == "dense" and task["flops"] == 2 * 16 * 32 * 16
    assert task["network"] == "toy" and task["weight"] == 2
    assert "collect" in ds.manifest["commands"][0]["argv"]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(condition, what, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.5)
    raise TimeoutError(f"{what} not up after {timeout} s")


def _accepts(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def _registered(port, key):
    try:
        summary = tvm.rpc.connect_tracker("127.0.0.1", port).summary()
    except Exception:  # noqa: BLE001 - tracker still starting
        return False
    return any(key in str(k) for k in summary.get("queue_info", {}))


def _stop(proc):
    """End an RPC process: a plain kill leaves its popen_worker child running."""
    subprocess.run(["pkill", "-KILL", "-P", str(proc.pid)], check=False)
    proc.kill()
    proc.wait()


def test_collect_over_rpc_runs_on_the_server(configs, tmp_path):
    port = _free_port()
    key = f"gbxfer-test-{os.getpid()}"
    tracker = subprocess.Popen([sys.executable, "-m", "tvm.exec.rpc_tracker", "--host",
                                "127.0.0.1", "--port", str(port), "--port-end", str(port + 1)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for(lambda: _accepts(port), "RPC tracker")
    server_log = open(tmp_path / "server.log", "w")
    server_port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "tvm.exec.rpc_server", "--host",
                               "127.0.0.1", "--port", str(server_port), "--port-end",
                               str(server_port + 1), "--tracker", f"127.0.0.1:{port}",
                               "--key", key],
                              stdout=server_log, stderr=subprocess.STDOUT)
    try:
        _wait_for(lambda: _registered(port, key), "RPC server")
        out = tmp_path / "rpc"
        result = subprocess.run(_collect(configs, out, "--rpc-tracker", f"127.0.0.1:{port}",
                                         "--rpc-key", key, programs=3),
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr
        records = [json.loads(line) for line in _records(out)]
        assert len(records) == 3
        assert all(r[1][1][0] < 1e9 for r in records)  # measured, not failed
    finally:
        _stop(server)
        _stop(tracker)
        server_log.close()
    log = (tmp_path / "server.log").read_text()
    assert log.count("load_module") == 3, log  # the server, not a local runner, ran each one


def test_replay_measures_the_same_programs_on_another_profile(configs, tmp_path):
    from gbxfer import load_dataset

    out = tmp_path / "pair"
    first = subprocess.run(_collect(configs, out, programs=3), capture_output=True, text=True,
                           timeout=600)
    assert first.returncode == 0, first.stderr
    replay = subprocess.run(_collect(configs, out, "--replay-from", str(out / "dataset"),
                                     programs=0, hardware="sse-2t"),
                            capture_output=True, text=True, timeout=600)
    assert replay.returncode == 0, replay.stderr
    ds = load_dataset(out / "dataset")
    assert set(ds.hardware) == {"host-1t", "sse-2t"}  # the first profile stays in the dataset
    machines = ds.records.groupby("hardware")["machine"].first()
    assert machines["sse-2t"] == "profile-named box"  # the profile's machine, when it says
    by_hw = ds.records.groupby("hardware")["program_id"].apply(set)
    assert by_hw["host-1t"] == by_hw["sse-2t"] and len(by_hw["sse-2t"]) == 3
    assert ds.summary()["n_programs_on_every_hardware"] == 3


def test_design_space_draws_are_deterministic_and_mutants_are_new_programs():
    from tvm.target import codegen

    from gbxfer.tvm._design_space import DesignSpace
    from gbxfer.tvm._task_modules import task_module
    from gbxfer.records.suite import Task

    mod = task_module(Task("dense", (("M", 16), ("N", 32), ("K", 16))))
    target = tvm.target.Target({"kind": "llvm", "mcpu": codegen.llvm_get_system_cpu(),
                                "num-cores": 1})
    space = DesignSpace(mod, target, "k", seed=3)
    first = space.random(4)
    again = DesignSpace(mod, target, "k", seed=3).random(4)
    assert [c.program_id for c in first] == [c.program_id for c in again]
    assert len({c.program_id for c in first}) == 4
    parents = [c.schedule.trace for c in first[:2]]
    mutants = space.mutants(parents, 3, {c.program_id for c in first})
    assert len(mutants) == 3
    assert not {m.program_id for m in mutants} & {c.program_id for c in first}
    assert [m.program_id for m in mutants] == [
        m.program_id for m in space.mutants(parents, 3, {c.program_id for c in first})]
