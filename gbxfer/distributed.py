"""Training on a Dask cluster (``gbxfer train DATASET --dask local[:N]|ADDRESS``).

The driver verifies the dataset's checksums and reads only its task keys; the tasks are dealt
into partitions (every task x hardware group whole, as ranking objectives need), the
partitions to the workers in turn, and each worker reads its tasks' records from the dataset's
Parquet files (a row group at a time), keeps the training part of the split and builds their
features and labels, so that the records never have to fit in one process. XGBoost configs:
each worker writes its partitions' features to its local disk, one partition in memory at a
time, and the workers train over XGBoost's collective, each on a quantile matrix built from
its files a partition at a time: no process holds its records' float features. LightGBM
configs: ``lightgbm.dask`` on Dask frames of the partitions. The booster becomes an ordinary
gbxfer model. The workers read the dataset by its path: on a cluster of several machines it
must lie on a file system they share.
"""
from __future__ import annotations

import logging
import operator
import shutil
import threading
import uuid
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import GbxferError
from .features import block_columns, build
from .model import GBCostRanker, ModelConfig, SavedModel
from .model._ranker import paired, training_labels
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


def _part(keys: list, path: str, blocks: list, split: dict | None, label: str,
          levels: int | None):
    """On a worker: the training records of tasks ``keys``, rows of a group together: their
    features (float32, one block), what the booster fits (:func:`training_labels` of
    ``label``, relevance grades 0..levels-1 when ``levels``), group
    code (0, 1, ... in order), record ids and hardware."""
    dataset = Dataset.load(path, tasks=keys, verified=True).filter(valid=True)
    if split is not None:
        dataset = dataset.select(~SplitSpec.from_dict(split).test_mask(dataset))
    if len(dataset) == 0:
        return None
    fm = build(dataset, blocks)
    r = fm.records
    kept = paired(r["group"].to_numpy())  # as GBCostRanker.fit
    if not kept.any():
        return None
    if not kept.all():
        fm = fm.select_rows(kept)
        r = fm.records
    codes = pd.factorize(r["group"])[0]
    order = np.argsort(codes, kind="stable")
    y = r["label"].to_numpy(dtype=float)[order]
    return {"X": np.ascontiguousarray(fm.X[order], dtype=np.float32),
            "label": training_labels(y, codes[order], label, levels).astype(float),
            "group": codes[order].astype(np.int64),
            "ids": r["record_id"].to_numpy()[order], "hardware": r["hardware"].to_numpy()[order]}


def _wait_for(client, futures, workers: set,
              what: str = "its partitions of the dataset were built") -> None:
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
                raise GbxferError(f"Dask worker {min(lost)} left the cluster before "
                                  f"{what}") from None


def train_on_dask(path, config: ModelConfig | dict, client, split: SplitSpec | None = None,
                  seed: int = 0, partitions: int | None = None) -> SavedModel:
    """A model trained on a Dask cluster with XGBoost's collective (XGBoost configs) or
    ``lightgbm.dask`` (LightGBM configs) on the dataset folder ``path`` (its training part
    under ``split``), the same model :func:`gbxfer.training.train` would fit up to the
    distributed histograms. No per-store block, no attention."""
    config = as_model_config(config)
    ranker = GBCostRanker(**{"random_state": seed, **config.params})
    objective = ranker._objective()  # a bad backend or objective: the estimator's own error
    if "per_store" in config.blocks or config.attention or config.descriptor_dropout:
        raise GbxferError("training on Dask takes the program, workload and hardware blocks, "
                          "without attention or descriptor dropout")
    if split is not None and split.kind not in KINDS:
        raise GbxferError(f"training on Dask applies {', '.join(KINDS)} splits, not "
                          f"{split.kind}")
    keys = sorted(verified_tasks(path, columns=["task_key"])["task_key"])
    if not keys:
        raise GbxferError(f"{path}: the dataset has no task")
    workers = sorted(client.scheduler_info()["workers"])
    n = partitions or max(2 * len(workers), -(-dataset_size(path) // PART_RECORDS))
    blocks = list(config.blocks)
    columns = [c for b in blocks for c in block_columns(b)]
    # the partitions dealt to the workers in turn, so that each holds as many (the scheduler
    # left to itself gave one worker twice the other's share, and twice the memory)
    chunks = [list(c) for c in np.array_split(np.array(keys, dtype=object), min(n, len(keys)))]
    home = [workers[i % len(workers)] for i in range(len(chunks))]
    args = (str(path), blocks, split.to_dict() if split else None, ranker.label,
            None if objective == "regression" else ranker.relevance_levels)
    train = _lightgbm_on_dask if ranker.backend == "lightgbm" else _xgboost_on_dask
    booster, ids, hardware = train(client, ranker, objective, chunks, home, args)
    ranker.booster_, ranker.objective_, ranker.n_features_in_ = booster, objective, len(columns)
    return SavedModel(ranker, columns, sorted(hardware), split.to_dict() if split else None,
                      list(ids), extra={"trained_on": "dask"})


def _featurise_to_disk(chunks: list, args: tuple, token: str) -> dict:
    """On a worker: each chunk of tasks featurised in turn into .npy files in the folder
    ``gbxfer-TOKEN`` of the worker's local directory (one chunk in memory at a time); their
    row counts, record ids and hardware. Group codes run on from chunk to chunk, so that they
    increase over the files."""
    from distributed import get_worker

    folder = _folder(get_worker(), token)
    shutil.rmtree(folder, ignore_errors=True)  # what a retried task of this run left
    folder.mkdir(parents=True)
    rows, ids, hardware, groups = 0, [], set(), 0
    for chunk in chunks:
        part = _part(chunk, *args)
        if part is None:
            continue
        stem = folder / f"{len(ids):05d}"
        for name in ("X", "label"):
            np.save(f"{stem}-{name}.npy", part[name])
        np.save(f"{stem}-group.npy", part["group"] + groups)
        groups += int(part["group"][-1]) + 1
        rows += len(part["label"])
        ids.append(part["ids"])
        hardware.update(part["hardware"].tolist())
    return {"folder": str(folder), "rows": rows, "hardware": hardware,
            "ids": np.concatenate(ids) if ids else np.array([], dtype=object)}


def _folder(worker, token: str) -> Path:
    return Path(worker.local_directory) / f"gbxfer-{token}"


def _remove_folder(token: str, dask_worker) -> None:
    """On every worker (``client.run``): this run's feature files, if it has any."""
    shutil.rmtree(_folder(dask_worker, token), ignore_errors=True)


def _train_from_disk(folder: str, params: dict, rounds: int, ranking: bool,
                     collective_args: dict):
    """On a worker: XGBoost trained over the communicator of ``collective_args`` on a quantile
    matrix built from the .npy files of ``folder`` a chunk at a time (the float features never
    all in memory; with ``ranking``, the group codes as query ids); the booster's bytes from
    rank 0, None from the others."""
    import xgboost as xgb
    from distributed import get_worker
    from xgboost import collective

    class Files(xgb.DataIter):
        def __init__(self):
            self.stems = sorted({p.name.split("-")[0] for p in Path(folder).glob("*-X.npy")})
            self.at = 0
            super().__init__()

        def next(self, input_data) -> bool:
            if self.at == len(self.stems):
                return False
            stem = Path(folder) / self.stems[self.at]
            input_data(data=np.load(f"{stem}-X.npy"), label=np.load(f"{stem}-label.npy"),
                       qid=np.load(f"{stem}-group.npy") if ranking else None)
            self.at += 1
            return True

        def reset(self) -> None:
            self.at = 0

    params = {**params, "nthread": get_worker().state.nthreads}
    with collective.CommunicatorContext(**collective_args):
        data = xgb.QuantileDMatrix(Files(), max_bin=params.get("max_bin", 256),
                                   nthread=params["nthread"])
        booster = xgb.train(params, data, num_boost_round=rounds)
        return bytes(booster.save_raw("ubj")) if collective.get_rank() == 0 else None


def _start_tracker(workers: int, host: str) -> dict:
    """On the scheduler (as ``xgboost.dask`` does): an XGBoost tracker for ``workers`` workers
    at ``host``, waited for in a thread; the arguments its workers connect with."""
    from xgboost.tracker import RabitTracker

    # a worker that fails before it joins stops the others within 5 minutes, not XGBoost's 30
    tracker = RabitTracker(n_workers=workers, host_ip=host, sortby="task", timeout=300)
    tracker.start()
    threading.Thread(target=tracker.wait_for, daemon=True).start()  # holds the tracker
    return tracker.worker_args()


def _xgboost_on_dask(client, ranker, objective, chunks, home, args):
    """XGBoost over the workers: each featurises its chunks to its local disk, then all train
    together over XGBoost's collective (a tracker on the scheduler), each on a quantile matrix
    built from its files; the files are removed at the end, whatever happens."""
    import xgboost as xgb
    from distributed.comm import get_address_host

    workers = sorted(set(home))
    token = uuid.uuid4().hex[:12]  # this run's tasks, apart from another's on the cluster
    cached = {w: client.submit(_featurise_to_disk, [c for c, h in zip(chunks, home) if h == w],
                               args, token, key=f"gbxfer-features-{w}-{token}", workers=[w],
                               allow_other_workers=False) for w in workers}
    try:
        _wait_for(client, list(cached.values()), set(workers))
        done = client.gather(cached)
        active = [w for w in workers if done[w]["rows"]]  # a worker with test tasks only sits out
        if not active:
            raise GbxferError("nothing to train on: the training part is empty")
        tracker = client.run_on_scheduler(_start_tracker, len(active),
                                          get_address_host(client.scheduler.address))
        params = ranker.xgboost_params(objective, sum(done[w]["rows"] for w in active))
        runs = [client.submit(_train_from_disk, done[w]["folder"], params, ranker.n_estimators,
                              objective != "regression", {**tracker, "dmlc_task_id": f"{rank:05d}"},
                              key=f"gbxfer-train-{w}-{token}", workers=[w],
                              allow_other_workers=False) for rank, w in enumerate(active)]
        _wait_for(client, runs, set(active), "training ended")
        booster = xgb.Booster(model_file=bytearray(runs[0].result()))
    finally:  # on the workers still there (a task bound to a lost one would never run)
        client.run(_remove_folder, token, on_error="ignore")
    ids = np.concatenate([done[w]["ids"] for w in workers])
    return booster, ids, set().union(*(done[w]["hardware"] for w in workers))


def _lightgbm_on_dask(client, ranker, objective, chunks, home, args):
    """``lightgbm.dask``: one LightGBM network over the workers on Dask frames of the
    partitions (each built on its worker); the group sizes of a ranking objective go with
    their partitions (each partition holds whole groups, in order)."""
    import dask
    import dask.dataframe as dd
    import lightgbm as lgb

    token = uuid.uuid4().hex[:12]
    parts = [client.submit(_frames, chunk, *args, key=f"gbxfer-part-{i}-{token}",
                           workers=[home[i]], allow_other_workers=False)
             for i, chunk in enumerate(chunks)]
    _wait_for(client, parts, set(home))
    lengths = client.gather([client.submit(lambda p: len(p[1]), part, workers=[home[i]])
                             for i, part in enumerate(parts)])
    keep = [i for i, n in enumerate(lengths) if n]  # a chunk of test tasks only is empty:
    if not keep:  # no worker may get 0 rows
        raise GbxferError("nothing to train on: the training part is empty")

    def side(k: int, meta, parts):  # the features or the records of every kept part
        return dd.from_delayed([client.submit(operator.getitem, parts[i], k, workers=[home[i]],
                                              key=f"gbxfer-part-{i}-{k}-{token}")
                                for i in keep], meta=meta, verify_meta=False)

    meta = _frames_meta(args[1])
    features, records = side(0, meta[0], parts), side(1, meta[1], parts)
    del parts  # the two sides hold the frames
    ids, hardware = dask.compute(records["__record_id"], records["__hardware"].unique())
    params = {k: v for k, v in ranker.lightgbm_params(objective, sum(lengths)).items()
              if k != "num_threads"}  # lightgbm.dask sets it from each worker's threads
    params["n_estimators"] = ranker.n_estimators
    label = records["__label"]
    if objective == "regression":
        model = lgb.DaskLGBMRegressor(client=client, **params).fit(features, label)
    else:
        group = records["__group"]
        sizes = group.map_partitions(
            lambda g: pd.Series(g.groupby(g, sort=False).size().to_numpy()),
            meta=("size", "int64"))
        model = lgb.DaskLGBMRanker(client=client, **params).fit(features, label, group=sizes)
    return model.booster_, ids.to_numpy(), set(hardware)


def _frames(keys: list, path: str, blocks: list, split: dict | None, label: str,
            levels: int | None):
    """On a worker: :func:`_part` as two frames, the features and the records."""
    part = _part(keys, path, blocks, split, label, levels)
    features_meta, records_meta = _frames_meta(blocks)
    if part is None:
        return features_meta, records_meta
    return (pd.DataFrame(part["X"], columns=features_meta.columns, copy=False),
            pd.DataFrame({"__label": part["label"], "__group": part["group"],
                          "__record_id": part["ids"], "__hardware": part["hardware"]}))


def _frames_meta(blocks: list) -> tuple:
    columns = [c for b in blocks for c in block_columns(b)]
    return (pd.DataFrame({c: pd.Series(dtype=np.float32) for c in columns}),
            pd.DataFrame({"__label": pd.Series(dtype=float), "__group": pd.Series(dtype=np.int64),
                          "__record_id": pd.Series(dtype=object),
                          "__hardware": pd.Series(dtype=object)}))
