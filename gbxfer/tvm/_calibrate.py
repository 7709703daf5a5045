"""``gbxfer calibrate``: carry a pretrained model to this machine with minutes of measurements.

The source dataset's programs (the bundled one: what the pretrained model learned from) are
ordered to be informative at any length (:func:`gbxfer.pruning.calibration_order`: round-robin
over the tasks, each task's fastest program first, then the most different one), and replayed
on the profile in that order, a few programs of every task per round, until the time budget
is spent. The pretrained model is then transferred with every measurement as a shot (guarded:
the adaptation is kept only where it wins inside the shots). Resumable: the measurements are
appended as they are taken (``OUT/measurements``), and a rerun measures what the budget has
left (``OUT/calibrate.json`` counts the seconds spent), then transfers again.
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np

from ..records.dataset import Dataset, load_dataset
from ..errors import GbxferError
from ..hardware.profiles import HardwareProfile
from ..manifests import write_file
from ..model import SavedModel
from ..pruning import calibration_order
from ..records.suite import Suite
from ..transfer import TransferConfig, transfer
from ._collect import CollectPlan, Collector, suite_task_key

STATE = "calibrate.json"
PER_ROUND = 2  # programs of every task per round


def calibrate(profile: HardwareProfile, out: Path, model: SavedModel, source: Dataset,
              suite: Suite, minutes: float, seed: int = 0, progress: bool = True,
              commands=()) -> tuple[SavedModel, Dataset, dict]:
    """Measure for what is left of ``minutes``, then transfer ``model``; returns the model
    (also saved in ``OUT/model``), the measurements and the state (seconds spent, programs)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    state_path = out / STATE
    state = json.loads(state_path.read_text()) if state_path.exists() else {"seconds": 0.0}
    if state.get("profile", profile.name) != profile.name:
        raise GbxferError(f"{out} holds a calibration of {state['profile']!r}, not "
                          f"{profile.name!r}: calibrate into another folder")
    valid = source.filter(valid=True)
    programs = valid.select(calibration_order(valid, seed))
    keys = {suite_task_key(t): t for t in suite.tasks}
    programs = programs.select(programs.records["task_key"].isin(keys).to_numpy())
    if len(programs) == 0:
        raise GbxferError("no program of the source data belongs to a task of the suite")
    tasks = list(dict.fromkeys(programs.records["task_key"]))
    per_task = programs.records.groupby("task_key").size().max()
    left = minutes * 60 - state["seconds"]
    if left > 0:
        plan = CollectPlan(suite=suite.select([keys[k].name for k in tasks]),
                           profiles=[profile], programs=0, out=out / "measurements",
                           seed=seed, replay=programs,
                           replay_rounds=math.ceil(per_task / PER_ROUND),
                           deadline=time.time() + left, commands=list(commands))
        start = time.time()
        try:
            Collector(plan).run(progress=progress)
        finally:  # a killed run's seconds are lost: it measured only what its database kept
            state = {"profile": profile.name, "seconds": state["seconds"] + time.time() - start}
            write_file(state_path, lambda tmp: tmp.write_text(json.dumps(state)))
    measured = load_dataset(out / "measurements" / "dataset").filter(hardware=profile.name)
    target = measured.filter(valid=True)
    if len(target) == 0:
        raise GbxferError("no valid measurement to calibrate with (all failed, or the time "
                          "ran out before the first one)")
    adapted = transfer(model, source, target, np.arange(len(target)), TransferConfig(), seed)
    adapted.extra["calibration"] = {"profile": profile.name, "machine": profile.machine,
                                    "seconds": round(state["seconds"], 1),
                                    "programs": len(measured), "valid": len(target),
                                    "tasks": int(target.records["task_key"].nunique())}
    adapted.save(out / "model")
    state = {**state, **adapted.extra["calibration"]}
    write_file(state_path, lambda tmp: tmp.write_text(json.dumps(state)))
    return adapted, measured, state
