"""Attention-style, hardware-conditioned reweighting in numpy (no torch).

A hardware descriptor acts as a query over a set of keys — feature groups, or source hardware
profiles — and yields weights that sum to the number of keys:

    a(h) = K * softmax(W_k^T (W_q z(h)) / temperature),     z(h) = standardised descriptor

``HardwareAttention.fit(H, T)`` learns ``W_q`` (descriptor fields x dim) and the keys ``W_k``
(dim x n_keys) by Adam on the cross-entropy between ``softmax(...)`` and target distributions
``T`` (one row per training hardware), with L2 regularisation. What the targets are is up to the
use:

- **feature-group gating** (:func:`group_importance`): T[p] = the share of gain each feature
  group earns in a booster fitted on profile p alone. Records are then rescaled group-wise by
  ``a(h_record)``: the same feature gets a different scale on different hardware, so trees can
  split on hardware-dependent thresholds (a constant scale for every row would change nothing);
- **source reweighting** for transfer: T[p] = softmax of how well each other profile's latencies
  rank p's (Spearman on paired programs); a(h_target) then weights source samples.
"""
from __future__ import annotations

import warnings

import numpy as np


def _softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


class HardwareAttention:
    """Hardware descriptor -> weights over ``n_keys`` keys (see the module docstring).

    Parameters
    ----------
    dim : int
        Width of the query/key space.
    temperature : float
    l2 : float
        Weight decay on both projections.
    steps, learning_rate : Adam iterations and step size.
    random_state : int
    """

    def __init__(self, dim=8, temperature=1.0, l2=1e-2, steps=500, learning_rate=0.05,
                 random_state=0):
        self.dim = dim
        self.temperature = temperature
        self.l2 = l2
        self.steps = steps
        self.learning_rate = learning_rate
        self.random_state = random_state

    def _standardise(self, H):
        Z = (np.asarray(H, dtype=float) - self.mean_) / self.scale_
        return np.nan_to_num(Z, nan=0.0)  # an unknown field sits at the mean

    def fit(self, H, T):
        """``H`` (n_hardware, n_fields) descriptors, ``T`` (n_hardware, n_keys) target
        distributions (rows sum to 1)."""
        H = np.asarray(H, dtype=float)
        T = np.asarray(T, dtype=float)
        if H.ndim != 2 or T.ndim != 2 or len(H) != len(T):
            raise ValueError("H and T need one row per hardware profile")
        if not np.allclose(T.sum(1), 1) or (T < 0).any():
            raise ValueError("each row of T must be a distribution (non-negative, sums to 1)")
        with warnings.catch_warnings():  # a field unknown everywhere: mean 0, scale 1
            warnings.simplefilter("ignore", RuntimeWarning)
            self.mean_ = np.nan_to_num(np.nanmean(np.where(np.isfinite(H), H, np.nan), axis=0))
            spread = np.nanstd(np.where(np.isfinite(H), H, np.nan), axis=0)
        self.scale_ = np.where(np.nan_to_num(spread) > 0, np.nan_to_num(spread), 1.0)
        Z = self._standardise(H)
        rng = np.random.default_rng(self.random_state)
        params = [rng.normal(0, 0.1, (Z.shape[1], self.dim)),
                  rng.normal(0, 0.1, (self.dim, T.shape[1]))]
        m = [np.zeros_like(p) for p in params]
        v = [np.zeros_like(p) for p in params]
        for step in range(1, self.steps + 1):
            Wq, Wk = params
            Q = Z @ Wq
            P = _softmax(Q @ Wk / self.temperature)
            G = (P - T) / (len(Z) * self.temperature)  # d(mean cross-entropy)/d(logits)
            grads = [Z.T @ (G @ Wk.T) + self.l2 * Wq, Q.T @ G + self.l2 * Wk]
            for i, g in enumerate(grads):  # Adam
                m[i] = 0.9 * m[i] + 0.1 * g
                v[i] = 0.999 * v[i] + 0.001 * g * g
                m_hat, v_hat = m[i] / (1 - 0.9**step), v[i] / (1 - 0.999**step)
                params[i] = params[i] - self.learning_rate * m_hat / (np.sqrt(v_hat) + 1e-8)
        self.W_query_, self.W_key_ = params
        self.loss_ = float(-(T * np.log(self.distribution(H) + 1e-12)).sum(1).mean())
        return self

    def distribution(self, H) -> np.ndarray:
        """softmax attention over the keys, one row per descriptor."""
        Z = self._standardise(np.atleast_2d(H))
        return _softmax(Z @ self.W_query_ @ self.W_key_ / self.temperature)

    def weights(self, H) -> np.ndarray:
        """Attention weights scaled to sum to the number of keys (1 = neutral)."""
        P = self.distribution(H)
        return P * P.shape[1]


def feature_groups(columns) -> list[str]:
    """The group of each feature column: block plus sub-family (``program.sp_axis``, ...)."""
    groups = []
    for column in columns:
        block, _, name = column.partition(".")
        stem = name.split("_")[0]
        if block == "program" and name.startswith(("sp_axis", "rd_axis")):
            stem = name[:7]
        groups.append(f"{block}.{stem}")
    return groups


def group_importance(gain: np.ndarray, groups: list[str], names: list[str]) -> np.ndarray:
    """Share of ``gain`` earned by each of ``names`` (groups of the columns), as a
    distribution with a small floor so that no group is ruled out."""
    totals = np.array([gain[[g == n for g in groups]].sum() for n in names], dtype=float)
    totals = totals / totals.sum() if totals.sum() > 0 else np.full(len(names), 1 / len(names))
    totals = totals + 0.01
    return totals / totals.sum()


class GroupGate:
    """Hardware-conditioned feature-group gating (see the module docstring).

    ``fit`` learns per-profile group importances with small boosters, then a
    :class:`HardwareAttention` from descriptors to those importances; ``transform`` rescales
    every non-hardware column by the weight its group gets for the row's hardware.
    """

    def __init__(self, dim=8, temperature=1.0, l2=1e-2, steps=500, probe_estimators=60,
                 random_state=0):
        self.dim = dim
        self.temperature = temperature
        self.l2 = l2
        self.steps = steps
        self.probe_estimators = probe_estimators
        self.random_state = random_state

    def _hardware(self, X, columns):
        idx = [i for i, c in enumerate(columns) if c.startswith("hardware.")]
        if not idx:
            raise ValueError("group gating needs the hardware block among the features")
        return X[:, idx]

    def fit(self, X, y, groups, hardware, columns):
        from ._ranker import GBCostRanker, paired

        self.columns_ = list(columns)
        self.groups_ = feature_groups(columns)
        self.names_ = [g for g in dict.fromkeys(self.groups_) if not g.startswith("hardware.")]
        H, T, self.profiles_ = [], [], []
        descriptors = self._hardware(X, columns)
        for hw in np.unique(hardware):
            rows = hardware == hw
            if not paired(groups[rows]).any():
                continue  # groups of one program rank nothing: no importance to learn
            probe = GBCostRanker(n_estimators=self.probe_estimators,
                                 random_state=self.random_state).fit(X[rows], y[rows],
                                                                     groups=groups[rows])
            T.append(group_importance(probe.feature_importances_, self.groups_, self.names_))
            H.append(descriptors[rows][0])
            self.profiles_.append(str(hw))
        if not T:
            raise ValueError("no hardware profile has a group of two programs: nothing to rank")
        self.attention_ = HardwareAttention(self.dim, self.temperature, self.l2, self.steps,
                                            random_state=self.random_state).fit(H, T)
        self.importance_ = np.array(T)
        return self

    def transform(self, X, columns) -> np.ndarray:
        if list(columns) != self.columns_:
            raise ValueError("gating expects the columns it was fitted on")
        weights = self.attention_.weights(self._hardware(X, columns))  # rows x groups
        scale = np.ones((len(X), len(columns)))
        for k, name in enumerate(self.names_):
            cols = [j for j, g in enumerate(self.groups_) if g == name]
            scale[:, cols] = weights[:, [k]]
        return (X * scale).astype(np.float32)

    def to_dict(self) -> dict:
        a = self.attention_
        return {"params": {"dim": self.dim, "temperature": self.temperature, "l2": self.l2,
                           "steps": self.steps, "probe_estimators": self.probe_estimators,
                           "random_state": self.random_state},
                "columns": self.columns_, "names": self.names_,
                "mean": a.mean_.tolist(), "scale": a.scale_.tolist(),
                "W_query": a.W_query_.tolist(), "W_key": a.W_key_.tolist(),
                "importance": self.importance_.tolist(), "profiles": self.profiles_}

    @classmethod
    def from_dict(cls, d: dict) -> "GroupGate":
        gate = cls(**d["params"])
        gate.columns_, gate.names_ = d["columns"], d["names"]
        gate.groups_ = feature_groups(gate.columns_)
        a = HardwareAttention(gate.dim, gate.temperature, gate.l2, gate.steps)
        a.mean_, a.scale_ = np.array(d["mean"]), np.array(d["scale"])
        a.W_query_, a.W_key_ = np.array(d["W_query"]), np.array(d["W_key"])
        gate.attention_, gate.importance_ = a, np.array(d["importance"])
        gate.profiles_ = list(d.get("profiles", []))  # absent in models saved before 2026-12-04
        return gate
