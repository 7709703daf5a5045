"""TVM's own cost model as a baseline in gbxfer's harness: ``XGBModel`` driven through its
``update``/``predict`` API on stored records (per-store features, its own parameters).

``XGBModel`` groups its data by workload, so one instance learns one hardware profile; the
baseline keeps one per profile. It predicts random scores until it has 100 samples, as in
tuning. Records whose workload IR does not load in TVM 0.27 cannot be scored (NaN).
"""
from __future__ import annotations

import time

import numpy as np
import orjson

from ._per_store import load_workload, measure_candidates


class XGBModelBaseline:
    """One TVM ``XGBModel`` per hardware profile, fed task by task through ``update``."""

    def __init__(self, adaptive_training: bool = True, single_model: bool = False):
        self.adaptive_training = adaptive_training
        self.single_model = single_model  # one XGBModel for every profile, keyed "all"
        self.models = {}
        self.seconds = {"update": 0.0, "predict": 0.0}

    def _tasks(self, dataset):
        import tvm

        tasks = dataset.tasks.set_index("task_key")
        for (task_key, hw), g in dataset.records.groupby(["task_key", "hardware"], sort=True):
            mod = load_workload(task_key, tasks.loc[task_key, "workload"])
            if mod is None:
                continue
            target = tvm.target.Target(orjson.loads(g["target"].iloc[0]))
            yield hw, mod, target, g

    def fit(self, dataset):
        from tvm.s_tir import meta_schedule as ms

        for hw, mod, target, g in self._tasks(dataset.filter(valid=True)):
            key = "all" if self.single_model else hw
            if key not in self.models:
                self.models[key] = ms.cost_model.XGBModel(
                    num_tuning_cores=1, adaptive_training=self.adaptive_training)
            model = self.models[key]
            rows, candidates = measure_candidates(mod, [orjson.loads(t) for t in g["program"]])
            results = [ms.runner.RunnerResult(run_secs=[float(c) for c in g["costs"].iloc[i]],
                                              error_msg=None) for i in rows]
            context = ms.TuneContext(mod=mod, target=target, num_threads=1)
            start = time.perf_counter()
            model.update(context, candidates, results)
            self.seconds["update"] += time.perf_counter() - start
        return self

    def predict(self, dataset) -> np.ndarray:
        """Scores aligned with ``dataset.records`` (NaN where a record cannot be scored)."""
        from tvm.s_tir import meta_schedule as ms

        out = np.full(len(dataset.records), np.nan)
        position = {rid: i for i, rid in enumerate(dataset.records["record_id"])}
        for hw, mod, target, g in self._tasks(dataset):
            model = self.models.get("all" if self.single_model else hw)
            if model is None:
                continue
            rows, candidates = measure_candidates(mod, [orjson.loads(t) for t in g["program"]])
            context = ms.TuneContext(mod=mod, target=target, num_threads=1)
            start = time.perf_counter()
            scores = model.predict(context, candidates)
            self.seconds["predict"] += time.perf_counter() - start
            for i, score in zip(rows, scores):
                out[position[g["record_id"].iloc[i]]] = score
        return out
