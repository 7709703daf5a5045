"""gbxfer inside MetaSchedule: GbxferCostModel in tune_tir, cold and pretrained; save/load."""
from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")
pytestmark = pytest.mark.tvm


@pytest.fixture(scope="module")
def task():
    from tvm.s_tir import meta_schedule as ms

    from gbxfer.tvm._design_space import DesignSpace
    from gbxfer.tvm._task_modules import task_module
    from gbxfer.records.suite import Task

    mod = task_module(Task("dense", (("M", 16), ("N", 64), ("K", 32))))
    # a fixed CPU, not this host's: nothing is built or run, and the gate's effect on the
    # scores depends on the target's descriptor (on a Sapphire Rapids host it had none)
    target = tvm.target.Target({"kind": "llvm", "mcpu": "znver3", "num-cores": 1})
    candidates = [ms.MeasureCandidate(c.schedule, ms.arg_info.ArgInfo.from_prim_func(
        mod["main"])) for c in DesignSpace(mod, target, "t", 0).random(24)]
    context = ms.TuneContext(mod=mod, target=target, num_threads=1)
    return context, candidates


def _results(candidates, seed=0):
    from tvm.s_tir import meta_schedule as ms

    rng = np.random.default_rng(seed)
    return [ms.runner.RunnerResult(run_secs=[float(x)], error_msg=None)
            for x in rng.uniform(1e-5, 1e-3, len(candidates))]


def test_cold_start_is_random_then_learns(task):
    from gbxfer.tvm import GbxferCostModel

    context, candidates = task
    model = GbxferCostModel(model=None, min_samples=16)
    assert model.online.mode == "choose"  # the default online mode
    model.update(context, [], [])  # MetaSchedule calls it with empty lists
    scores = model.predict(context, candidates)
    assert scores.dtype == np.float64 and (scores >= 0).all()
    model.update(context, candidates, _results(candidates))
    assert model.online.session is not None  # fitted on the 24 measurements
    learned = model.predict(context, candidates)
    assert (learned >= 0).all() and len(np.unique(learned)) > 1


def test_save_and_load_round_trip(task, tmp_path):
    from gbxfer.tvm import GbxferCostModel

    context, candidates = task
    model = GbxferCostModel(model=None, min_samples=8)
    model.update(context, candidates, _results(candidates))
    model.save(str(tmp_path / "cm"))
    again = GbxferCostModel(model=None)
    again.load(str(tmp_path / "cm"))
    assert np.allclose(again.predict(context, candidates), model.predict(context, candidates))
    assert not list((tmp_path / "cm").rglob("*.pkl"))


def test_gated_model_scores_the_same_inside_tvm_and_out_before_and_after_an_update(task):
    """The adapter predicts through SavedModel.predict (gate, columns and booster together),
    and the online update keeps the gate."""
    from gbxfer.online import batch_ranks
    from gbxfer.records.dataset import load_bundled
    from gbxfer.training import train
    from gbxfer.tvm import GbxferCostModel

    context, candidates = task
    bundled = load_bundled()
    tasks = bundled.tasks["task_key"].tolist()[:6]
    gated = train(bundled.select(bundled.records["task_key"].isin(tasks).to_numpy()),
                  {"blocks": ["program", "workload", "hardware"], "params": {"n_estimators": 30},
                   "attention": {"steps": 100, "probe_estimators": 10}})
    assert gated.gate is not None

    adapter = GbxferCostModel(model=gated, min_samples=8)
    _, X = adapter.features(context, candidates)
    assert np.allclose(adapter.predict(context, candidates),
                       batch_ranks(gated.predict(X, gated.columns)) + 1e-6)
    assert not np.allclose(gated.predict(X, gated.columns), gated.ranker.predict(X))  # gated
    adapter.update(context, candidates, _results(candidates))
    refined = adapter.online.refined
    assert refined is not gated and refined.gate is gated.gate
    assert set(adapter.online.weight.values()) == {0}  # one round: nothing to prefer it by
    assert np.allclose(adapter.predict(context, candidates),
                       batch_ranks(refined.predict(X, gated.columns)) + 1e-6)


def test_tune_tir_with_gbxfer_cost_model(task, tmp_path):
    from tvm.s_tir import meta_schedule as ms

    from gbxfer.tvm import GbxferCostModel, local_builder, metaschedule_logging

    context, _ = task
    model = GbxferCostModel(model=None, min_samples=8)
    with metaschedule_logging():  # pytest's capture handlers sit on MetaSchedule's logger
        db = ms.tir_integration.tune_tir(
            context.mod, context.target, str(tmp_path / "work"), max_trials_global=16,
            num_trials_per_iter=8, builder=local_builder(),
            runner=ms.runner.LocalRunner(evaluator_config=ms.runner.EvaluatorConfig(
                number=1, repeat=1, min_repeat_ms=1)), cost_model=model, seed=1,
            num_tuning_cores=1)
    records = db.get_all_tuning_records()
    assert len(records) == 16
    assert len(model.costs) > 0  # update saw the measurements


def test_tune_relax_network_with_pretrained_cost_model(tmp_path):
    """A Relax model's fused tasks, tuned through MetaSchedule's relax integration."""
    import tvm
    from tvm import relax
    from tvm.relax.frontend import nn
    from tvm.s_tir import meta_schedule as ms

    from gbxfer.tvm import GbxferCostModel, local_builder, metaschedule_logging

    class MLP(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(32, 16, bias=False)

        def forward(self, x):
            return nn.op.relu(self.fc(x))

    mod, _ = MLP().export_tvm({"forward": {"x": nn.spec.Tensor((8, 32), "float32")}})
    mod = tvm.ir.transform.Sequential([
        relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
        relax.transform.FuseOps(), relax.transform.FuseTIR()])(mod)
    model = GbxferCostModel(min_samples=8)  # the shipped pretrained model
    with metaschedule_logging():  # pytest's capture handlers sit on MetaSchedule's logger
        db = ms.relax_integration.tune_relax(
            mod, {}, tvm.target.Target({"kind": "llvm", "num-cores": 1}), str(tmp_path / "work"),
            max_trials_global=8, num_trials_per_iter=8, builder=local_builder(),
            runner=ms.runner.LocalRunner(evaluator_config=ms.runner.EvaluatorConfig(
                number=1, repeat=1, min_repeat_ms=1)), cost_model=model, seed=1,
            strategy=ms.search_strategy.EvolutionarySearch(population_size=32))
    assert len(db.get_all_tuning_records()) >= 8
    assert len(model.costs) >= 8 and model.online.refined is not model.base  # boosted online


@pytest.mark.parametrize("name", [None, "mine"])
def test_metaschedule_starts_its_loggers_beside_a_foreign_handler(tmp_path, name):
    """MetaSchedule's logger setup (run by every tune_* call) fails on a handler it did not
    configure; inside metaschedule_logging it runs, and the handler is back afterwards."""
    import logging

    from tvm.s_tir.meta_schedule.logging import get_loggers_from_work_dir

    from gbxfer.tvm import metaschedule_logging

    logger = logging.getLogger("tvm.s_tir.meta_schedule")
    handler = logging.NullHandler()
    handler.set_name(name)
    logger.addHandler(handler)
    try:
        with metaschedule_logging():
            get_loggers_from_work_dir(str(tmp_path), ["task"])
            get_loggers_from_work_dir(str(tmp_path), ["task"])  # once configured, again
        assert handler in logger.handlers
    finally:
        logger.removeHandler(handler)


def test_printed_traces_featurize_like_their_json(task):
    from gbxfer.features._program import ProgramFeaturizer
    from gbxfer.tvm._json import to_python

    _, candidates = task
    traces = [to_python(c.sch.trace.as_json()) for c in candidates]
    texts = [str(c.sch.trace) for c in candidates]
    asked = []

    def trace_of(i):
        asked.append(i)
        return traces[i]

    featurizer = ProgramFeaturizer()
    expected = ProgramFeaturizer().transform_traces(traces)
    for _ in range(2):  # first sight of each sketch asks for its JSON, then the text suffices
        assert np.array_equal(featurizer.transform_printed(texts, trace_of), expected)
    assert 0 < len(asked) < len(candidates)
    assert all(featurizer._printed.values())  # every sketch's printed form was understood


def test_printed_gpu_traces_featurize_like_their_json():
    """GPU sketches print thread bindings and cooperative fetches: the text path reads them."""
    from gbxfer.features._program import ProgramFeaturizer
    from gbxfer.tvm._design_space import DesignSpace
    from gbxfer.tvm._json import to_python
    from gbxfer.tvm._task_modules import task_module
    from gbxfer.records.suite import Task

    mod = task_module(Task("dense", (("M", 16), ("N", 64), ("K", 32))))
    target = tvm.target.Target({"kind": "cuda", "arch": "sm_80", "max_threads_per_block": 1024,
                                "max_shared_memory_per_block": 49152, "thread_warp_size": 32})
    schedules = [c.schedule for c in DesignSpace(mod, target, "t", 0).random(16)]
    traces = [to_python(s.trace.as_json()) for s in schedules]
    featurizer = ProgramFeaturizer()
    rows = featurizer.transform_printed([str(s.trace) for s in schedules], traces.__getitem__)
    assert np.array_equal(rows, ProgramFeaturizer().transform_traces(traces))
    assert all(featurizer._printed.values())
    assert rows[:, featurizer.columns.index("bind_thread")].max() > 0
