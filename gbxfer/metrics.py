"""Ranking metrics of a cost model over groups of programs (a task on one hardware profile).

Every function takes per-record arrays: ``latency`` (seconds, valid measurements only), ``score``
(the model's prediction, higher = faster) and ``groups`` (a task x hardware id per record).

Conventions, the same in every metric:

- **Groups of one program** are left out: there is nothing to rank. A metric over no groups is
  NaN.
- **Ties in the predicted scores** count as a uniformly random order among the tied programs:
  each group's value is its exact expectation over that order. So a constant predictor scores
  exactly what a random ranking scores in expectation, and the random baseline of every metric is
  the metric of a constant score (:func:`random_baseline`).
- **Ties in the true latency**: such pairs are not counted by PCA (no right order exists); the
  other metrics read latencies only.
- **Averages** are over groups, each group counting once, except the top-k score, which is
  TenSet's ratio of weighted sums over groups.
"""
from __future__ import annotations

import numpy as np
from scipy.special import gammaln

__all__ = ["pairwise_accuracy", "topk_score", "average_peak", "ndcg", "random_baseline",
           "ranking_report", "group_indices"]


def group_indices(groups) -> list[np.ndarray]:
    """Index arrays of the records of each group, groups in sorted order of their ids."""
    groups = np.asarray(groups)
    if len(groups) == 0:
        return []
    _, inverse = np.unique(groups, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.flatnonzero(np.diff(inverse[order])) + 1
    return np.split(order, bounds)


def _check(latency, score, groups):
    latency = np.asarray(latency, dtype=float)
    score = np.asarray(score, dtype=float)
    groups = np.asarray(groups)
    if not (len(latency) == len(score) == len(groups)):
        raise ValueError(f"latency, score and groups differ in length: "
                         f"{len(latency)}, {len(score)}, {len(groups)}")
    if not np.all(np.isfinite(latency) & (latency > 0)):
        raise ValueError("latency must be finite and positive (valid measurements only)")
    if not np.all(np.isfinite(score)):
        raise ValueError("score must be finite")
    return latency, score, groups


def log_comb(n, k):
    """log C(n, k), elementwise; where n < k (no way to choose) it is log C(k, k) = 0 rather
    than NaN, for callers that mask those entries."""
    n = np.maximum(np.asarray(n, dtype=float), k)
    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)


def _expected_extreme(values: np.ndarray, r: int, largest: bool) -> float:
    """Expected max (or min) of ``r`` values drawn without replacement from ``values``."""
    m = len(values)
    if r >= m:
        return float(values.max() if largest else values.min())
    u = np.sort(values)
    if not largest:
        u = u[::-1]  # the min of a subset is the max of the values in descending order
    i = np.arange(1, m + 1)  # P(max = u_i) = C(i-1, r-1) / C(m, r)
    ok = i - 1 >= r - 1
    p = np.zeros(m)
    p[ok] = np.exp(log_comb(i[ok] - 1, r - 1) - log_comb(m, r))
    return float(np.dot(p, u))


def _tie_blocks(score_sorted_desc: np.ndarray):
    """(start, stop) of runs of equal scores in a descending-sorted score array."""
    edges = np.flatnonzero(np.diff(score_sorted_desc) != 0) + 1
    starts = np.concatenate([[0], edges])
    stops = np.concatenate([edges, [len(score_sorted_desc)]])
    return zip(starts, stops)


def _rank_order(score):
    return np.argsort(-score, kind="stable")


def pairwise_accuracy(latency, score, groups, chunk=2048) -> float:
    """Pairwise comparison accuracy (PCA), averaged over groups.

    Within each group, over all pairs of programs with different latencies, the fraction whose
    predicted order (higher score = faster) matches the true order; pairs with equal scores
    count one half.
    """
    latency, score, groups = _check(latency, score, groups)
    values = []
    for idx in group_indices(groups):
        if len(idx) < 2:
            continue
        lat, s = latency[idx], score[idx]
        right = pairs = 0.0
        for start in range(0, len(idx), chunk):  # rows in chunks bound the n x n memory
            dl = lat[start:start + chunk, None] - lat[None, :]
            ds = s[start:start + chunk, None] - s[None, :]
            faster = dl < 0  # each unordered pair counted once, from its faster program
            pairs += faster.sum()
            right += (faster & (ds > 0)).sum() + 0.5 * (faster & (ds == 0)).sum()
        if pairs:
            values.append(right / pairs)
    return float(np.mean(values)) if values else float("nan")


def _expected_topk_latency(lat, s, k) -> float:
    order = _rank_order(s)
    lat, s = lat[order], s[order]
    if k >= len(lat):
        return float(lat.min())
    threshold = s[k - 1]
    above = s > threshold
    block = lat[s == threshold]
    best_above = lat[above].min() if above.any() else np.inf
    r = k - int(above.sum())
    return _expected_extreme(np.minimum(block, best_above), r, largest=False)


def topk_score(latency, score, groups, k=5, weights=None) -> float:
    """TenSet's top-k score: sum_g w_g best_g / sum_g w_g topk_g.

    ``topk_g`` is the best true latency among the group's first ``k`` programs by score, and
    ``best_g`` the group's best latency; ``weights`` (per record, constant within a group: the
    task's weight in its network) default to 1. 1.0 is perfect.
    """
    latency, score, groups = _check(latency, score, groups)
    weights = np.ones(len(latency)) if weights is None else np.asarray(weights, dtype=float)
    best = topk = 0.0
    for idx in group_indices(groups):
        if len(idx) < 2:
            continue
        w = weights[idx[0]]
        best += w * latency[idx].min()
        topk += w * _expected_topk_latency(latency[idx], score[idx], k)
    return float(best / topk) if topk else float("nan")


def _expected_running_max(thr, s, k) -> np.ndarray:
    """Expected running max of ``thr`` at positions 1..k in score order (ties random)."""
    order = _rank_order(s)
    thr, s = thr[order], s[order]
    out = []
    best_before = 0.0
    for start, stop in _tie_blocks(s):
        block = np.maximum(thr[start:stop], best_before)
        for j in range(1, stop - start + 1):
            if len(out) == k:
                return np.array(out)
            out.append(_expected_extreme(block, j, largest=True))
        best_before = max(best_before, thr[start:stop].max())
    out.extend([best_before] * (k - len(out)))  # fewer than k programs: the best is found
    return np.array(out)


def average_peak(latency, score, groups, k=5) -> float:
    """MetaSchedule's a-peak@k, averaged over groups.

    Per group: the mean over the first ``k`` positions (in score order) of the running maximum
    of the normalised throughput ``min_latency / latency``. A group with fewer than ``k``
    programs keeps its final running maximum (1.0) for the remaining positions.
    """
    latency, score, groups = _check(latency, score, groups)
    values = []
    for idx in group_indices(groups):
        if len(idx) < 2:
            continue
        lat = latency[idx]
        values.append(_expected_running_max(lat.min() / lat, score[idx], k).mean())
    return float(np.mean(values)) if values else float("nan")


def ndcg(latency, score, groups, k=5) -> float:
    """NDCG@k with the normalised throughput ``min_latency / latency`` as gain, averaged over groups.

    DCG = sum over positions p <= k of gain_p / log2(p + 1); tied scores share their mean gain.
    """
    latency, score, groups = _check(latency, score, groups)
    values = []
    for idx in group_indices(groups):
        if len(idx) < 2:
            continue
        lat, s = latency[idx], score[idx]
        gain = lat.min() / lat
        order = _rank_order(s)
        gain_sorted, s_sorted = gain[order], s[order]
        expected = np.empty(len(gain))
        for start, stop in _tie_blocks(s_sorted):
            expected[start:stop] = gain_sorted[start:stop].mean()
        n = min(k, len(gain))
        discount = 1.0 / np.log2(np.arange(2, n + 2))
        ideal = np.sort(gain)[::-1][:n]
        values.append(np.dot(expected[:n], discount) / np.dot(ideal, discount))
    return float(np.mean(values)) if values else float("nan")


def random_baseline(metric, latency, groups, **kwargs) -> float:
    """Expected value of ``metric`` for a uniformly random ranking of the same groups (exact)."""
    return metric(latency, np.zeros(len(latency)), groups, **kwargs)


def ranking_report(latency, score, groups, weights=None) -> dict:
    """PCA, top-1, top-5, a-peak@5 and NDCG@5 with their random baselines and group sizes."""
    latency = np.asarray(latency, dtype=float)
    sizes = np.array([len(i) for i in group_indices(groups)])
    report = {
        "pca": pairwise_accuracy(latency, score, groups),
        "top1": topk_score(latency, score, groups, 1, weights),
        "top5": topk_score(latency, score, groups, 5, weights),
        "apeak5": average_peak(latency, score, groups, 5),
        "ndcg5": ndcg(latency, score, groups, 5),
        "random_pca": 0.5 if (sizes > 1).any() else float("nan"),
        "random_top1": random_baseline(topk_score, latency, groups, k=1, weights=weights),
        "random_top5": random_baseline(topk_score, latency, groups, k=5, weights=weights),
        "random_apeak5": random_baseline(average_peak, latency, groups, k=5),
        "n_groups": int((sizes > 1).sum()),
        "n_records": int(sizes[sizes > 1].sum()) if len(sizes) else 0,
        "group_size_min": int(sizes.min()) if len(sizes) else 0,
        "group_size_median": float(np.median(sizes)) if len(sizes) else 0.0,
    }
    return report
