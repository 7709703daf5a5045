"""By-machine rows of scripts/bench_model.py: every profile of one physical machine held out,
the model trained on the other machines, scored there zero-shot beside random.

The machines: the bundled dataset's CPUs (`gbxfer info bundled`: AMD EPYC Zen 3 and Zen 4,
Intel Xeon Sapphire Rapids and Emerald Rapids, each with 2-5 ISA/thread profiles of the same
programs), and, from ../shared/data, the Ansor logs' NVIDIA A100, NVIDIA RTX 3080 and x86 CPU
(its model is not stated in the source). ``--without`` leaves machines out of the data
altogether: a machine held out with and without a similar one in the training data. The
held-out machine's descriptor comes in three variants, on the same test rows and the same
trained model:

  probed   what training uses: the profile's probed descriptor (CPUs), the GPU table (GPUs)
  table    what a machine known only by its target and machine name gets: the target's
           fields, the microarchitecture's reference values and the relations (no probe)
  missing  the measured fields (caches, clock, peak, bandwidth) NaN

and each model is trained twice: without and with descriptor-field dropout (0.3 of the
training groups with their measured fields replaced by the table variant's; the
``descriptor_dropout`` of a model config).
"""
from __future__ import annotations

import math

import numpy as np

from gbxfer import Dataset, SplitSpec, ingest, load_dataset
from gbxfer.features import block_columns, build, target_only_rows
from gbxfer.metrics import ranking_report
from gbxfer.model import GBCostRanker, load_model_config
from gbxfer.training import MEASURED_FIELDS, hide_measured_fields

DEFAULT = load_model_config()
ANSOR_MACHINES = {"gpu_a100": "NVIDIA A100", "gpu_rtx3080": "NVIDIA RTX 3080",
                  "cpu_x86": "x86 CPU (Ansor logs; model not stated)"}
VARIANTS = ("probed", "table", "missing")
DROPOUTS = (0.0, 0.3)


def machines_dataset(shared) -> Dataset:
    """The bundled dataset and the Ansor logs of ``shared``, each log folder named as its
    machine; valid records only."""
    parts = [load_dataset("bundled")]
    for folder, machine in ANSOR_MACHINES.items():
        parts.append(ingest([shared / "bennu-ansor" / folder], machine=machine))
    return Dataset.concat(parts).filter(valid=True)


def variant(X: np.ndarray, columns, records, which: str) -> np.ndarray:
    """``X`` with the hardware block of every record replaced by the ``which`` variant."""
    if which == "probed":
        return X
    columns = list(columns)
    cols = [columns.index(c) for c in block_columns("hardware")]
    X = np.array(X, copy=True)
    if which == "missing":
        measured = [columns.index(f"hardware.{f}") for f in MEASURED_FIELDS]
        X[:, measured] = np.nan
        return X
    X[:, cols] = target_only_rows(records)
    return X


def by_machine_rows(shared, seeds, only=None, without=()) -> list[dict]:
    """Per machine, two splits: the machine held out (its programs may have been measured on
    another machine: the bundled machines replay each other's programs), and the machine held
    out together with 30% of the tasks on every machine (``+ unseen tasks``: the test is the
    machine's records of those tasks, which no training record shares; the draw of tasks
    follows the seed). ``only``: the machines to hold out (all of them when None);
    ``without``: machines left out of the data altogether (what a similar machine in the
    training data is worth)."""
    dataset = machines_dataset(shared)
    unknown = (set(only or []) | set(without)) - set(dataset.machines)
    if set(only or []) & set(without):
        raise SystemExit(f"{sorted(set(only) & set(without))[0]!r} is both held out and left "
                         "out of the data")
    if unknown:
        raise SystemExit(f"no machine {sorted(unknown)[0]!r}; machines: "
                         f"{', '.join(dataset.machines)}")
    if without:
        dataset = dataset.filter(machine=[m for m in dataset.machines if m not in without])
    data = "bundled + Ansor logs" + "".join(f" - {m}" for m in without)
    fm = build(dataset, ["program", "workload", "hardware"])
    r = fm.records
    assert (r["record_id"].to_numpy() == dataset.records["record_id"].to_numpy()).all()
    groups = r["group"].to_numpy()
    rows = []
    for machine in [m for m in dataset.machines if not only or m in only]:
        on_machine = SplitSpec.parse(f"by-machine:{machine}").test_mask(dataset)
        for unseen_tasks in (False, True):
            reports: dict = {}
            sizes: list[int] = []
            for seed in seeds:
                test, train = on_machine, ~on_machine
                if unseen_tasks:
                    held = SplitSpec("by-task", 0.3, seed).test_mask(dataset)
                    test, train = on_machine & held, ~on_machine & ~held
                if not test.any():
                    continue
                _score(fm, dataset, train, test, groups, seed, reports)
                sizes.append(int(test.sum()))
            split = f"by-machine:{machine}" + (" + unseen tasks" if unseen_tasks else "")
            for (which, dropout), reps in reports.items():
                rows.append({"data": data, "split": split,
                             "model": "random" if which == "random" else
                             f"gbxfer ({which}{', dropout' if dropout else ''})",
                             "seeds": len(reps), **summary(reps),
                             "n_train_machines": len(dataset.machines) - 1,
                             "n_machine_tasks": int(dataset.records.loc[on_machine, "task_key"]
                                                    .nunique()),
                             "n_test_records": int(np.mean(sizes))})
    return rows


def _score(fm, dataset, train, test, groups, seed, reports) -> None:
    """Models trained on ``train`` without and with descriptor dropout, each scored on ``test``
    with every descriptor variant, and random scores; appended to ``reports``."""
    r = fm.records
    part = r[test].reset_index(drop=True)
    targets = dataset.records[test].reset_index(drop=True)
    for dropout in DROPOUTS:
        X_train = hide_measured_fields(
            fm.X[train], fm.columns, groups[train], dropout, seed,
            target_only_rows(dataset.records[train])) if dropout else fm.X[train]
        model = GBCostRanker(**{**DEFAULT.params, "random_state": seed}).fit(
            X_train, r["label"][train], groups=groups[train])
        for which in VARIANTS:
            X_test = variant(fm.X[test], fm.columns, targets, which)
            rep = ranking_report(part["latency"], model.predict(X_test), part["group"],
                                 part["weight"])
            reports.setdefault((which, dropout), []).append(rep)
    random_scores = np.random.default_rng(seed).random(int(test.sum()))
    reports.setdefault(("random", None), []).append(ranking_report(
        r["latency"][test], random_scores, r["group"][test], r["weight"][test]))


def summary(reps) -> dict:
    from _bench import ci95

    out = {}
    for metric in ("pca", "top1", "top5", "apeak5", "random_top1", "random_top5"):
        mean, half = ci95([rep[metric] for rep in reps])
        out[metric] = round(mean, 4) if not math.isnan(mean) else mean
        out[f"{metric}_ci"] = round(half, 4)
    out["n_groups"] = reps[0]["n_groups"]
    out["group_size_median"] = reps[0]["group_size_median"]
    return out
