"""gbxfer tune: MetaSchedule tuning with gbxfer's cost model, database and tuning curve."""
from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import write_host_profile

tvm = pytest.importorskip("tvm")
pytestmark = pytest.mark.tvm

SUITE = """name: tiny
networks:
  toy:
    - {op: dense, shape: {M: 16, N: 32, K: 16}, weight: 2}
    - {op: softmax, shape: {M: 8, N: 64}, weight: 1}
"""


def test_tune_writes_database_curve_and_summary(tmp_path):
    from gbxfer import ingest
    from gbxfer.cli import main

    (tmp_path / "tiny.yaml").write_text(SUITE)
    profile = write_host_profile(tmp_path)
    out = tmp_path / "run"
    assert main(["tune", "-q", "--suite", str(tmp_path / "tiny.yaml"), "--network", "toy",
                 "--hardware", str(profile), "--model", "none", "--trials", "16",
                 "--trials-per-iter", "8", "--population", "64", "--repeats", "1",
                 "--min-repeat-ms", "1", "--build-timeout", "30", "--out", str(out)]) == 0
    curve = pd.read_csv(out / "curve.csv")
    assert curve["trials"].max() == 16 and curve["trials"].is_monotonic_increasing
    assert curve["seconds"].is_monotonic_increasing
    assert (out / "curve.png").stat().st_size > 0
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["best_latency"]) == {"dense_16_32_16", "softmax_8_64"}
    assert summary["weights"] == {"dense_16_32_16": 2, "softmax_8_64": 1}
    assert all(0 < v < 1 for v in summary["best_latency"].values())
    assert summary["cost_model_seconds"]["predict"] > 0
    builds = summary["builds"]
    assert builds["programs"] == 16 and builds["timeout"] == 30 and builds["timeouts"] == 0
    assert 0 < builds["seconds"] < summary["seconds"]
    assert summary["cost_model_seconds"]["predict"] < summary["search_seconds"]
    assert summary["search_seconds"] + builds["seconds"] < summary["seconds"]
    assert summary["online"]["mode"] == "choose"  # cold: the session model once it exists
    assert summary["online"]["tasks_led_by_session"] >= 1  # tasks measured after 16 trials
    assert summary["online"]["tasks_ranked_by_their_own_models"] == 0  # < 16 trials per task
    ds = ingest([out / "metaschedule"])
    assert ds.records["task_key"].nunique() == 2 and ds.records["valid"].sum() >= 8


def test_programs_slower_to_build_than_the_timeout_fail_and_are_counted(tmp_path):
    from gbxfer.cli import main

    (tmp_path / "tiny.yaml").write_text(SUITE)
    out = tmp_path / "run"
    assert main(["tune", "-q", "--suite", str(tmp_path / "tiny.yaml"), "--tasks",
                 "dense_16_32_16", "--hardware", str(write_host_profile(tmp_path)),
                 "--cost-model", "random", "--trials", "8", "--trials-per-iter", "8",
                 "--population", "64", "--repeats", "1", "--min-repeat-ms", "1",
                 "--build-timeout", "0.01", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["builds"]["timeouts"] == summary["builds"]["programs"] == 8
    assert pd.read_csv(out / "curve.csv")["failures"].iloc[-1] == 8


def test_jobs_search_and_build_in_parallel(tmp_path):
    from gbxfer.cli import main

    (tmp_path / "tiny.yaml").write_text(SUITE)
    out = tmp_path / "run"
    assert main(["tune", "-q", "--suite", str(tmp_path / "tiny.yaml"), "--network", "toy",
                 "--hardware", str(write_host_profile(tmp_path)), "--cost-model", "random",
                 "--trials", "32", "--trials-per-iter", "8", "--population", "64",
                 "--repeats", "1", "--min-repeat-ms", "1", "--jobs", "2",
                 "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["jobs"] == 2 and summary["population"] == 64
    assert summary["builds"]["programs"] == 32 and summary["builds"]["timeouts"] == 0
    assert summary["search_seconds"] > 0
    assert pd.read_csv(out / "curve.csv")["failures"].iloc[-1] == 0


def test_a_smaller_population_only_for_gbxfer_in_a_budget_of_minutes():
    from gbxfer.tvm import GbxferCostModel
    from gbxfer.tvm._tune import default_population

    gbxfer = GbxferCostModel(model=None)
    assert default_population(gbxfer, 30.0) == 128
    assert default_population(gbxfer, None) == 512  # trials: searching costs no trials
    assert default_population("xgb", 30.0) == default_population("random", 30.0) == 512


def test_an_online_mode_that_needs_a_model_refuses_a_cold_start(tmp_path, capsys):
    from gbxfer.cli import main

    (tmp_path / "tiny.yaml").write_text(SUITE)
    profile = write_host_profile(tmp_path)
    assert main(["tune", "--suite", str(tmp_path / "tiny.yaml"), "--hardware", str(profile),
                 "--model", "none", "--online", "refine", "--trials", "8",
                 "--out", str(tmp_path / "run")]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--online refine needs a model" in err[0]
    assert not (tmp_path / "run" / "summary.json").exists()


@pytest.mark.parametrize("earlier", ["metaschedule/database_tuning_record.json", "summary.json"])
def test_an_earlier_run_in_out_is_not_mixed_into_a_new_one(tmp_path, capsys, earlier):
    from gbxfer.cli import main

    (tmp_path / "tiny.yaml").write_text(SUITE)
    out = tmp_path / "run"
    (out / earlier).parent.mkdir(parents=True, exist_ok=True)
    (out / earlier).write_text('[0, [[[], []], [1e-3], {"kind": "llvm"}, []]]\n')
    before = sorted(p.name for p in out.rglob("*"))
    assert main(["tune", "--suite", str(tmp_path / "tiny.yaml"), "--hardware",
                 str(write_host_profile(tmp_path)), "--model", "none", "--trials", "8",
                 "--out", str(out)]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds an earlier tuning run" in err[0]
    assert sorted(p.name for p in out.rglob("*")) == before
