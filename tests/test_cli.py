"""The gbxfer command: version, help, quiet/verbose on every verb, ingest + info."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gbxfer import __version__
from gbxfer.cli import build_parser, main


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_every_verb_takes_quiet_and_verbose():
    parser = build_parser()
    verbs = parser._subparsers._group_actions[0].choices
    for name, sub in verbs.items():
        options = {o for action in sub._actions for o in action.option_strings}
        assert {"-q", "-v", "--quiet", "--verbose"} <= options, name


def test_console_script_runs_without_traceback_on_missing_dataset(tmp_path):
    result = subprocess.run([sys.executable, "-m", "gbxfer", "info", str(tmp_path / "nope")],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert "no such dataset" in result.stderr
    assert "Traceback" not in result.stderr
    (tmp_path / "empty").mkdir()
    result = subprocess.run([sys.executable, "-m", "gbxfer", "info", str(tmp_path / "empty")],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "not a gbxfer dataset" in result.stderr


def test_ingest_then_info_json(example_db, tmp_path, capsys):
    out = tmp_path / "ds"
    assert main(["ingest", str(example_db), "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().err
    assert main(["info", str(out), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    for key in ("n_lines", "n_records", "n_valid", "n_tasks", "hardware"):
        assert key in info
    (hw,) = info["hardware"].values()
    assert set(hw) >= {"family", "n_lines", "n_records", "n_valid", "n_failed", "n_tasks"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["commands"][0]["argv"].startswith("gbxfer")


def test_info_prints_a_table(example_db, tmp_path, capsys):
    out = tmp_path / "ds"
    main(["ingest", str(example_db), "--out", str(out), "-q"])
    capsys.readouterr()
    assert main(["info", str(out)]) == 0
    text = capsys.readouterr().out
    assert "lines read" in text and "latency_median" not in text and "--tasks" in text
    assert main(["info", str(out), "--tasks"]) == 0
    text = capsys.readouterr().out
    assert "latency_median" in text and "matmul" in text  # the task by its description


def test_hardware_option_on_the_command_line(example_db, tmp_path, capsys):
    out = tmp_path / "ds"
    main(["ingest", str(example_db), "--out", str(out), "--hardware", "mybox:zen", "-q"])
    main(["info", str(out), "--json"])
    info = json.loads(capsys.readouterr().out)
    assert info["hardware"]["mybox"]["family"] == "zen"


def test_info_shows_the_machines(example_db, tmp_path, capsys):
    out = tmp_path / "ds"
    main(["ingest", str(example_db), "--out", str(out), "--hardware", "box-1t:x86-avx2",
          "--machine", "Some CPU (zen9)", "-q"])
    capsys.readouterr()
    assert main(["info", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Some CPU (zen9)" in text and "machine" in text
    assert main(["info", "bundled", "--json"]) == 0
    machines = json.loads(capsys.readouterr().out)["machines"]
    assert list(machines) == ["AMD EPYC (zen3)", "AMD EPYC (zen4)", "Intel Xeon (emeraldrapids)",
                              "Intel Xeon (sapphirerapids)"]
    assert machines["AMD EPYC (zen3)"]["hardware"] == ["x86-avx-1t", "x86-avx2-1t",
                                                       "x86-avx2-2t", "x86-sse42-1t",
                                                       "x86-sse42-2t"]
    assert machines["AMD EPYC (zen4)"]["hardware"] == ["zen4-avx2-1t", "zen4-avx512-1t"]
    assert machines["Intel Xeon (sapphirerapids)"]["hardware"] == [
        "spr-avx-1t", "spr-avx2-1t", "spr-avx512-1t", "spr-sse42-1t"]
    assert machines["Intel Xeon (emeraldrapids)"]["hardware"] == ["emr-avx2-1t", "emr-avx512-1t"]


@pytest.mark.parametrize("machine", ["", "   ", "a\tb"])
def test_a_bad_machine_name_is_a_one_line_error(example_db, tmp_path, capsys, machine):
    with pytest.raises(SystemExit):
        main(["ingest", str(example_db), "--out", str(tmp_path / "ds"), "--machine", machine])
    err = capsys.readouterr().err
    assert "machine" in err and "Traceback" not in err


def test_out_of_memory_is_one_line_that_says_what_to_do(tmp_path, capsys, monkeypatch):
    import pyarrow as pa
    from gbxfer.cli import _model

    def too_big(path):
        raise pa.ArrowMemoryError("realloc of size 5083870720 failed")
    monkeypatch.setattr(_model, "load_dataset_arg", too_big)
    assert main(["train", "bundled", "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "out of memory" in err[0] and "--dask local" in err[0]
    assert "realloc of size" in err[0] and not (tmp_path / "m").exists()
