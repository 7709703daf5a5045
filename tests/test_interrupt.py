"""Ctrl-C: the first ends a tuning run after the batch in flight with everything written, the
second stops at once; TVM's worker processes leave SIGINT to gbxfer; an interrupt that TVM
wraps in an error of its own is still reported as an interruption."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pandas as pd
import pytest
from conftest import write_host_profile

from gbxfer.errors import GbxferError
from gbxfer.tvm._interrupt import stop_on_interrupt

SUITE = """name: tiny
networks:
  toy:
    - {op: dense, shape: {M: 32, N: 64, K: 32}, weight: 1}
"""


def _wait_for(condition, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


@pytest.fixture(autouse=True)
def sigint_at_default():
    """The suite may run where SIGINT is ignored (a background job, which gbxfer leaves
    ignored): these tests see it as from a terminal."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def _as_from_a_terminal() -> None:
    """A child's SIGINT at default (not inherited as ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, preexec_fn=_as_from_a_terminal)


def _blocked_in(status: str) -> bool:
    """Whether a /proc/PID/status text shows SIGINT blocked."""
    mask = int(next(line for line in status.splitlines() if line.startswith("SigBlk:"))
               .split()[1], 16)
    return bool(mask & 1 << (signal.SIGINT - 1))


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc")
def test_first_interrupt_stops_at_once_and_everything_is_restored(capsys):
    calls = []
    before = signal.getsignal(signal.SIGINT)
    lock = threading.Lock()
    lock.acquire()
    with stop_on_interrupt(lambda: calls.append(1), "stopping", "exiting") as stopped:
        child = subprocess.run([sys.executable, "-c", "print(open('/proc/self/status').read())"],
                               capture_output=True, text=True, check=True)
        assert _blocked_in(child.stdout)  # a worker started here cannot die of it
        os.kill(os.getpid(), signal.SIGINT)
        assert not lock.acquire(timeout=0.5)  # the main thread waiting is no matter
        assert _wait_for(lambda: calls == [1] and stopped)
    assert signal.getsignal(signal.SIGINT) is before
    assert not _blocked_in(open("/proc/thread-self/status").read())
    assert not any(t.name == "gbxfer-sigint" for t in threading.enumerate())
    assert capsys.readouterr().err == "stopping\n"


def test_the_second_interrupt_exits_at_once_with_status_130():
    """Not a KeyboardInterrupt: raised within TVM, one can abort the process."""
    code = ("import os, signal, time\n"
            "from gbxfer.tvm._interrupt import stop_on_interrupt\n"
            "with stop_on_interrupt(lambda: print('stop', flush=True), 'stopping', 'exiting'):\n"
            "    os.kill(os.getpid(), signal.SIGINT)\n"
            "    time.sleep(1)\n"
            "    os.kill(os.getpid(), signal.SIGINT)\n"
            "    time.sleep(30)\n"
            "    print('not reached')\n")
    done = _python(code)
    assert (done.returncode, done.stdout, done.stderr) == (130, "stop\n",
                                                           "stopping\nexiting\n")


def test_build_and_run_workers_ignore_sigint():
    """Their initializers: the parent decides what a Ctrl-C does."""
    done = _python("import signal\n"
                   "from gbxfer.tvm import _builder, _collect_plan\n"
                   "for start in (lambda: _builder._start_worker(None),\n"
                   "              lambda: _collect_plan._start_worker(1)):\n"
                   "    signal.signal(signal.SIGINT, signal.default_int_handler)\n"
                   "    start()\n"
                   "    print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)\n")
    assert done.stdout.split() == ["True", "True"], done.stderr


def test_an_ignored_sigint_stays_ignored():
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with stop_on_interrupt(lambda: pytest.fail("stopped"), "", "") as stopped:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)
        assert not stopped
    finally:
        signal.signal(signal.SIGINT, before)


def test_an_interrupt_wrapped_in_another_error_is_reported_as_one(monkeypatch, capsys):
    """TVM re-raises a KeyboardInterrupt from a Python callback as an error of its own."""
    from gbxfer import cli

    def interrupted(args):
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            raise RuntimeError("Traceback ... KeyboardInterrupt") from None

    def failing(args):
        raise RuntimeError("a real failure")

    def reported(args):  # TVM's ONNX frontend: any exception becomes "cannot import it"
        try:
            interrupted(args)
        except RuntimeError as exc:
            raise GbxferError(f"model.onnx: TVM's ONNX frontend cannot import it: {exc}")

    for run in (interrupted, reported):
        monkeypatch.setattr(cli._info, "run", run)  # read when the parser is built
        assert cli.main(["info", "bundled"]) == 130
        assert capsys.readouterr().err.strip() == "gbxfer info: interrupted"
    monkeypatch.setattr(cli._info, "run", failing)
    with pytest.raises(RuntimeError, match="a real failure"):
        cli.main(["info", "bundled"])


RESUMABLE = {"collect": ["--suite", "networks", "--hardware", "x86-avx2-1t", "--out"],
             "calibrate": ["--hardware", "x86-avx2-1t", "--out"],
             "study": ["model", "bundled", "--storage"]}


@pytest.mark.parametrize("verb", list(RESUMABLE))
def test_an_interrupted_resumable_command_says_how_to_go_on(monkeypatch, capsys, tmp_path, verb):
    from gbxfer import cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(getattr(cli, f"_{verb}"), "run", interrupted)
    where = f"sqlite:///{tmp_path / 's.db'}" if verb == "study" else str(tmp_path / "out")
    argv = [verb, *RESUMABLE[verb], where]
    assert cli.build_parser().parse_args(argv).resumable
    assert cli.main(argv) == 130
    assert capsys.readouterr().err.strip() == (f"gbxfer {verb}: interrupted; run the same "
                                               "command again to continue where it stopped")
    assert not any(tmp_path.iterdir())


def _tune_in_its_own_group(tmp_path, trials: int):
    """``gbxfer tune`` started as from a terminal: its own process group, SIGINT at default."""
    (tmp_path / "tiny.yaml").write_text(SUITE)
    out = tmp_path / "run"
    argv = [sys.executable, "-m", "gbxfer", "tune", "-q", "--suite", str(tmp_path / "tiny.yaml"),
            "--hardware", str(write_host_profile(tmp_path)), "--cost-model", "random",
            "--trials", str(trials), "--trials-per-iter", "8", "--repeats", "1",
            "--min-repeat-ms", "1", "--jobs", "2", "--out", str(out)]
    process = subprocess.Popen(
        argv, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_as_from_a_terminal)
    deadline = time.monotonic() + 120
    curve = out / "curve.csv"
    while not (curve.is_file() and len(curve.read_text().splitlines()) >= 2):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.2)
    return process, out


@pytest.mark.tvm
def test_ctrl_c_ends_a_tuning_run_after_its_batch_in_flight_with_everything_written(tmp_path):
    pytest.importorskip("tvm")
    process, out = _tune_in_its_own_group(tmp_path, trials=400)
    os.killpg(process.pid, signal.SIGINT)  # as a terminal does: the workers get it too
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    assert "stopping after the measurements in flight" in stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] and 8 <= summary["trials"] < 400
    assert f"interrupted after {summary['trials']} trials" in stderr
    curve = pd.read_csv(out / "curve.csv")
    assert curve["trials"].max() == summary["trials"]
    assert curve["failures"].max() == 0  # the batch in flight ran: its workers survived
    assert len((out / "metaschedule" / "database_tuning_record.json").read_text()
               .splitlines()) == summary["trials"]


@pytest.mark.tvm
def test_a_second_ctrl_c_stops_at_once_without_a_traceback(tmp_path):
    pytest.importorskip("tvm")
    process, out = _tune_in_its_own_group(tmp_path, trials=400)
    os.killpg(process.pid, signal.SIGINT)
    watchdog = threading.Timer(120, process.kill)  # a hang fails below instead of stalling
    watchdog.start()
    first = []  # stderr up to the first interrupt's message: the second comes after it
    while not first or "stopping after" not in first[-1]:
        first.append(process.stderr.readline())
        assert first[-1], "".join(first)
    os.killpg(process.pid, signal.SIGINT)
    stdout, rest = process.communicate(timeout=60)
    watchdog.cancel()
    stderr = "".join(first) + rest
    assert process.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "gbxfer tune: interrupted"
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    assert not (out / "summary.json").exists()


def test_ctrl_c_while_the_command_line_loads_ends_quietly():
    """The `gbxfer` script imports gbxfer.__main__ (light), which loads the CLI itself."""
    code = ("import sys\n"
            "class Interrupt:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'gbxfer.cli':\n"
            "            raise KeyboardInterrupt\n"
            "sys.meta_path.insert(0, Interrupt())\n"
            "from gbxfer.__main__ import main\n"
            "assert 'pandas' not in sys.modules  # the package's face loads nothing heavy\n"
            "sys.exit(main())\n")
    done = _python(code)
    assert (done.returncode, done.stderr) == (130, "gbxfer: interrupted\n")
