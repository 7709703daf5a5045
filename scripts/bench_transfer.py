"""Few-shot transfer to unseen hardware: arms x K shots per task, mean +- 95% CI over seeds.

    python scripts/bench_transfer.py [--seeds 5] [--first-seed 0] [--shots 1,2,4,8,16] [--trials 10]
                                     [--settings bundled,gpus] [--arms default,unguarded,...]
                                     [--match TEXT] [--report-only]
                                     [--config default] [--name bench_transfer]

Settings: the bundled dataset's Zen 3 with each ISA family held out in turn (all its thread
variants; the source model trains on the other families; `bundled`), each physical machine of
the bundled dataset held out (every profile of it; the source model trains on the other
machines without the test part's programs, which the bundled machines all measured;
`machines`: a real machine change; and again with regime (b)'s test tasks removed from the
source on every machine and every test part restricted to them, `, unseen tasks`: a new
network on a new machine; the K shots of regime (a) still come from those tasks), and the
../shared/data/bennu-ansor GPUs (RTX 3080 -> A100 and back; `gpus`). For each setting one
source model (seed 0) and one target test part (within-task, half of each target task's
programs) serve every arm, seed and K; the seeds are shot draws from the other half. Arms:

  tuned        gbxfer transfer, its settings chosen by an Optuna study (--trials) that
               cross-validates inside the shots only; no adaptation, the default or the best
               trial, by the one-standard-error rule (gbxfer.study.chosen_transfer)
  default      gbxfer transfer with the default TransferConfig: guarded, of the continue
               adaptation and pooled retraining the one that beats the source model inside
               the shots beyond one standard error by most, else the source model; from 8
               shots in the median group, pooled retraining unless it scores worse by one
               standard error
  other-tasks  (regime (b) only) the default told that the model will rank other tasks than
               the shots' (other_tasks: the guard's folds are whole tasks at any K, and
               pooled_from does not apply)
  guard-blend  the default with fallback blend: where no adaptation passes the guard's check
               (and some task has two shots), the blend instead of the source model
  guard+blend  the default with the blend among the guard's candidates (try_blend): kept
               only where it beats the source model inside the shots, as the others
  guard-continue  the default before pooled retraining was among the guard's candidates:
               the configured (continue) adaptation only (try_pooled false)
  unguarded    the continue adaptation without the check (the default before the guard)
  source-only  the source model, no target data (zero-shot)
  pooled       one model trained on source records + shots together, no reweighting
               (with one shot per task and profile, the shots rank nothing: a retraining on
               the source records alone, as unguarded then keeps the source model)
  pooled-same  gbxfer's pooled retraining, unguarded (TransferConfig.pooled()): as pooled, but
               with the source model's random state, as the default's pooled candidate, so
               that it differs from the source model by the shots alone (at K = 1: the source
               model)
  blend        gbxfer transfer mode blend, unguarded: pooled retraining (gbxfer's, on the
               source model's records and the shots) averaged with the source model
  scratch      a model trained on the shots alone (not run where no task has two shots)
  upper        a model trained on every target record outside the test part (upper bound)

With --calibration N, regime (b) too (K = calN): the test part is 30% of the target's tasks
(by-task) and the shots are N programs of the other tasks on one target profile (its
fastest, as a user calibrates the profile they tune for), in the order `gbxfer calibrate`
measures them (an unseen task on an unseen machine: the situation before tuning a new
network). Paired differences to source-only on the same test records (d_pca, d_top1: mean and
95% CI over seeds) say whether an arm helps or hurts. How hard each transfer is: the Spearman
correlation between source and target latencies of the paired programs (per task, averaged).
Each (setting, seed, K) is appended to scripts/results/bench_transfer.jsonl as it finishes, so
a killed run resumes (--fresh restarts). Every model is the ``--config`` model config
(configs/model). Results: scripts/results/<name>.{jsonl,json,csv,png}.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _results import RESULTS, log_draw, print_table, write_results
from _bench import ci95

from gbxfer import Dataset, SplitSpec, ingest, load_dataset
from gbxfer.features import build
from gbxfer.metrics import ranking_report
from gbxfer.model import GBCostRanker, load_model_config
from gbxfer.pruning import calibration_order
from gbxfer.study import chosen_transfer, digest, study_transfer
from gbxfer.training import train
from gbxfer.transfer import TransferConfig, draw_shots, shots_rank, transfer

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
ARMS = ("tuned", "default", "other-tasks", "guard-blend", "guard+blend", "guard-continue",
        "unguarded", "source-only", "pooled", "pooled-same", "blend", "scratch", "upper")
BENCH_VERSION = 10  # (11, in bench_transfer_v14.jsonl only: pooled_from 4, undone); 10:
# pooled retraining (a guard candidate) keeps the source model's random state; 9: the guard
# counts a group held out in both within-task halves once; the compute-location and rfactor
# columns; 8: from 8 shots in the median group the guard keeps
# pooled retraining unless it scores worse (TransferConfig.pooled_from); 7: groups of one left
# out of training (a transfer whose shots are each alone on their task keeps the source model);
# 6: the guard weighs pooled retraining too, regime (b) calibrates one profile; 5: continue
# only, regime (b)'s shots on every target profile
METRICS = ("pca", "top1", "top5")


def settings(which):
    """(name, source dataset, target dataset, test restriction, regime (b)) of every transfer
    to benchmark: the restriction, a mask over the target's records or None, is ANDed onto
    every test part; regime (b) (--calibration) runs where the last is True."""
    out = []
    bundled = load_dataset("bundled").filter(valid=True)
    if "bundled" in which:  # the ISA families of the machine with the most profiles (Zen 3)
        main = bundled.filter(machine=bundled.records.groupby("machine")["hardware"]
                              .nunique().idxmax())
        for family in sorted(main.records["hardware_family"].unique()):
            out.append((f"bundled -> {family}",
                        main.select((main.records["hardware_family"] != family).to_numpy()),
                        main.filter(family=family), None, True))
    if "machines" in which and len(bundled.machines) > 1:  # each CPU from the others
        for machine in bundled.machines:
            others = (bundled.records["machine"] != machine).to_numpy()
            target = bundled.filter(machine=machine)
            # the test programs leave the source: the machines measured the same programs, and
            # a tuning run ranks programs that no machine measured before (regime (b) runs on
            # the unseen-tasks setting only: here its test tasks' other programs stay)
            tested = target.records["program_id"][HOLDOUT.test_mask(target)]
            out.append((f"bundled -> {machine}", bundled.select(
                others & ~bundled.records["program_id"].isin(set(tested)).to_numpy()), target,
                None, False))
            # unseen tasks: regime (b)'s test tasks leave the source on every machine, and every
            # test part is restricted to them (regime (a)'s shots still come from them)
            unseen = CALIBRATION_HOLDOUT.test_mask(target)
            tasks = set(target.records["task_key"][unseen])
            out.append((f"bundled -> {machine}, unseen tasks",
                        bundled.select(others & ~bundled.records["task_key"].isin(tasks)
                                       .to_numpy()), target, unseen, True))
    if "gpus" in which and (SHARED / "bennu-ansor").exists():
        a100 = ingest([SHARED / "bennu-ansor" / "gpu_a100"]).filter(valid=True)
        rtx = ingest([SHARED / "bennu-ansor" / "gpu_rtx3080"]).filter(valid=True)
        out += [("RTX 3080 -> A100", rtx, a100, None, True),
                ("A100 -> RTX 3080", a100, rtx, None, True)]
    return out


def hardness(source: Dataset, target: Dataset) -> float:
    """Mean over tasks (and source x target profile pairs) of the Spearman correlation of the
    latencies of programs measured on both."""
    from scipy.stats import spearmanr

    s, t = source.records, target.records
    values = []
    for (task, _), sg in s.groupby(["task_key", "hardware"]):
        for _, tg in t[t["task_key"] == task].groupby("hardware"):
            both = sg.merge(tg, on="program_id", suffixes=("_s", "_t"))
            if len(both) >= 5:
                values.append(spearmanr(both["latency_s"], both["latency_t"])[0])
    return float(np.nanmean(values)) if values else float("nan")


def fingerprint(source: Dataset, target: Dataset, only) -> str:
    """Names a setting's data: its source and target records (ids and latencies) and the test
    restriction, so that a run logged on other data is not taken for one on these (the first
    12 characters of :func:`gbxfer.study.digest`: the same names as the logs already carry)."""
    return digest(source, target, *([] if only is None else [np.packbits(only)]))[:12]


def report(model_predict, fm, test) -> dict:
    r = fm.records
    rep = ranking_report(r["latency"][test], model_predict(fm.X[test]), r["group"][test],
                         r["weight"][test])
    return {k: rep[k] for k in (*METRICS, "random_top1", "n_groups")}


def fit(params, fm, mask, seed):
    r = fm.records
    return GBCostRanker(**{**params, "random_state": seed}).fit(
        fm.X[mask], r["label"][mask], groups=r["group"][mask])


HOLDOUT = SplitSpec("within-task", 0.5, 0)  # one test part for every arm, seed and K
CALIBRATION_HOLDOUT = SplitSpec("by-task", 0.3, 0)  # regime (b): the test tasks get no shot


def calibration_shots(target, holdout, n, seed, profile) -> np.ndarray:
    """Regime (b): the first ``n`` programs of a calibration (gbxfer.pruning.calibration_order,
    as `gbxfer calibrate` measures them) among the target's tasks outside the test part, on
    the one target profile ``profile`` (calibrate measures one)."""
    pool_mask = (~holdout.test_mask(target) & target.records["valid"].to_numpy()
                 & (target.records["hardware"] == profile).to_numpy())
    pool = target.select(pool_mask)
    chosen = pool.records["program_id"].iloc[calibration_order(pool, seed)[:n]]
    return np.flatnonzero(pool_mask & target.records["program_id"].isin(set(chosen)).to_numpy())


def prepared(source, target, config) -> dict:
    """What every (seed, K) of a setting shares: the source model (trained once, seed 0), the
    feature matrices, and the profile regime (b) calibrates: the target's fastest (highest
    peak GFLOP/s in its descriptor; ties by name), the one a user would tune for."""
    fm_target = build(target, list(config.blocks))
    peaks = pd.Series(fm_target.X[:, fm_target.columns.index("hardware.peak_gflops")],
                      index=fm_target.records["hardware"].to_numpy()).fillna(-1.0)
    peaks = peaks.groupby(level=0).max()
    return {"model": train(source, config, seed=0),
            "fm_source": build(source, list(config.blocks)), "fm_target": fm_target,
            "calibrated": sorted(peaks.index, key=lambda p: (-peaks[p], p))[0]}


def one(source, target, seed, k, trials, config, arms_wanted=ARMS, shared=None,
        only=None) -> dict:
    """The arms for one (seed = shot draw, K): ranking quality on the same target test part,
    with the same source model."""
    shared = shared or prepared(source, target, config)
    model, fm_target = shared["model"], shared["fm_target"]
    features = {"source_features": shared["fm_source"], "target_features": fm_target}
    if isinstance(k, str):  # "calN": N calibration programs of other tasks than the test ones
        holdout = CALIBRATION_HOLDOUT
        shots = calibration_shots(target, holdout, int(k[3:]), seed, shared["calibrated"])
    else:
        holdout = HOLDOUT
        shots = draw_shots(target, k, seed, holdout)
    test = holdout.test_mask(target) & (True if only is None else only)
    arms = {"source-only": report(lambda X: model.predict(X, fm_target.columns), fm_target,
                                  test)}
    arms["source-only"]["n_shots"] = len(shots)
    for arm, transfer_config in (("default", TransferConfig()),
                                 ("other-tasks", TransferConfig(other_tasks=True)),
                                 ("guard-blend", TransferConfig(fallback="blend")),
                                 ("guard+blend", TransferConfig(try_blend=True)),
                                 ("guard-continue", TransferConfig(try_pooled=False)),
                                 ("unguarded", TransferConfig(guard=False)),
                                 ("pooled-same", TransferConfig(guard=False).pooled()),
                                 ("blend", TransferConfig(guard=False).blended())):
        if arm in arms_wanted and (arm != "other-tasks" or isinstance(k, str)):
            start = time.perf_counter()
            adapted = transfer(model, source, target, shots, transfer_config, seed, holdout,
                               **features)
            arms[arm] = report(lambda X: adapted.predict(X, fm_target.columns), fm_target, test)
            arms[arm]["seconds"] = time.perf_counter() - start
            arms[arm]["guard"] = adapted.extra["transfer"].get("guard_check")
    shot_ds = target.select(shots)  # labels among the shots only, as a transfer sees them
    ranked = shots_rank(shot_ds)
    if "tuned" in arms_wanted and ranked:  # else nothing for a study to score
        start = time.perf_counter()
        study = study_transfer(model, source, target, shots, trials, f"bench-{seed}-{k}", None,
                               seed)
        chosen = chosen_transfer(study)
        tuned = transfer(model, source, target, shots, chosen, seed, holdout, **features)
        arms["tuned"] = report(lambda X: tuned.predict(X, fm_target.columns), fm_target, test)
        arms["tuned"]["seconds"] = time.perf_counter() - start
        arms["tuned"]["best_params"] = study.best_params
        arms["tuned"]["chosen"] = dataclasses.asdict(chosen)
    if "pooled" in arms_wanted:
        pooled = Dataset.concat([source, shot_ds])
        fm_pooled = build(pooled, list(config.blocks))
        pooled_model = fit(config.params, fm_pooled, np.ones(len(pooled), bool), seed)
        arms["pooled"] = report(pooled_model.predict, fm_target, test)
    if "scratch" in arms_wanted and ranked:  # else every shot alone: nothing to rank
        fm_shots = build(shot_ds, list(config.blocks))
        scratch = fit(config.params, fm_shots, np.ones(len(shot_ds), bool), seed)
        arms["scratch"] = report(scratch.predict, fm_target, test)
    if "upper" in arms_wanted:
        upper = fit(config.params, fm_target, ~test, seed)
        arms["upper"] = report(upper.predict, fm_target, test)
    return arms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=0,
                        help="shot draws first..first+seeds-1 (choices on 100-104, reports on 0-4)")
    parser.add_argument("--shots", default="1,2,4,8,16",
                        help="K values of regime (a) ('': none, regime (b) only)")
    parser.add_argument("--calibration", default="", metavar="N[,N...]",
                        help="regime (b) too: N calibration programs of tasks other than the "
                             "test tasks (by-task test part, 30%%), as `gbxfer calibrate` "
                             "orders them (several N: each)")
    parser.add_argument("--arms", default=",".join(ARMS),
                        help="comma-separated arms to run (source-only always runs)")
    parser.add_argument("--trials", type=int, default=10, help="Optuna trials of the tuned arm")
    parser.add_argument("--settings", default="bundled,machines,gpus")
    parser.add_argument("--match", default="", metavar="TEXT",
                        help="only the settings whose name contains TEXT")
    parser.add_argument("--config", default="default",
                        help="model config of every model (configs/model name or YAML path)")
    parser.add_argument("--name", default="bench_transfer",
                        help="results file name (and of the log of finished runs)")
    parser.add_argument("--fresh", action="store_true", help="forget finished runs")
    parser.add_argument("--report-only", action="store_true",
                        help="summarize the finished runs, compute nothing new")
    args = parser.parse_args()
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    config = load_model_config(args.config)
    log = RESULTS / f"{args.name}.jsonl"
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    shots = [int(k) for k in args.shots.split(",") if k] + (
        [f"cal{int(n)}" for n in args.calibration.split(",") if n])
    if args.fresh and log.exists():
        log.unlink()
    logged = {}
    if log.exists():
        for line in log.read_text().splitlines():
            row = json.loads(line)
            if (row.get("trials", 10), row.get("bench"), row.get("config", "default")) == (
                    args.trials, BENCH_VERSION, args.config):
                logged[(row["setting"], row["seed"], row["k"], row.get("data"))] = row
    done, hard = {}, {}
    for name, source, target, only, calibration in settings(args.settings.split(",")):
        if args.match not in name:
            continue
        hard[name] = hardness(source, target)
        data = fingerprint(source, target, only)
        print(f"{name}: {len(source)} source, {len(target)} target records; source/target "
              f"latency Spearman {hard[name]:.3f}; data {data}", flush=True)
        # a run of other data (another package of the bundled dataset) is not resumed; runs
        # logged before runs named their data are reported (--report-only) only
        for of_data in ([None] if args.report_only else []) + [data]:
            done.update({key[:3]: row for key, row in logged.items()
                         if key[0] == name and key[3] == of_data})
        shared = None
        for seed in seeds:
            for k in shots:
                if (name, seed, k) in done or args.report_only or (
                        isinstance(k, str) and not calibration):
                    continue
                shared = shared or prepared(source, target, config)
                start = time.perf_counter()
                arms = one(source, target, seed, k, args.trials, config, args.arms.split(","),
                           shared, only)
                row = {"setting": name, "seed": seed, "k": k, "trials": args.trials,
                       "bench": BENCH_VERSION, "config": args.config, "data": data, "arms": arms,
                       "seconds": time.perf_counter() - start}
                done[(name, seed, k)] = row
                log_draw(args.name, row)
                scores = ", ".join(f"{a} {arms[a]['pca']:.3f}/{arms[a]['top1']:.3f}"
                                   for a in ARMS if a in arms)
                print(f"  seed {seed} K={k} ({arms['source-only']['n_shots']} shots): {scores} "
                      f"PCA/top-1 ({row['seconds']:.0f} s)", flush=True)
    rows = summarize(done, hard, seeds, shots)
    print_table(rows, ["setting", "k", "arm", "seeds", "pca", "pca_ci", "top1", "top1_ci",
                       "top5", "d_pca", "d_pca_ci", "d_top1", "d_top1_ci", "adapted",
                       "random_top1", "spearman"])
    plot(rows, args.name)
    write_results(args.name, rows, trials=args.trials, hardness=hard, config=args.config)


def summarize(done, hard, seeds, shots) -> list[dict]:
    rows = []
    for name in hard:
        for k in shots:
            runs = [done[(name, s, k)] for s in seeds if (name, s, k) in done]
            for arm in ARMS:
                paired = [run for run in runs if arm in run["arms"]]
                reps = [run["arms"][arm] for run in paired]
                if not reps:
                    continue
                row = {"setting": name, "k": k, "arm": arm, "seeds": len(reps)}
                for metric in METRICS:
                    row[metric], row[f"{metric}_ci"] = (round(v, 4) for v in
                                                        ci95([r[metric] for r in reps]))
                for metric in ("pca", "top1"):  # paired with zero-shot on the same records
                    row[f"d_{metric}"], row[f"d_{metric}_ci"] = (round(v, 4) for v in ci95(
                        [run["arms"][arm][metric] - run["arms"]["source-only"][metric]
                         for run in paired]))
                guards = [r.get("guard") for r in reps if r.get("guard")]
                if guards:
                    row["adapted"] = f"{sum(g['adapted'] for g in guards)}/{len(guards)}"
                    for choice in ("pooled", "blend"):
                        chosen = sum(g.get("choice") == choice for g in guards)
                        if chosen:
                            row["adapted"] += f" ({chosen} {choice})"
                row["random_top1"] = round(float(np.mean([r["random_top1"] for r in reps])), 4)
                row["n_test_groups"] = reps[0]["n_groups"]
                row["spearman"] = round(hard[name], 3)
                rows.append(row)
    return rows


def plot(rows, name):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r["setting"] for r in rows))
    fig, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 3.6), squeeze=False)
    for ax, setting in zip(axes[0], names):
        for arm in ARMS:
            sel = [r for r in rows if r["setting"] == setting and r["arm"] == arm
                   and isinstance(r["k"], int)]  # regime (b) is in the table only
            if not sel:
                continue
            ax.errorbar([r["k"] for r in sel], [r["top1"] for r in sel],
                        yerr=[r["top1_ci"] for r in sel], label=arm, capsize=3, marker="o")
        ax.set_xscale("log", base=2)
        ax.set_title(f"{setting}\n(Spearman {sel[0]['spearman']:.2f})" if sel else setting,
                     fontsize=9)
        ax.set_xlabel("shots per task (K)")
        ax.set_ylabel("top-1")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    RESULTS.mkdir(exist_ok=True)
    fig.savefig(RESULTS / f"{name}.png", dpi=120)


if __name__ == "__main__":
    main()
