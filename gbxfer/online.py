"""Online updates in a tuning run: the run's own measurements come to outrank the prior.

A tuning run measures its candidates in rounds. :class:`OnlineModel` keeps the measurements and
ranks new candidates with two models:

* ``refined``: the prior model (pretrained or calibrated) boosted a few trees further on the
  run's measurements;
* ``session``: a model of the run's measurements alone, as TVM's XGBModel is.

A batch of candidates of one task is scored ``(1 - w) * rank(refined) + w * rank(session)``,
each model's scores turned into ranks in [0, 1] within the batch. ``w`` is the task's own:
after every round of a task it becomes the weight of :data:`WEIGHTS` whose blend ranked the
task's latest ``window`` rounds best *before they were seen*: each round is scored with the
predictions the two models made before they were refitted on it (prequential pairwise accuracy,
pairs within one round). Ties keep the smaller weight: for each task the prior leads until the
run's own model ranks that task's new measurements better, and gives way as soon as it does. A
task not measured yet is ranked by the refined prior (the session model knows nothing of it;
in mode ``choose``, possibly by the prior as it was before the run, see below).
Until 2026-12-05 its first round was drawn at random once the refined prior had ranked the
run's rounds no better than chance; in a ResNet-50 run that check fired on a reduction whose
programs all ran alike, and tuned again without it the run ended level (docs/benchmarks.md,
``scripts/first_rounds.py``). Without a prior (a cold start) the scores are random until
``min_samples`` measurements (in mode ``local``: of the task), then the session model's.

``mode`` selects among these: ``choose`` (the default since 2026-12-05: both pairs of models,
the run-wide one above and the task's own, fitted per task on that task's measurements alone,
and after every round of a task the pair and weight that ranked its latest rounds best,
run-wide on ties: compared on the rounds both pairs scored, so on one round just after the
task's own pair exists; without a prior, the two session models; a task not measured yet is
ranked by the refined prior, or by the prior as it was before the run where that ranked the
run's rounds before their tasks' own models better), ``blend`` (the run-wide pair only: the
default until 2026-12-05; level with ``choose`` in two real ResNet-50 runs, behind it in 16 of
19 replayed cells, docs/benchmarks.md), ``local`` (the task's own pair only; a task not
measured yet is ranked by the prior as it was before the run), ``refine`` (``w = 0`` always:
gbxfer's update before 2026-12-02), ``session`` (a task's first round by the prior, then
``w = 1``) and ``prior`` (never updated).
"""
from __future__ import annotations

import numpy as np

from .errors import GbxferError
from .metrics import group_indices, pairwise_accuracy
from .model import GBCostRanker, SavedModel
from .model._ranker import paired

WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
MODES = ("blend", "local", "choose", "refine", "session", "prior")
DEFAULT_MODE = "choose"
# the pairs of (refined, session) models each blending mode chooses among, in order of preference
PAIRS = {"blend": ("run",), "local": ("local",), "choose": ("run", "local")}
_COLUMNS = {"run": (0, 1), "local": (2, 3)}  # where each pair's scores are kept in ``seen``


def batch_ranks(scores: np.ndarray) -> np.ndarray:
    """Scores as ranks in [0, 1] within their batch (ties share their mean rank; one
    candidate: 0.5)."""
    from scipy.stats import rankdata

    scores = np.asarray(scores, dtype=float)
    if len(scores) < 2:
        return np.full(len(scores), 0.5)
    return (rankdata(scores) - 1) / (len(scores) - 1)


def blend(refined, session, weight: float) -> np.ndarray:
    """The blended score of one batch from the two models' raw scores (``None``: no model)."""
    if session is None or (weight == 0 and refined is not None):
        return batch_ranks(refined)
    if refined is None or weight == 1:
        return batch_ranks(session)
    return (1 - weight) * batch_ranks(refined) + weight * batch_ranks(session)


class OnlineModel:
    """A prior cost model updated by a tuning run's measurements (see the module docstring).

    Parameters
    ----------
    prior : SavedModel or None
        The model before the run; ``None`` starts cold.
    columns : list of str
        The feature columns of the rows given to :meth:`score` and :meth:`observe` (the prior's
        own when there is one).
    mode : {"choose", "blend", "local", "refine", "session", "prior"}
        Default: ``choose``.
    update_trees : int
        Trees the refined model adds to the prior, refitted after every round.
    session_trees : int
        Trees of the session model.
    min_samples : int
        Measurements needed before the models are fitted.
    window : int
        Rounds the blend weight is chosen on.
    seed : int
    """

    def __init__(self, prior: SavedModel | None, columns, mode: str = DEFAULT_MODE,
                 update_trees: int = 20, session_trees: int = 100, min_samples: int = 16,
                 window: int = 3, seed: int = 0):
        if mode not in MODES:
            raise GbxferError(f"online mode must be one of {', '.join(MODES)}, got {mode!r}")
        if prior is None and mode in ("refine", "prior"):
            raise GbxferError(f"online mode {mode!r} needs a prior model")
        self.prior, self.columns, self.mode = prior, list(columns), mode
        self.update_trees, self.session_trees = update_trees, session_trees
        self.min_samples, self.window, self.seed = min_samples, window, seed
        self.rng = np.random.default_rng(seed)
        self.pairs = PAIRS.get(mode, ("run",))  # the pairs of models this mode scores with
        self._clear_models()
        # the run's valid measurements, one row each, with the round they came in and the
        # scores the models gave them before seeing them (run-wide refined and session, the
        # task's own refined and session; NaN where a mode has no such model)
        self.X: list[np.ndarray] = []
        self.costs: list[float] = []
        self.groups: list[str] = []
        self.rounds: list[int] = []
        self.seen: list[tuple] = []

    def _clear_models(self) -> None:
        """The models and choices before any measurement."""
        self.refined, self.session = self.prior, None
        self.local: dict[str, tuple] = {}  # modes "local", "choose": task -> (refined, session)
        self.weight: dict[str, float] = {}  # the session model's weight, per task
        self.pair: dict[str, str] = {}  # the pair of models that ranks each task (PAIRS)
        self.first_pair = self.pairs[0]  # ... and a task not measured yet
        self.weights: list[tuple[str, float]] = []  # (task, weight) chosen after each round

    # ----------------------------------------------------------------- scoring
    def pair_of(self, group: str) -> str:
        """The pair of models that ranks task ``group``: ``"run"`` or ``"local"`` (PAIRS)."""
        return self.pair.get(str(group), self.first_pair)

    def models(self, group: str, pair: str | None = None) -> tuple:
        """The (refined, session) models that score task ``group`` (or of that ``pair``)."""
        if (pair or self.pair_of(group)) == "local":
            return self.local.get(str(group), (self.prior, None))
        return self.refined, self.session

    def _raw(self, X, group: str, pair: str | None = None) -> tuple:
        return tuple(None if model is None else model.predict(X, self.columns)
                     for model in self.models(group, pair))

    def weight_of(self, group: str) -> float:
        """The session model's weight in the scores of task ``group``."""
        return self.weight.get(str(group), 0.0 if self.refined is not None else 1.0)

    def score(self, X, group: str) -> np.ndarray:
        """Scores in [0, 1] of one batch of candidates of task ``group`` (features ``X``),
        higher = faster."""
        X = np.asarray(X, dtype=float)
        refined, session = self._raw(X, group)
        if refined is None and session is None:
            return self.rng.random(len(X))
        return blend(refined, session, self.weight_of(group))

    # ----------------------------------------------------------------- updating
    def observe(self, X, costs, group: str) -> None:
        """One round's measurements of task ``group``: features ``X`` and costs in seconds
        (NaN or inf for a failed run, which is skipped)."""
        X, costs = np.asarray(X, dtype=float), np.asarray(costs, dtype=float)
        ok = np.isfinite(costs) & (costs > 0)
        if not ok.any():
            return
        X, costs = X[ok], costs[ok]
        seen = np.full((len(X), 4), np.nan)
        for pair in self.pairs:
            for column, scores in zip(_COLUMNS[pair], self._raw(X, group, pair)):
                if scores is not None:
                    seen[:, column] = scores
        self.seen += [tuple(row) for row in seen]
        round_ = self.rounds[-1] + 1 if self.rounds else 0
        self.X += list(X)
        self.costs += list(costs)
        self.groups += [str(group)] * len(X)
        self.rounds += [round_] * len(X)
        self._fit(str(group))

    def _fit(self, group: str | None) -> None:
        if self.mode == "prior" or len(self.costs) < self.min_samples:
            return
        X, costs, groups = np.array(self.X), np.array(self.costs), np.array(self.groups)
        if not paired(groups).any():  # one measurement per task: nothing to rank yet
            return
        if self.mode != "local":
            self.refined, self.session = self._fitted(X, costs, groups)
        if self.mode in ("local", "choose"):
            # the task just measured (all of them when restoring), on its own measurements
            for g in [group] if group is not None else sorted(set(self.groups)):
                rows = groups == g
                if rows.sum() >= self.min_samples:  # as a run of that task alone would
                    self.local[g] = self._fitted(X[rows], costs[rows], groups[rows])
        # the task just measured, and any measured before the models existed
        for g in sorted({group} - {None} | set(self.groups) - set(self.weight)):
            self.weight[g], self.pair[g] = self.choose_weight(g)
            self.weights.append((g, self.weight[g]))
        if self.mode == "choose" and self.prior is not None:
            self.first_pair = self.choose_first_pair()

    def _fitted(self, X, costs, groups) -> tuple:
        """The (refined, session) models fitted on these measurements, as the mode has them."""
        best = {g: costs[groups == g].min() for g in np.unique(groups)}
        label = np.array([best[g] for g in groups]) / costs
        params = dict(self.prior.ranker.get_params()) if self.prior is not None else {}
        # leaves small enough for a run's few measurements
        leaf = GBCostRanker(**params).min_child_count(len(costs))
        params.update(random_state=self.seed,
                      min_child_samples=max(2, min(leaf, len(costs) // 10)))
        refined, session = self.prior, None
        if self.mode in ("blend", "local", "choose", "session") or self.prior is None:
            ranker = GBCostRanker(**{**params, "n_estimators": self.session_trees}).fit(
                X, label, groups=groups)
            session = SavedModel(ranker, self.columns, extra={"online": "session"})
        if self.prior is not None and self.mode in ("blend", "local", "choose", "refine"):
            prior = self.prior
            ranker = GBCostRanker(**{**params, "n_estimators": self.update_trees}).fit(
                prior.transform(X, self.columns), label, groups=groups,
                init_model=prior.ranker.booster_)
            refined = SavedModel(ranker, prior.columns, extra={"online": "refined"},
                                 gate=prior.gate, partner=prior.partner)  # a blend's too
        return refined, session

    def choose_weight(self, group: str) -> tuple[float, str]:
        """The session model's weight for the next round of task ``group``, and the pair of
        models it weighs (see the module docstring)."""
        if self.mode not in PAIRS:
            return (1.0 if self.mode == "session" or self.prior is None else 0.0), "run"
        # without a prior there is no refined model: each pair's session model alone
        weights, first = (WEIGHTS, 0) if self.prior is not None else ((1.0,), 1)
        seen = np.array(self.seen, dtype=float).reshape(-1, 4)
        rounds, tasks = np.array(self.rounds), np.array(self.groups) == group
        # every pair on the same rounds; the preferred pair alone where the others scored none
        for pairs in (self.pairs, self.pairs[:1]):
            columns = [c for pair in pairs for c in _COLUMNS[pair][first:]]
            rows = tasks & np.isfinite(seen[:, columns]).all(axis=1)
            if rows.any():
                break
        else:
            return weights[0], self.pairs[0]
        rows &= np.isin(rounds, np.unique(rounds[rows])[-self.window:])
        keys, costs, scored = rounds[rows], np.array(self.costs)[rows], seen[rows]
        ranks = np.full_like(scored, np.nan)  # each model's ranks within its round, once
        for idx in group_indices(keys):
            for column in columns:
                ranks[idx, column] = batch_ranks(scored[idx, column])
        best, best_accuracy = (weights[0], pairs[0]), -np.inf
        for pair in pairs:
            refined, session = _COLUMNS[pair]
            for weight in weights:
                blended = ranks[:, session] if weight == 1 else \
                    (1 - weight) * ranks[:, refined] + weight * ranks[:, session]  # as blend()
                accuracy = pairwise_accuracy(costs, blended, keys)
                if np.isfinite(accuracy) and accuracy > best_accuracy + 1e-12:
                    best, best_accuracy = (weight, pair), accuracy
        return best

    def choose_first_pair(self) -> str:
        """Mode ``choose``: the pair that ranks a task not measured yet. Before a task has
        models of its own, its pair of them is the prior as it was before the run (PAIRS'
        ``local`` column 2), beside the prior refined on the other tasks (column 0): ``local``
        where the prior as it was ranked the run's rounds before their tasks' own models better
        (pairwise, within rounds), else ``run``."""
        refined, (before, own) = _COLUMNS["run"][0], _COLUMNS["local"]
        seen = np.array(self.seen, dtype=float).reshape(-1, 4)
        rows = np.isnan(seen[:, own]) & np.isfinite(seen[:, [refined, before]]).all(axis=1)
        if not rows.any():
            return "run"
        costs, keys = np.array(self.costs)[rows], np.array(self.rounds)[rows]
        accuracy_refined, accuracy_before = (pairwise_accuracy(costs, seen[rows, c], keys)
                                             for c in (refined, before))
        return "local" if accuracy_before > accuracy_refined + 1e-12 else "run"

    # ----------------------------------------------------------------- state
    def state(self) -> dict:
        """The run's measurements as arrays (with :meth:`restore`, a saved run)."""
        width = len(self.X[0]) if self.X else len(self.columns)
        return {"X": np.array(self.X, dtype=float).reshape(-1, width),
                "costs": np.array(self.costs, dtype=float),
                "groups": np.array(self.groups, dtype=str),
                "rounds": np.array(self.rounds, dtype=int),
                "seen": np.array(self.seen, dtype=float).reshape(-1, 4)}

    def restore(self, state: dict) -> None:
        """Take a saved run's measurements and refit the models on them (a run saved before
        2026-12-02 has no rounds and no prequential scores: one round per row, none scored;
        one saved before 2026-12-06 has the scores of one pair of models)."""
        n = len(state["costs"])
        self.X, self.costs = list(state["X"]), [float(c) for c in state["costs"]]
        self.groups = [str(g) for g in state["groups"]]
        self.rounds = [int(r) for r in state["rounds"]] if "rounds" in state else list(range(n))
        seen = np.full((n, 4), np.nan)
        if "seen" in state and n:
            old = np.asarray(state["seen"], dtype=float).reshape(n, -1)
            if old.shape[1] not in (2, 4):
                raise GbxferError(f"a saved run's scores have {old.shape[1]} columns, not 2 or 4")
            first = _COLUMNS[self.pairs[0]][0] if old.shape[1] == 2 else 0
            seen[:, first:first + old.shape[1]] = old
        self.seen = [tuple(row) for row in seen]
        self._clear_models()
        self._fit(None)
