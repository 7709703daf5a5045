"""Pruning keeps a representative, deterministic fraction of the records, spread over the groups."""
from __future__ import annotations

import numpy as np
import pytest

from gbxfer import GbxferError
from gbxfer.cli import main
from gbxfer.pruning import (chunk_shares, group_budgets, herding, k_center_greedy,
                            k_means_medoids, prune, select)


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
    kept = prune(ds, 0.25, method, seed=4, allocation="proportional")
    valid = ds.filter(valid=True)
    for (task, hw), g in valid.groups():
        n_kept = ((kept.records["task_key"] == task) & (kept.records["hardware"] == hw)).sum()
        assert n_kept == max(2, int(np.ceil(0.25 * len(g))))
    again = prune(ds, 0.25, method, seed=4, allocation="proportional")
    assert list(again.records["record_id"]) == list(kept.records["record_id"])
    assert kept.records["valid"].all() and kept.manifest["pruned"]["allocation"] == "proportional"


def test_balanced_budgets_keep_the_same_total_small_groups_whole():
    sizes = [4, 42, 60, 150, 700, 2600]
    proportional = group_budgets(sizes, 0.4)
    assert list(proportional) == [2, 17, 24, 60, 280, 1040]
    balanced = group_budgets(sizes, 0.4, power=0.0)
    assert balanced.sum() == proportional.sum() == 1423
    # water level c with 4 + 42 + 60 + 150 + 2c = 1423: c = 583.5, rounded one up, one down
    assert list(balanced[:4]) == [4, 42, 60, 150] and sorted(balanced[4:]) == [583, 584]
    sqrt = group_budgets(sizes, 0.4, power=0.5)
    assert sqrt.sum() == 1423 and np.all(np.diff(sqrt) >= 0) and np.all(sqrt <= sizes)
    assert list(group_budgets([1, 2, 3], 0.1, power=0.0)) == [1, 2, 2]  # at least 2 (or n)
    assert list(group_budgets([10, 10], 0.3)) == [3, 3]  # 0.3 x 10 is 3.0000000000000004
    assert group_budgets([], 0.5, power=0.0).size == 0


@pytest.mark.parametrize("method", ["coreset", "random"])
def test_balanced_allocation_keeps_about_the_fraction_of_all_records(ansor_a100_dataset, method):
    ds = ansor_a100_dataset
    kept = prune(ds, 0.25, method, seed=4)  # balanced, the default
    valid = ds.filter(valid=True)
    sizes = valid.records.groupby(["task_key", "hardware"]).size()
    counts = kept.records.groupby(["task_key", "hardware"]).size().reindex(sizes.index)
    budget = sum(max(2, int(np.ceil(0.25 * n))) for n in sizes)
    assert counts.sum() == budget and (counts <= sizes).all()
    # evenly spread (the sample's groups hold 7 to 116): the small one kept whole, the others
    # within one program of each other, where keeping a quarter of each would keep 2 to 29
    cut = counts[counts < sizes]
    assert cut.max() - cut.min() <= 1 < len(cut) and (counts[counts == sizes] <= cut.max()).all()
    assert (counts == sizes).any()
    assert kept.manifest["pruned"]["allocation"] == "balanced"


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
    with pytest.raises(GbxferError, match="unknown allocation"):
        prune(ansor_a100_dataset, 0.5, allocation="even")


def test_cli_prune(ansor_a100_dataset, tmp_path, capsys):
    ansor_a100_dataset.save(tmp_path / "ds")
    assert main(["prune", str(tmp_path / "ds"), "--keep", "0.5", "--out",
                 str(tmp_path / "small"), "-q"]) == 0
    assert main(["info", str(tmp_path / "small"), "--json"]) == 0
    import json
    info = json.loads(capsys.readouterr().out)
    assert info["n_records"] < len(ansor_a100_dataset) * 0.55
    from gbxfer import load_dataset

    for allocation in ("balanced", "proportional"):
        assert main(["prune", str(tmp_path / "ds"), "--keep", "0.25", "--allocation",
                     allocation, "--out", str(tmp_path / allocation), "-q"]) == 0
        pruned = load_dataset(tmp_path / allocation)
        assert pruned.manifest["pruned"]["allocation"] == allocation
        counts = pruned.records.groupby(["task_key", "hardware"]).size()
        # the sample's groups hold 7 to 116: balanced keeps the 7 whole, proportional 2 of them
        assert counts.min() == (7 if allocation == "balanced" else 2)


def test_group_points_project_as_the_leading_singular_vectors():
    from gbxfer.pruning import group_points

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 60)) @ np.diag(np.linspace(3.0, 0.1, 60))  # distinct spreads
    latency = rng.uniform(1e-3, 2e-3, 300)
    points = group_points(X, latency, 8)
    standard = (X - X.mean(0)) / X.std(0)
    _, _, vt = np.linalg.svd(standard, full_matrices=False)
    projected = standard @ vt[:8].T

    def distances(p):
        return ((p[:, None, :] - p[None, :, :]) ** 2).sum(-1)

    assert points.shape == (300, 9)
    assert np.allclose(distances(points[:, :8]), distances(projected), rtol=1e-8, atol=1e-8)


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


def test_task_selection_herding_follows_the_kinds_density_coreset_spreads_over_them():
    import collections

    from gbxfer import load_dataset
    from gbxfer.pruning import select_tasks

    bundled = load_dataset("bundled")
    kind = bundled.tasks.drop_duplicates("task_key").set_index("task_key")["operator"]
    share = (kind == "conv2d").mean()  # about half of the suite's tasks
    picks = {m: select_tasks(bundled, 16, m, seed=0) for m in ("herding", "coreset", "random")}
    for keys in picks.values():
        assert len(set(keys)) == 16 and set(keys) <= set(kind.index)
    herding = collections.Counter(kind[picks["herding"]])
    coreset = collections.Counter(kind[picks["coreset"]])
    assert abs(herding["conv2d"] - 16 * share) <= 3 and len(herding) >= 5
    assert coreset["conv2d"] < herding["conv2d"] and len(coreset) > len(herding)
    assert select_tasks(bundled, 16, "herding", seed=5) == picks["herding"]  # no draws
    assert select_tasks(bundled, 16, "random", seed=5) != picks["random"]
    assert len(select_tasks(bundled, 10_000, "herding")) == len(kind)
    with pytest.raises(GbxferError, match="unknown task selection method"):
        select_tasks(bundled, 4, "vibes")
