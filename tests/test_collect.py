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
        "name: sse-2t\nfamily: sse\n"
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


def test_killed_collection_resumes_without_loss_or_repeats(configs, tmp_path, monkeypatch):
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

    # the finished task is listed under its plan, and a third run skips it without drawing
    complete = json.loads((out / "metaschedule" / "complete.json").read_text())
    (plan, tasks), = complete.items()
    assert "programs=5 seed=0" in plan and "profiles=host-1t" in plan and len(tasks) == 1
    from gbxfer.cli import main

    class Drew(Exception):
        pass

    def draw(*args, **kwargs):
        raise Drew

    monkeypatch.setattr("gbxfer.tvm._collect.DesignSpace", draw)
    args = _collect(configs, out)[3:]  # the CLI arguments after "-m gbxfer"
    assert main(args) == 0
    assert _records(out) == after and len(load_dataset(out / "dataset")) == 5
    with pytest.raises(Drew):  # another seed is another plan: its programs are drawn
        main(args + ["--seed", "1"])


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


class _Devices:
    """A TVM RPC tracker and one RPC server per key on 127.0.0.1, each server logging to
    ``folder/server-KEY.log``; stopped on exit."""

    def __init__(self, folder, keys):
        self.folder, self.keys = folder, keys

    def __enter__(self):
        self.port = _free_port()
        self.procs = [subprocess.Popen(
            [sys.executable, "-m", "tvm.exec.rpc_tracker", "--host", "127.0.0.1", "--port",
             str(self.port), "--port-end", str(self.port + 1)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
        _wait_for(lambda: _accepts(self.port), "RPC tracker")
        self.logs = []
        for key in self.keys:
            log = open(self.folder / f"server-{key}.log", "w")
            self.logs.append(log)
            server_port = _free_port()
            self.procs.append(subprocess.Popen(
                [sys.executable, "-m", "tvm.exec.rpc_server", "--host", "127.0.0.1", "--port",
                 str(server_port), "--port-end", str(server_port + 1), "--tracker",
                 f"127.0.0.1:{self.port}", "--key", key], stdout=log, stderr=subprocess.STDOUT))
            _wait_for(lambda k=key: _registered(self.port, k), f"RPC server {key}")
        return self

    def __exit__(self, *exc):
        for proc in reversed(self.procs):
            _stop(proc)
        for log in self.logs:
            log.close()

    def runs(self, key) -> int:
        """Programs the server of ``key`` loaded (ran)."""
        return (self.folder / f"server-{key}.log").read_text().count("load_module")


def test_one_collection_measures_on_two_devices(configs, tmp_path):
    keys = [f"gbxfer-a-{os.getpid()}", f"gbxfer-b-{os.getpid()}"]
    (configs / "host-b.yaml").write_text(
        (configs / "host-1t.yaml").read_text().replace("name: host-1t", "name: host-b"))
    out = tmp_path / "two"
    argv = _collect(configs, out, "--rpc-key", ",".join(keys), programs=3)
    argv[argv.index("--hardware") + 1] += f",{configs / 'host-b.yaml'}"
    with _Devices(tmp_path, keys) as devices:
        result = subprocess.run([*argv, "--rpc-tracker", f"127.0.0.1:{devices.port}"],
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr
    from gbxfer import load_dataset
    ds = load_dataset(out / "dataset")
    by_hw = ds.records.groupby("hardware")["program_id"].apply(set)
    assert set(by_hw.index) == {"host-1t", "host-b"} and by_hw["host-1t"] == by_hw["host-b"]
    assert len(by_hw["host-b"]) == 3 and ds.records["valid"].all()
    assert all(r[1][1][0] < 1e9 for r in map(json.loads, _records(out)))  # measured
    # each device ran its profile's programs (the servers, not a local runner)
    assert [devices.runs(k) for k in keys] == [3, 3]


def test_replay_measures_the_same_programs_on_another_profile(configs, tmp_path):
    from gbxfer import load_dataset

    out = tmp_path / "pair"
    cores = sorted(os.sched_getaffinity(0))  # kernels on the last core, builds on the others
    overlap = ["--run-cores", str(cores[-1]), "--batch-size", "2"] if len(cores) > 1 else []
    first = subprocess.run(_collect(configs, out, *overlap, programs=3), capture_output=True,
                           text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    replay = subprocess.run(_collect(configs, out, "--replay-from", str(out / "dataset"),
                                     programs=0, hardware="sse-2t"),
                            capture_output=True, text=True, timeout=600)
    assert replay.returncode == 0, replay.stderr
    ds = load_dataset(out / "dataset")
    assert set(ds.hardware) == {"host-1t", "sse-2t"}  # the first profile stays in the dataset
    from gbxfer.hardware.probe import host_machine
    assert ds.machines == [host_machine()]  # two profiles of this one machine
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


def test_a_profile_of_another_machine_is_refused_before_measuring(configs, tmp_path, capsys):
    from gbxfer.cli import main

    other = tmp_path / "other.yaml"
    other.write_text((configs / "host-1t.yaml").read_text().replace(
        "name: host-1t", "name: other-1t\nmachine: Some CPU (zen9)"))
    assert main(["collect", "--suite", str(configs / "tiny.yaml"), "--hardware", str(other),
                 "--programs", "2", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "of the machine 'Some CPU (zen9)'" in err and "Traceback" not in err
    assert not (tmp_path / "o" / "metaschedule" / "other-1t").exists()

