"""Pruning training sets: keep a fraction of the records, spread over the task x hardware groups
and chosen within each to represent it.

Each group's programs are points: standardised program features (projected on their first 32
principal components) and log latency, weighted as much as all features together.
``coreset`` (the default): k-means with k = the programs to keep, and of each cluster the
program nearest its centre: the kept set follows where the group's programs are dense (as the
programs a model is later asked to rank are) while near-duplicates share one representative; a
group larger than ``CHUNK`` is clustered in random chunks, so that the cost grows linearly with
its size (chunks ordered by latency, a stratification, lose the gain over random:
scripts/bench_pruning.py).
``herding``: kernel herding (Chen, Welling and Smola, 2010) over the same points, each pick the
program that brings the kept set's mean Gaussian-kernel embedding closest to the whole group's:
the kept programs follow the group's density as a random draw does, with less spread between
draws, and as near-duplicates are seldom picked twice; faster than the coreset and above random
on the A100 database, but with the current default model (leaves a fraction of the rows) no
better than the coreset (scripts/compare_pruning.py, scripts/bench_pruning.py).
``kcenter``: the fastest programs first (a ``fast_share`` of the budget), then k-center greedy,
each pick the program farthest from those kept: it covers the extremes, over-represents
outliers, and ranks below random on the A100 database (scripts/bench_pruning.py). ``random``: a
uniform draw per group. All keep at least ``min_per_group`` programs of every group, are
deterministic given the seed, and select among valid records only (failed measurements are not
training data).

How many programs each group keeps (:func:`group_budgets`): ``balanced`` (the default) spreads
the records that keeping the fraction of every group would keep evenly over the groups, none
given more than it holds: small groups are kept whole and the largest pruned harder. A group's
ranking quality grows with its count of training programs, not their share, and the quality
measured is a mean over groups: on the A100 database and the Ansor x86 logs, whose groups hold
5 to 3,748 programs, the same records spread evenly rank 1-6 points of PCA better than the
fraction of every group, and leave the choice within a group little to add over a random draw
(scripts/compare_pruning.py, scripts/bench_pruning.py). ``proportional`` keeps the fraction of
every group.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
from tqdm.auto import tqdm

from .records.dataset import Dataset
from .errors import GbxferError
from .features import build, workload_block

METHODS = ("coreset", "herding", "kcenter", "random")
ALLOCATIONS = {"balanced": 0.0, "proportional": 1.0}  # the budgets' power of the group size
COMPONENTS = 32
CHUNK = 1024  # k-means runs on random chunks of at most this many programs


def k_center_greedy(points: np.ndarray, k: int, start: list[int]) -> list[int]:
    """Indices of ``k`` points: ``start`` first, then each time the point farthest from all
    chosen ones (ties to the lowest index)."""
    chosen = list(dict.fromkeys(start))[:k] or [0]
    norms = np.einsum("ij,ij->i", points, points)

    def squared_distances(rows: list[int]) -> np.ndarray:  # every point to each of ``rows``
        d = norms[:, None] + norms[rows][None, :] - 2.0 * (points @ points[rows].T)
        return np.maximum(d, 0.0)

    distance = np.full(len(points), np.inf)
    for i in range(0, len(chosen), 256):
        distance = np.minimum(distance, squared_distances(chosen[i:i + 256]).min(axis=1))
    while len(chosen) < min(k, len(points)):
        pick = int(np.argmax(distance))
        chosen.append(pick)
        distance = np.minimum(distance, squared_distances([pick])[:, 0])
    return chosen


def group_points(X: np.ndarray, latency: np.ndarray, components: int | None = None):
    """One group's programs as points: standardised features without the constant ones
    (projected on their first ``components`` principal components when given) and log latency,
    standardised and weighing as much as all feature dimensions together."""
    spread = X.std(0)
    points = ((X - X.mean(0)) / np.where(spread > 0, spread, 1.0))[:, spread > 0]
    if components is not None and points.shape[1] > components:
        # the leading right singular vectors, from the small Gram matrix (5-9x an SVD's speed)
        _, vectors = np.linalg.eigh(points.T @ points)
        points = points @ vectors[:, ::-1][:, :components]
    log_lat = np.log(latency)
    log_lat = (log_lat - log_lat.mean()) / (log_lat.std() or 1.0)
    scale = math.sqrt(max(float((points ** 2).sum(1).mean()), 1.0))
    return np.hstack([points, log_lat[:, None] * scale])


def k_means_medoids(points: np.ndarray, k: int, seed: int) -> np.ndarray:
    """Indices of ``k`` points: k-means clusters, and of each the point nearest its centre.
    The clustering starts from k-means++ seeds (each next seed drawn with probability
    proportional to its squared distance from those before), which spread the clusters over the
    feature space: started from seeds evenly spaced in latency instead, the kept programs rank
    no better than random ones (scripts/bench_pruning.py)."""
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():  # duplicate points: fewer distinct clusters than k
        warnings.simplefilter("ignore", ConvergenceWarning)
        km = KMeans(k, init=k_means_plus_plus(points, k, seed), n_init=1, max_iter=30,
                    random_state=seed).fit(points)
    distance = ((points - km.cluster_centers_[km.labels_]) ** 2).sum(1)
    order = np.lexsort((distance, km.labels_))  # by cluster, nearest first
    first = np.r_[True, km.labels_[order][1:] != km.labels_[order][:-1]]
    chosen = order[first]
    if len(chosen) < k:  # fewer distinct points than k: the rest drawn among the others
        others = np.setdiff1d(np.arange(len(points)), chosen)
        extra = np.random.default_rng(seed).choice(others, k - len(chosen), replace=False)
        chosen = np.concatenate([chosen, extra])
    return np.sort(chosen)


def coreset(points: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``k`` of ``points``: k-means medoids (:func:`k_means_medoids`) within random
    chunks of at most ``CHUNK`` points, each chunk's share of ``k`` in proportion to its size
    (the chunks and the clusterings' seeds drawn from ``rng``)."""
    return np.concatenate([chunk[k_means_medoids(points[chunk], m, int(rng.integers(2**31)))]
                           for chunk, m in chunk_shares(len(points), k, rng)])


def chunk_shares(n: int, k: int, rng: np.random.Generator) -> list[tuple[np.ndarray, int]]:
    """``range(n)`` in random chunks of at most ``CHUNK``, each with its share of ``k`` in
    proportion to its size (chunks with no share left out)."""
    chunks = np.array_split(rng.permutation(n), math.ceil(n / CHUNK))
    ends = np.cumsum([0] + [len(chunk) for chunk in chunks])
    shares = np.diff(np.round(ends * k / n)).astype(int)  # each at most its chunk's size
    return [(chunk, int(m)) for chunk, m in zip(chunks, shares) if m]


def herding(points: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``k`` of ``points`` by kernel herding (Gaussian kernel, its bandwidth the
    median squared distance), within random chunks of at most ``CHUNK`` points as
    :func:`coreset` (a group of at most ``CHUNK`` programs: the same picks whatever ``rng``)."""
    picked = []
    for chunk, m in chunk_shares(len(points), k, rng):
        chunk = np.sort(chunk)  # the picks do not depend on the order drawn
        picked.append(chunk[kernel_herding(points[chunk], m)])
    return np.concatenate(picked)


def kernel_herding(points: np.ndarray, k: int) -> list[int]:
    """Indices of ``k`` of ``points``, each the one whose Gaussian kernel row brings the mean
    of those picked closest to the mean over all points (ties to the lowest index)."""
    if k >= len(points):
        return list(range(len(points)))
    norms = np.einsum("ij,ij->i", points, points)
    d = np.maximum(norms[:, None] + norms[None, :] - 2.0 * (points @ points.T), 0.0)
    kernel = np.exp(-d / (np.median(d[d > 0]) if (d > 0).any() else 1.0))
    target, total, picked = kernel.mean(1), np.zeros(len(points)), []
    for t in range(k):
        score = target - total / (t + 1)
        score[picked] = -np.inf
        picked.append(int(np.argmax(score)))
        total += kernel[:, picked[-1]]
    return picked


def k_means_plus_plus(points: np.ndarray, k: int, seed: int) -> np.ndarray:
    """``k`` seed points for k-means (Arthur and Vassilvitskii's k-means++, one draw per seed)."""
    rng = np.random.default_rng(seed)
    chosen = [int(rng.integers(len(points)))]
    distance = ((points - points[chosen[0]]) ** 2).sum(1)
    for u in rng.random(k - 1):
        total = np.cumsum(distance)
        pick = int(np.searchsorted(total, u * total[-1], side="right")) if total[-1] > 0 else \
            int(rng.integers(len(points)))
        pick = min(pick, len(points) - 1)
        chosen.append(pick)
        distance = np.minimum(distance, ((points - points[pick]) ** 2).sum(1))
    return points[chosen]


def group_budgets(sizes, keep: float, power: float = 1.0, least: int = 2) -> np.ndarray:
    """Programs to keep of each group: ``ceil(keep x n)`` and at least ``least`` (never more
    than n); with ``power`` != 1 the same total spread in proportion to n ** power, each group
    between min(n, ``least``) and n (the share found by bisection, rounded by the largest
    remainders)."""
    sizes = np.asarray(sizes, dtype=int)
    floor = np.minimum(sizes, least)
    # 1e-9: 0.3 x 10 is 3.0000000000000004 in floating point, and keeps 3, not 4
    k = np.maximum(floor, np.minimum(sizes, np.ceil(keep * sizes - 1e-9))).astype(int)
    if power == 1.0 or not len(sizes):
        return k
    weight = sizes.astype(float) ** power
    lo, hi = 0.0, float(sizes.max() / weight.min()) + 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if np.clip(mid * weight, floor, sizes).sum() < k.sum() else (lo, mid)
    share = np.clip(hi * weight, floor, sizes)
    out = np.floor(share).astype(int)
    for i in np.argsort(-(share - out), kind="stable")[:max(0, k.sum() - out.sum())]:
        out[i] += 1  # share < n here, so out stays <= n
    return out


def select(dataset: Dataset, keep: float, method: str = "coreset", seed: int = 0,
           fast_share: float = 0.2, min_per_group: int = 2,
           allocation: str = "balanced", progress: bool = False) -> np.ndarray:
    """Positions (into ``dataset.records``) of the valid records to keep: about ``keep`` of
    them, spread over the groups by ``allocation`` (:data:`ALLOCATIONS`); ``progress``: a
    progress bar over the records (on a terminal)."""
    if method not in METHODS:
        raise GbxferError(f"unknown pruning method {method!r}; methods: {', '.join(METHODS)}")
    if allocation not in ALLOCATIONS:
        raise GbxferError(f"unknown allocation {allocation!r}; allocations: "
                          f"{', '.join(ALLOCATIONS)}")
    if not 0.0 < keep <= 1.0:
        raise GbxferError(f"--keep must be in (0, 1], got {keep}")
    valid = np.flatnonzero(dataset.records["valid"].to_numpy())
    if method != "random":
        X = build(dataset.select(valid), ["program"]).X.astype(float)
    rng = np.random.default_rng(seed)
    records = dataset.records.iloc[valid]
    latencies = records["latency"].to_numpy()
    kept = []
    groups = list(records.groupby(["task_key", "hardware"], sort=True).indices.values())
    budgets = group_budgets([len(rows) for rows in groups], keep, ALLOCATIONS[allocation],
                            min_per_group)
    bar = tqdm(total=len(records), unit=" records", desc=f"prune ({method})",
               disable=None if progress else True)
    for rows, k in zip(groups, budgets.tolist()):
        n = len(rows)
        latency = latencies[rows]
        if method == "random" or k == n:
            chosen = rng.choice(n, size=k, replace=False) if k < n else np.arange(n)
        elif method in ("coreset", "herding"):
            pick = coreset if method == "coreset" else herding
            chosen = pick(group_points(X[rows], latency, COMPONENTS), k, rng)
        else:
            fastest = list(np.argsort(latency, kind="stable")[:max(1, round(fast_share * k))])
            chosen = np.array(k_center_greedy(group_points(X[rows], latency), k, fastest))
        kept.append(valid[rows[chosen]])
        bar.update(n)
    bar.close()
    return np.sort(np.concatenate(kept)) if kept else np.array([], dtype=int)


TASK_METHODS = ("herding", "coreset", "random")


def select_tasks(dataset: Dataset, n: int, method: str = "herding", seed: int = 0) -> list[str]:
    """``n`` of the dataset's tasks with valid records, as task keys (:func:`choose_tasks`):
    which tasks to train on first."""
    keys = sorted(dataset.records.loc[dataset.records["valid"], "task_key"].unique())
    tasks = dataset.tasks.drop_duplicates("task_key").set_index("task_key").loc[keys]
    return choose_tasks(tasks.reset_index(), n, method, seed)


def choose_tasks(tasks, n: int, method: str = "herding", seed: int = 0) -> list[str]:
    """``n`` task keys of a tasks table (``task_key``, ``operator``, ``args``, ``flops``), in its
    order. ``herding`` (the default): kernel herding over the tasks' workload points
    (:func:`task_points`), which follows their density over kinds and sizes of work while
    seldom picking near-twins; on the bundled suite's by-task split its 4 / 8 / 16 training
    tasks rank held-out tasks better than random ones, where the coreset's did not
    (scripts/bench_pruning.py --tasks). ``coreset``: the k-means medoids of the same points,
    which spread over the kinds (a rare kind as likely as a common one). ``random``: a uniform
    draw."""
    if method not in TASK_METHODS:
        raise GbxferError(f"unknown task selection method {method!r}; methods: "
                          f"{', '.join(TASK_METHODS)}")
    keys = list(tasks["task_key"])
    if method == "random" or n >= len(keys):
        draw = np.random.default_rng(seed).choice(len(keys), min(n, len(keys)), replace=False)
        return [keys[i] for i in np.sort(draw)]
    points = task_points(tasks)
    picks = kernel_herding(points, n) if method == "herding" else \
        k_means_medoids(points, n, seed)
    return [keys[i] for i in sorted(picks)]


def task_points(tasks) -> np.ndarray:
    """A tasks table's standardised workload features (operator kind, shapes, FLOPs, bytes),
    one row per task."""
    X, _ = workload_block(tasks[["task_key"]], tasks)
    X = X.astype(float)
    spread = np.nanstd(X, axis=0)
    keep = spread > 0
    return np.nan_to_num((X[:, keep] - np.nanmean(X[:, keep], axis=0)) / spread[keep])


def prune(dataset: Dataset, keep: float, method: str = "coreset", seed: int = 0,
          allocation: str = "balanced", **kwargs) -> Dataset:
    """A dataset with only the selected records (see :func:`select`)."""
    pruned = dataset.select(select(dataset, keep, method, seed, allocation=allocation,
                                   **kwargs))
    pruned.manifest = {**dataset.manifest, "pruned": {
        "keep": keep, "method": method, "allocation": allocation, "seed": seed,
        "from_records": len(dataset)}}
    return pruned


def calibration_order(dataset: Dataset, seed: int = 0) -> np.ndarray:
    """Positions (into ``dataset.records``) of one valid record per distinct program, in the
    order a calibration should measure them: round-robin over the tasks (in a seeded order),
    and within each task its fastest program first, then each time the program farthest from
    those before it (k-center greedy over standardised program features and log latency). Any
    prefix is then spread over every task and diverse within each."""
    valid = np.flatnonzero(dataset.records["valid"].to_numpy())
    positions = valid[~dataset.records["program_id"].iloc[valid].duplicated().to_numpy()]
    records = dataset.records.iloc[positions]
    X = build(dataset.select(positions), ["program"]).X.astype(float)
    per_task = []
    for _, rows in records.groupby("task_key", sort=True).indices.items():
        points = group_points(X[rows], records["latency"].to_numpy()[rows])
        start = [int(np.argmin(records["latency"].to_numpy()[rows]))]
        per_task.append(positions[rows[k_center_greedy(points, len(rows), start)]])
    tasks = np.random.default_rng(seed).permutation(len(per_task))
    depth = max((len(t) for t in per_task), default=0)
    return np.array([per_task[t][i] for i in range(depth) for t in tasks
                     if i < len(per_task[t])], dtype=int)
