"""``gbxfer study``: Optuna studies over model or transfer hyper-parameters."""
from __future__ import annotations

import argparse
import logging
import re
from pathlib import Path

import yaml

from ..errors import GbxferError
from ..manifests import write_file
from ..model import SavedModel, load_model_config
from ._common import (MODEL_HELP, SHOTS_HELP, fraction, holdout_split, input_path,
                      load_dataset_arg, model_path, non_negative_int, output_file, positive_int,
                      require_hardware, shots_option)

log = logging.getLogger("gbxfer")
# the databases Optuna supports, as SQLAlchemy URLs BACKEND[+DRIVER]://...
STORAGE_URL = re.compile(r"(sqlite|postgresql|mysql)(\+\w+)?://(?P<rest>.*)")


def storage_url(text: str) -> str:
    """``--storage``: a database URL of a backend Optuna supports (SQLite, PostgreSQL, MySQL);
    a SQLite file's folder must exist."""
    match = STORAGE_URL.fullmatch(text)
    if not match:
        raise argparse.ArgumentTypeError(
            "expected a database URL sqlite:///FILE.db, postgresql://USER@HOST/DB or "
            f"mysql://USER@HOST/DB, got {text!r}")
    if text.startswith("sqlite"):  # sqlite:///relative.db, sqlite:////absolute.db
        database = match["rest"].partition("?")[0][1:]
        folder = Path(database).parent
        if database in ("", ":memory:"):  # every connection would see its own empty database
            raise argparse.ArgumentTypeError(f"{text}: an in-memory database cannot hold a "
                                             "study; name a file, sqlite:///FILE.db")
        if not folder.is_dir():
            raise argparse.ArgumentTypeError(f"{text}: no such folder {folder}")
    return text


def dashboard_command(url: str) -> str:
    """The optuna-dashboard command line that serves the studies of storage ``url`` (with the
    driver gbxfer opens it with), and how to install it when it is not."""
    import shlex
    import shutil

    from ..study import sqlalchemy_url

    command = f"optuna-dashboard {shlex.quote(sqlalchemy_url(url))}"
    if shutil.which("optuna-dashboard") is None:
        command += "    # not installed here: pip install optuna-dashboard"
    return command


def check_storage(url: str) -> None:
    """Open the Optuna storage once before any work: a database that cannot be opened (no
    driver installed, no server, no permission, not a database) is then one error line, not a
    traceback after the features are built."""
    from ..study import study_storage

    try:
        storage = study_storage(url)  # retried: workers starting together race to create it
    except Exception as exc:  # ImportError (no driver), SQLAlchemy's errors, ValueError (port)
        # Optuna's ImportError names no module; its cause does ("No module named 'psycopg'")
        cause = f" ({exc.__cause__})" if isinstance(exc, ImportError) and exc.__cause__ else ""
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        shown = re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", url)  # no password on screen
        raise GbxferError(f"--storage {shown}: cannot open the Optuna storage: "
                          f"{detail}{cause}") from exc
    storage.engine.dispose()


def add_parser(verbs, common):
    p = verbs.add_parser(
        "study", parents=[common], help="tune hyper-parameters with an Optuna study",
        description="Run (or continue) an Optuna study. 'model' tunes the booster by by-task "
                    "cross-validation inside the training part of --holdout; 'transfer' tunes "
                    "transfer settings by cross-validation inside the shots. Several processes "
                    "may work on one study (same --storage and --study-name), on one machine or "
                    "many (a PostgreSQL storage, pip install 'gbxfer[postgres]'). The best "
                    "parameters are written to --export as a model config. --dashboard prints "
                    "the optuna-dashboard command that shows the storage's studies.")
    p.add_argument("kind", nargs="?", choices=["model", "transfer"])
    p.add_argument("dataset", nargs="?", type=input_path, metavar="DATASET",
                   help="model: the training data; transfer: the target data")
    p.add_argument("--dashboard", action="store_true",
                   help="print the optuna-dashboard command for --storage, and stop")
    p.add_argument("--model", type=model_path,
                   help=f"transfer: the source model, {MODEL_HELP}")
    p.add_argument("--shots", type=shots_option, default=8, metavar="K|FRACTION",
                   help=f"transfer: {SHOTS_HELP} (default: 8)")
    p.add_argument("--hardware", help="transfer: the target profile (default: the profiles "
                                      "the model did not train on)")
    p.add_argument("--holdout", metavar="SPLIT",
                   help="model: trials cross-validate inside this split's training part; "
                        "transfer: the shots come from it (default: no split, all records)")
    p.add_argument("--test-fraction", type=fraction, metavar="F",
                   help="0 < F < 1: expected test share of --holdout (default: 0.2)")
    p.add_argument("--config", help="base model config")
    p.add_argument("--trials", type=positive_int, default=20,
                   help="finished trials to reach (default: 20)")
    p.add_argument("--storage", type=storage_url, default="sqlite:///gbxfer-study.db",
                   help="Optuna storage URL: sqlite:///file.db, postgresql://..., mysql://... "
                        "(default: sqlite:///gbxfer-study.db)")
    p.add_argument("--study-name", default="gbxfer")
    p.add_argument("--metric", choices=["top1", "top5", "pca", "apeak5"],
                   help="what the study maximises (default: top1 for a model study, pca for a "
                        "transfer study)")
    p.add_argument("--seed", type=non_negative_int, default=0)
    p.add_argument("--export", type=output_file, metavar="YAML",
                   help="write the best parameters as a model config")
    p.set_defaults(run=run, resumable=True)


def run(args) -> int:
    import optuna

    from ..study import best_config, study_model, study_transfer
    from ..transfer import draw_shots

    if args.dashboard:
        print(dashboard_command(args.storage))
        return 0
    if args.kind is None or args.dataset is None:
        raise GbxferError("gbxfer study needs KIND (model or transfer) and DATASET, or "
                          "--dashboard")
    if args.quiet:
        optuna.logging.set_verbosity(optuna.logging.WARNING)
    if args.kind == "transfer" and args.model is None:
        raise GbxferError("a transfer study needs --model (the source model)")
    data = load_dataset_arg(args.dataset)
    base = load_model_config(args.config)
    split = holdout_split(args, 0.2)
    check_storage(args.storage)
    if args.kind == "model":
        args.metric = args.metric or "top1"
        study = study_model(data, base, args.trials, args.study_name, args.storage, split,
                            seed=args.seed, metric=args.metric)
    else:
        model = SavedModel.load(args.model)
        if args.hardware is not None:
            require_hardware(data, args.hardware)
        target = data.filter(hardware=[args.hardware] if args.hardware is not None else
                             [h for h in data.hardware if h not in model.hardware])
        if len(target) == 0:
            raise GbxferError("no target records: every profile of DATASET was in the model's "
                              "training data (choose one with --hardware)")
        shots = draw_shots(target, args.shots, args.seed, split)
        args.metric = args.metric or "pca"
        study = study_transfer(model, data, target, shots, args.trials, args.study_name,
                               args.storage, args.seed, args.metric)
    best = study.best_trial
    print(f"best {args.metric} {best.value:.4f} (trial {best.number}) {best.params}")
    if args.export:
        args.export.parent.mkdir(parents=True, exist_ok=True)
        text = (f"# exported by gbxfer study {args.kind} (study {args.study_name}, best trial "
                f"{best.number})\n" + yaml.safe_dump(best_config(study, args.kind, base),
                                                    sort_keys=False))
        write_file(args.export, lambda tmp: tmp.write_text(text))
        log.info("wrote %s", args.export)
    return 0
