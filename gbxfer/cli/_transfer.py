"""``gbxfer transfer``: adapt a model to unseen hardware from a few of its measurements."""
from __future__ import annotations

import dataclasses
import logging

from ..errors import GbxferError
from ..model import SavedModel, load_model_config
from ..splits import SplitSpec
from ..transfer import TransferConfig, draw_shots, shots_rank, transfer
from ._common import (MODEL_HELP, SHOTS_HELP, command_stamp, fraction, holdout_split,
                      input_path, load_dataset_arg, model_path, non_negative_int, output_folder,
                      require_hardware, shots_option)

log = logging.getLogger("gbxfer")


def add_parser(verbs, common):
    p = verbs.add_parser(
        "transfer", parents=[common], help="adapt a model to new hardware from a few shots",
        description="Continue boosting MODEL on its source records (weighted by how similar "
                    "their hardware is to the target) and K measured programs per task of the "
                    "target (--shots K), or a fraction of the target set (--shots 0.1). The "
                    "adaptation is first cross-validated inside the shots against MODEL and "
                    "kept only if it wins beyond one standard error (else MODEL2 is MODEL, the "
                    "shots recorded). With --holdout the shots come only from the training "
                    "part, and `gbxfer evaluate MODEL2 TARGET_DATASET` scores only what the "
                    "transfer did not see; without it MODEL2 keeps MODEL's split where it "
                    "applies to the target data, so that both are scored on the same part "
                    "(the shots left out).")
    p.add_argument("model", type=model_path, metavar="MODEL",
                   help=f"the source model: {MODEL_HELP}")
    p.add_argument("--target-data", required=True, type=input_path, metavar="DATASET",
                   help="the target's measurements (the shots are drawn from them), or "
                        "'bundled'")
    p.add_argument("--source-data", type=input_path, metavar="DATASET",
                   help="the source records (default: those of the model's hardware in the "
                        "target dataset, as in the bundled one)")
    p.add_argument("--hardware", metavar="NAME",
                   help="the target profile within --target-data (default: every profile the "
                        "model did not train on)")
    p.add_argument("--shots", required=True, type=shots_option, metavar="K|FRACTION",
                   help=SHOTS_HELP)
    p.add_argument("--holdout", metavar="SPLIT", help="e.g. within-task")
    p.add_argument("--test-fraction", type=fraction, metavar="F",
                   help="0 < F < 1: expected test share of --holdout (default: 0.5)")
    p.add_argument("--config", help="model config whose 'transfer' section sets the "
                                    "hyper-parameters (e.g. one exported by gbxfer study)")
    p.add_argument("--tune", type=non_negative_int, default=0, metavar="TRIALS",
                   help="choose the settings by an Optuna study of this many trials that "
                        "cross-validates inside the shots (never the evaluation data); "
                        "--config then gives only the model's base (default: 0, no study)")
    p.add_argument("--other-tasks", action="store_true",
                   help="the model will rank other tasks than the shots' (shots of a "
                        "calibration, before tuning a new network; as gbxfer calibrate): the "
                        "check inside the shots then holds out whole tasks, whatever K")
    p.add_argument("--seed", type=non_negative_int, default=0,
                   help="seed of the shot draw, the split, the study and the added trees' "
                        "sampling (a retraining samples as the source model did; default: 0)")
    p.add_argument("--out", required=True, type=output_folder, metavar="MODEL2",
                   help="the model folder to write")
    p.set_defaults(run=run)


def run(args) -> int:
    model = SavedModel.load(args.model)
    data = load_dataset_arg(args.target_data)
    source = load_dataset_arg(args.source_data) if args.source_data else data
    if args.hardware is not None:
        require_hardware(data, args.hardware, "--target-data")
        target = data.filter(hardware=args.hardware)
        if args.hardware in model.hardware:
            log.warning("the model trained on %s already: its shots may be records it "
                        "trained on (a transfer is for a profile it did not see)", args.hardware)
    else:
        target = data.filter(hardware=[h for h in data.hardware if h not in model.hardware])
    if len(target) == 0:
        raise GbxferError("no target records: every profile of --target-data was in the "
                          "model's training data (choose one with --hardware)")
    holdout = holdout_split(args, 0.5)
    base = load_model_config(args.config) if args.config else None
    try:
        config = TransferConfig.from_dict(base.transfer if base else None)
    except GbxferError as exc:
        raise GbxferError(f"{base.source}: {exc}") from None
    if args.other_tasks:
        config = dataclasses.replace(config, other_tasks=True)
    shots = draw_shots(target, args.shots, args.seed, holdout)
    if args.tune > 0 and not shots_rank(target.select(shots)):
        log.info("--tune skipped: no task has two shots on one profile, nothing to score")
    elif args.tune > 0:
        import optuna

        from ..study import chosen_transfer, study_transfer

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        study = study_transfer(model, source, target, shots, args.tune, "transfer", None,
                               args.seed)
        # the study tunes the hyper-parameters; what the model will rank stays as given
        config = dataclasses.replace(chosen_transfer(study), other_tasks=config.other_tasks)
        log.info("Optuna study (%d trials, CV inside the shots): best PCA %.4f with %s; "
                 "chosen by the one-standard-error rule: %s", args.tune, study.best_value,
                 study.best_params, config)
    adapted = transfer(model, source, target, shots, config, args.seed, holdout)
    guard = adapted.extra["transfer"].get("guard_check")
    if guard:
        how = (f"a gain of {guard['gain']:+.4f} +- {guard['se']:.4f} in the mean of PCA and "
               f"top-1 over {guard['groups']} held-out shot groups ({guard['folds']})"
               if guard["gain"] is not None else
               "too few shots or groups to tell")
        log.info("checked inside the shots: %s; %s", how, guard_choice(guard))
    if adapted.extra["transfer"].get("kept_source"):
        log.info("kept the source model: %s (draw more --shots)",
                 adapted.extra["transfer"]["kept_source"])
    if holdout is None and model.split:  # scored where its source is (the shots left out)
        adapted.split = source_split(model.split, target)
    adapted.extra["command"] = command_stamp()
    adapted.save(args.out)
    log.info("transferred to %s with %d shots: %s", ", ".join(target.hardware), len(shots),
             args.out)
    return 0


def source_split(split: dict, target) -> dict | None:
    """The source model's split for the transferred model, where it applies to the target
    data (a by-hardware split of a family the target lacks does not)."""
    try:
        SplitSpec.from_dict(split).test_mask(target)
    except GbxferError:
        log.warning("the source model's split (%s) does not apply to the target data: the "
                    "transferred model carries none", split.get("kind"))
        return None
    return split


def guard_choice(guard: dict) -> str:
    """What the guard chose, in words."""
    if not guard["adapted"]:
        return ("kept the source model (guard: false in the config's transfer section adapts "
                "regardless)")
    if guard.get("pooled_from"):
        return (f"adapted by pooled retraining (kept from {guard['pooled_from']} shots a group "
                "unless it scores worse than the source model)")
    return "adapted by " + ("pooled retraining" if guard.get("choice") == "pooled" else
                            "the configured transfer")
