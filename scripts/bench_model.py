"""Cost models x splits, mean +- 95% CI over seeds, with the random baseline and group sizes.

    python scripts/bench_model.py [--dataset bundled] [--seeds 5] [--quick] [--only PART]
                                  [--splits within-task,by-task,leave-one-network-out]
                                  [--models gbxfer,gbxfer-xgboost,...]
                                  [--machines NAME,...] [--without NAME,...]

Models (same data, same splits, same seeds):
  gbxfer            the default config (configs/model/default.yaml) on program + workload +
                    hardware features
  gbxfer-large      the default grown to 900 trees x 117 leaves (configs/model/large.yaml;
                    about 1.9x the default's training time, 4.4x its prediction)
  gbxfer-lambdarank LightGBM lambdarank (configs/model/lambdarank.yaml), same features
  gbxfer-xgboost    XGBoost regression on the throughput label (configs/model/xgboost.yaml,
                    the default until 2026-12-04), same features
  gbxfer+per_store  the default config plus TVM's per-store features (the dataset's own, or
                    computed with gbxfer[tvm])
  tenset-xgb        TenSet-style XGBoost regression on per-store features (needs gbxfer[tvm])
  tvm-xgbmodel      TVM's XGBModel through its update/predict API (needs gbxfer[tvm])
  random            uniformly random scores (its exact expectation is shown as random_*)
Splits: within-task and by-task on --dataset (test fraction 0.3), and leave-one-network-out
(every network in turn: a model trained without its tasks scores them; gbxfer, large,
lambdarank, XGBoost, XGBModel and random only); on ../shared/data when
present: zero-shot RTX 3080 -> A100 and back (Ansor logs) and by-task within the A100
ResNet-34 MetaSchedule database (gbxfer only: its IR does not load in TVM 0.27). By-machine
(with ../shared/data): every profile of one machine held out of bundled + the Ansor logs, with
descriptor variants and descriptor-field dropout (scripts/_machines.py).
Speed (the default config): training on 100,000 records, and predicting 2,048 candidates.
Results: scripts/results/bench_model.{json,csv,png}.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from _bench import SHARED, SPEED_SOURCES, ci95, speed_records
from _results import RESULTS, print_table, write_results

from gbxfer import SplitSpec, ingest, load_dataset
from gbxfer.features import build
from gbxfer.metrics import ranking_report
from gbxfer.model import GBCostRanker, load_model_config
from gbxfer.splits import leave_one_network_out

LONO = "leave-one-network-out"

def per_store_frame(dataset):
    if dataset.per_store is not None:
        return dataset.per_store
    try:
        from gbxfer.tvm._per_store import per_store_features
    except ImportError:
        return None
    return per_store_features(dataset, progress=False)


CONFIGS = {"gbxfer": load_model_config(), "gbxfer-large": load_model_config("large"),
           "gbxfer-lambdarank": load_model_config("lambdarank"),
           "gbxfer-xgboost": load_model_config("xgboost")}
DEFAULT = CONFIGS["gbxfer"]
XGB_FEATURES: dict = {}  # per-store matrices by program id, extracted once for every seed


def run_models(dataset, split, seed, models, per_store):
    """Every model fitted on the train part and scored on the test part; ``split`` is a
    SplitSpec, or "leave-one-network-out": one fit per network, each scoring its tasks."""
    valid = dataset.filter(valid=True)
    masks = (list(leave_one_network_out(valid).values()) if split == LONO
             else [split.test_mask(valid)])
    test = np.logical_or.reduce(masks)
    if not test.any() or all(m.all() for m in masks):
        return {}
    out = {}
    blocks_of = {name: list(config.blocks) for name, config in CONFIGS.items()}  # their own
    blocks_of |= {"gbxfer+per_store": blocks_of["gbxfer"] + ["per_store"],
                  "tenset-xgb": ["per_store"]}
    every = list(dict.fromkeys(b for blocks in CONFIGS.values() for b in blocks.blocks))
    fm_all = build(valid, every + (["per_store"] if per_store is not None else []),
                   per_store=per_store)
    r = fm_all.records
    for name in models:
        start = time.perf_counter()
        if name in blocks_of:
            if "per_store" in blocks_of[name] and per_store is None:
                continue
            fm = fm_all.select_blocks(blocks_of[name])
            params = ({"backend": "xgboost", "objective": "regression"}
                      if name == "tenset-xgb" else CONFIGS.get(name, DEFAULT).params)
        elif name == "tvm-xgbmodel":
            try:
                from gbxfer.tvm._baselines import XGBModelBaseline
            except ImportError:
                continue
        scores = np.full(len(r), np.nan)
        for held in masks:  # leave-one-network-out: a task of two networks is scored twice
            if name in blocks_of:
                model = GBCostRanker(**{**params, "random_state": seed}).fit(
                    fm.X[~held], r["label"][~held], groups=r["group"][~held])
                scores[held] = model.predict(fm.X[held])
            elif name == "tvm-xgbmodel":
                baseline = XGBModelBaseline(cache=XGB_FEATURES).fit(valid.select(~held))
                scores[held] = np.nan_to_num(baseline.predict(valid.select(held)),
                                             nan=-np.inf)
            else:
                scores[held] = np.random.default_rng(seed).random(int(held.sum()))
        if np.isinf(scores[test]).all():  # XGBModel predicted nothing
            continue
        rep = ranking_report(r["latency"][test], scores[test], r["group"][test],
                             r["weight"][test])
        rep["seconds"] = time.perf_counter() - start
        out[name] = rep
    return out


def speed(dataset, shared_sources, seed):
    """Training on 100,000 records (resampled with the seed) and predicting 2,048 candidates,
    gbxfer's default config against TVM's XGBModel training and prediction code on the same
    feature rows (each record one "store"), in the same run."""
    resampled, distinct = speed_records(dataset, shared_sources, seed)
    fm = build(resampled, list(DEFAULT.blocks))
    r = fm.records
    start = time.perf_counter()
    model = GBCostRanker(**{**DEFAULT.params, "random_state": seed}).fit(
        fm.X, r["label"], groups=r["group"])
    out = {"train_records": len(r), "distinct_source_records": distinct,
           "train_seconds": time.perf_counter() - start}
    batch = fm.X[:2048]
    out["predict_2048_ms"] = _median_ms(lambda: model.predict(batch))
    try:
        from tvm.s_tir.meta_schedule.cost_model import XGBModel
    except ImportError:
        return out
    xgbmodel = XGBModel(num_tuning_cores=1)
    xs = [row[None, :] for row in np.nan_to_num(fm.X)]
    start = time.perf_counter()
    xgbmodel._train(xs, r["label"].to_numpy())  # what XGBModel.update runs, on the same rows
    out["xgbmodel_train_seconds"] = time.perf_counter() - start
    out["xgbmodel_predict_2048_ms"] = _median_ms(lambda: xgbmodel._predict(xs[:2048]))
    out["train_ratio"] = out["train_seconds"] / out["xgbmodel_train_seconds"]
    out["predict_ratio"] = out["predict_2048_ms"] / out["xgbmodel_predict_2048_ms"]
    return out


def _median_ms(call, repeats=20) -> float:
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="bundled")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="2 seeds, no speed run")
    parser.add_argument("--only", choices=["splits", "machines", "speed"], action="append",
                        help="run only these parts (repeatable; their rows replace the same "
                             "rows in the results already written)")
    parser.add_argument("--splits", default=f"within-task,by-task,{LONO}",
                        type=lambda text: text.split(","),
                        help="which splits of --dataset the 'splits' part runs (comma-separated)")
    parser.add_argument("--machines", type=lambda text: text.split(","),
                        help="the 'machines' part holds out only these machines (comma-separated "
                             "names as `gbxfer info` shows them)")
    parser.add_argument("--without", type=lambda text: text.split(","), default=[],
                        help="the 'machines' part leaves these machines out of the data "
                             "altogether (comma-separated): what a similar machine is worth")
    parser.add_argument("--models", help="run only these models (comma-separated); the other "
                        "rows stay as written before")
    args = parser.parse_args()
    seeds = range(2 if args.quick else args.seeds)
    parts = set(args.only or ["splits", "machines", "speed"])
    if (args.machines or args.without) and "machines" not in parts:
        parser.error("--machines and --without choose the 'machines' part's rows")
    dataset = load_dataset(args.dataset)
    per_store = per_store_frame(dataset.filter(valid=True))
    all_models = ["gbxfer", "gbxfer-large", "gbxfer-lambdarank", "gbxfer-xgboost",
                  "gbxfer+per_store", "tenset-xgb", "tvm-xgbmodel", "random"]
    experiments = [(f"{args.dataset}", dataset, lambda s, k=kind: SplitSpec(k, 0.3, s),
                    all_models, per_store) for kind in ("within-task", "by-task")
                   if kind in args.splits]
    if LONO in args.splits and (dataset.tasks["network"] != "").all():
        # one fit per network and seed: the per-store variants are left to the 0.3 splits
        experiments.append((f"{args.dataset}", dataset, lambda s: LONO,
                            ["gbxfer", "gbxfer-large", "gbxfer-lambdarank", "gbxfer-xgboost",
                             "tvm-xgbmodel", "random"], None))
    if (SHARED / "bennu-ansor").exists():
        gpus = ingest([SHARED / "bennu-ansor" / "gpu_a100", SHARED / "bennu-ansor" / "gpu_rtx3080"])
        for family in ("cuda-sm_80", "cuda-sm_86"):
            experiments.append(("bennu-ansor GPUs", gpus,
                                lambda s, f=family: SplitSpec("by-hardware", 0.3, s, f),
                                ["gbxfer", "gbxfer-lambdarank", "random"], None))
        a100 = ingest([SHARED / "bennu-metaschedule-a100-resnet34"])
        experiments.append(("bennu A100 ResNet-34", a100, lambda s: SplitSpec("by-task", 0.3, s),
                            ["gbxfer", "gbxfer-lambdarank", "random"], None))
    rows = []
    for name, ds, make_split, models, ps in experiments if "splits" in parts else []:
        models = [m for m in models if not args.models or m in args.models.split(",")]
        per_seed = [run_models(ds, make_split(seed), seed, models, ps)
                    for seed in seeds]
        split = make_split(0)
        label = split if split == LONO else split.kind + (f":{split.family}" if split.family
                                                          else "")
        for model in models:
            reps = [p[model] for p in per_seed if model in p]
            if not reps:
                continue
            row = {"data": name, "split": label, "model": model, "seeds": len(reps)}
            for metric in ("pca", "top1", "top5", "apeak5", "random_top1", "random_top5"):
                mean, half = ci95([rep[metric] for rep in reps])
                row[metric] = round(mean, 4)
                row[f"{metric}_ci"] = round(half, 4)
            row["n_tasks"] = int(ds.records["task_key"].nunique())  # of the data, all splits
            row["n_groups"] = reps[0]["n_groups"]
            row["group_size_median"] = reps[0]["group_size_median"]
            row["n_test_records"] = int(np.mean([rep["n_records"] for rep in reps]))
            row["seconds"] = round(float(np.mean([rep["seconds"] for rep in reps])), 2)
            rows.append(row)
            print_table([row], ["data", "split", "model", "pca", "pca_ci", "top1", "top1_ci",
                                "top5", "random_top1", "n_groups"])
    if "machines" in parts and (SHARED / "bennu-ansor").exists():
        from _machines import by_machine_rows

        rows += by_machine_rows(SHARED, seeds, args.machines, args.without)
    kept = {}
    if (args.only or args.models) and (RESULTS / "bench_model.json").exists():  # the rest
        import json

        kept = json.loads((RESULTS / "bench_model.json").read_text())
        mine = {(r["data"], r["split"], r["model"]) for r in rows}
        rows = [r for r in kept["rows"] if (r["data"], r["split"], r["model"]) not in mine
                ] + rows
    print()
    print_table(rows, ["data", "split", "model", "seeds", "pca", "pca_ci", "top1", "top1_ci",
                       "top5", "top5_ci", "apeak5", "random_top1", "random_top5", "n_groups",
                       "group_size_median", "n_test_records"])
    extra = {"speed": kept["speed"]} if "speed" in kept else {}
    if not args.quick and "speed" in parts:
        extra["speed"] = speed(dataset, SPEED_SOURCES, 0)
        print("\nspeed:", extra["speed"])
    plot(rows)
    write_results("bench_model", rows, dataset=args.dataset, **extra)


def plot(rows):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = list(dict.fromkeys((r["data"], r["split"]) for r in rows))
    models = list(dict.fromkeys(r["model"] for r in rows))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, metric in zip(axes, ("top1", "pca")):
        width = 0.8 / len(models)
        for k, model in enumerate(models):
            xs, ys, es = [], [], []
            for i, case in enumerate(cases):
                match = [r for r in rows if (r["data"], r["split"]) == case and r["model"] == model]
                if match:
                    xs.append(i + k * width)
                    ys.append(match[0][metric])
                    es.append(match[0][f"{metric}_ci"])
            ax.bar(xs, ys, width, yerr=es, label=model, capsize=2)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(cases))])
        ax.set_xticklabels([f"{d}\n{s}" for d, s in cases], fontsize=7)
        ax.set_ylabel(metric)
        ax.set_ylim(0, 1.05)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    RESULTS.mkdir(exist_ok=True)
    fig.savefig(RESULTS / "bench_model.png", dpi=120)


if __name__ == "__main__":
    main()
