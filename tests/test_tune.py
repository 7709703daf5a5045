"""gbxfer tune: MetaSchedule tuning with gbxfer's cost model, database and tuning curve."""
from __future__ import annotations

import json

import numpy as np
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


def test_a_stopped_or_finished_run_continues_where_its_curve_ends(tmp_path, capsys):
    """Rerun with the same arguments: a run killed halfway (no summary, a half-written last
    database line) or finished continues to a larger budget, measuring no program twice."""
    from gbxfer.cli import main

    (tmp_path / "tiny.yaml").write_text(SUITE)
    out = tmp_path / "run"
    argv = ["tune", "-q", "--suite", str(tmp_path / "tiny.yaml"), "--tasks", "dense_16_32_16",
            "--hardware", str(write_host_profile(tmp_path)), "--model", "none",
            "--trials-per-iter", "8", "--population", "64", "--repeats", "1",
            "--min-repeat-ms", "1", "--out", str(out)]
    records = out / "metaschedule" / "database_tuning_record.json"
    assert main([*argv, "--trials", "16"]) == 0
    assert "layout" not in json.loads((out / "run.json").read_text())  # as runs before it
    _replays_in_the_order_measured(out, tmp_path / "tiny.yaml")
    (out / "summary.json").unlink()  # as a kill leaves it
    with open(records, "a") as f:
        f.write('[0, [[["Sample')  # an append cut off
    assert main([*argv, "--trials", "24"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["trials"] == 24 and summary["continued_from"]["trials"] == 16
    assert summary["builds"]["programs"] == 24  # the totals are the whole run's
    assert summary["rounds"] == len(pd.read_csv(out / "curve.csv")) > 2  # a row a round
    assert main([*argv, "--trials", "32"]) == 0  # a finished run, to a larger budget
    summary = json.loads((out / "summary.json").read_text())
    assert summary["builds"]["programs"] == 32
    assert summary["rounds"] == len(pd.read_csv(out / "curve.csv"))
    assert summary["seconds"] > summary["builds"]["seconds"]
    curve = pd.read_csv(out / "curve.csv")
    trials = curve["trials"].tolist()  # batches cut short of programs measured before
    assert trials[:2] == [8, 16] and {24, 32} <= set(trials) and trials == sorted(trials)
    assert curve["seconds"].is_monotonic_increasing
    assert curve["best_0"].is_monotonic_decreasing
    traces = [json.dumps(json.loads(line)[1][0]) for line in records.read_text().splitlines()]
    assert len(traces) == len(set(traces)) == 32
    capsys.readouterr()
    for extra, words in ((["--trials", "32"], "already spent --trials 32"),
                         (["--trials", "40", "--seed", "1"], "other arguments (--seed)")):
        assert main([*argv, *extra]) == 2
        assert words in capsys.readouterr().err
    assert pd.read_csv(out / "curve.csv")["trials"].max() == 32
    _damaged_folders_are_refused_or_caught_up(out, argv, capsys)


def _damaged_folders_are_refused_or_caught_up(out, argv, capsys):
    """A lost curve is caught up from the database; damaged files are one-line errors."""
    import shutil

    lost = out.with_name("lost")
    shutil.copytree(out, lost)
    (lost / "curve.csv").unlink()
    assert main_in(lost, argv, "--trials", "32") == 0  # nothing left to tune: summarized
    summary = json.loads((lost / "summary.json").read_text())
    assert summary["trials"] == 32 and summary["best_latency"]["dense_16_32_16"] > 0
    for name, text, words in (
            ("metaschedule/database_tuning_record.json", "[0, [\"x\"]]\n",
             "line 33 is not a MetaSchedule record"),
            ("curve.csv", "hello\n", "not a tuning curve"),
            ("run.json", "[]", "not the arguments of a tuning run")):
        damaged = out.with_name(name.replace("/", "-"))
        shutil.copytree(out, damaged)
        with open(damaged / name, "a" if name.endswith("record.json") else "w") as f:
            f.write(text)
        capsys.readouterr()
        assert main_in(damaged, argv, "--trials", "40") == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0], err


def main_in(folder, argv, *extra) -> int:
    from gbxfer.cli import main

    return main([*argv[:argv.index("--out")], "--out", str(folder), *extra])


def _replays_in_the_order_measured(out, suite):
    """A resumed run's cost model learns every earlier measurement, in the database files'
    order (TVM's get_all_tuning_records sorts by run time)."""
    from tvm.s_tir import meta_schedule as ms

    from gbxfer.records.suite import load_suite
    from gbxfer.tvm import GbxferCostModel
    from gbxfer.tvm._database import records_in_order
    from gbxfer.tvm._task_modules import task_module
    from gbxfer.tvm._resume import replay_measured

    lines = (out / "metaschedule" / "database_tuning_record.json").read_text().splitlines()
    records = records_in_order(out / "metaschedule")
    assert [[float(t) for t in r.run_secs] for _, r in records] == [
        json.loads(line)[1][1] for line in lines]
    task = load_suite(suite).select(["dense_16_32_16"]).tasks[0]
    context = ms.TuneContext(mod=task_module(task), target=tvm.target.Target("llvm"))
    model = GbxferCostModel(model=None)
    measured = replay_measured(model, [context], records, 8)
    assert len(measured) == len(lines) and len(model.costs) == len(lines)
    assert model.costs == [float(np.mean(json.loads(line)[1][1])) for line in lines]


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


def test_totals_add_up_over_parts_and_a_damaged_file_counts_from_here(tmp_path, caplog):
    from gbxfer.tvm._resume import add_totals, read_totals, write_totals

    part = {"seconds": 2.5, "rounds": 3, "builds": {"programs": 24, "seconds": 1.0}}
    assert read_totals(tmp_path) == {}
    write_totals(tmp_path, add_totals({}, part))
    run = add_totals(read_totals(tmp_path), part)
    assert run == {"seconds": 5.0, "rounds": 6, "builds": {"programs": 48, "seconds": 2.0}}
    assert add_totals({"rounds": "x", "builds": 7}, part) == part  # not numbers: count 0
    (tmp_path / "totals.json").write_text("{not json")
    with caplog.at_level("WARNING", logger="gbxfer"):
        assert read_totals(tmp_path) == {}
    assert "damaged" in caplog.text
