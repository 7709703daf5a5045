"""Ranking metrics on hand-computed cases, and ties checked against brute-force enumeration."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gbxfer.metrics import (average_peak, ndcg, pairwise_accuracy, random_baseline,
                            ranking_report, topk_score)

# One group: latencies 1, 2, 4, 8 s. The model ranks them 2, 1, 8, 4 (scores: higher = faster).
LAT = np.array([1.0, 2.0, 4.0, 8.0])
SCORE = np.array([3.0, 4.0, 1.0, 2.0])
G = np.zeros(4, dtype=int)


def test_pca_counts_pairs_in_predicted_order():
    # pairs (faster, slower): (1,2) wrong, (1,4) right, (1,8) right, (2,4) right, (2,8) right,
    # (4,8) wrong -> 4/6
    assert pairwise_accuracy(LAT, SCORE, G) == pytest.approx(4 / 6)


def test_pca_score_ties_count_one_half_and_latency_ties_are_left_out():
    lat = np.array([1.0, 1.0, 2.0])
    score = np.array([5.0, 0.0, 5.0])
    # comparable pairs: (1a, 2) tie -> 0.5; (1b, 2) wrong -> 0; (1a, 1b) not counted
    assert pairwise_accuracy(lat, score, np.zeros(3)) == pytest.approx(0.25)


def test_pca_averages_groups_equally():
    lat = np.array([1.0, 2.0, 1.0, 2.0, 3.0])
    score = np.array([1.0, 0.0, 0.0, 1.0, 2.0])  # group 0 perfect; group 1 all 3 pairs wrong
    groups = np.array([0, 0, 1, 1, 1])
    assert pairwise_accuracy(lat, score, groups) == pytest.approx(0.5)


def test_topk_score_is_best_over_best_of_first_k():
    assert topk_score(LAT, SCORE, G, k=1) == pytest.approx(1 / 2)
    assert topk_score(LAT, SCORE, G, k=2) == pytest.approx(1.0)


def test_topk_score_weights_tasks():
    lat = np.array([1.0, 2.0, 10.0, 40.0])
    score = np.array([0.0, 1.0, 1.0, 0.0])  # group 0 picks 2 (best 1); group 1 picks 10 (best)
    groups = np.array([0, 0, 1, 1])
    weights = np.array([3.0, 3.0, 1.0, 1.0])
    assert topk_score(lat, score, groups, 1, weights) == pytest.approx((3 * 1 + 10) / (3 * 2 + 10))


def test_topk_score_tie_at_the_cut_is_an_expectation():
    lat = np.array([1.0, 2.0, 3.0])
    score = np.array([1.0, 1.0, 1.0])
    # top-1 of a random order: expected latency (1 + 2 + 3) / 3 = 2
    assert topk_score(lat, score, np.zeros(3), k=1) == pytest.approx(1 / 2)


def test_apeak_is_mean_running_max_of_normalised_throughput():
    # order: 2 s (0.5), 1 s (1.0), 8 s, 4 s -> running max 0.5, 1, 1
    assert average_peak(LAT, SCORE, G, k=3) == pytest.approx((0.5 + 1 + 1) / 3)


def test_apeak_pads_short_groups_with_their_best():
    lat = np.array([2.0, 1.0])
    score = np.array([1.0, 0.0])
    assert average_peak(lat, score, np.zeros(2), k=4) == pytest.approx((0.5 + 1 + 1 + 1) / 4)


def test_ndcg_by_hand():
    gains = 1 / LAT  # min latency is 1
    dcg = gains[1] / math.log2(2) + gains[0] / math.log2(3)
    idcg = gains[0] / math.log2(2) + gains[1] / math.log2(3)
    assert ndcg(LAT, SCORE, G, k=2) == pytest.approx(dcg / idcg)


def test_single_program_groups_are_left_out():
    lat = np.array([1.0, 2.0, 5.0])
    score = np.array([1.0, 0.0, 0.0])
    groups = np.array([0, 0, 1])
    assert pairwise_accuracy(lat, score, groups) == 1.0
    assert topk_score(lat, score, groups, 1) == 1.0
    assert math.isnan(pairwise_accuracy(lat[2:], score[2:], groups[2:]))


def test_invalid_latencies_are_rejected():
    with pytest.raises(ValueError, match="valid measurements"):
        pairwise_accuracy(np.array([1.0, np.nan]), np.zeros(2), np.zeros(2))


def test_perfect_ranking_scores_one():
    report = ranking_report(LAT, -LAT, G)
    assert report["pca"] == report["top1"] == report["top5"] == report["apeak5"] == 1.0
    assert report["ndcg5"] == pytest.approx(1.0)
    assert report["random_pca"] == 0.5
    assert report["n_groups"] == 1 and report["n_records"] == 4


def _brute_force(metric, lat, score, k):
    """Average of ``metric`` over every order that sorts by score, ties broken all ways."""
    values = []
    for perm in itertools.permutations(range(len(lat))):
        tiebreak = np.empty(len(lat))
        tiebreak[list(perm)] = np.arange(len(lat)) * 1e-3
        values.append(metric(lat, score * 10 + tiebreak, np.zeros(len(lat)), k=k))
    return float(np.mean(values))


scores_with_ties = st.lists(st.integers(0, 2), min_size=2, max_size=6)


@settings(max_examples=40, deadline=None)
@given(scores_with_ties, st.integers(1, 4), st.randoms(use_true_random=False))
def test_tied_scores_equal_the_average_over_tie_breaks(score, k, rnd):
    n = len(score)
    lat = np.array([rnd.choice([1.0, 2.0, 3.0, 5.0, 8.0]) for _ in range(n)])
    score = np.array(score, dtype=float)
    assert average_peak(lat, score, np.zeros(n), k=k) == pytest.approx(
        _brute_force(average_peak, lat, score, k))
    assert ndcg(lat, score, np.zeros(n), k=k) == pytest.approx(
        _brute_force(ndcg, lat, score, k))
    # top-k's ratio is per group, so with one group the expectation is of the denominator
    expected_topk = _brute_force(lambda *a, k: 1 / topk_score(*a, k=k), lat, score, k)
    assert topk_score(lat, score, np.zeros(n), k=k) == pytest.approx(1 / expected_topk)


def test_random_baseline_of_pca_is_one_half():
    rng = np.random.default_rng(0)
    lat = rng.uniform(1, 2, 50)
    assert random_baseline(pairwise_accuracy, lat, np.repeat([0, 1], 25)) == pytest.approx(0.5)


def test_random_top1_is_mean_best_over_mean_latency():
    lat = np.array([1.0, 3.0, 2.0, 6.0])
    groups = np.array([0, 0, 1, 1])
    assert random_baseline(topk_score, lat, groups, k=1) == pytest.approx((1 + 2) / (2 + 4))
