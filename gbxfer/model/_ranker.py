"""``GBCostRanker``: a gradient-boosted ranking model of program latency, as a scikit-learn
estimator over LightGBM or XGBoost.
"""
from __future__ import annotations

import math

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted, validate_data

OBJECTIVES = {
    "lightgbm": ("lambdarank", "rank_xendcg", "regression"),
    "xgboost": ("rank:pairwise", "rank:ndcg", "regression"),
}


LABELS = ("throughput", "rank", "rank+throughput")
# numeric estimator parameters: (a whole number, the test, the domain in words)
PARAM_DOMAINS = {
    "n_estimators": (True, lambda v: v >= 1, "an integer >= 1"),
    "learning_rate": (False, lambda v: v > 0, "a number > 0"),
    "num_leaves": (True, lambda v: v >= 2, "an integer >= 2"),
    "max_depth": (True, lambda v: True, "an integer (<= 0: no limit in LightGBM)"),
    "subsample": (False, lambda v: 0 < v <= 1, "a fraction in (0, 1]"),
    "colsample_bytree": (False, lambda v: 0 < v <= 1, "a fraction in (0, 1]"),
    "reg_lambda": (False, lambda v: v >= 0, "a number >= 0"),
    "relevance_levels": (True, lambda v: v >= 2, "an integer >= 2"),
}


def relevance_grades(y, levels: int) -> np.ndarray:
    """Integer relevance 0..levels-1 from normalised throughput y in [0, 1] (min/latency)."""
    return np.clip(np.floor(np.asarray(y, dtype=float) * (levels - 1) + 1e-9), 0,
                   levels - 1).astype(int)


def paired(groups) -> np.ndarray:
    """Rows whose group (one id per row) holds two or more: a group of one ranks nothing."""
    _, codes, counts = np.unique(np.asarray(groups), return_inverse=True, return_counts=True)
    return counts[codes] > 1


def _ranks(y, codes) -> tuple[np.ndarray, np.ndarray]:
    """Each row's rank 1..n by ``y`` within its group (tied rows their mean rank) and n."""
    import pandas as pd

    by = pd.Series(np.asarray(y, dtype=float)).groupby(np.asarray(codes))
    return by.rank().to_numpy(), by.transform("size").to_numpy()


def group_ranks(y, codes) -> np.ndarray:
    """Each row's rank i = 1..n by ``y`` within its group of n (``codes``: one integer per
    row) as i / (n + 1), tied rows their mean rank: the expected percentile of the i-th of n
    programs drawn from the task's, so that a small group's ranks shrink towards 1/2 (the
    better of two programs is expected at 2/3, not at the top)."""
    ranks, sizes = _ranks(y, codes)
    return ranks / (sizes + 1)


def training_labels(y, codes, label: str = "throughput", levels: int | None = None):
    """What the booster fits for labels ``y`` (normalised throughput) in groups ``codes``:
    ``label="rank"`` turns y into its rank within the group (:func:`group_ranks`); ``levels``
    (ranking objectives) then into integer relevance grades."""
    if label not in LABELS:
        raise ValueError(f"label must be one of {', '.join(LABELS)}, got {label!r}")
    y = np.asarray(y, dtype=float)
    if label == "rank" and levels is None:
        return group_ranks(y, codes)
    if label == "rank+throughput":  # the order of every pair, and how far from the best
        y = (group_ranks(y, codes) + y) / 2
    if label == "rank":  # grades encode order alone: the ranks spread over 0..levels-1
        ranks, sizes = _ranks(y, codes)
        y = (ranks - 1) / np.maximum(sizes - 1, 1)
    return y if levels is None else relevance_grades(y, levels)


class GBCostRanker(BaseEstimator):
    """Ranks programs within groups (a task on one hardware profile): higher score = faster.

    Not a regressor: its scores only order programs within a group, and :meth:`score` is
    pairwise comparison accuracy, not R^2.

    Parameters
    ----------
    backend : {"lightgbm", "xgboost"}
    objective : str
        LightGBM: ``"lambdarank"`` (default), ``"rank_xendcg"``; XGBoost: ``"rank:pairwise"``,
        ``"rank:ndcg"``; either: ``"regression"`` (squared error on the label itself, as
        TVM's XGBModel and TenSet do). ``None`` picks the backend's first ranking objective.
    n_estimators, learning_rate, num_leaves, max_depth, min_child_samples, subsample,
    colsample_bytree, reg_lambda : booster parameters (LightGBM names; mapped for XGBoost).
        ``min_child_samples`` in (0, 1) is a fraction of the training rows, rounded up (as
        scikit-learn's ``min_samples_leaf``): leaves then grow finer on smaller data.
    extra_trees : bool
        LightGBM only: each split's threshold drawn at random per feature (extremely
        randomized trees).
    relevance_levels : int
        Ranking objectives turn the label y (min latency / latency within the group, in
        [0, 1]; its rank with ``label="rank"``) into integer grades ``floor(y * (levels - 1))``.
    label : {"throughput", "rank", "rank+throughput"}
        What the booster learns: ``"throughput"`` the label y itself; ``"rank"`` y's rank
        within its group as an expected percentile (:func:`group_ranks`: every pair of
        programs weighs alike, where y squeezes the slow majority of a group near 0);
        ``"rank+throughput"`` the mean of the two.
    random_state : int
    n_jobs : int

    Attributes
    ----------
    booster_ : lightgbm.Booster or xgboost.Booster
    feature_importances_ : ndarray of shape (n_features_in_,)
        Total gain of each feature's splits over all trees (LightGBM's ``gain``, XGBoost's
        ``total_gain``).
    n_features_in_ : int
    feature_names_in_ : ndarray of str (when X has column names)

    Notes
    -----
    ``fit(X, y, groups=...)`` takes one group id per row (so ``GroupKFold`` keeps groups
    whole). Without ``groups`` all rows form one group. Rows need not be sorted by group.
    The fit does not depend on the order of the rows. A group of one program carries no
    ranking information and is left out (its label says nothing of its speed: under the
    regression objective and label ``throughput`` it is the best of its group, which would
    teach that the program is fast); data with no larger group is an error. NaN features are
    allowed (missing values, routed by the trees); infinite ones are an error.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(200, 3))
    >>> y = 1 / (1 + np.exp(-X[:, 0]))
    >>> model = GBCostRanker(n_estimators=20).fit(X, y, groups=np.repeat(np.arange(4), 50))
    >>> model.predict(X).shape
    (200,)
    """

    def __init__(self, backend="lightgbm", objective=None, n_estimators=300, learning_rate=0.1,
                 num_leaves=31, max_depth=-1, min_child_samples=20, subsample=1.0,
                 colsample_bytree=1.0, reg_lambda=0.0, extra_trees=False, relevance_levels=31,
                 label="throughput", random_state=0, n_jobs=1):
        self.backend = backend
        self.objective = objective
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.max_depth = max_depth
        self.min_child_samples = min_child_samples
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.reg_lambda = reg_lambda
        self.extra_trees = extra_trees
        self.relevance_levels = relevance_levels
        self.label = label
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _objective(self) -> str:
        if self.backend not in OBJECTIVES:
            raise ValueError(f"backend must be one of {', '.join(OBJECTIVES)}, "
                             f"got {self.backend!r}")
        objective = self.objective or OBJECTIVES[self.backend][0]
        if objective not in OBJECTIVES[self.backend]:
            raise ValueError(f"objective {objective!r} is not one of {self.backend}'s: "
                             f"{', '.join(OBJECTIVES[self.backend])}")
        return objective

    def fit(self, X, y, groups=None, sample_weight=None, init_model=None):
        """Fit on features X, labels y (normalised throughput in [0, 1], higher = faster),
        per-row group ids, optional per-row weights; ``init_model`` continues boosting from a
        booster of the same backend (transfer)."""
        objective = self._objective()
        self.check_params()
        X, y = validate_data(self, X, y, ensure_all_finite="allow-nan",
                             dtype=(np.float32, np.float64), y_numeric=True)  # no float64 copy
        if not np.all(np.isfinite(y)):
            raise ValueError("y must be finite (normalised throughput of valid measurements)")
        groups = np.zeros(len(y), dtype=int) if groups is None else np.asarray(groups)
        if len(groups) != len(y):
            raise ValueError(f"groups has {len(groups)} entries for {len(y)} rows")
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=float)
            if sample_weight.shape != y.shape or not np.all(np.isfinite(sample_weight)) or (
                    sample_weight < 0).any():
                raise ValueError("sample_weight must be finite, non-negative, one per row")
        kept = paired(groups)
        if not kept.any():
            raise ValueError("every group holds one sample (one program): nothing to rank")
        if not kept.all():
            X, y, groups = X[kept], y[kept], groups[kept]
            sample_weight = None if sample_weight is None else sample_weight[kept]
        _, codes = np.unique(groups, return_inverse=True)
        if sample_weight is not None and not sample_weight.any():
            raise ValueError("sample_weight are all zero (in groups of two or more programs): "
                             "nothing to learn from")
        # Boosters want each group's rows together; within a group a canonical order (label,
        # then features) makes the model independent of the input's row order (LightGBM's
        # lambdarank picks pairs among tied scores by position).
        order = np.lexsort((*X.T[::-1], -y, codes))
        sizes = np.bincount(codes[order])
        sizes = sizes[sizes > 0]
        Xo, yo, wo = X[order], y[order], None if sample_weight is None else sample_weight[order]
        label = training_labels(yo, codes[order], self.label,
                                None if objective == "regression" else self.relevance_levels)
        if self.backend == "lightgbm":
            self.booster_ = self._fit_lightgbm(Xo, label, sizes, wo, objective, init_model)
        else:
            self.booster_ = self._fit_xgboost(Xo, label, sizes, wo, objective, init_model)
        self.objective_ = objective
        return self

    def _fit_lightgbm(self, X, label, sizes, weight, objective, init_model):
        import lightgbm as lgb

        params = self.lightgbm_params(objective, len(label))
        data = lgb.Dataset(X, label, weight=weight,
                           group=None if objective == "regression" else sizes,
                           params={"verbosity": -1}, free_raw_data=True)
        return lgb.train(params, data, num_boost_round=self.n_estimators, init_model=init_model)

    def check_params(self) -> None:
        """Raise ValueError naming the first numeric parameter outside its domain (what the
        backends would reject, or misread, only once fitting)."""
        for name, (whole, ok, domain) in PARAM_DOMAINS.items():
            value = getattr(self, name)
            number = isinstance(value, (int, float, np.number)) and not isinstance(
                value, (bool, np.bool_)) and math.isfinite(value)
            if not number or (whole and not float(value).is_integer()) or not ok(value):
                raise ValueError(f"{name} must be {domain}, got {value!r}")
        self.min_child_count(1)
        self._objective()

    def min_child_count(self, n_rows: int) -> int:
        """The programs a leaf needs at least when ``n_rows`` rows train: ``min_child_samples``
        (a count >= 1), or that fraction of ``n_rows`` rounded up (at least 1) when it lies in
        (0, 1)."""
        value = self.min_child_samples
        if isinstance(value, (int, float, np.number)) and not isinstance(value, (bool, np.bool_)):
            if 0 < value < 1:
                return max(1, math.ceil(value * n_rows))
            if value >= 1 and float(value).is_integer():
                return int(value)
        raise ValueError(f"min_child_samples must be a count >= 1 or a fraction in (0, 1), "
                         f"got {value!r}")

    def lightgbm_params(self, objective: str, n_rows: int) -> dict:
        """The LightGBM training parameters of this estimator for ``n_rows`` training rows."""
        params = {"objective": objective, "learning_rate": self.learning_rate,
                  "num_leaves": self.num_leaves, "max_depth": self.max_depth,
                  "min_child_samples": self.min_child_count(n_rows),
                  "bagging_fraction": self.subsample,
                  "bagging_freq": 1 if self.subsample < 1 else 0,
                  "feature_fraction": self.colsample_bytree, "lambda_l2": self.reg_lambda,
                  "extra_trees": bool(self.extra_trees),
                  "seed": self.random_state, "num_threads": self.n_jobs, "verbosity": -1,
                  "deterministic": True, "force_row_wise": True}
        if objective != "regression":
            params["label_gain"] = list(range(self.relevance_levels))
            params["lambdarank_truncation_level"] = 30
        return params

    def xgboost_params(self, objective: str, n_rows: int) -> dict:
        """The XGBoost training parameters of this estimator for ``n_rows`` training rows
        (LightGBM names mapped)."""
        if self.extra_trees:
            raise ValueError("extra_trees is a LightGBM parameter; XGBoost has no such trees")
        params = {"objective": "reg:squarederror" if objective == "regression" else objective,
                  "eta": self.learning_rate,
                  "max_depth": 6 if self.max_depth < 0 else self.max_depth,
                  "max_leaves": self.num_leaves,
                  "min_child_weight": 1e-3 * self.min_child_count(n_rows),
                  "subsample": self.subsample, "colsample_bytree": self.colsample_bytree,
                  "lambda": self.reg_lambda, "seed": self.random_state, "nthread": self.n_jobs,
                  "tree_method": "hist", "verbosity": 0}
        if objective != "regression":
            params["lambdarank_pair_method"] = "mean"
        return params

    def _fit_xgboost(self, X, label, sizes, weight, objective, init_model):
        import xgboost as xgb

        params = self.xgboost_params(objective, len(label))
        group = None
        if objective != "regression":
            group = sizes
            if weight is not None:  # XGBoost ranking takes one weight per group
                bounds = np.concatenate([[0], np.cumsum(sizes)])
                weight = np.array([weight[a:b].mean() for a, b in zip(bounds[:-1], bounds[1:])])
        if init_model is None:  # the histogram bins alone (a DMatrix keeps every value too)
            data = xgb.QuantileDMatrix(X, label=label, weight=weight, group=group,
                                       max_bin=params.get("max_bin", 256), nthread=self.n_jobs)
        else:  # the prior's trees must see the values, not their bins' lower bounds
            data = xgb.DMatrix(X, label=label, weight=weight, group=group, nthread=self.n_jobs)
        return xgb.train(params, data, num_boost_round=self.n_estimators, xgb_model=init_model)

    def predict(self, X):
        """Scores, higher = faster (comparable within a group only)."""
        check_is_fitted(self, "booster_")
        X = validate_data(self, X, reset=False, ensure_all_finite="allow-nan",
                          dtype=(np.float32, np.float64))
        if self.backend == "lightgbm":
            return np.asarray(self.booster_.predict(X, num_threads=self.n_jobs), dtype=float)
        self.booster_.set_param({"nthread": self.n_jobs})
        return np.asarray(self.booster_.inplace_predict(X), dtype=float)  # no DMatrix copy

    @property
    def feature_importances_(self) -> np.ndarray:
        check_is_fitted(self, "booster_")
        if self.backend == "lightgbm":
            return np.asarray(self.booster_.feature_importance("gain"), dtype=float)
        scores = self.booster_.get_score(importance_type="total_gain")
        return np.array([scores.get(f"f{i}", 0.0) for i in range(self.n_features_in_)])

    def score(self, X, y, groups=None, sample_weight=None):
        """Pairwise comparison accuracy (in [0, 1]) of the predictions within ``groups``, ``y``
        being normalised throughput (see :func:`gbxfer.metrics.pairwise_accuracy`); not R^2."""
        from ..metrics import pairwise_accuracy

        groups = np.zeros(len(y), dtype=int) if groups is None else groups
        y = np.asarray(y, dtype=float)
        latency = 1.0 / np.clip(y, 1e-12, None)  # y = min/latency: its order is latency's
        return pairwise_accuracy(latency, self.predict(X), groups)

    # scikit-learn's estimator checks that cannot apply, with the reason (see tests).
    EXPECTED_FAILED_CHECKS = {
        "xgboost": {
            "check_sample_weight_equivalence_on_dense_data":
                "XGBoost's ranking objectives take one weight per group, so gbxfer gives each "
                "group the mean of its rows' weights: a weight of 2 is not a duplicated row",
        },
        "lightgbm": {},
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.target_tags.required = True  # fit needs y (what RegressorMixin used to say)
        return tags
