"""Whole Relax networks: their tasks tuned by ``tune``, the database cut at any trial count,
compiled and timed end to end."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import write_host_profile

tvm = pytest.importorskip("tvm")
pytestmark = pytest.mark.tvm


def mlp():
    from tvm import relax

    rng = np.random.default_rng(0)
    bb = relax.BlockBuilder()
    data = relax.Var("data", relax.TensorType((4, 64), "float32"))
    with bb.function("main", [data]):
        with bb.dataflow():
            w = relax.const(rng.random((64, 32), dtype="float32"))
            x = bb.emit(relax.op.nn.relu(bb.emit(relax.op.matmul(data, w))))
            w2 = relax.const(rng.random((32, 8), dtype="float32"))
            out = bb.emit_output(bb.emit(relax.op.matmul(x, w2)))
        bb.emit_func_output(out)
    return bb.get()


def test_resnet18_has_the_fused_tasks_of_resnet18():
    from gbxfer.tvm._networks import extract_tasks, prepare, resnet18

    tasks = extract_tasks(prepare(resnet18()), tvm.target.Target({"kind": "llvm"}))
    weights = {t.task_name: t.weight for t in tasks}
    convs = [name for name in weights if name.startswith("fused_conv2d")]
    assert sum(weights[name] for name in convs) == 20  # 17 3x3/7x7 + 3 projections
    assert {"max_pool2d", "adaptive_avg_pool2d", "fused_matmul_add9"} <= set(weights)


def test_network_tuned_then_compiled_from_a_database_prefix(tmp_path):
    from gbxfer.hardware import load_profile
    from gbxfer.tvm._networks import (compile_network, database_prefix, extract_tasks,
                                      network_inputs, prepare, scheduled_functions,
                                      time_network)
    from gbxfer.tvm._tune import tune

    profile = load_profile(write_host_profile(tmp_path))
    target = tvm.target.Target(profile.target)
    mod = mlp()
    tasks = extract_tasks(prepare(mod), target)
    result = tune(tasks, profile, "random", 16, tmp_path / "run", trials_per_iter=8,
                  progress=False, repeats=1, min_repeat_ms=1, population=32)
    assert result.names == [t.task_name for t in tasks]
    written = pd.read_csv(tmp_path / "run" / "curve.csv")  # as the run went
    assert written["trials"].tolist() == result.curve["trials"].tolist()
    folder = tmp_path / "run" / "metaschedule"
    lines = (folder / "database_tuning_record.json").read_text().splitlines()
    assert len(lines) == 16  # one line per measured program
    first = result.curve.iloc[0]  # after the first batch of 8
    prefix = database_prefix(folder, int(first["trials"]))
    assert len(prefix.get_all_tuning_records()) == first["trials"]
    for i, task in enumerate(tasks):  # the prefix's best is the curve's best at that point
        workload = prefix.commit_workload(task.dispatched[0])
        top = prefix.get_top_k(workload, 1)
        best = first[f"best_{i}"]
        assert (np.median([float(s) for s in top[0].run_secs]) == pytest.approx(best)
                if top else best == np.inf)
    assert [x.shape for x in network_inputs(mod)] == [(4, 64)]
    database = database_prefix(folder, 16)
    tuned = sum(bool(database.get_top_k(database.commit_workload(t.dispatched[0]), 1))
                for t in tasks)
    assert tuned >= 1
    # the network as built gets every tuned function from the database; prepared twice, it
    # would not match it (the mistake that compiled ResNet-18 untuned)
    assert scheduled_functions(mod, database, target) == (tuned, len(tasks))
    assert scheduled_functions(prepare(mod), database, target)[0] < tuned
    seconds = time_network(compile_network(mod, database, target), network_inputs(mod),
                           repeat=2)
    assert len(seconds) == 2 and all(0 < s < 0.1 for s in seconds)


def test_prefer_parallel_picks_a_parallel_record_within_the_margin_only():
    from tvm.s_tir import Schedule
    from tvm.s_tir import meta_schedule as ms

    from gbxfer.tvm._networks import extract_tasks, has_parallel_loop, prefer_parallel, prepare

    target = tvm.target.Target({"kind": "llvm"})
    mod = extract_tasks(prepare(mlp()), target)[0].dispatched[0]
    serial, parallel = Schedule(mod), Schedule(mod)
    matmul = parallel.get_child_blocks(parallel.get_sblock("root"))[0]
    parallel.parallel(parallel.get_loops(matmul)[0])
    assert has_parallel_loop(ms.database.TuningRecord(parallel.trace, ms.database.Workload(mod)))

    def database(serial_secs, parallel_secs):
        db = ms.database.MemoryDatabase()
        workload = db.commit_workload(mod)
        for sch, secs in ((serial, serial_secs), (parallel, parallel_secs)):
            db.commit_tuning_record(ms.database.TuningRecord(
                sch.trace, workload, [float(s) for s in secs], target))
        return db

    def pick(db, within):
        (record,) = prefer_parallel(db, within).get_all_tuning_records()
        return has_parallel_loop(record)

    assert pick(database([1.00], [1.03]), 0.05)  # 3% slower at 1 thread: the parallel one
    assert not pick(database([1.00], [1.03]), 0.02)  # beyond the margin: the fastest
    assert pick(database([1.05], [1.00]), 0.0)  # the fastest is parallel anyway
    assert not pick(database([1.00], [1e10]), 0.5)  # a failed record is never picked
    assert not prefer_parallel(database([1e10], [1e10]), 0.5).get_all_tuning_records()


NETWORK_FILE = '''
import numpy as np
from tvm import relax


def build():
    bb = relax.BlockBuilder()
    data = relax.Var("data", relax.TensorType((4, 64), "float32"))
    with bb.function("main", [data]):
        with bb.dataflow():
            w = relax.const(np.ones((64, 16), dtype="float32"))
            out = bb.emit_output(bb.emit(relax.op.nn.relu(bb.emit(relax.op.matmul(data, w)))))
        bb.emit_func_output(out)
    return bb.get()
'''


def test_gbxfer_tune_relax_network_from_a_file(tmp_path, capsys):
    import json

    from gbxfer.cli import main

    (tmp_path / "net.py").write_text(NETWORK_FILE)
    profile = write_host_profile(tmp_path)
    out = tmp_path / "run"
    common = ["tune", "-q", "--hardware", str(profile), "--model", "none", "--trials", "8",
              "--trials-per-iter", "8", "--population", "32", "--repeats", "1",
              "--min-repeat-ms", "1", "--out", str(out)]
    assert main([*common, "--relax", f"{tmp_path / 'net.py'}:build"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["trials"] == 8 and list(summary["weights"].values()) == [1]
    assert 0 < summary["end_to_end_ms"] < 100
    assert summary["scheduled_functions"] == [1, 1]  # compiled with its one tuned task
    packed = [*common[:-1], str(tmp_path / "packed"), "--weight-layout", "packed"]
    assert main([*packed, "--relax", f"{tmp_path / 'net.py'}:build"]) == 0
    summary = json.loads((tmp_path / "packed" / "summary.json").read_text())
    assert summary["weight_layout"] == "packed" and 0 < summary["end_to_end_ms"] < 100
    assert summary["scheduled_functions"] == [1, 1]  # its task, with the weights rearranged
    assert main([*common, "--relax", f"{tmp_path / 'net.py'}:missing"]) != 0
    assert "net.py: no function 'missing'" in capsys.readouterr().err
    assert main([*common, "--relax", "resnet19"]) != 0
    assert "neither a known network (resnet18) nor FILE.py:FUNCTION" in capsys.readouterr().err
