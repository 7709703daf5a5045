"""Online updates in a replayed search on a machine outside the prior's training data.

    python scripts/bench_online.py [--seeds 5] [--settings gpus,cpus,zen3,zen4,xeon,emr,resnet50]
                                   [--arms ...] [--config NAME] [--name NAME]

A tuning run's cost model ranks candidates, the best are measured, and the measurements update
it (gbxfer.online.OnlineModel, as GbxferCostModel.update does inside MetaSchedule). Here the
candidates are a fixed pool of programs already measured on the target machine (each seed: a
random half of each task's measured programs), so that a search can be replayed many times
without a target machine at hand: round-robin over the tasks, every round measures the
``--batch`` best-scored programs of one task not measured yet (each pick, with probability 0.05,
a random one: MetaSchedule's epsilon-greedy share). After every round: the best latency found
over the pool's best, per task (1.0 = found the best). This is a replay over measured pools,
not MetaSchedule's evolutionary search: it measures how fast each update rule lets the run's
data take over from a prior that is wrong for the machine, not absolute tuning speed.

Settings (the prior: the default model config, or --config, trained, seed 0, on the source's
valid records; the target machine is never in its training data, except in ``resnet50``):

  RTX 3080 -> A100, A100 -> RTX 3080   the shared Ansor GPU logs (tasks with >= 500 programs)
  bundled -> Ansor x86                 the bundled data -> the x86 CPU of the Ansor logs
  Ansor logs -> Zen 3                  the three Ansor machines -> bundled x86-avx2-1t (64
                                       programs per task: rounds of 4)
  Zen 3 -> Zen 4, unseen tasks         (``zen4``) the bundled Zen 3 without a by-task 30% of
                                       the tasks -> those tasks on zen4-avx512-1t (rounds of 4)
  Zen 3 + Zen 4 -> Xeon, unseen tasks  (``xeon``) the bundled AMD CPUs without a by-task 30% of
                                       the tasks -> those tasks on spr-avx512-1t (rounds of 4)
  Zen 3 + Zen 4 + Sapphire Rapids -> Emerald Rapids, unseen tasks  (``emr``) the bundled
                                       machines but the Emerald Rapids Xeon without a by-task
                                       30% of its tasks -> those tasks on emr-avx512-1t
                                       (rounds of 4)
  pretrained -> ResNet-50 on the Zen 4 (``resnet50``) the shipped pretrained model -> the
                                       programs bench_onnx.py's ResNet-50 runs measured on the
                                       Zen 4 (bench_onnx_zen4/, tasks with >= 200; rounds of 16)

Arms (gbxfer.online modes): ``blend`` (the default from 2026-12-02 to 2026-12-05, the arm the
others are paired to), ``refine`` (the update
before it: the prior boosted 20 trees further on the run's data), ``session`` (the prior for
the first round, then a model of the run's data alone), ``prior`` (never updated), ``cold``
(no prior: random until 16 measurements, then the run's data alone, as TVM's XGBModel) and
``random``; by name only, ``local`` (blend with per-task models), ``choose`` (the default
since 2026-12-05: per task, the run-wide pair of models or the task's own, whichever ranked its
latest rounds better) and
``blend-random-start`` (blend as it was until 2026-12-05, when a new task's first round was
drawn at random once the refined prior had ranked the run's rounds no better than chance).
Reported per setting and trials: the geometric mean over tasks of best found / pool best, the
share of the pool faster than the best found (0: found the pool's best; the
Ansor pools are narrow, most programs within 1.2x of the best, so the share tells arms apart
where the ratio cannot), mean and 95% CI over seeds, and blend's paired difference in that
share to each other arm (negative: blend found faster programs). Results:
scripts/results/bench_online.{json,csv,png}.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from _bench import SHARED, ci95
from _results import RESULTS, print_table, write_results

from gbxfer import Dataset, SplitSpec, ingest, load_dataset
from gbxfer.features import build
from gbxfer.model import PRETRAINED, SavedModel, load_model_config
from gbxfer.metrics import pairwise_accuracy
from gbxfer.online import OnlineModel
from gbxfer.training import train

ARMS = ("blend", "refine", "session", "prior", "cold", "random")  # the default --arms
EXTRA_ARMS = ("local", "choose", "blend-random-start")  # asked for by name only


def prior_accuracy(model: OnlineModel) -> float:
    """The refined prior's prequential pairwise accuracy over a run's rounds so far (each round
    scored before it was seen); NaN before any."""
    seen = np.array(model.seen, dtype=float).reshape(-1, 4)[:, 2 if model.mode == "local" else 0]
    rows = np.isfinite(seen)
    return pairwise_accuracy(np.array(model.costs)[rows], seen[rows],
                             np.array(model.rounds)[rows]) if rows.any() else float("nan")


class RandomStart(OnlineModel):
    """``blend`` as it was until 2026-12-05: once the models exist and the refined prior has
    ranked the run's rounds no better than chance, a task not measured yet is scored at
    random."""

    def score(self, X, group):
        if self.refined is not self.prior and str(group) not in set(self.groups) \
                and prior_accuracy(self) <= 0.5:
            return self.rng.random(len(X))
        return super().score(X, group)


EPSILON = 0.05
EMR = "Intel Xeon (emeraldrapids)"


def big(dataset, n=500):
    """The records of the tasks with at least ``n`` of them."""
    sizes = dataset.records.groupby("task_key").size()
    return dataset.select(dataset.records["task_key"].isin(sizes[sizes >= n].index).to_numpy())


def settings(which):
    """(name, source, target, batch, rounds per task) of every replay to run; a source of
    ``None``: the shipped pretrained model is the prior."""
    out = []
    if "resnet50" in which:  # tasks of a network outside the suite, on a machine it trained on
        runs = sorted((RESULTS / "bench_onnx_zen4").glob("resnet50-seed*/*/metaschedule"))
        measured = ingest(runs, hardware=("zen4-avx512-1t", "x86-avx512"),
                          machine="AMD EPYC (zen4)").filter(valid=True)
        out.append(("pretrained -> ResNet-50 on the Zen 4", None, big(measured, 200), 16, 6))
    if not set(which) - {"resnet50"}:
        return out
    ansor = SHARED / "bennu-ansor"
    if not ansor.exists():
        raise SystemExit(f"{ansor} is missing: this benchmark needs the shared Ansor logs")
    machines = {n: ingest([ansor / n]).filter(valid=True)
                for n in ("gpu_a100", "gpu_rtx3080", "cpu_x86")}

    if "gpus" in which:
        out += [("RTX 3080 -> A100", machines["gpu_rtx3080"], big(machines["gpu_a100"]), 8, 8),
                ("A100 -> RTX 3080", machines["gpu_a100"], big(machines["gpu_rtx3080"]), 8, 8)]
    bundled = load_dataset("bundled").filter(valid=True)
    if "cpus" in which:
        out.append(("bundled -> Ansor x86", bundled, big(machines["cpu_x86"]), 8, 8))
    if "zen3" in which:
        out.append(("Ansor logs -> Zen 3", Dataset.concat(list(machines.values())),
                    bundled.filter(hardware="x86-avx2-1t"), 4, 4))
    if "zen4" in which:  # the Zen 3 prior never saw these tasks; Zen 4 measured the same code
        out.append(("Zen 3 -> Zen 4, unseen tasks", *_unseen_tasks(
            bundled.filter(machine="AMD EPYC (zen3)"), bundled.filter(hardware="zen4-avx512-1t"))))
    if "xeon" in which:  # the AMD prior never saw the Intel CPU nor these tasks
        amd = bundled.select(bundled.records["machine"].str.startswith("AMD").to_numpy())
        out.append(("Zen 3 + Zen 4 -> Xeon, unseen tasks", *_unseen_tasks(
            amd, bundled.filter(hardware="spr-avx512-1t"))))
    if "emr" in which:  # a fourth CPU: the other three never measured these tasks
        others = bundled.select((bundled.records["machine"] != EMR).to_numpy())
        out.append(("Zen 3 + Zen 4 + Sapphire Rapids -> Emerald Rapids, unseen tasks",
                    *_unseen_tasks(others, bundled.filter(hardware="emr-avx512-1t"))))
    return out


def _unseen_tasks(source, target):
    """(source without a by-task 30% of the target's tasks, the target on those tasks, batch,
    rounds)."""
    held = SplitSpec("by-task", 0.3, 0).test_mask(target)
    tasks = target.records["task_key"][held].unique()
    return (source.select(~source.records["task_key"].isin(tasks).to_numpy()),
            target.select(held), 4, 4)


def replay(arm, prior, columns, pools, batch, rounds, seed) -> np.ndarray:
    """Of one arm's replayed search, after every round and per task (shape (2, rounds,
    tasks)): the best latency found over the pool's best, and the share of the pool faster
    than the best found."""
    rng = np.random.default_rng(seed)
    model = None
    if arm != "random":
        mode = {"cold": "session", "blend-random-start": "blend"}.get(arm, arm)
        kind = RandomStart if arm == "blend-random-start" else OnlineModel
        model = kind(None if arm == "cold" else prior, columns, mode, seed=seed)
    left = [np.ones(len(latency), bool) for _, latency in pools]
    curve = np.empty((2, rounds, len(pools)))
    for r in range(rounds):
        for t, (X, latency) in enumerate(pools):
            open_ = np.flatnonzero(left[t])
            scores = rng.random(len(open_)) if model is None else model.score(X[open_], f"task{t}")
            order = list(open_[np.argsort(-scores, kind="stable")])
            chosen = []
            while len(chosen) < min(batch, len(open_)):
                pick = order.pop(rng.integers(len(order))) if rng.random() < EPSILON \
                    else order.pop(0)
                chosen.append(pick)
            left[t][chosen] = False
            if model is not None:
                model.observe(X[chosen], latency[chosen], f"task{t}")
            best = latency[~left[t]].min()
            curve[:, r, t] = best / latency.min(), np.mean(latency < best)
    return curve


def pools_of(fm, seed):
    """Each task's pool for one seed: a random half of its measured programs."""
    rng = np.random.default_rng(seed)
    r = fm.records
    out = []
    for task in sorted(r["task_key"].unique()):
        rows = np.flatnonzero((r["task_key"] == task).to_numpy())
        rows = np.sort(rng.choice(rows, size=len(rows) // 2, replace=False))
        out.append((fm.X[rows], r["latency"].to_numpy()[rows]))
    return out


def summarize(curves, name, batch, rounds, arms) -> list[dict]:
    """Rows per (trials, arm), means over tasks, then mean +- CI over seeds: best found over
    pool best (geometric mean) and the pool's share faster than it; blend's paired difference
    to each arm in that share (negative: blend found faster programs)."""
    rows = []
    for r in range(rounds):
        logs = {arm: np.array([np.log2(c[0, r]).mean() for c in curves[arm]]) for arm in arms}
        share = {arm: np.array([c[1, r].mean() for c in curves[arm]]) for arm in arms}
        for arm in arms:
            (ratio, ratio_ci), (faster, faster_ci) = ci95(2 ** logs[arm]), ci95(share[arm])
            row = {"setting": name, "trials_per_task": batch * (r + 1), "arm": arm,
                   "best_over_pool_best": round(ratio, 4), "ratio_ci": round(ratio_ci, 4),
                   "pool_share_faster": round(faster, 4), "share_ci": round(faster_ci, 4)}
            if "blend" in share and arm != "blend":
                d, dci = ci95(share["blend"] - share[arm])
                row.update(blend_minus_arm=round(d, 4), blend_minus_arm_ci=round(dci, 4))
            rows.append(row)
    return rows


def plot(rows, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    frame = pd.DataFrame(rows)
    names = list(dict.fromkeys(frame["setting"]))
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.6), squeeze=False)
    for ax, name in zip(axes[0], names):
        part = frame[frame["setting"] == name]
        for arm, g in part.groupby("arm", sort=False):
            ax.errorbar(g["trials_per_task"], g["pool_share_faster"], yerr=g["share_ci"],
                        label=arm, marker="o", ms=3, capsize=2)
        ax.set(title=name, xlabel="trials per task", ylim=(0, None),
               ylabel="share of the pool faster than the best found")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--settings", default="gpus,cpus,zen3")
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--name", default="bench_online", help="results file name")
    parser.add_argument("--config", help="the prior's model config (default: the default one)")
    args = parser.parse_args()
    arms = args.arms.split(",")
    unknown = sorted(set(arms) - set(ARMS) - set(EXTRA_ARMS))
    if unknown:
        parser.error(f"unknown arm {unknown[0]!r}; known: {', '.join(ARMS + EXTRA_ARMS)}")
    config = load_model_config(args.config)
    rows, timing, pretrained = [], {}, []
    for name, source, target, batch, rounds in settings(args.settings.split(",")):
        start = time.perf_counter()
        prior = train(source, config, seed=0) if source is not None else \
            SavedModel.load(PRETRAINED)
        pretrained += [name] if source is None else []
        fm = build(target, list(prior.blocks))
        curves = {arm: [] for arm in arms}
        for seed in range(args.seeds):
            pools = pools_of(fm, seed)
            for arm in arms:
                curves[arm].append(replay(arm, prior, fm.columns, pools, batch, rounds, seed))
            print(f"{name}: seed {seed} done ({time.perf_counter() - start:.0f} s)", flush=True)
        timing[name] = round(time.perf_counter() - start, 1)
        part = summarize(curves, name, batch, rounds, arms)
        print_table([r for r in part if r["trials_per_task"] in (batch, 2 * batch, 4 * batch,
                                                                   rounds * batch)])
        rows += part
    write_results(args.name, rows, seeds=args.seeds, epsilon=EPSILON, seconds=timing,
                  config=config.source,
                  pretrained_prior=pretrained)
    plot(rows, RESULTS / f"{args.name}.png")
    print(f"results: {RESULTS / args.name}.json")


if __name__ == "__main__":
    main()
