"""TVM per-store features: computed from replayed traces, cached, NaN where the IR is foreign,
stored in datasets and shipped with the bundled one."""
from __future__ import annotations

import numpy as np
import pytest

from gbxfer import Dataset, ingest, load_bundled
from gbxfer.cli import main
from gbxfer.features import build

pytest.importorskip("tvm")
from gbxfer.tvm import _per_store  # noqa: E402


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GBXFER_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_tvm027_programs_get_finite_features_and_the_cache_answers_the_second_run(
        example_db, cache, monkeypatch):
    ds = ingest([example_db])
    table = _per_store.per_store_features(ds, progress=False)
    assert table.shape == (ds.records["program_id"].nunique(), len(_per_store.COLUMNS))
    assert np.isfinite(table.to_numpy()).all()
    assert len(np.unique(table.to_numpy(), axis=0)) > 1  # programs differ
    monkeypatch.setattr(_per_store, "extract", lambda *a: pytest.fail("cache not used"))
    again = _per_store.per_store_features(ds, progress=False)
    assert np.array_equal(again.loc[table.index].to_numpy(), table.to_numpy())


def test_foreign_ir_is_marked_missing_not_zero(ms_a100_dataset, cache):
    task = ms_a100_dataset.records["task_key"].iloc[0]
    ds = ms_a100_dataset.filter(task=task)
    table = _per_store.per_store_features(ds, progress=False)
    assert len(table) == ds.records["program_id"].nunique()
    assert table.isna().all().all()


def test_features_cli_stores_them_in_the_dataset_and_build_reads_them(example_db, cache,
                                                                      tmp_path):
    folder = tmp_path / "ds"
    assert main(["ingest", "-q", str(example_db), "--out", str(folder)]) == 0
    with pytest.raises(Exception, match="gbxfer features DATASET --per-store"):
        build(Dataset.load(folder), ["program", "per_store"])
    assert main(["features", "-q", str(folder), "--per-store"]) == 0
    ds = Dataset.load(folder)
    fm = build(ds, ["program", "per_store"])
    assert len(fm.block_columns("per_store")) == len(_per_store.COLUMNS)
    assert np.isfinite(fm.select_blocks(["per_store"]).X).all()
    out = tmp_path / "features.csv"
    assert main(["features", "-q", str(folder), "--blocks", "program,per_store",
                 "--out", str(out)]) == 0
    assert out.read_text().splitlines()[0].startswith("record_id,program_id")


def test_bundled_dataset_ships_its_per_store_features():
    ds = load_bundled()
    assert ds.per_store is not None
    fm = build(ds, ["per_store"])
    covered = ~np.isnan(fm.X).all(axis=1)
    assert covered.mean() > 0.99
