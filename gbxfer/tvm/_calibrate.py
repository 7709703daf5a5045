"""``gbxfer calibrate``: carry a pretrained model to this machine with minutes of measurements.

The source dataset's programs (the bundled one: what the pretrained model learned from) are
ordered to be informative at any length (:func:`gbxfer.pruning.calibration_order`: round-robin
over the tasks, each task's fastest program first, then the most different one), and replayed
on the profile in that order, a few programs of every task per round, until the time budget
is spent. The pretrained model is then transferred with every measurement as a shot (guarded:
the adaptation is kept only where it wins inside the shots, on tasks it did not adapt on, as
``TransferConfig.other_tasks``: the model will rank the user's tasks, which a calibration need
not have measured; scripts/bench_transfer.py, regime (b)). Resumable: the measurements are
appended as they are taken (``OUT/measurements``), and a rerun measures what the budget has
left (``OUT/calibrate.json`` counts the seconds spent), then transfers again.
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np

from ..records.dataset import Dataset
from ..errors import GbxferError
from ..hardware.profiles import HardwareProfile
from ..manifests import write_file
from ..model import SavedModel
from ..pruning import calibration_order
from ..records.suite import Suite
from ..transfer import TransferConfig, transfer
from ._collect import Collector
from ._task_modules import suite_task_key
from ._collect_plan import CollectPlan

STATE = "calibrate.json"
PER_ROUND = 2  # programs of every task per round


def calibrate(profile: HardwareProfile, out: Path, model: SavedModel, source: Dataset,
              suite: Suite, minutes: float, seed: int = 0, progress: bool = True,
              commands=()) -> tuple[SavedModel, Dataset, dict]:
    """Measure for what is left of ``minutes``, then transfer ``model``; returns the model
    (also saved in ``OUT/model``), the measurements and the state (seconds spent, programs)."""
    out = Path(out)
    if profile.name in set(model.hardware) | set(source.hardware):
        raise GbxferError(f"{profile.name!r} is a profile of the model's own data: calibrate a "
                          "profile of this machine (leave out --hardware to probe one)")
    out.mkdir(parents=True, exist_ok=True)
    state_path = out / STATE
    state = json.loads(state_path.read_text()) if state_path.exists() else {"seconds": 0.0}
    if state.get("profile", profile.name) != profile.name:
        raise GbxferError(f"{out} holds a calibration of {state['profile']!r}, not "
                          f"{profile.name!r}: calibrate into another folder")

    def save_state(seconds: float) -> None:
        state.update(profile=profile.name, seconds=seconds)
        write_file(state_path, lambda tmp: tmp.write_text(json.dumps(state)))
    valid = source.filter(valid=True)
    programs = valid.select(calibration_order(valid, seed))
    keys = {suite_task_key(t): t for t in suite.tasks}
    programs = programs.select(programs.records["task_key"].isin(keys).to_numpy())
    if len(programs) == 0:
        raise GbxferError("no program of the source data belongs to a task of the suite")
    tasks = list(dict.fromkeys(programs.records["task_key"]))
    per_task = programs.records.groupby("task_key").size().max()
    spent, start = state["seconds"], time.time()
    plan = CollectPlan(suite=suite.select([keys[k].name for k in tasks]), profiles=[profile],
                       programs=0, out=out / "measurements", seed=seed, replay=programs,
                       replay_rounds=math.ceil(per_task / PER_ROUND),
                       deadline=start + minutes * 60 - spent, commands=list(commands),
                       on_round=lambda: save_state(spent + time.time() - start))
    collector = Collector(plan)
    if minutes * 60 > spent:
        try:
            collector.run(progress=progress)
        finally:  # (a kill -9 loses at most the seconds of one round)
            save_state(spent + time.time() - start)
    measured = collector.write_dataset().filter(hardware=profile.name)  # from the databases
    target = measured.filter(valid=True)
    if len(target) == 0:
        raise GbxferError("no valid measurement to calibrate with (all failed, or the time "
                          "ran out before the first one)")
    adapted = transfer(model, source, target, np.arange(len(target)),
                       TransferConfig(other_tasks=True), seed)
    adapted.extra["calibration"] = {"profile": profile.name, "machine": profile.machine,
                                    "seconds": round(state["seconds"], 1),
                                    "programs": len(measured), "valid": len(target),
                                    "tasks": int(target.records["task_key"].nunique())}
    adapted.save(out / "model")
    state = {**state, **adapted.extra["calibration"]}
    write_file(state_path, lambda tmp: tmp.write_text(json.dumps(state)))
    return adapted, measured, state
