"""``gbxfer train`` / ``evaluate`` / ``predict`` / ``explain``: cost models on datasets."""
from __future__ import annotations

import json
import logging

import numpy as np

from ..errors import GbxferError
from ..manifests import write_file
from ..model import load_model_config, load_models, save_models
from ..model._saved import member_folder
from ..splits import HELD_OUT
from ..training import evaluate, evaluation_mask, evaluation_report, score, train
from ._common import (MODEL_HELP, command_stamp, csv_file, format_table, fraction,
                      holdout_split, input_path, load_dataset_arg, model_path, non_negative_int,
                      output_folder, positive_int, require_hardware, task_names)

log = logging.getLogger("gbxfer")


def add_parser(verbs, common):
    p = verbs.add_parser(
        "train", parents=[common], help="train a cost model on a dataset",
        description="Train a ranking booster on a dataset's valid records: on one hardware "
                    "profile (--target PROFILE), one joint model on all (--target all), or one "
                    "model per profile (--per-target, in one model folder). With --holdout "
                    "the split's test part is left out; the split and the training record ids "
                    "are stored in the model, so that `gbxfer evaluate` scores only the rest.")
    p.add_argument("dataset", type=input_path, metavar="DATASET",
                   help="dataset folder, or 'bundled'")
    p.add_argument("--target", metavar="PROFILE|all",
                   help="train on this hardware profile's records only (default: all, one "
                        "joint model over every profile)")
    p.add_argument("--per-target", action="store_true",
                   help="one model per hardware profile, in one model folder")
    p.add_argument("--out", required=True, type=output_folder, metavar="MODEL",
                   help="the model folder to write")
    p.add_argument("--config", help="model config (configs/model/NAME.yaml or a path)")
    p.add_argument("--holdout", metavar="SPLIT",
                   help="within-task | by-task | by-network | by-hardware:FAMILY | "
                        "by-machine:MACHINE (every profile of one machine; `gbxfer info` "
                        "lists them)")
    p.add_argument("--test-fraction", type=fraction, metavar="F",
                   help="0 < F < 1: expected test share of --holdout (default: 0.2)")
    p.add_argument("--seed", type=non_negative_int, default=0,
                   help="seed of the split and the booster's sampling (default: 0)")
    p.add_argument("--dask", metavar="local[:N]|ADDRESS",
                   help="train with xgboost.dask on a Dask cluster: a local one of N worker "
                        "processes (default 2), or a scheduler's address; each worker reads "
                        "and featurises its tasks' records (pip install 'gbxfer[dask]')")
    p.set_defaults(run=run_train)

    p = verbs.add_parser(
        "evaluate", parents=[common], help="ranking quality of a model on a dataset",
        description="Score a model on the records it did not train on (and, when it carries a "
                    "split, only on that split's test part of DATASET): PCA, top-1, top-5, "
                    "a-peak@5 and the random baseline, overall and per hardware (per task with "
                    "--tasks).")
    p.add_argument("model", type=model_path, metavar="MODEL",
                   help=MODEL_HELP)
    p.add_argument("dataset", type=input_path, metavar="DATASET")
    p.add_argument("--hardware", metavar="NAME", help="only this hardware profile")
    p.add_argument("--tasks", action="store_true", help="also one row per task x hardware")
    p.add_argument("--json", action="store_true", help="print one JSON object (every table)")
    p.set_defaults(run=run_evaluate)

    p = verbs.add_parser("predict", parents=[common], help="score records with a model",
                         description="Write program_id, hardware, score (higher = faster) for "
                                     "every valid record of DATASET to a CSV file.")
    p.add_argument("model", type=model_path, metavar="MODEL",
                   help=MODEL_HELP)
    p.add_argument("dataset", type=input_path, metavar="DATASET")
    p.add_argument("--out", required=True, type=csv_file, metavar="FILE.csv",
                   help="the CSV file to write (missing parent folders are created)")
    p.set_defaults(run=run_predict)

    p = verbs.add_parser("explain", parents=[common], help="feature importance of a model",
                         description="Gain importance by feature block and by feature; also "
                                     "writes a bar chart into the model folder "
                                     "(importance.png; one per profile of a per-target model).")
    p.add_argument("model", type=input_path, metavar="MODEL")
    p.add_argument("--top", type=positive_int, default=20, metavar="N",
                   help="features listed and plotted (default: 20)")
    p.set_defaults(run=run_explain)


def run_train(args) -> int:
    if args.per_target and args.target is not None:
        raise GbxferError("--per-target trains a model for every profile: drop --target")
    config = load_model_config(args.config)
    split = holdout_split(args, 0.2)
    stamp = command_stamp()
    if args.dask:
        return _train_on_dask(args, config, split, stamp)
    dataset = load_dataset_arg(args.dataset)
    if args.per_target:
        models = {}
        for hw in dataset.hardware:
            models[hw] = train(dataset, config, split, target=hw, seed=args.seed)
            models[hw].extra["command"] = stamp
            log.info("%s: trained on %d records", hw, len(models[hw].train_record_ids))
        save_models(args.out, models)
    else:
        target = None if args.target in (None, "all") else args.target
        model = train(dataset, config, split, target=target, seed=args.seed)
        model.extra["command"] = stamp
        model.save(args.out)
        log.info("trained on %d records of %s", len(model.train_record_ids),
                 ", ".join(model.hardware))
    log.info("wrote %s", args.out)
    return 0


def _train_on_dask(args, config, split, stamp) -> int:
    from ..distributed import close_client, dask_client, train_on_dask
    from ..records.dataset import BUNDLED

    if args.per_target or args.target not in (None, "all"):
        raise GbxferError("--dask trains one joint model (no --per-target or --target)")
    path = BUNDLED if str(args.dataset) == "bundled" and not args.dataset.exists() else \
        args.dataset
    client = dask_client(args.dask)
    try:
        model = train_on_dask(path, config, client, split, seed=args.seed)
    finally:
        close_client(client)
    model.extra["command"] = stamp
    model.save(args.out)
    log.info("trained on Dask (%s) on %d records of %s; wrote %s", args.dask,
             len(model.train_record_ids), ", ".join(model.hardware), args.out)
    return 0


def _evaluate_all(models: dict, dataset, hardware) -> dict:
    """One model: its report. Per-target models: each on its profile's records, and an overall
    report over all of them (groups are task x hardware, so scores of different models never
    meet in one group)."""
    if None in models:
        return evaluate(models[None], dataset, hardware)
    import pandas as pd

    from ..metrics import ranking_report

    reports, parts = {}, []
    for hw, model in models.items():
        if hardware not in (None, hw) or hw not in dataset.hardware:
            continue
        part = dataset.filter(hardware=hw)
        mask, paired = evaluation_mask(model, part)
        scores, fm = score(model, part.select(mask))  # once, for its report and the overall
        reports[hw] = evaluation_report(model, scores, fm.records, paired[mask])
        parts.append((fm.records, scores))
    if not parts:
        raise GbxferError("no hardware profile of the dataset has a model in this folder")
    r = pd.concat([p[0] for p in parts], ignore_index=True)
    s = np.concatenate([p[1] for p in parts])
    report = ranking_report(r["latency"], s, r["group"], r["weight"])
    report["n_tasks"] = int(r["task_key"].nunique())
    report["by_hardware"] = {hw: {k: v for k, v in rep.items() if not isinstance(v, dict)}
                             for hw, rep in reports.items()}
    report["by_task"] = {k: v for rep in reports.values() for k, v in rep["by_task"].items()}
    return report


METRICS = ["pca", "top1", "top5", "apeak5", "random_top1", "random_top5", "n_groups",
           "n_records"]


def check_seen_hardware(models: dict, dataset, chosen: str | None, strict: bool = True) -> None:
    """A joint model scored on a dataset with none of its hardware profiles measures a
    transfer without adaptation, not the model: an error unless asked for by ``--hardware``
    (a zero-shot measurement on purpose) or not ``strict`` (predict), then a warning."""
    model = models.get(None)
    evaluated = dataset.hardware if chosen is None else [chosen]
    if model is None or not model.hardware or set(model.hardware) & set(evaluated):
        return
    detail = (f"the model was trained on {', '.join(model.hardware)} and the data holds "
              f"{', '.join(evaluated) or '-'}")
    if chosen is None and strict:
        raise GbxferError(f"{detail}: to score it there without adaptation (zero-shot), "
                          "name the profile with --hardware")
    log.warning("%s: these scores measure a transfer without adaptation (zero-shot)", detail)


def warn_unseen_scored(models: dict, report: dict) -> None:
    """Warn when profiles a joint model was scored on (``report``'s) were not in its training
    data, beside ones that were: their rows, and the overall one, are zero-shot (a split that
    holds hardware out scores such profiles on purpose)."""
    model = models.get(None)
    if model is None or not model.hardware or (model.split or {}).get("kind") in HELD_OUT:
        return
    scored = list(report["by_hardware"])
    unseen = [hw for hw in scored if hw not in model.hardware]
    if unseen:
        log.warning("%d of the %d profiles scored were not in the model's training data (%s): "
                    "their scores, in the overall row too, measure a transfer without "
                    "adaptation (zero-shot); --hardware scores one profile", len(unseen),
                    len(scored), ", ".join(unseen[:3]) + (", ..." if len(unseen) > 3 else ""))


def run_evaluate(args) -> int:
    dataset = load_dataset_arg(args.dataset)
    if args.hardware is not None:
        require_hardware(dataset, args.hardware)
    models = load_models(args.model)
    check_seen_hardware(models, dataset, args.hardware)
    report = _evaluate_all(models, dataset, args.hardware)
    if args.hardware is None:  # a chosen profile the model never saw is warned of above
        warn_unseen_scored(models, report)
    if args.json:
        print(json.dumps(report, indent=1, default=float))
        return 0
    print(format_table([{"part": "all", **report}], ["part", *METRICS]))
    print()
    print(format_table([{"hardware": hw, **rep} for hw, rep in report["by_hardware"].items()],
                       ["hardware", *METRICS]))
    for name in ("paired", "unpaired"):
        if name in report:
            print(f"\n{name} test programs (measured / not measured on training hardware):")
            print(format_table([{"part": name, **report[name]}], ["part", *METRICS]))
    print()
    ranked = {key: rep for key, rep in report["by_task"].items() if rep["n_groups"]}
    if not args.tasks:
        print(f"({len(ranked)} hardware x task groups: --tasks lists them)")
        return 0
    names = task_names(dataset)
    rows = []
    for key, rep in ranked.items():
        task, _, hw = key.rpartition("|")
        rows.append({"task": (names.get(task) or task)[:60], "hardware": hw, **rep})
    print(format_table(rows, ["task", "hardware", "pca", "top1", "top5", "random_top1",
                              "n_records"]))
    return 0


def run_predict(args) -> int:
    import pandas as pd

    dataset = load_dataset_arg(args.dataset).filter(valid=True)
    models = load_models(args.model)
    check_seen_hardware(models, dataset, None, strict=False)
    frames = []
    for hw, model in models.items():
        part = dataset if hw is None else dataset.filter(hardware=hw)
        if len(part) == 0:
            continue
        scores, fm = score(model, part)
        frames.append(pd.DataFrame({"program_id": fm.records["program_id"],
                                    "hardware": fm.records["hardware"], "score": scores}))
    if not frames:
        raise GbxferError("no record of the dataset can be scored by this model")
    out = pd.concat(frames, ignore_index=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)  # as for every --out of gbxfer
    write_file(args.out, lambda tmp: out.to_csv(tmp, index=False))
    log.info("wrote %d scores to %s", len(out), args.out)
    return 0


def run_explain(args) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for hw, model in load_models(args.model).items():
        gain = model.ranker.feature_importances_
        order = np.argsort(-gain)
        total = gain.sum() or 1.0
        blocks = {}
        for column, g in zip(model.columns, gain):
            blocks[column.split(".")[0]] = blocks.get(column.split(".")[0], 0.0) + g
        title = f"{args.model}" + (f" [{hw}]" if hw else "")
        print(title)
        print(format_table([{"block": b, "share": g / total} for b, g in
                            sorted(blocks.items(), key=lambda kv: -kv[1])], ["block", "share"]))
        print()
        rows = [{"feature": model.columns[i], "share": gain[i] / total}
                for i in order[:args.top]]
        print(format_table(rows, ["feature", "share"]))
        fig, ax = plt.subplots(figsize=(7, 0.28 * len(rows) + 1))
        ax.barh([r["feature"] for r in rows][::-1], [r["share"] for r in rows][::-1])
        ax.set_xlabel("share of total gain")
        ax.set_title(title)
        fig.tight_layout()
        png = args.model / ("importance.png" if hw is None else
                            f"importance-{member_folder(hw)}.png")
        write_file(png, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))
        plt.close(fig)
        log.info("wrote %s", png)
    return 0

