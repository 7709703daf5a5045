"""TVM's per-store features (164 per buffer store), aggregated per program, with a disk cache.

Each program's trace is replayed on its task's workload IR (when TVM 0.27 can load it) and
MetaSchedule's ``PerStoreFeature`` extractor reads the result; the stores of a program are
aggregated by sum, mean and max. Programs whose IR does not load (older TVM databases, Ansor
logs) get NaN, never zeros. Results are cached per program in the user cache directory
(``$GBXFER_CACHE`` or ``~/.cache/gbxfer``), so a second run costs nothing.
"""
from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

import numpy as np
import orjson
import pandas as pd
from tqdm.auto import tqdm

from ..records.columns import isin
from ._intrinsics import import_tensor_intrinsics

log = logging.getLogger("gbxfer")
N_PER_STORE = 164
AGGREGATES = ("sum", "mean", "max")
COLUMNS = [f"{agg}_{i}" for agg in AGGREGATES for i in range(N_PER_STORE)]


def cache_dir() -> Path:
    base = os.environ.get("GBXFER_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "gbxfer")
    return Path(base) / "per_store"


def aggregate(per_store: np.ndarray) -> np.ndarray:
    """(n_stores, 164) -> 492 values: sum, mean, max over stores (zeros for no store)."""
    if per_store.size == 0:
        return np.zeros(len(COLUMNS))
    return np.concatenate([per_store.sum(0), per_store.mean(0), per_store.max(0)])


def load_workload(task_key: str, workload_text: str):
    """The task's IRModule, or None when this TVM cannot read it."""
    from tvm.s_tir import meta_schedule as ms

    try:
        return ms.database.Workload.from_json([task_key, workload_text]).mod
    except Exception as exc:  # noqa: BLE001 - TVM raises several kinds on foreign IR JSON
        log.debug("workload %s does not load in this TVM: %s", task_key, str(exc)[:200])
        return None


def measure_candidates(mod, traces):
    """``(rows, candidates)``: MetaSchedule candidates of the traces (JSON values) that apply
    to ``mod``, and their positions in ``traces``."""
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.schedule import Schedule, Trace

    args_info = ms.arg_info.ArgInfo.from_prim_func(mod["main"]) if "main" in [
        gv.name_hint for gv in mod.get_global_vars()] else []
    candidates, rows = [], []
    for i, trace in enumerate(traces):
        sch = Schedule(mod, seed=1)
        try:
            Trace.apply_json_to_schedule(trace, sch)
        except Exception:  # noqa: BLE001 - a trace that does not apply is left out
            continue
        candidates.append(ms.MeasureCandidate(sch, args_info))
        rows.append(i)
    return rows, candidates


def extract(mod, target, traces) -> np.ndarray:
    """Per-store features of programs (trace JSON values) of one workload: (n, 492)."""
    from tvm.s_tir import meta_schedule as ms

    import_tensor_intrinsics()
    context = ms.TuneContext(mod=mod, target=target, task_name="features", num_threads=1)
    extractor = ms.feature_extractor.PerStoreFeature(extract_workload=False)
    out = np.full((len(traces), len(COLUMNS)), np.nan)
    rows, candidates = measure_candidates(mod, traces)
    if candidates:
        for i, features in zip(rows, extractor.extract_from(context, candidates)):
            out[i] = aggregate(features.numpy())
    return out


def per_store_features(dataset, progress: bool = True, use_cache: bool = True,
                       precomputed: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per-store features of every distinct MetaSchedule program of ``dataset``.

    Returns a frame indexed by program id with :data:`COLUMNS`; NaN rows where the workload IR
    does not load in this TVM or the trace does not apply. Programs in ``precomputed`` (for
    example ``dataset.per_store``) are taken from it, not computed again.
    """
    import tvm

    records = dataset.records.drop_duplicates("program_id")
    records = records[records["source_format"] == "metaschedule"]
    done = None
    if precomputed is not None:
        done = precomputed[isin(precomputed.index, records["program_id"])]
        records = records[~isin(records["program_id"], done.index)]
    tasks = dataset.tasks.set_index("task_key")
    folder = cache_dir()
    frames = []
    for task_key, group in tqdm(records.groupby("task_key", sort=False), desc="per-store",
                                unit=" task", disable=None if progress else True):
        # the task key comes from the data: hashed, never a path
        cache = folder / f"{hashlib.sha256(task_key.encode()).hexdigest()[:32]}.parquet"
        cached = pd.read_parquet(cache) if use_cache and cache.exists() else None
        todo = group if cached is None else group[~isin(group["program_id"], cached.index)]
        if len(todo):
            mod = load_workload(task_key, tasks.loc[task_key, "workload"])
            if mod is None:
                values = np.full((len(todo), len(COLUMNS)), np.nan)
            else:
                target = tvm.target.Target(orjson.loads(todo["target"].iloc[0]))
                values = extract(mod, target, [orjson.loads(t) for t in todo["program"]])
            fresh = pd.DataFrame(values, index=pd.Index(todo["program_id"], name="program_id"),
                                 columns=COLUMNS)
            cached = fresh if cached is None else pd.concat([cached, fresh])
            if use_cache:
                folder.mkdir(parents=True, exist_ok=True)
                tmp = cache.with_suffix(".tmp")
                cached.to_parquet(tmp)
                os.replace(tmp, cache)
        frames.append(cached.loc[group["program_id"]])
    if done is not None and len(done):
        frames.insert(0, done.astype(np.float64))
    if not frames:
        return pd.DataFrame(columns=COLUMNS, index=pd.Index([], name="program_id"))
    return pd.concat(frames)
