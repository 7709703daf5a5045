"""A ``gbxfer tune`` run's folder: what the run is (``OUT/run.json``), continuing it, its curve.

A run records its arguments when it starts. Rerun with the same arguments, a run that was
stopped (Ctrl-C, or killed) continues where its curve ends, and a finished one continues to a
larger budget (``--trials`` or ``--minutes``, counted from the run's start): the database keeps
every measurement, the search starts from the best of them, the cost model first learns from
them, and the curve goes on from its last row. A run killed after its tuning but before its
summary only compiles, checks and summarizes when run again.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd

from ..errors import GbxferError
from ..manifests import write_file

RUN = "run.json"
# arguments that are not the run's identity: its budget, where it is, how much is printed,
# the threads it searches and builds with, the ONNX file's path (its digest is)
NOT_IDENTITY = {"run", "verb", "quiet", "verbose", "trials", "minutes", "out", "jobs", "onnx"}
# options added after runs were recorded, with the value those runs had: left out at that value,
# so that the runs continue
ADDED = {"layout": "as-is", "weight_layout": "as-is"}
# those of them whose default is another value since (for an --onnx model with convolutions)
CHANGED = {"layout": "2026-12-07", "weight_layout": "2026-12-07"}


def identity(args, names: list[str], weights: list[float]) -> dict:
    """What makes two ``gbxfer tune`` commands the same run: every argument but those of
    ``NOT_IDENTITY``, the tasks with their weights, and the ONNX file's digest."""
    same = {key: str(value) if isinstance(value, Path) else value
            for key, value in sorted(vars(args).items()) if key not in NOT_IDENTITY}
    same["input_shape"] = [[name, list(shape)] for name, shape in args.input_shape or []]
    for key, former in ADDED.items():
        if same.get(key) == former:
            del same[key]
    if args.cost_model == "gbxfer":
        same["model"] = args.model or "pretrained"
    if args.onnx:
        same["onnx_sha256"] = hashlib.sha256(Path(args.onnx).read_bytes()).hexdigest()
    same["tasks_tuned"] = dict(zip(names, map(float, weights), strict=True))
    return same


def earlier_curve(out: Path, run: dict, args) -> pd.DataFrame | None:
    """The curve so far of the run in ``out`` to continue (empty where it measured nothing
    yet), or None where ``out`` holds no run; refuses another run's folder, or a finished run
    whose budget this one does not extend. A fresh run's identity is written here."""
    run = json.loads(json.dumps(run))  # as it reads back
    recorded = out / RUN
    measured = [name for name in ("metaschedule/database_tuning_record.json", "summary.json")
                if (out / name).is_file() and (out / name).stat().st_size]
    if not measured:  # a new run (or one that measured nothing: this one replaces it)
        out.mkdir(parents=True, exist_ok=True)
        write_file(recorded, lambda tmp: tmp.write_text(json.dumps(run, indent=1)))
        (out / "curve.csv").unlink(missing_ok=True)
        return None
    if not recorded.is_file():  # a run from before run.json: its arguments are unknown
        raise GbxferError(f"{out}: holds an earlier tuning run ({measured[0]}); give a new "
                          "--out folder or remove that one")
    try:
        before = json.loads(recorded.read_text())
    except (OSError, ValueError) as exc:
        before = exc
    if not isinstance(before, dict):
        raise GbxferError(f"{recorded}: not the arguments of a tuning run; give a new --out "
                          "folder") from None
    differ = sorted(key for key in before.keys() | run.keys()
                    if before.get(key) != run.get(key))
    former = [k for k in differ if k in CHANGED and k not in before]
    if former:  # tuned with the former value, given or by default then
        options = " ".join(f"{_option(k)} {ADDED[k]}" for k in former)
        raise GbxferError(f"{out}: holds a tuning run with {options} (the default before "
                          f"{max(CHANGED[k] for k in former)}): add {options} to continue it")
    if differ:
        raise GbxferError(f"{out}: holds a tuning run with other arguments ("
                          f"{', '.join(_option(k) for k in differ)}); rerun it as it was "
                          "started to continue it, or give a new --out folder")
    curve = _read_curve(out / "curve.csv")
    done = {"trials": int(curve["trials"].max()) if len(curve) else 0,
            "minutes": float(curve["seconds"].max()) / 60 if len(curve) else 0.0}
    budget = ("trials", args.trials) if args.trials is not None else ("minutes", args.minutes)
    if done[budget[0]] >= budget[1] and _summarized(out, done["trials"]):
        raise GbxferError(f"{out}: its run has already spent --{budget[0]} {budget[1]:g} "
                          f"({done['trials']} trials in {done['minutes']:.3g} minutes); give "
                          "a larger budget to continue it")
    return curve  # (with its budget spent but no summary of it, only what follows tuning runs)


def _summarized(out: Path, trials: int) -> bool:
    """Whether ``out/summary.json`` describes the run up to ``trials`` (it was killed after
    tuning, before writing it, or while continuing it, if not)."""
    try:
        return json.loads((out / "summary.json").read_text())["trials"] == trials
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _option(key: str) -> str:
    return {"tasks_tuned": "the tasks or their weights", "onnx_sha256": "the ONNX file"}.get(
        key, "--" + key.replace("_", "-"))


def _read_curve(path: Path) -> pd.DataFrame:
    if not path.is_file() or not path.stat().st_size:
        return pd.DataFrame({"trials": [], "seconds": []})
    try:
        curve = pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise GbxferError(f"{path}: unreadable ({exc}); give a new --out folder") from None
    if not {"trials", "seconds", "task", "failures"} <= set(curve):
        raise GbxferError(f"{path}: not a tuning curve; give a new --out folder")
    measured = [c for c in curve if c != "weighted_latency"]  # best_<i>: inf until valid
    curve[measured] = curve[measured].apply(pd.to_numeric, errors="coerce")
    return curve.dropna(subset=measured).reset_index(drop=True)  # a row cut off by a kill


def plot_curve(result, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    total = result.weighted_latency() * 1e3
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for ax, x, label in ((axes[0], result.curve["trials"], "trials"),
                         (axes[1], result.curve["seconds"], "wall-clock seconds")):
        ax.step(x, total, where="post")
        ax.set_xlabel(label)
        ax.set_ylabel("weighted best latency (ms)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
