"""``gbxfer train`` / ``evaluate`` / ``predict`` / ``explain``: cost models on datasets."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np

from ..errors import GbxferError
from ..model import SavedModel, load_model_config
from ..splits import SplitSpec
from ..training import evaluate, evaluation_mask, evaluation_report, score, train
from ._common import command_stamp, format_table, load_dataset_arg

log = logging.getLogger("gbxfer")
PER_TARGET_INDEX = "per-target.json"


def add_parser(verbs, common):
    p = verbs.add_parser(
        "train", parents=[common], help="train a cost model on a dataset",
        description="Train a ranking booster on a dataset's valid records: on one hardware "
                    "profile (--target PROFILE), one joint model on all (--target all), or one "
                    "model per profile (--per-target, under MODEL/<profile>). With --holdout "
                    "the split's test part is left out; the split and the training record ids "
                    "are stored in the model, so that `gbxfer evaluate` scores only the rest.")
    p.add_argument("dataset", metavar="DATASET", help="dataset folder, or 'bundled'")
    p.add_argument("--target", default="all", metavar="PROFILE|all")
    p.add_argument("--per-target", action="store_true")
    p.add_argument("--out", required=True, type=Path, metavar="MODEL")
    p.add_argument("--config", help="model config (configs/model/NAME.yaml or a path)")
    p.add_argument("--holdout", metavar="SPLIT",
                   help="within-task | by-task | by-network | by-hardware:FAMILY")
    p.add_argument("--test-fraction", type=float, default=0.2)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=run_train)

    p = verbs.add_parser(
        "evaluate", parents=[common], help="ranking quality of a model on a dataset",
        description="Score a model on the records it did not train on (and, when it carries a "
                    "split, only on that split's test part of DATASET): PCA, top-1, top-5, "
                    "a-peak@5 and the random baseline, overall, per hardware and per task.")
    p.add_argument("model", type=Path, metavar="MODEL")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("--hardware", metavar="NAME", help="only this hardware profile")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run_evaluate)

    p = verbs.add_parser("predict", parents=[common], help="score records with a model",
                         description="Write program_id, hardware, score (higher = faster) for "
                                     "every valid record of DATASET to a CSV file.")
    p.add_argument("model", type=Path, metavar="MODEL")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("--out", required=True, type=Path, metavar="FILE.csv")
    p.set_defaults(run=run_predict)

    p = verbs.add_parser("explain", parents=[common], help="feature importance of a model",
                         description="Gain importance by feature block and by feature; also "
                                     "writes a bar chart next to the model (importance.png).")
    p.add_argument("model", type=Path, metavar="MODEL")
    p.add_argument("--top", type=int, default=20)
    p.set_defaults(run=run_explain)


def load_models(path: Path) -> dict:
    """``{profile: SavedModel}`` for a per-target folder, ``{None: SavedModel}`` otherwise."""
    index = path / PER_TARGET_INDEX
    if index.exists():
        return {hw: SavedModel.load(path / sub) for hw, sub in json.loads(index.read_text()).items()}
    return {None: SavedModel.load(path)}


def run_train(args) -> int:
    dataset = load_dataset_arg(args.dataset)
    config = load_model_config(args.config)
    split = SplitSpec.parse(args.holdout, args.test_fraction, args.seed) if args.holdout else None
    stamp = command_stamp()
    if args.per_target:
        index = {}
        for hw in dataset.hardware:
            model = train(dataset, config, split, target=hw, seed=args.seed)
            model.extra["command"] = stamp
            model.save(args.out / hw)
            index[hw] = hw
            log.info("%s: trained on %d records", hw, len(model.train_record_ids))
        (args.out / PER_TARGET_INDEX).write_text(json.dumps(index, indent=1))
    else:
        target = None if args.target == "all" else args.target
        model = train(dataset, config, split, target=target, seed=args.seed)
        model.extra["command"] = stamp
        model.save(args.out)
        log.info("trained on %d records of %s", len(model.train_record_ids),
                 ", ".join(model.hardware))
    log.info("wrote %s", args.out)
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


def run_evaluate(args) -> int:
    dataset = load_dataset_arg(args.dataset)
    report = _evaluate_all(load_models(args.model), dataset, args.hardware)
    if args.json:
        print(json.dumps(report, indent=1, default=float))
        return 0
    print(format_table([{"part": "all", **report}], ["part", *METRICS]))
    print()
    print(format_table([{"hardware": hw, **rep} for hw, rep in report["by_hardware"].items()],
                       ["hardware", *METRICS]))
    for name in ("paired", "unpaired"):
        if name in report:
            print(f"\n{name} test programs (measured / not measured on a training family):")
            print(format_table([{"part": name, **report[name]}], ["part", *METRICS]))
    print()
    names = dict(zip(dataset.tasks["task_key"], dataset.tasks["description"]))
    rows = []
    for key, rep in report["by_task"].items():
        task, _, hw = key.rpartition("|")
        rows.append({"task": (names.get(task) or task)[:60], "hardware": hw, **rep})
    print(format_table(rows, ["task", "hardware", "pca", "top1", "top5", "random_top1",
                              "n_records"]))
    return 0


def run_predict(args) -> int:
    import pandas as pd

    dataset = load_dataset_arg(args.dataset).filter(valid=True)
    frames = []
    for hw, model in load_models(args.model).items():
        part = dataset if hw is None else dataset.filter(hardware=hw)
        if len(part) == 0:
            continue
        scores, fm = score(model, part)
        frames.append(pd.DataFrame({"program_id": fm.records["program_id"],
                                    "hardware": fm.records["hardware"], "score": scores}))
    if not frames:
        raise GbxferError("no record of the dataset can be scored by this model")
    out = pd.concat(frames, ignore_index=True)
    out.to_csv(args.out, index=False)
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
        png = (args.model / (hw or "") / "importance.png")
        fig.savefig(png, dpi=120)
        plt.close(fig)
        log.info("wrote %s", png)
    return 0

