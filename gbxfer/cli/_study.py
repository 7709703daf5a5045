"""``gbxfer study``: Optuna studies over model or transfer hyper-parameters."""
from __future__ import annotations

import logging
from pathlib import Path

import yaml

from ..errors import GbxferError
from ..model import SavedModel, load_model_config
from ..splits import SplitSpec
from ._common import load_dataset_arg

log = logging.getLogger("gbxfer")


def add_parser(verbs, common):
    p = verbs.add_parser(
        "study", parents=[common], help="tune hyper-parameters with an Optuna study",
        description="Run (or continue) an Optuna study. 'model' tunes the booster by by-task "
                    "cross-validation inside the training part of --holdout; 'transfer' tunes "
                    "transfer settings by cross-validation inside the shots. Several processes "
                    "may work on one study (same --storage and --study-name). The best "
                    "parameters are written to --export as a model config.")
    p.add_argument("kind", choices=["model", "transfer"])
    p.add_argument("dataset", metavar="DATASET",
                   help="model: the training data; transfer: the target data")
    p.add_argument("--model", type=Path, help="transfer: the source model")
    p.add_argument("--shots", type=int, default=8, help="transfer: shots per task")
    p.add_argument("--hardware", help="transfer: the target profile (default: the profiles "
                                      "the model did not train on)")
    p.add_argument("--holdout", metavar="SPLIT")
    p.add_argument("--test-fraction", type=float, default=0.2)
    p.add_argument("--config", help="base model config")
    p.add_argument("--trials", type=int, default=20, help="finished trials to reach")
    p.add_argument("--storage", default="sqlite:///gbxfer-study.db",
                   help="Optuna storage URL (sqlite:///file.db, postgresql://...)")
    p.add_argument("--study-name", default="gbxfer")
    p.add_argument("--metric", choices=["top1", "top5", "pca", "apeak5"],
                   help="what the study maximises (default: top1 for a model study, pca for a "
                        "transfer study)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--export", type=Path, metavar="YAML",
                   help="write the best parameters as a model config")
    p.set_defaults(run=run)


def run(args) -> int:
    import optuna

    from ..study import best_config, study_model, study_transfer
    from ..transfer import draw_shots

    if args.quiet:
        optuna.logging.set_verbosity(optuna.logging.WARNING)
    data = load_dataset_arg(args.dataset)
    base = load_model_config(args.config)
    split = SplitSpec.parse(args.holdout, args.test_fraction, args.seed) if args.holdout \
        else None
    if args.kind == "model":
        args.metric = args.metric or "top1"
        study = study_model(data, base, args.trials, args.study_name, args.storage, split,
                            seed=args.seed, metric=args.metric)
    else:
        if args.model is None:
            raise GbxferError("a transfer study needs --model (the source model)")
        model = SavedModel.load(args.model)
        target = data.filter(hardware=[args.hardware] if args.hardware else
                             [h for h in data.hardware if h not in model.hardware])
        shots = draw_shots(target, args.shots, args.seed, split)
        args.metric = args.metric or "pca"
        study = study_transfer(model, data, target, shots, args.trials, args.study_name,
                               args.storage, args.seed, args.metric)
    best = study.best_trial
    print(f"best {args.metric} {best.value:.4f} (trial {best.number}) {best.params}")
    if args.export:
        args.export.parent.mkdir(parents=True, exist_ok=True)
        args.export.write_text(f"# exported by gbxfer study {args.kind} "
                               f"(study {args.study_name}, best trial {best.number})\n"
                               + yaml.safe_dump(best_config(study, args.kind, base),
                                                sort_keys=False))
        log.info("wrote %s", args.export)
    return 0
