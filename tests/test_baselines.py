"""TVM's XGBModel as a baseline on stored records: scores what loads, NaN for foreign IR."""
from __future__ import annotations

import numpy as np
import pytest

from gbxfer import Dataset, ingest

tvm = pytest.importorskip("tvm")
pytestmark = pytest.mark.tvm


def test_xgbmodel_baseline_learns_from_stored_records(example_db, ms_a100_dataset):
    from gbxfer.tvm import XGBModelBaseline

    ds = ingest([example_db])
    cache: dict = {}
    baseline = XGBModelBaseline(cache=cache).fit(ds)
    assert set(baseline.models) == set(ds.hardware)
    scores = baseline.predict(ds)
    assert np.isfinite(scores).all() and len(np.unique(scores)) > 1
    # per-store features are extracted once per program and shared through the cache
    assert len(cache) == ds.records["program_id"].nunique()
    foreign = ms_a100_dataset.filter(task=ms_a100_dataset.records["task_key"].iloc[0])
    both = Dataset.concat([ds, foreign])
    scores = XGBModelBaseline(cache=cache).fit(ds).predict(both)
    is_foreign = both.records["task_key"].isin(foreign.records["task_key"]).to_numpy()
    assert np.isnan(scores[is_foreign]).all() and np.isfinite(scores[~is_foreign]).all()
