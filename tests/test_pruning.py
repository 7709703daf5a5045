"""Pruning keeps a representative, deterministic fraction of each group."""
from __future__ import annotations

import numpy as np
import pytest

from gbxfer import GbxferError
from gbxfer.cli import main
from gbxfer.pruning import (chunk_shares, herding, k_center_greedy, k_means_medoids, prune,
                            select)


def test_k_center_greedy_picks_the_farthest_point_each_time():
    points = np.array([[0.0], [1.0], [10.0], [4.0]])
    assert k_center_greedy(points, 3, [0]) == [0, 2, 3]


def test_k_means_medoids_follow_the_density_where_k_center_follows_the_outliers():
    rng = np.random.default_rng(0)
    dense = rng.normal(0.0, 1.0, (180, 2))  # 90% of the points
    angle = rng.uniform(0, 2 * np.pi, 20)
    ring = np.c_[np.cos(angle), np.sin(angle)] * rng.uniform(5, 7, (20, 1))
    points = np.vstack([dense, ring])
    medoids = k_means_medoids(points, 20, seed=0)
    assert len(set(medoids)) == 20 and list(k_means_medoids(points, 20, seed=0)) == list(medoids)
    k_center = np.array(k_center_greedy(points, 20, [0]))
    assert (medoids < 180).sum() >= 10 > (k_center < 180).sum()


def test_herding_keeps_each_cluster_in_its_share_without_duplicates():
    rng = np.random.default_rng(0)
    points = np.vstack([rng.normal(0.0, 1.0, (300, 3)), rng.normal(6.0, 0.5, (100, 3))])
    points = np.vstack([points, points[:50]])  # 50 exact duplicates of the first cluster
    kept = herding(points, 45, np.random.default_rng(1))
    assert len(set(kept)) == 45
    # the second cluster is 100 of 450 points: a random draw of 45 keeps 10 +- 2.8 of it
    assert 8 <= (kept[(kept >= 300) & (kept < 400)]).size <= 12
    # a duplicate adds nothing to the kernel mean once its twin is kept
    twins = set(kept[kept >= 400] - 400) & set(kept[kept < 50])
    assert not twins
    # at most CHUNK points: one chunk, the same picks whatever the generator
    assert list(herding(points, 45, np.random.default_rng(7))) == list(kept)


def test_chunk_shares_add_up_and_never_exceed_their_chunk():
    for n, k in [(2050, 2049), (3074, 3073), (5000, 17), (1024, 1024), (3000, 3000)]:
        parts = chunk_shares(n, k, np.random.default_rng(0))
        assert sum(m for _, m in parts) == k and all(m <= len(c) for c, m in parts)
    points = np.random.default_rng(0).normal(size=(3074, 3))  # 4 chunks: 769, 769, 768, 768
    assert len(set(herding(points, 3073, np.random.default_rng(0)))) == 3073


@pytest.mark.parametrize("method", ["herding", "coreset", "kcenter", "random"])
def test_keeps_the_fraction_of_every_group_deterministically(ansor_a100_dataset, method):
    ds = ansor_a100_dataset
    kept = prune(ds, 0.25, method, seed=4)
    valid = ds.filter(valid=True)
    for (task, hw), g in valid.groups():
        n_kept = ((kept.records["task_key"] == task) & (kept.records["hardware"] == hw)).sum()
        assert n_kept == max(2, int(np.ceil(0.25 * len(g))))
    again = prune(ds, 0.25, method, seed=4)
    assert list(again.records["record_id"]) == list(kept.records["record_id"])
    assert kept.records["valid"].all()


def test_kcenter_keeps_the_fastest_programs(ansor_a100_dataset):
    ds = ansor_a100_dataset
    kept = set(prune(ds, 0.2, "kcenter").records["record_id"])
    for _, g in ds.filter(valid=True).groups():
        assert g.loc[g["latency"].idxmin(), "record_id"] in kept


def test_other_seed_other_random_selection(ansor_a100_dataset):
    a = select(ansor_a100_dataset, 0.3, "random", seed=1)
    b = select(ansor_a100_dataset, 0.3, "random", seed=2)
    assert not np.array_equal(a, b)


def test_bad_arguments(ansor_a100_dataset):
    with pytest.raises(GbxferError, match="unknown pruning method"):
        prune(ansor_a100_dataset, 0.5, "vibes")
    with pytest.raises(GbxferError, match="--keep"):
        prune(ansor_a100_dataset, 1.5)


def test_cli_prune(ansor_a100_dataset, tmp_path, capsys):
    ansor_a100_dataset.save(tmp_path / "ds")
    assert main(["prune", str(tmp_path / "ds"), "--keep", "0.5", "--out",
                 str(tmp_path / "small"), "-q"]) == 0
    assert main(["info", str(tmp_path / "small"), "--json"]) == 0
    import json
    info = json.loads(capsys.readouterr().out)
    assert info["n_records"] < len(ansor_a100_dataset) * 0.55


def test_calibration_order_visits_every_task_in_turn_fastest_first():
    from gbxfer import load_dataset
    from gbxfer.pruning import calibration_order

    bundled = load_dataset("bundled")
    order = calibration_order(bundled, seed=0)
    chosen = bundled.records.iloc[order]
    n_tasks = bundled.records["task_key"].nunique()
    valid = bundled.records[bundled.records["valid"]]
    assert chosen["program_id"].is_unique and len(order) == valid["program_id"].nunique()
    first = chosen.iloc[:n_tasks]
    assert first["task_key"].nunique() == n_tasks  # any prefix is spread over the tasks
    fastest = chosen.groupby("task_key")["latency"].min()
    assert (first.set_index("task_key")["latency"] == fastest[first["task_key"]].values).all()
    assert np.array_equal(order, calibration_order(bundled, seed=0))
    assert not np.array_equal(order, calibration_order(bundled, seed=1))  # the task order
