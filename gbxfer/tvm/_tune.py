"""Tuning with MetaSchedule and any cost model, recording the tuning curve.

``tune`` runs MetaSchedule's task scheduler over suite tasks or a Relax network's extracted
tasks (their weights given to it) on one hardware profile, with gbxfer's fast builder and the
profile's runner, writes the MetaSchedule database (``gbxfer ingest`` reads it back) and returns
the curve: after each measured batch, the trials so far, wall-clock seconds since the budget
started (once the runner's worker is up; the builder's start with the first batch), and the best
latency of every task. The budget is a number of trials or of minutes (``TimeBudgetSearch``).
``TimedCostModel`` wraps any cost model to time its ``update`` and ``predict`` (the cost model's
own share of a round), ``TimedBuilder`` the builder (MetaSchedule builds each batch before it
searches the next, so a program slow to compile holds the whole run up to the build timeout).
A round is search, builds and measurement one after the other (TVM's ``LocalRunner`` waits for
its batch), so ``jobs`` threads search and ``jobs`` workers build without disturbing a timing.
"""
from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm
from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.builder import PyBuilder
from tvm.s_tir.meta_schedule.cost_model import PyCostModel
from tvm.s_tir.meta_schedule.measure_callback import PyMeasureCallback
from tvm.s_tir.meta_schedule.search_strategy import PySearchStrategy

from ..manifests import write_file
from ..records.formats._metaschedule import run_latency
from ..hardware.profiles import HardwareProfile
from ..records.suite import Task
from ._builder import BUILD_TIMEOUT, TIMEOUT_MESSAGE, PooledBuilder
from ._collect_plan import CollectPlan, close_runner, make_runner
from ._database import records_in_order, repair
from ._resume import (TOTALS, add_totals, caught_up, read_totals, replay_measured,
                      workload_hash, write_totals)
from ._interrupt import stop_on_interrupt
from ._logging import metaschedule_logging
from ._task_modules import task_module
from ._intrinsics import import_tensor_intrinsics

STOPPING = "stopping after the measurements in flight (Ctrl-C again to stop at once)"
UNLIMITED_TRIALS = 1_000_000_000  # a time budget's trial cap: MetaSchedule counts in int32
# The evolutionary search's population with gbxfer's cost model and a time budget: mutating
# and checking the population is most of a round's search, and in a budget of minutes every
# second searching is one not measuring. A first round's picks from 128 candidates were as fast
# as from MetaSchedule's 512 (scripts/tune_time_split.py); later ones are slower per trial but
# the run measures more, and ends faster (scripts/bench_onnx.py --population).
GBXFER_POPULATION = 128
METASCHEDULE_POPULATION = 512  # MetaSchedule's default: any other cost model, or trials


def default_population(cost_model, minutes: float | None) -> int:
    """The population ``tune`` searches with when none is given: ``GBXFER_POPULATION`` for a
    :class:`~gbxfer.tvm.GbxferCostModel` in a budget of ``minutes``; MetaSchedule's default for
    any other cost model or a budget of trials (where the search's time costs no trials)."""
    from ._cost_model import GbxferCostModel

    return GBXFER_POPULATION if minutes is not None and isinstance(
        cost_model, GbxferCostModel) else METASCHEDULE_POPULATION


@derived_object
class TimedCostModel(PyCostModel):
    """Delegates to ``inner`` (a MetaSchedule cost model) and adds up the seconds it spends."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.seconds = {"update": 0.0, "predict": 0.0}
        self.rounds = 0

    def load(self, path: str) -> None:
        self.inner.load(path)

    def save(self, path: str) -> None:
        self.inner.save(path)

    def update(self, context, candidates, results) -> None:
        start = time.perf_counter()
        self.inner.update(context, candidates, results)
        self.seconds["update"] += time.perf_counter() - start
        self.rounds += 1

    def predict(self, context, candidates) -> np.ndarray:
        start = time.perf_counter()
        scores = self.inner.predict(context, candidates)
        self.seconds["predict"] += time.perf_counter() - start
        return np.asarray(scores, dtype="float64")


@derived_object
class TimedBuilder(PyBuilder):
    """Delegates to ``inner`` (a MetaSchedule builder) and adds up the seconds it spends, the
    programs it built and those it gave up on at its timeout."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.seconds, self.programs, self.timeouts = 0.0, 0, 0

    def build(self, build_inputs) -> list:
        start = time.perf_counter()
        results = self.inner.build(build_inputs)
        self.seconds += time.perf_counter() - start
        self.programs += len(build_inputs)
        self.timeouts += sum((r.error_msg or "").startswith(TIMEOUT_MESSAGE) for r in results)
        return results


class TimeBudget:
    """Minutes of wall clock (``math.inf``: no limit), counted from ``start()``; shared by
    every task's search, which adds the seconds it spends to ``searching``."""

    def __init__(self, minutes: float, trials: int | None = None):
        self.seconds = 60.0 * minutes
        self.deadline = math.inf
        self.searching = 0.0
        self.stopped = False
        self.trials = trials  # left to hand out (None: MetaSchedule's count alone)

    def start(self) -> None:
        self.deadline = time.monotonic() + self.seconds

    def stop(self) -> None:
        """Spent from now on (Ctrl-C): no task starts another batch."""
        self.stopped = True

    def spent(self) -> bool:
        return self.stopped or (self.trials is not None and self.trials <= 0) or \
            time.monotonic() >= self.deadline


@derived_object
class TimeBudgetSearch(PySearchStrategy):
    """Delegates to ``inner`` (a MetaSchedule search strategy) until ``budget`` (a
    :class:`TimeBudget`) is spent, then generates no more candidates. The task scheduler ends
    each task the next time it picks it, after joining that task's batch in flight, so every
    measured batch reaches the database and the curve (ending tasks from a measure callback
    instead can end the very task the scheduler is about to hand out, which MetaSchedule
    aborts on). Candidates in ``measured`` ((workload hash, printed trace) pairs: a resumed
    run's earlier programs, which MetaSchedule's search, remembering only its own, would
    measure again) are left out of a batch, unless that leaves none."""

    def __init__(self, inner, budget: TimeBudget, measured: set | None = None):
        super().__init__()
        self.inner = inner
        self.budget = budget
        self.measured = measured if measured is not None else set()
        self.workload = ""  # the task's structural hash, once initialized

    def _initialize_with_tune_context(self, context) -> None:
        self.workload = workload_hash(context.mod)
        self.inner._initialize_with_tune_context(context)

    def pre_tuning(self, max_trials, num_trials_per_iter, design_spaces, database=None,
                   cost_model=None) -> None:
        self.inner.pre_tuning(max_trials, num_trials_per_iter, design_spaces, database,
                              cost_model)

    def post_tuning(self) -> None:
        self.inner.post_tuning()

    def generate_measure_candidates(self):
        if self.budget.spent():
            return None
        start = time.perf_counter()
        candidates = self.inner.generate_measure_candidates()
        if candidates and self.measured:
            candidates = [c for c in candidates if (self.workload, str(c.sch.trace))
                          not in self.measured] or candidates
        if candidates is not None and self.budget.trials is not None:
            candidates = list(candidates)[:self.budget.trials]  # the last batch, cut
            self.budget.trials -= len(candidates)
        self.budget.searching += time.perf_counter() - start
        return candidates

    def notify_runner_results(self, measure_candidates, results) -> None:
        self.inner.notify_runner_results(measure_candidates, results)

    def clone(self):
        return TimeBudgetSearch(self.inner.clone(), self.budget, self.measured)


@derived_object
class CurveCallback(PyMeasureCallback):
    """Records, after every measured batch, the best latency so far of each task (and appends
    it to ``path``, a CSV file, so that an interrupted run keeps its curve); continues
    ``earlier`` rows (a resumed run's), whose seconds the clock then starts from."""

    def __init__(self, n_tasks: int, bar=None, path=None, earlier: pd.DataFrame | None = None):
        super().__init__()
        self.path = path
        self.rows: list[dict] = [] if earlier is None else earlier.to_dict("records")
        last = self.rows[-1] if self.rows else {}
        self.earlier_seconds = float(last.get("seconds", 0.0))
        self.start = time.perf_counter() - self.earlier_seconds
        self.best = [float(last.get(f"best_{i}", math.inf)) for i in range(n_tasks)]
        self.trials = int(last.get("trials", 0))
        self.failures = int(last.get("failures", 0))
        self.bar = bar
        self.after_batch = None  # called after each batch's row
        if path is not None:  # the earlier rows, as measured (without what the CLI adds)
            table = pd.DataFrame(self.rows, columns=[
                "trials", "seconds", "task", "failures", *(f"best_{i}" for i in range(n_tasks))])
            write_file(path, lambda tmp: table.to_csv(tmp, index=False))

    def apply(self, task_scheduler, task_id, measure_candidates, builder_results,
              runner_results) -> None:
        for build, run in zip(builder_results, runner_results):
            latency = run_latency(run.run_secs)
            if build.error_msg is None and run.error_msg is None and latency is not None:
                self.best[task_id] = min(self.best[task_id], latency)
            else:
                self.failures += 1
        self.trials += len(measure_candidates)
        row = {"trials": self.trials, "seconds": time.perf_counter() - self.start,
               "task": task_id, "failures": self.failures}
        row.update({f"best_{i}": b for i, b in enumerate(self.best)})
        self.rows.append(row)
        if self.path is not None:
            with open(self.path, "a") as f:
                f.write(",".join(str(v) for v in row.values()) + "\n")
        if self.bar is not None:
            self.bar.update(len(measure_candidates))
            self.bar.set_postfix(failures=self.failures, refresh=False)
        if self.after_batch is not None:
            self.after_batch()


@dataclasses.dataclass
class TuneResult:
    """A tuning run: its curve (one row per measured batch) and totals (of every part of a
    continued run: ``OUT/totals.json``, rewritten after each batch, carries them on)."""

    names: list[str]  # the tasks'
    weights: list[float]
    curve: pd.DataFrame  # trials, seconds, task, failures, best_<i> per task (s)
    cost_model_seconds: dict
    rounds: int
    seconds: float
    builds: dict  # seconds building, programs, timeouts (programs given up on), timeout (s)
    search_seconds: float  # the evolutionary search's, the cost model's predict within them
    population: int  # the evolutionary search's
    interrupted: bool = False  # stopped by Ctrl-C before the budget was spent
    continued_from: dict | None = None  # a resumed run's earlier trials and seconds

    def weighted_latency(self) -> pd.Series:
        """Sum over tasks of weight x best latency, after each batch (NaN until every task has
        a valid measurement)."""
        best = self.curve[[f"best_{i}" for i in range(len(self.names))]].replace(np.inf, np.nan)
        return (best * np.asarray(self.weights)).sum(axis=1, min_count=len(self.names))


def task_name(task) -> str:
    """A suite :class:`Task`'s or MetaSchedule's ``ExtractedTask``'s (a Relax network's) name."""
    return task.name if isinstance(task, Task) else task.task_name


def _name_and_module(task):
    """A suite :class:`Task` or MetaSchedule's ``ExtractedTask`` (from a Relax network)."""
    return task_name(task), task_module(task) if isinstance(task, Task) else task.dispatched[0]


def tune(tasks, profile: HardwareProfile, cost_model, trials: int | None, out,
         seed: int = 0, trials_per_iter: int = 16, weights=None, progress: bool = True,
         repeats: int = 3, min_repeat_ms: int = 40, population: int | None = None,
         minutes: float | None = None, build_timeout: float = BUILD_TIMEOUT,
         jobs: int = 1, explore: float = 0.05, graceful: bool = False,
         earlier: pd.DataFrame | None = None) -> TuneResult:
    """Tune ``tasks`` (suite :class:`Task` s, or the ``ExtractedTask`` s of
    ``ms.relax_integration.extract_tasks``) on ``profile`` for ``trials`` measurements in all,
    or (``trials=None``) for ``minutes`` of wall clock from the start of MetaSchedule's tuning
    (its workers started; no batch starts after them, the one running ends), with
    ``cost_model`` (a MetaSchedule cost model, or ``"xgb"`` / ``"random"``). MetaSchedule's
    gradient task scheduler shares the measurements out where the weighted latency falls
    fastest (weights default to the tasks' own). The database goes to ``out/metaschedule``,
    one line per measured program in the order measured, and the curve to ``out/curve.csv``
    as it grows. ``population`` is the evolutionary search's (default: ``default_population``,
    128 with a :class:`~gbxfer.tvm.GbxferCostModel` and ``minutes``, else MetaSchedule's 512).
    ``jobs``: the search's threads and the builder's workers (which live across batches); more
    than one (``gbxfer tune``'s default: the usable cores) makes the search's draws depend on
    the threads' timing. ``explore``: the share of each round's measurements drawn at random
    from the search's freshly sampled programs instead of picked by the cost model (the
    evolutionary search's epsilon-greedy, rounded down: the default, MetaSchedule's 0.05, draws
    none of a 16-program round). Ctrl-C (in the main thread) ends the run after the batch in
    flight, and then ``tune`` returns a result that says ``interrupted`` (``graceful``: `gbxfer
    tune`) or raises ``KeyboardInterrupt``; a second Ctrl-C exits the process (``_interrupt``).
    The builder's and runner's workers ignore it. ``earlier``: the curve of a run stopped
    in ``out``, continued: its database's measurements first update the cost model, its
    trials and seconds count against the budget, and its rows begin the curve."""
    if (trials is None) == (minutes is None):
        raise ValueError("give exactly one budget: trials or minutes")
    population = population if population is not None else default_population(cost_model,
                                                                              minutes)
    import tvm
    from tvm.s_tir import meta_schedule as ms

    out = Path(out)
    (out / "metaschedule").mkdir(parents=True, exist_ok=True)
    repair(out / "metaschedule")  # a run killed while appending to it
    previous = records_in_order(out / "metaschedule") if earlier is not None else []
    before = read_totals(out) if earlier is not None else {}  # the earlier parts' totals
    if earlier is None:
        (out / TOTALS).unlink(missing_ok=True)
    named = [_name_and_module(task) for task in tasks]
    if earlier is not None:  # the database may hold batches the curve lacks
        earlier = caught_up(earlier, previous, [workload_hash(mod) for _, mod in named])
    spent = float(earlier["seconds"].iloc[-1]) if earlier is not None and len(earlier) else 0.0
    done = int(earlier["trials"].iloc[-1]) if earlier is not None and len(earlier) else 0
    budget = TimeBudget(minutes - spent / 60 if minutes is not None else math.inf,
                        trials - done if trials is not None and earlier is not None else None)
    weights = [float(w) for w in weights] if weights is not None else [
        float(t.weight) for t in tasks]
    target = tvm.target.Target(profile.target)
    import_tensor_intrinsics()

    measured: set = set()  # a resumed run's earlier programs' traces

    def search():
        evolutionary = ms.search_strategy.EvolutionarySearch(population_size=population,
                                                             eps_greedy=explore)
        return TimeBudgetSearch(evolutionary, budget, measured)

    contexts = [ms.TuneContext(mod=mod, target=target, space_generator="post-order-apply",
                               search_strategy=search(), task_name=name, rand_state=seed + i,
                               num_threads=jobs).clone()
                for i, (name, mod) in enumerate(named)]
    plan = CollectPlan(suite=None, profiles=[profile], programs=0, out=out, repeats=repeats,
                       min_repeat_ms=min_repeat_ms)
    timed = TimedCostModel(ms.cost_model.CostModel.create(cost_model) if isinstance(
        cost_model, str) else cost_model)
    database = ms.database.JSONDatabase(work_dir=str(out / "metaschedule"))
    measured.update(replay_measured(timed.inner, contexts, previous, trials_per_iter))
    with tqdm(total=trials, unit=" trials", desc=f"tune {profile.name}" + (
              f" ({minutes:g} min)" if minutes is not None else ""),
              disable=None if progress else True) as bar, metaschedule_logging():
        curve = CurveCallback(len(tasks), bar, out / "curve.csv", earlier)
        curve.trials = done
        bar.update(done)
        start = time.perf_counter()
        pooled = PooledBuilder(max_workers=jobs, timeout_sec=build_timeout)
        builder, runner = TimedBuilder(pooled), None

        def totals() -> dict:  # the run's so far: the earlier parts' and this one's
            return add_totals(before, {
                "seconds": time.perf_counter() - start, "rounds": timed.rounds,
                "cost_model_seconds": dict(timed.seconds), "search_seconds": budget.searching,
                "builds": {"seconds": builder.seconds, "programs": builder.programs,
                           "timeouts": builder.timeouts}})
        curve.after_batch = lambda: write_totals(out, totals())
        with stop_on_interrupt(budget.stop, STOPPING, "gbxfer tune: interrupted") as stopped:
            try:
                runner = make_runner(profile, plan)  # seconds: its worker starts
                # the curve's clock starts with the budget's
                curve.start = time.perf_counter() - curve.earlier_seconds
                budget.start()  # from here, once TVM's intrinsics and the runner are loaded
                if not budget.spent():  # (a resumed run can have spent it: then finished)
                    ms.tune_tasks(
                        tasks=contexts, task_weights=weights, work_dir=str(out),
                        max_trials_global=trials - done if trials is not None
                        else UNLIMITED_TRIALS,
                        num_trials_per_iter=trials_per_iter, builder=builder, runner=runner,
                        database=database, cost_model=timed,
                        measure_callbacks=[
                            *ms.measure_callback.MeasureCallback.create("default"), curve])
            finally:
                pooled.close()
                close_runner(runner)
    if stopped and not (graceful and curve.rows):  # with nothing measured, nothing to write
        raise KeyboardInterrupt
    columns = ["trials", "seconds", "task", "failures", *(f"best_{i}" for i in
                                                          range(len(tasks)))]
    run = totals()
    write_totals(out, run)
    return TuneResult([name for name, _ in named], weights,
                      pd.DataFrame(curve.rows, columns=columns),
                      run["cost_model_seconds"], run["rounds"], run["seconds"],
                      {**run["builds"], "timeout": build_timeout}, run["search_seconds"],
                      population, bool(stopped),
                      None if earlier is None else {"trials": done, "seconds": spent})


def xgbmodel_pretrained(dataset):
    """TVM's ``XGBModel`` after ``update`` on every valid record of ``dataset`` (whose workload
    IR loads in this TVM), task by task: baseline (d) of the tuning benchmark."""
    from ._baselines import XGBModelBaseline

    baseline = XGBModelBaseline(single_model=True).fit(dataset)
    return baseline.models["all"]
