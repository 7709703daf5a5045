"""TVM's own cost model as a baseline in gbxfer's harness: ``XGBModel`` (per-store features,
its own parameters, its own training and prediction code) on stored records.

``XGBModel`` groups its data by workload, so one instance learns one hardware profile; the
baseline keeps one per profile (or one for all, ``single_model=True``, as a pretrained model
carried to new hardware). Records whose workload IR does not load in TVM 0.27 cannot be scored
(NaN). A program's per-store features do not depend on the hardware it ran on: they are
extracted once per program (``cache`` may be shared between baselines, e.g. across seeds).
"""
from __future__ import annotations

import time

import numpy as np
import orjson

from ._per_store import load_workload, measure_candidates
from ..records.columns import isin
from ._intrinsics import import_tensor_intrinsics


class XGBModelBaseline:
    """One TVM ``XGBModel`` per hardware profile, given every task as ``update`` would."""

    def __init__(self, adaptive_training: bool = True, single_model: bool = False,
                 cache: dict | None = None):
        self.adaptive_training = adaptive_training
        self.single_model = single_model  # one XGBModel for every profile, keyed "all"
        self.cache = {} if cache is None else cache  # program id -> per-store matrix
        self.models = {}
        self.seconds = {"features": 0.0, "update": 0.0, "predict": 0.0}

    def _groups(self, dataset):
        """``(hardware, task_key, records, per-store matrices or None per record)``."""
        import tvm
        from tvm.s_tir import meta_schedule as ms

        tasks = dataset.tasks.set_index("task_key")
        extractor = ms.feature_extractor.PerStoreFeature()  # XGBModel's default extractor
        for task_key, t in dataset.records.groupby("task_key", sort=True):
            todo = t.drop_duplicates("program_id")
            todo = todo[~isin(todo["program_id"], self.cache)]
            if len(todo):
                start = time.perf_counter()
                mod = load_workload(task_key, tasks.loc[task_key, "workload"])
                for pid in todo["program_id"]:
                    self.cache[pid] = None
                if mod is not None:
                    target = tvm.target.Target(orjson.loads(todo["target"].iloc[0]))
                    rows, candidates = measure_candidates(
                        mod, [orjson.loads(p) for p in todo["program"]])
                    import_tensor_intrinsics()
                    context = ms.TuneContext(mod=mod, target=target, num_threads=1)
                    for i, f in zip(rows, extractor.extract_from(context, candidates)):
                        matrix = f.numpy().astype("float32")
                        self.cache[todo["program_id"].iloc[i]] = matrix if len(matrix) else None
                self.seconds["features"] += time.perf_counter() - start
            for hw, g in t.groupby("hardware", sort=True):
                yield hw, task_key, g, [self.cache[p] for p in g["program_id"]]

    def fit(self, dataset):
        """Store every valid record, one group per (task, profile), as ``XGBModel.update``
        does, then train once on all of it with XGBModel's own training code (``update``
        retrains from scratch on all its data, so its last training is this one)."""
        from tvm.s_tir import meta_schedule as ms
        from tvm.s_tir.meta_schedule.cost_model.xgb_model import FeatureGroup

        for hw, task_key, g, features in self._groups(dataset.filter(valid=True)):
            key = "all" if self.single_model else hw
            if key not in self.models:
                self.models[key] = ms.cost_model.XGBModel(
                    num_tuning_cores=1, adaptive_training=self.adaptive_training)
            model = self.models[key]
            keep = [i for i, f in enumerate(features) if f is not None]
            if not keep:
                continue
            costs = np.array([float(np.median(g["costs"].iloc[i])) for i in keep],
                             dtype="float32")
            group_hash = f"{task_key}|{hw}"
            if group_hash in model.data:
                model.data[group_hash].append([features[i] for i in keep], costs)
            else:
                model.data[group_hash] = FeatureGroup(group_hash, [features[i] for i in keep],
                                                      costs)
            model.data_size += len(keep)
        for model in self.models.values():
            start = time.perf_counter()
            model._train(  # what update runs, on everything at once
                xs=[f for group in model.data.values() for f in group.features],
                ys=np.concatenate([group.min_cost / group.costs
                                   for group in model.data.values()]))
            model.last_train_size = model.data_size
            self.seconds["update"] += time.perf_counter() - start
        return self

    def predict(self, dataset) -> np.ndarray:
        """Scores aligned with ``dataset.records`` (NaN where a record cannot be scored)."""
        out = np.full(len(dataset.records), np.nan)
        position = {rid: i for i, rid in enumerate(dataset.records["record_id"])}
        for hw, _, g, features in self._groups(dataset):
            model = self.models.get("all" if self.single_model else hw)
            keep = [i for i, f in enumerate(features) if f is not None]
            if model is None or not keep:
                continue
            start = time.perf_counter()
            scores = model._predict([features[i] for i in keep])
            self.seconds["predict"] += time.perf_counter() - start
            for i, score in zip(keep, scores):
                out[position[g["record_id"].iloc[i]]] = score
        return out
