"""``gbxfer transfer``: adapt a model to unseen hardware from a few of its measurements."""
from __future__ import annotations

import logging
from pathlib import Path

from ..errors import GbxferError
from ..model import SavedModel, load_model_config
from ..splits import SplitSpec
from ..transfer import TransferConfig, draw_shots, transfer
from ._common import command_stamp, load_dataset_arg

log = logging.getLogger("gbxfer")


def _shots(text: str):
    value = float(text)
    if value <= 0:
        raise GbxferError("--shots must be positive")
    return int(value) if value.is_integer() and "." not in text else value


def add_parser(verbs, common):
    p = verbs.add_parser(
        "transfer", parents=[common], help="adapt a model to new hardware from a few shots",
        description="Continue boosting MODEL on its source records (weighted by how similar "
                    "their hardware is to the target) and K measured programs per task of the "
                    "target (--shots K), or a fraction of the target set (--shots 0.1). With "
                    "--holdout the shots come only from the training part, and `gbxfer "
                    "evaluate MODEL2 TARGET_DATASET` scores only what the transfer did not see.")
    p.add_argument("model", type=Path, metavar="MODEL")
    p.add_argument("--target-data", required=True, metavar="DATASET")
    p.add_argument("--source-data", metavar="DATASET",
                   help="the source records (default: those of the model's hardware in the "
                        "target dataset, as in the bundled one)")
    p.add_argument("--hardware", metavar="NAME",
                   help="the target profile within --target-data (default: every profile the "
                        "model did not train on)")
    p.add_argument("--shots", required=True, type=_shots, metavar="K|FRACTION")
    p.add_argument("--holdout", metavar="SPLIT", help="e.g. within-task")
    p.add_argument("--test-fraction", type=float, default=0.5)
    p.add_argument("--config", help="model config whose 'transfer' section sets the "
                                    "hyper-parameters (e.g. one exported by gbxfer study)")
    p.add_argument("--tune", type=int, default=0, metavar="TRIALS",
                   help="choose the settings by an Optuna study of this many trials that "
                        "cross-validates inside the shots (never the evaluation data); "
                        "--config then gives only the model's base")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, type=Path, metavar="MODEL2")
    p.set_defaults(run=run)


def run(args) -> int:
    model = SavedModel.load(args.model)
    data = load_dataset_arg(args.target_data)
    source = load_dataset_arg(args.source_data) if args.source_data else data
    if args.hardware:
        target = data.filter(hardware=args.hardware)
    else:
        target = data.filter(hardware=[h for h in data.hardware if h not in model.hardware])
    if len(target) == 0:
        raise GbxferError("no target records: every profile of --target-data was in the "
                          "model's training data (choose one with --hardware)")
    holdout = SplitSpec.parse(args.holdout, args.test_fraction, args.seed) if args.holdout \
        else None
    config = TransferConfig.from_dict(load_model_config(args.config).transfer
                                      if args.config else None)
    shots = draw_shots(target, args.shots, args.seed, holdout)
    if args.tune > 0:
        import optuna

        from ..study import chosen_transfer, study_transfer

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        study = study_transfer(model, source, target, shots, args.tune, "transfer", None,
                               args.seed)
        config = chosen_transfer(study)
        log.info("Optuna study (%d trials, CV inside the shots): best PCA %.4f with %s; "
                 "chosen by the one-standard-error rule: %s", args.tune, study.best_value,
                 study.best_params, config)
    adapted = transfer(model, source, target, shots, config, args.seed, holdout)
    adapted.extra["command"] = command_stamp()
    adapted.save(args.out)
    log.info("transferred to %s with %d shots: %s", ", ".join(target.hardware), len(shots),
             args.out)
    return 0
