"""Training on a Dask cluster (``gbxfer train DATASET --dask local[:N]|ADDRESS``).

The driver verifies the dataset's checksums and reads only its task keys; the tasks are dealt
into partitions (every task x hardware group whole, as ranking objectives need), the
partitions to the workers in turn, and each worker reads its tasks' records from the dataset's
Parquet files (a row group at a time), keeps the training part of the split and builds their
features (one float32 block, never copied again) and labels, so that the records never have
to fit in one process. ``xgboost.dask`` (XGBoost configs) or ``lightgbm.dask`` (LightGBM
configs) trains on the partitions; the booster becomes an ordinary gbxfer model. The workers
read the dataset by its path: on a cluster of several machines it must lie on a file system
they share.
"""
from __future__ import annotations

import hashlib
import logging
import operator
import uuid

import numpy as np
import pandas as pd

from .errors import GbxferError
from .features import block_columns, build
from .model import GBCostRanker, ModelConfig, SavedModel
from .model._ranker import relevance_grades
from .model._config import as_model_config
from .records.dataset import Dataset, dataset_size, verified_tasks
from .splits import SplitSpec

KINDS = ("within-task", "by-task", "by-network")  # splits a partition of whole tasks can apply
PART_RECORDS = 100_000  # records per partition at most (when tasks allow): a worker's
# records table with its programs' text, and their features, stay a few hundred MB


def dask_client(address: str):
    """A ``distributed.Client``: ``local`` / ``local:N`` starts a cluster of N (default 2)
    single-threaded worker processes on loopback; anything else is a scheduler address."""
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:
        raise GbxferError(f"--dask needs Dask: pip install 'gbxfer[dask]' ({exc})") from None
    if address == "local" or address.startswith("local:"):
        n = address.partition(":")[2] or "2"
        if not n.isdigit() or int(n) < 1:
            raise GbxferError(f"--dask local:N needs a positive number of workers, got {n!r}")
        cluster = LocalCluster(n_workers=int(n), threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=None,
                               silence_logs=logging.ERROR)
        return Client(cluster)  # close_client() closes the cluster with it
    try:
        return Client(address, timeout="30s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise GbxferError(f"--dask {address}: cannot reach the Dask scheduler ({exc})") from None


def close_client(client) -> None:
    """Close ``client`` and the local cluster :func:`dask_client` started for it."""
    cluster = getattr(client, "cluster", None)
    client.close()
    if cluster is not None:
        cluster.close()


def _part(path: str, keys: list, blocks: list, split: dict | None):
    """On a worker: the training records of tasks ``keys`` as two frames, rows of a group
    together: their features (float32, one block) and their label, group code, record id and
    hardware."""
    dataset = Dataset.load(path, tasks=keys, verified=True).filter(valid=True)
    if split is not None:
        dataset = dataset.select(~SplitSpec.from_dict(split).test_mask(dataset))
    columns = [c for b in blocks for c in block_columns(b)]
    if len(dataset) == 0:
        return _features_meta(columns), _records_meta()
    fm = build(dataset, blocks)
    r = fm.records
    group = np.array([  # the same on every worker, 63 bits: no two groups share one
        int.from_bytes(hashlib.blake2b(g.encode(), digest_size=8).digest(), "big") >> 1
        for g in r["group"]], dtype=np.int64)
    order = np.argsort(group, kind="stable")
    features = pd.DataFrame(np.ascontiguousarray(fm.X[order], dtype=np.float32),
                            columns=columns, copy=False)
    records = pd.DataFrame({"__label": r["label"].to_numpy(dtype=float)[order],
                            "__group": group[order],
                            "__record_id": r["record_id"].to_numpy()[order],
                            "__hardware": r["hardware"].to_numpy()[order]})
    return features, records


def _features_meta(columns) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=np.float32) for c in columns})


def _records_meta() -> pd.DataFrame:
    return pd.DataFrame({"__label": pd.Series(dtype=float),
                         "__group": pd.Series(dtype=np.int64),
                         "__record_id": pd.Series(dtype=object),
                         "__hardware": pd.Series(dtype=object)})


def _wait_for(client, futures, workers: set) -> None:
    """Wait for ``futures`` (each bound to one of ``workers``); a worker that leaves the
    cluster before they are done stops the wait with an error instead of a hang."""
    from distributed import wait

    while True:
        try:
            wait(futures, timeout=10)
            return
        except TimeoutError:
            lost = workers - set(client.scheduler_info()["workers"])
            if lost:
                raise GbxferError(f"Dask worker {min(lost)} left the cluster before its "
                                  "partitions of the dataset were built") from None


def train_on_dask(path, config: ModelConfig | dict, client, split: SplitSpec | None = None,
                  seed: int = 0, partitions: int | None = None) -> SavedModel:
    """A model trained with ``xgboost.dask`` or ``lightgbm.dask`` (by the config's backend) on
    the dataset folder ``path`` (its training part under ``split``), the same model
    :func:`gbxfer.training.train` would fit up to the distributed histograms. No per-store
    block, no attention."""
    import dask
    import dask.dataframe as dd

    config = as_model_config(config)
    ranker = GBCostRanker(**{"random_state": seed, **config.params})
    ranker._objective()  # a bad backend or objective: the estimator's own error
    if "per_store" in config.blocks or config.attention or config.descriptor_dropout:
        raise GbxferError("training on Dask takes the program, workload and hardware blocks, "
                          "without attention or descriptor dropout")
    if split is not None and split.kind not in KINDS:
        raise GbxferError(f"training on Dask applies {', '.join(KINDS)} splits, not "
                          f"{split.kind}")
    keys = sorted(verified_tasks(path, columns=["task_key"])["task_key"])
    if not keys:
        raise GbxferError(f"{path}: the dataset has no task")
    n = partitions or max(2 * len(client.scheduler_info()["workers"]),
                          -(-dataset_size(path) // PART_RECORDS))
    blocks = list(config.blocks)
    columns = [c for b in blocks for c in block_columns(b)]
    token = uuid.uuid4().hex[:12]  # this run's partitions, apart from another's on the cluster
    # the partitions dealt to the workers in turn, so that each holds as many (the scheduler
    # left to itself gave one worker twice the other's share, and twice the memory)
    workers = sorted(client.scheduler_info()["workers"])
    chunks = np.array_split(np.array(keys, dtype=object), min(n, len(keys)))
    home = [workers[i % len(workers)] for i in range(len(chunks))]
    parts = [client.submit(_part, str(path), list(chunk), blocks,
                           split.to_dict() if split else None, key=f"gbxfer-part-{i}-{token}",
                           workers=[home[i]], allow_other_workers=False)
             for i, chunk in enumerate(chunks)]
    _wait_for(client, parts, set(workers))

    def side(k: int, meta):  # the features or the records of every part: the same objects
        return dd.from_delayed([client.submit(operator.getitem, part, k, workers=[home[i]],
                                              key=f"gbxfer-part-{i}-{k}-{token}")
                                for i, part in enumerate(parts)], meta=meta, verify_meta=False)

    features, records = side(0, _features_meta(columns)), side(1, _records_meta())
    del parts  # the two sides hold the frames
    lengths = records.map_partitions(len).compute()  # a chunk of test tasks only is empty:
    if not sum(lengths):  # no worker may get 0 rows
        raise GbxferError("nothing to train on: the training part is empty")
    keep = [i for i, n in enumerate(lengths) if n]
    features, records = features.partitions[keep], records.partitions[keep]
    ids, hardware = dask.compute(records["__record_id"], records["__hardware"].unique())
    objective = ranker._objective()
    label = records["__label"] if objective == "regression" else records["__label"].map_partitions(
        lambda y: pd.Series(relevance_grades(y, ranker.relevance_levels).astype(float),
                            index=y.index),
        meta=("__label", float))
    train_booster = _lightgbm_booster if ranker.backend == "lightgbm" else _xgboost_booster
    booster = train_booster(client, ranker, objective, features, records["__group"], label)
    ranker.booster_, ranker.objective_, ranker.n_features_in_ = booster, objective, len(columns)
    return SavedModel(ranker, columns, sorted(hardware), split.to_dict() if split else None,
                      ids.tolist(), extra={"trained_on": "dask"})


def _xgboost_booster(client, ranker, objective, features, group, label):
    import xgboost.dask as dxgb

    qid = None if objective == "regression" else group
    # the quantile matrix bins each partition in turn: no copy of a worker's features
    train_set = dxgb.DaskQuantileDMatrix(client, features, label, qid=qid)
    params = {**ranker.xgboost_params(objective), "nthread": 1}
    return dxgb.train(client, params, train_set, num_boost_round=ranker.n_estimators)["booster"]


def _lightgbm_booster(client, ranker, objective, features, group, label):
    """``lightgbm.dask``: one LightGBM network over the workers; the group sizes of a ranking
    objective go with their partitions (each partition holds whole groups, in order)."""
    import lightgbm as lgb

    params = {k: v for k, v in ranker.lightgbm_params(objective).items()
              if k != "num_threads"}  # lightgbm.dask sets it from each worker's threads
    params["n_estimators"] = ranker.n_estimators
    if objective == "regression":
        model = lgb.DaskLGBMRegressor(client=client, **params)
        return model.fit(features, label).booster_
    sizes = group.map_partitions(
        lambda g: pd.Series(g.groupby(g, sort=False).size().to_numpy()), meta=("size", "int64"))
    model = lgb.DaskLGBMRanker(client=client, **params)
    return model.fit(features, label, group=sizes).booster_
