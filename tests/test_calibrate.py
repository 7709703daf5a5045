"""gbxfer calibrate: bundled programs measured here for a time budget, the pretrained model
carried over, resumable (needs TVM; real measurements)."""
from __future__ import annotations

import json

from conftest import write_host_profile

from gbxfer import load_bundled
from gbxfer.cli import main
from gbxfer.model import SavedModel

TASKS = "global_avg_pool2d_1_7_7_512,dense_1_768_768"


def test_calibrate_measures_for_its_budget_transfers_and_resumes(tmp_path, capsys):
    profile = write_host_profile(tmp_path)
    out = tmp_path / "cal"
    bundled = load_bundled()  # one profile's dense and pooling tasks as the source data: the
    operator = bundled.records["task_key"].map(bundled.tasks.set_index("task_key")["operator"])
    source = bundled.select(((bundled.records["hardware"] == "zen4-avx2-1t")
                             & operator.isin(["dense", "global_avg_pool2d"])).to_numpy())
    source.save(tmp_path / "source")  # transfer's retrainings then take seconds, not a minute
    argv = ["calibrate", "--hardware", str(profile), "--tasks", TASKS, "--minutes", "0.6",
            "--source-data", str(tmp_path / "source"), "--out", str(out), "-q"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "tune with: gbxfer tune" in printed
    state = json.loads((out / "calibrate.json").read_text())
    assert state["profile"] == "host-1t" and state["tasks"] == 2  # both tasks, in turn
    # the budget stops it: no batch starts after 36 s, and the one running then may overrun by
    # its build and runs (slow on a loaded machine, hence the margin)
    assert 2 <= state["programs"] and state["seconds"] < 0.6 * 60 + 120
    model = SavedModel.load(out / "model")
    assert model.extra["calibration"]["programs"] == state["programs"]
    assert len(model.extra["transfer"]["shot_record_ids"]) == state["valid"]
    lines = (out / "measurements" / "metaschedule" / "host-1t"
             / "database_tuning_record.json").read_text().splitlines()
    assert len(lines) == state["programs"]
    assert main(argv) == 0  # the budget is spent: nothing more measured, the model again
    again = json.loads((out / "calibrate.json").read_text())
    assert again["programs"] == state["programs"] and again["seconds"] == state["seconds"]


def test_without_a_profile_calibrate_probes_this_machine_into_one(tmp_path):
    from gbxfer.cli._calibrate import _probe_into
    from gbxfer.hardware import load_profile
    from gbxfer.hardware.probe import host_machine

    profile = load_profile(str(_probe_into(tmp_path / "cal" / "hardware.yaml")))
    assert profile.machine == host_machine() and profile.threads == 1
    assert profile.descriptor["peak_gflops"] > 0 and profile.target["mcpu"]


def test_a_profile_of_the_models_own_data_is_refused(tmp_path, capsys):
    assert main(["calibrate", "--hardware", "x86-avx2-1t", "--minutes", "1", "--out",
                 str(tmp_path / "cal")]) == 2
    assert "a profile of the model's own data" in capsys.readouterr().err
