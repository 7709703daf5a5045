"""gbxfer as a MetaSchedule cost model: ``tune_tir(..., cost_model=GbxferCostModel())``.

``predict`` featurizes candidates from their traces (and per-store features when the model
uses them) and returns non-negative scores, higher = faster. ``update`` hands the measurements
to :class:`gbxfer.online.OnlineModel`: the pretrained model boosted a few trees further on the
run's measurements, blended with a model of the run's measurements alone by how well each
ranked the latest rounds, so that the run's own data takes over when it ranks better; by
default (``online="choose"``) each task also gets that pair fitted on its own measurements,
and whichever pair ranked the task's latest rounds better ranks its next candidates. Without
a pretrained model (cold start) it predicts random scores until it has ``min_samples``
measurements, then ranks by the session's data alone.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.cost_model import PyCostModel

from ..features import _workload, block_columns, hardware_descriptor, stack_blocks
from ..features._program import ProgramFeaturizer
from ..records.formats._metaschedule import describe_task, run_latency
from ..hardware.descriptor import HardwareDescriptor
from ..model import PRETRAINED, SavedModel
from ..online import DEFAULT_MODE, OnlineModel
from ._json import to_python
from ._intrinsics import import_tensor_intrinsics

log = logging.getLogger("gbxfer")
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
    online : {"choose", "blend", "local", "refine", "session", "prior"}
        How the run's measurements update the model (:mod:`gbxfer.online`; default
        ``choose``).
    update_trees : int
        Trees each update adds to the pretrained model on the run's measurements.
    min_samples : int
        Measurements needed before the first update (cold start: random before).
    seed : int
    """

    def __init__(self, model="pretrained", hardware=None, online=DEFAULT_MODE, update_trees=20,
                 min_samples=16, seed=0):
        super().__init__()
        import_tensor_intrinsics()  # before the tuning run's first TuneContext
        if model == "pretrained":
            model = PRETRAINED
        self.base = model if isinstance(model, SavedModel) or model is None else \
            SavedModel.load(model)
        self.hardware = hardware
        columns = self.base.columns if self.base is not None else \
            [c for block in COLD_BLOCKS for c in block_columns(block)]
        self.online = OnlineModel(self.base, columns, online, update_trees=update_trees,
                                  min_samples=min_samples, seed=seed)
        self.featurizer = ProgramFeaturizer()
        self._context_rows: dict = {}  # workload hash -> (workload vector, hw vector)
        self.update_seconds = 0.0
        self.predict_seconds = 0.0

    @property
    def costs(self) -> list[float]:
        """The run's valid measurements so far (seconds)."""
        return self.online.costs

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
        blocks = self.base.blocks if self.base is not None else COLD_BLOCKS
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

    # --------------------------------------------------------------- PyCostModel
    def load(self, path: str) -> None:
        folder = Path(path)
        base = SavedModel.load(folder / "base") if (folder / "base").exists() else None
        online = self.online
        self.online = OnlineModel(base, base.columns if base is not None else online.columns,
                                  online.mode, online.update_trees, online.session_trees,
                                  online.min_samples, online.window, online.seed)
        self.base = base
        with np.load(folder / "session.npz", allow_pickle=False) as session:
            self.online.restore(dict(session))

    def save(self, path: str) -> None:
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        if self.base is not None:
            self.base.save(folder / "base")
        np.savez(folder / "session.npz", **self.online.state())

    def update(self, context, candidates, results) -> None:
        import time

        if not candidates:
            return
        start = time.perf_counter()
        key, X = self.features(context, candidates)
        costs = [run_latency(r.run_secs) if r.error_msg is None else None for r in results]
        self.online.observe(X, np.array([np.nan if c is None else c for c in costs]), key)
        self.update_seconds += time.perf_counter() - start

    def predict(self, context, candidates) -> np.ndarray:
        import time

        if not candidates:
            return np.zeros(0)
        start = time.perf_counter()
        key, X = self.features(context, candidates)
        scores = self.online.score(X, key)
        self.predict_seconds += time.perf_counter() - start
        return np.asarray(scores, dtype="float64") + 1e-6
