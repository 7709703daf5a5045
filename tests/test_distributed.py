"""Training on a Dask cluster (2 worker processes on loopback): the same model quality as one
process on the same data, from partitions that each worker reads and featurises itself."""
from __future__ import annotations

from pathlib import Path

import pytest

from gbxfer import GbxferError, SplitSpec, load_dataset
from gbxfer.cli import main
from gbxfer.distributed import close_client, dask_client, train_on_dask
from gbxfer.model import SavedModel
from gbxfer.training import evaluate, train

CONFIG = {"blocks": ["program", "workload", "hardware"],
          "params": {"backend": "xgboost", "objective": "regression", "n_estimators": 40}}


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    path = tmp_path_factory.mktemp("dask") / "small"
    assert main(["prune", "bundled", "--keep", "0.25", "--method", "random", "--out",
                 str(path), "-q"]) == 0
    return path


@pytest.fixture(scope="module")
def client():
    client = dask_client("local:2")
    yield client
    close_client(client)


@pytest.mark.parametrize("backend, objective", [
    ("xgboost", "regression"), ("xgboost", "rank:pairwise"), ("lightgbm", "regression"),
    ("lightgbm", "lambdarank")])
def test_dask_training_matches_one_process(small, client, backend, objective):
    """Regression (both backends) and LightGBM's lambdarank (whole groups per worker) give the
    one-process model's quality; XGBoost's distributed pairwise ranking samples its pairs on
    each worker: it trains on the same records, and its quality is reported in the closing
    note, not claimed here."""
    config = {**CONFIG, "params": {**CONFIG["params"], "backend": backend,
                                   "objective": objective}}
    split = SplitSpec("by-task", 0.3, 1)
    dataset = load_dataset(small)
    one = train(dataset, config, split)
    many = train_on_dask(small, config, client, split, partitions=5)
    assert sorted(many.train_record_ids) == sorted(one.train_record_ids)
    assert many.hardware == one.hardware and many.columns == one.columns
    left = client.run(lambda dask_worker: [str(p) for p in
                                           Path(dask_worker.local_directory).glob("gbxfer-*")])
    assert not any(left.values()), left  # the workers' feature files are gone
    pca_one, pca_many = evaluate(one, dataset)["pca"], evaluate(many, dataset)["pca"]
    if objective != "rank:pairwise":
        assert abs(pca_many - pca_one) < 0.01, (pca_one, pca_many)
    else:
        assert pca_many > evaluate(one, dataset)["random_pca"] + 0.1


@pytest.mark.parametrize("label", ["rank", "throughput"])
def test_worker_partitions_carry_the_configs_label(small, label):
    """What a worker hands the booster is the label the config asks for: ranks within each
    group (mean 0.5 in every group, ties included) or the throughput label itself (its slow
    majority below 0.5); grades 0..levels-1 for a ranking objective."""
    import numpy as np

    from gbxfer.distributed import _part

    keys = sorted(load_dataset(small).tasks["task_key"])[:3]
    blocks = ["program", "workload", "hardware"]
    part = _part(keys, str(small), blocks, None, label, None)
    groups, y = part["group"], part["label"]
    means = np.array([y[groups == g].mean() for g in np.unique(groups)])
    assert np.allclose(means, 0.5) == (label == "rank")
    grades = _part(keys, str(small), blocks, None, label, 31)["label"]
    assert set(np.unique(grades)) <= set(range(31)) and grades.max() == 30


def test_cli_train_on_dask_writes_an_ordinary_model(small, tmp_path, capsys):
    config = tmp_path / "xgb.yaml"
    config.write_text("blocks: [program, workload, hardware]\n"
                      "params: {backend: xgboost, objective: regression, n_estimators: 20}\n")
    out = tmp_path / "m"
    assert main(["train", str(small), "--dask", "local:2", "--config", str(config),
                 "--holdout", "by-task", "--out", str(out), "-q"]) == 0
    assert SavedModel.load(out).extra["trained_on"] == "dask"
    assert main(["evaluate", str(out), str(small), "--json"]) == 0


def test_what_dask_training_does_not_take_is_a_clear_error(small, client):
    with pytest.raises(GbxferError, match="program, workload and hardware blocks"):
        train_on_dask(small, {"blocks": ["program", "per_store"]}, client)
    with pytest.raises(GbxferError, match="not by-hardware"):
        train_on_dask(small, CONFIG, client, SplitSpec.parse("by-hardware:x86-avx"))
    with pytest.raises(GbxferError, match="positive number of workers"):
        dask_client("local:0")


def test_a_worker_lost_while_partitions_are_built_stops_the_wait():
    import time

    from distributed import Client, LocalCluster

    from gbxfer.distributed import _wait_for

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as c:
        workers = sorted(c.scheduler_info()["workers"])
        slow = c.submit(time.sleep, 600, workers=[workers[0]], allow_other_workers=False)
        start = time.perf_counter()
        name = next(n for n, w in cluster.workers.items() if w.address == workers[0])
        c.sync(cluster.workers[name].close)
        with pytest.raises(GbxferError, match="left the cluster"):
            _wait_for(c, [slow], set(workers))
        assert time.perf_counter() - start < 60
