"""gbxfer as a MetaSchedule cost model: ``tune_tir(..., cost_model=GbxferCostModel())``.

``predict`` featurizes candidates from their traces (and per-store features when the model
uses them) and returns non-negative scores, higher = faster. ``update`` keeps the measurements
of the tuning session and continues boosting from the pretrained booster on them (a few trees,
not a retrain from scratch). Without a pretrained model (cold start) it predicts random scores
until it has ``min_samples`` measurements, then boosts on the session's data alone.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.cost_model import PyCostModel

from ..records.dataset import BUNDLED
from ..features import _workload, block_columns, hardware_descriptor, stack_blocks
from ..features._program import ProgramFeaturizer
from ..records.formats._metaschedule import describe_task, run_latency
from ..hardware.descriptor import HardwareDescriptor
from ..model import GBCostRanker, SavedModel
from ._json import to_python

log = logging.getLogger("gbxfer")
PRETRAINED = BUNDLED.parent / "pretrained"
COLD_BLOCKS = ("program", "workload", "hardware")  # the blocks of a cold start


@derived_object
class GbxferCostModel(PyCostModel):
    """A gbxfer ranking model inside MetaSchedule's search.

    Parameters
    ----------
    model : str, Path, SavedModel or None
        A saved gbxfer model; ``"pretrained"`` (default) is the one shipped with gbxfer;
        ``None`` starts cold.
    hardware : str, optional
        Hardware profile name whose descriptor the model sees (default: derived from the
        tuning target).
    update_trees : int
        Trees added by each ``update`` on the session's measurements.
    min_samples : int
        Measurements needed before the first update boosts (cold start: random before).
    seed : int
    """

    def __init__(self, model="pretrained", hardware=None, update_trees=20, min_samples=16,
                 seed=0):
        super().__init__()
        if model == "pretrained":
            model = PRETRAINED
        self.base = model if isinstance(model, SavedModel) or model is None else \
            SavedModel.load(model)
        self.hardware = hardware
        self.update_trees = update_trees
        self.min_samples = min_samples
        self.seed = seed
        self.current = self.base
        self.featurizer = ProgramFeaturizer()
        self._context_rows: dict = {}  # workload hash -> (workload vector, hw vector)
        self.X: list[np.ndarray] = []
        self.costs: list[float] = []
        self.groups: list[str] = []
        self.rng = np.random.default_rng(seed)
        self.update_seconds = 0.0
        self.predict_seconds = 0.0

    # --------------------------------------------------------------- features
    def _static_rows(self, context, candidates):
        import tvm
        import tvm_ffi
        from tvm.s_tir import meta_schedule as ms

        key = str(tvm_ffi.structural_hash(context.mod))
        if key not in self._context_rows:
            trace = to_python(candidates[0].sch.trace.as_json())
            args = [to_python(a.as_json()) for a in
                    ms.arg_info.ArgInfo.from_prim_func(context.mod["main"])]
            task = describe_task(trace, args)
            flops = float(tvm.s_tir.analysis.estimate_tir_flops(context.mod))
            workload = _workload.workload_vector(task["operator"], task["args"], flops)
            target = to_python(context.target.export())
            if self.hardware:
                hw = hardware_descriptor(self.hardware, "", json.dumps(target)).vector()
            else:
                hw = HardwareDescriptor.from_target(target).vector()
            self._context_rows[key] = (workload, hw)
        return key, self._context_rows[key]

    def features(self, context, candidates) -> tuple[str, np.ndarray]:
        key, (workload, hw) = self._static_rows(context, candidates)
        program = self.featurizer.transform_printed(
            [str(c.sch.trace) for c in candidates],
            lambda i: to_python(candidates[i].sch.trace.as_json()))
        blocks = self.current.blocks if self.current is not None else COLD_BLOCKS
        return key, stack_blocks(blocks, len(candidates), {
            "program": program, "workload": workload, "hardware": hw,
            "per_store": lambda: self._per_store(context, candidates)})

    @staticmethod
    def _per_store(context, candidates):
        from tvm.s_tir import meta_schedule as ms

        from ._per_store import aggregate

        extractor = ms.feature_extractor.PerStoreFeature(extract_workload=False)
        return np.stack([aggregate(f.numpy()) for f in
                         extractor.extract_from(context, candidates)])

    def columns(self) -> list[str]:
        if self.current is not None:
            return self.current.columns
        return [c for block in COLD_BLOCKS for c in block_columns(block)]

    # --------------------------------------------------------------- PyCostModel
    def load(self, path: str) -> None:
        folder = Path(path)
        self.base = SavedModel.load(folder / "base") if (folder / "base").exists() else None
        self.current = SavedModel.load(folder / "current") if (
            folder / "current").exists() else self.base
        session = np.load(folder / "session.npz", allow_pickle=False)
        self.X = list(session["X"])
        self.costs = list(session["costs"])
        self.groups = list(session["groups"])

    def save(self, path: str) -> None:
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        if self.base is not None:
            self.base.save(folder / "base")
        if self.current is not None and self.current is not self.base:
            self.current.save(folder / "current")
        width = len(self.X[0]) if self.X else 0
        np.savez(folder / "session.npz", X=np.array(self.X).reshape(-1, width),
                 costs=np.array(self.costs, dtype=float),
                 groups=np.array(self.groups, dtype=str))

    def update(self, context, candidates, results) -> None:
        import time

        if not candidates:
            return
        start = time.perf_counter()
        key, X = self.features(context, candidates)
        for row, result in zip(X, results):
            latency = run_latency(result.run_secs)
            if result.error_msg is None and latency is not None:
                self.X.append(row)
                self.costs.append(latency)
                self.groups.append(key)
        if len(self.costs) >= self.min_samples:
            self._boost()
        self.update_seconds += time.perf_counter() - start

    def _boost(self) -> None:
        X = np.array(self.X)
        costs = np.array(self.costs)
        groups = np.array(self.groups)
        best = {g: costs[groups == g].min() for g in np.unique(groups)}
        label = np.array([best[g] for g in groups]) / costs
        params = dict(self.base.ranker.get_params()) if self.base is not None else {}
        # leaves small enough for a session's few measurements
        min_child = min(params.get("min_child_samples", 20), max(2, len(costs) // 10))
        params.update(n_estimators=self.update_trees, random_state=self.seed,
                      min_child_samples=min_child)
        if self.base is None:
            ranker = GBCostRanker(**params).fit(X, label, groups=groups)
            self.current = SavedModel(ranker, self.columns(), extra={"online": True})
            return
        # more trees on the base booster's own input (gated when the base model is)
        ranker = GBCostRanker(**params).fit(self.base.transform(X, self.base.columns), label,
                                            groups=groups, init_model=self.base.ranker.booster_)
        self.current = SavedModel(ranker, self.base.columns, extra={"online": True},
                                  gate=self.base.gate)

    def predict(self, context, candidates) -> np.ndarray:
        import time

        if not candidates:
            return np.zeros(0)
        start = time.perf_counter()
        if self.current is None:
            scores = self.rng.random(len(candidates))
        else:
            _, X = self.features(context, candidates)
            raw = self.current.predict(X, self.columns())
            span = raw.max() - raw.min()
            scores = (raw - raw.min()) / span if span > 0 else np.full(len(raw), 0.5)
        self.predict_seconds += time.perf_counter() - start
        return np.asarray(scores, dtype="float64") + 1e-6

