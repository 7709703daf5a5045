"""``gbxfer collect``: sample programs from MetaSchedule's design space and measure them.

Programs are drawn per task from the design space, as TenSet did: most with uniformly random
decisions (the sketch traces of MetaSchedule's post-order-apply space generator, replayed with
fresh random decisions and the target's postprocessors), and a stated share by one MetaSchedule
mutation of the best random programs measured on the first profile (a short evolutionary step,
so that good programs are present). Programs are deduplicated by program id and measured on
every profile given: profiles that share a target (thread variants of one ISA) share one build.
Every draw is a deterministic function of (task, seed) and of the measurements already stored,
so an interrupted collection, run again, draws the same programs and measures only those not
yet in its database; tasks finished under the same plan are listed in
``OUT/metaschedule/complete.json`` and skipped without drawing. The databases are the record:
``OUT/dataset`` is rebuilt from them every ``write_every`` seconds (after a task) and at the end,
and a run that is killed rebuilds it when run again.
"""
from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import json
import logging
import os
import shutil
import time

import numpy as np
import orjson
from tqdm.auto import tqdm

from ..records.ingest import ingest
from ..records.dataset import Dataset
from ..records.formats._metaschedule import FAILED_RUN_SECS
from ..hardware.probe import host_machine
from ..hardware.profiles import HardwareProfile
from ..errors import GbxferError
from ..manifests import write_file
from ..records.targets import machine_identity
from ..records.columns import isin
from ..records.suite import Task
from ._builder import PooledBuilder
from ._collect_plan import CollectPlan, close_runner, make_runner
from ._database import AppendOnlyDatabase
from ._design_space import DesignSpace, replay_programs
from ._json import to_python
from ._task_modules import describe_tasks, suite_task_key, task_module

log = logging.getLogger("gbxfer")


def _target_key(profile: HardwareProfile) -> str:
    return orjson.dumps(profile.target, option=orjson.OPT_SORT_KEYS).decode()


class Collector:
    """Runs a :class:`CollectPlan`; see the module docstring."""

    def __init__(self, plan: CollectPlan, runners=None):
        import tvm

        self.plan = plan
        self.machines = {p.name: self.machine(p) for p in plan.profiles}  # checked first
        self.targets = {_target_key(p): tvm.target.Target(p.target) for p in plan.profiles}
        self.databases = {p.name: AppendOnlyDatabase(plan.out / "metaschedule" / p.name)
                          for p in plan.profiles}
        self.runners = runners  # started by run()
        self.builder = PooledBuilder(plan.build_workers, plan.build_timeout,
                                     cores=plan.build_cores)
        self.stats = {"measured": 0, "failed": 0, "timeouts": 0, "skipped_done": 0}
        self.seconds = collections.Counter()  # where the time goes: sample, build, run, ...
        self._last_load_warning = 0.0
        self._written = (-1, 0.0)  # (programs measured, time) at the last dataset write
        self._complete_path = plan.out / "metaschedule" / "complete.json"

    @contextlib.contextmanager
    def _timed(self, phase: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[phase] += time.perf_counter() - start

    @property
    def plan_key(self) -> str:
        """What makes two runs draw the same programs: a task finished under one is finished
        under the other."""
        p = self.plan
        return (f"programs={p.programs} seed={p.seed} evolutionary_share={p.evolutionary_share}"
                f" n_parents={p.n_parents} profiles={'+'.join(x.name for x in p.profiles)}")

    def _complete(self) -> dict:
        try:
            return json.loads(self._complete_path.read_text())
        except (OSError, ValueError):
            return {}

    def _mark_complete(self, key: str) -> None:
        done = self._complete()
        done[self.plan_key] = sorted(set(done.get(self.plan_key, [])) | {key})
        write_file(self._complete_path, lambda tmp: tmp.write_text(json.dumps(done, indent=1)))

    def _maybe_write(self, final: bool = False):
        """Rebuild OUT/dataset when programs were measured since the last rebuild and
        ``write_every`` seconds have passed (at the end: whenever anything changed)."""
        measured, at = self._written
        if measured == self.stats["measured"] or (
                not final and time.time() - at < self.plan.write_every):
            return None
        with self._timed("write dataset"):
            dataset = self.write_dataset()
        self._written = (self.stats["measured"], time.time())
        self._log_time()
        return dataset

    def run(self, progress: bool = True) -> Dataset:
        try:
            self.runners = self.runners or {p.name: make_runner(p, self.plan)
                                            for p in self.plan.profiles}
            return self._run(progress)
        finally:
            self.builder.close()
            for runner in (self.runners or {}).values():
                close_runner(runner)

    def _run(self, progress: bool) -> Dataset:
        plan = self.plan
        if plan.replay is not None:
            keys = {suite_task_key(t) for t in plan.suite.tasks}
            n_programs = plan.replay.records.loc[plan.replay.records["task_key"].isin(keys),
                                                 "program_id"].nunique()
            total = n_programs * len(plan.profiles)
        else:
            total = len(plan.suite.tasks) * plan.programs * len(plan.profiles)
        start = time.time()
        with tqdm(total=total, unit=" prog", desc="collect",
                  disable=None if progress else True) as bar:
            dataset = None
            rounds = plan.replay_rounds if plan.replay is not None else 1
            for part in range(rounds):
                if self.out_of_time():
                    break
                for task in plan.suite.tasks:
                    if self.out_of_time():
                        break
                    self._collect_task(task, bar, part)
                    if rounds == 1:  # (the databases are appended as each program is measured)
                        dataset = self._maybe_write() or dataset
                if rounds > 1:
                    dataset = self._maybe_write(final=True) or dataset
                    if plan.on_round is not None:
                        plan.on_round()
        dataset = self._maybe_write(final=True) or dataset  # at least once in every run
        elapsed = time.time() - start
        log.info("collect: %d measured (%d failed, %d timeouts), %d already done, in %.0f s",
                 self.stats["measured"], self.stats["failed"], self.stats["timeouts"],
                 self.stats["skipped_done"], elapsed)
        self._log_time()
        return dataset

    def _log_time(self) -> None:
        log.info("collect time: %s (%d programs measured)",
                 ", ".join(f"{phase} {sec:.0f} s" for phase, sec in sorted(self.seconds.items())),
                 self.stats["measured"])

    def out_of_time(self) -> bool:
        return self.plan.deadline is not None and time.time() >= self.plan.deadline

    def _collect_task(self, task: Task, bar, part: int = 0) -> None:
        """Measure ``task``'s programs (when replaying in rounds: its share ``part``)."""
        from tvm.s_tir import meta_schedule as ms

        plan = self.plan
        mod = task_module(task)
        workload_json = to_python(ms.database.Workload(mod).as_json())
        key = str(workload_json[0])
        for db in self.databases.values():
            db.workload_index(key, workload_json)
        args_info = ms.arg_info.ArgInfo.from_prim_func(mod["main"])
        bar.set_description(f"collect {task.name[:28]}")
        first = plan.profiles[0]
        if plan.replay is not None:
            records = plan.replay.records
            programs = records.loc[records["task_key"] == key].drop_duplicates("program_id")
            share = programs.iloc[np.array_split(np.arange(len(programs)),
                                                 plan.replay_rounds)[part]]
            done = set.intersection(*(self.databases[p.name].done.get(key, set())
                                      for p in plan.profiles))
            skipped = isin(share["program_id"], done)  # a resumed run skips them unbuilt
            self.stats["skipped_done"] += int(skipped.sum()) * len(plan.profiles)
            bar.update(int(skipped.sum()) * len(plan.profiles))
            share = share[~skipped]
            self._measure(key, args_info, replay_programs(mod, key, share["program"]), bar)
            return
        if key in self._complete().get(self.plan_key, ()):
            n = plan.programs * len(plan.profiles)
            self.stats["skipped_done"] += n
            bar.update(n)
            return
        n_evolved = round(plan.programs * plan.evolutionary_share)
        with self._timed("sample"):
            space = DesignSpace(mod, self.targets[_target_key(first)], key, plan.seed)
            candidates = space.random(plan.programs - n_evolved)
        self._measure(key, args_info, candidates, bar)
        if n_evolved:
            measured = self.databases[first.name].latency.get(key, {})
            ranked = sorted((measured.get(c.program_id, float("inf")), i)
                            for i, c in enumerate(candidates))
            parents = [candidates[i].schedule.trace for cost, i in ranked[:plan.n_parents]
                       if cost < float("inf")]
            with self._timed("sample"):
                mutants = space.mutants(parents, n_evolved, {c.program_id for c in candidates})
            self._measure(key, args_info, mutants, bar)
            candidates += mutants
        if len(candidates) < plan.programs:
            log.warning("%s: its design space gave %d distinct programs, not %d", task.name,
                        len(candidates), plan.programs)
            bar.update((plan.programs - len(candidates)) * len(plan.profiles))
        if not self.out_of_time():
            self._mark_complete(key)

    def _measure(self, key, args_info, candidates, bar) -> None:
        """Measure on every profile each candidate not yet measured there."""
        plan = self.plan
        todo = []
        for c in candidates:
            missing = [p for p in plan.profiles
                       if c.program_id not in self.databases[p.name].done.get(key, set())]
            done = len(plan.profiles) - len(missing)
            self.stats["skipped_done"] += done
            bar.update(done)
            if missing:
                todo.append((c, missing))
        units = [unit for i in range(0, len(todo), plan.batch_size)
                 for unit in self._by_target(todo[i:i + plan.batch_size])]
        overlap = self.plan.run_cores is not None  # the next unit builds while this one runs
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pending = None
            for j, (target, pairs) in enumerate(units):
                if self.out_of_time():
                    break
                with self._timed("build" if pending is None else "build (waited)"):
                    unique, built = (pending or self._build_async(pool, target, pairs)).result()
                pending = None
                if overlap and j + 1 < len(units):
                    pending = self._build_async(pool, *units[j + 1])
                self._warn_if_loaded()
                self._run_unit(key, args_info, target, pairs, unique, built, bar)
            if pending is not None:  # out of time: the next unit's builds are not run
                _remove_builds(pending.result()[1])

    def _by_target(self, batch) -> list:
        """A batch's (candidate, profile) pairs by target: profiles sharing one share a build."""
        by_target: dict[str, list] = {}
        for candidate, profiles in batch:
            for p in profiles:
                by_target.setdefault(_target_key(p), []).append((candidate, p))
        return [(self.targets[tkey], pairs) for tkey, pairs in by_target.items()]

    def _build_async(self, pool, target, pairs):
        from tvm.s_tir import meta_schedule as ms

        unique = [c for c in {c.program_id: c for c, _ in pairs}.values()
                  if c.schedule is not None]
        inputs = [ms.builder.BuilderInput(c.schedule.mod, target) for c in unique]
        return pool.submit(lambda: (unique, self.builder.build(inputs) if inputs else []))

    def _run_unit(self, key, args_info, target, pairs, unique, built, bar) -> None:
        """Run a built unit on each of its profiles and record the results."""
        artifacts = {c.program_id: b for c, b in zip(unique, built)}
        jobs = []
        for name in dict.fromkeys(p.name for _, p in pairs):
            profile = next(p for _, p in pairs if p.name == name)
            mine = [c for c, p in pairs if p.name == name]
            with self._timed("run"):  # a local runner runs here, an RPC one starts
                futures = self._submit(profile, target, mine, artifacts, args_info)
            jobs.append((profile, mine, futures))
            if not self.plan.rpc_tracker:  # one profile at a time on this machine
                self._record(key, args_info, target, artifacts, *jobs.pop(), bar)
        for job in jobs:  # the devices of an RPC tracker measure at once
            self._record(key, args_info, target, artifacts, *job, bar)
        _remove_builds(built)

    def _submit(self, profile, target, candidates, artifacts, args_info) -> dict:
        """Start running the built candidates on ``profile``'s runner: program id -> future."""
        from tvm.s_tir import meta_schedule as ms

        runnable = [c for c in candidates
                    if c.program_id in artifacts and artifacts[c.program_id].error_msg is None]
        inputs = [ms.runner.RunnerInput(artifacts[c.program_id].artifact_path,
                                        "cuda" if target.kind.name == "cuda" else "cpu",
                                        args_info) for c in runnable]
        return {c.program_id: f for c, f in zip(runnable,
                                                self.runners[profile.name].run(inputs))}

    def _record(self, key, args_info, target, artifacts, profile, candidates, futures, bar):
        """Wait for ``futures`` and append every candidate's costs (or failure) to the
        profile's database."""
        with self._timed("run"):
            results = {pid: f.result() for pid, f in futures.items()}
        db = self.databases[profile.name]
        target_json = to_python(target.export())
        args_json = [to_python(a.as_json()) for a in args_info]
        n_timeouts = 0
        for c in candidates:
            build = artifacts.get(c.program_id)
            if c.error:
                costs, error = [FAILED_RUN_SECS], c.error
            elif build.error_msg is not None:
                costs, error = [FAILED_RUN_SECS], "build: " + build.error_msg
            else:
                result = results[c.program_id]
                if result.error_msg is None:
                    costs, error = [float(s) for s in result.run_secs], ""
                else:
                    costs, error = [FAILED_RUN_SECS], "run: " + result.error_msg
                    n_timeouts += "Timeout" in result.error_msg
            db.add(key, [c.record_trace, costs, target_json, args_json])
            self.stats["measured"] += 1
            if error:
                self.stats["failed"] += 1
                self._log_error(profile, key, c.program_id, error)
        self.stats["timeouts"] += n_timeouts
        if candidates and n_timeouts / len(candidates) >= 0.25:
            log.warning("%s: %d of %d runs timed out in one batch: is the machine loaded? "
                        "Timings on a loaded machine are not measurements of the profile.",
                        profile.name, n_timeouts, len(candidates))
        bar.update(len(candidates))
        bar.set_postfix(failed=self.stats["failed"], refresh=False)

    def _log_error(self, profile, key, pid, error) -> None:
        path = self.plan.out / "metaschedule" / profile.name / "errors.jsonl"
        with open(path, "ab") as f:
            f.write(orjson.dumps({"task_key": key, "program_id": pid,
                                  "error": error[-400:]}) + b"\n")

    def _warn_if_loaded(self) -> None:
        """Warn when the machine is oversubscribed (a 1-thread profile pinned to one core may
        share the machine with work on the other cores; more than that distorts timings)."""
        threads = max(p.threads for p in self.plan.profiles)
        limit = max(threads + 1, os.cpu_count() or 1) + 0.5
        load = os.getloadavg()[0]
        if load > limit and time.time() - self._last_load_warning > 300:
            self._last_load_warning = time.time()
            log.warning("load average %.1f on %d cores while measuring %d-thread profiles: "
                        "other jobs are running; timings will be noisy", load,
                        os.cpu_count(), threads)

    def machine(self, profile: HardwareProfile) -> str:
        """The profile's machine; when it does not say, this one (measured locally) or, on an
        RPC device, the machine its target names. A profile of another machine measured here is
        refused: its name would merge this machine's timings with that machine's."""
        if self.plan.rpc_tracker:
            return profile.machine or machine_identity(profile.target)
        if profile.machine and profile.machine != host_machine():
            raise GbxferError(
                f"profile {profile.name!r} is of the machine {profile.machine!r}, and this is "
                f"{host_machine()!r}: measure this machine with a profile of its own (gbxfer "
                "hardware probe > NEW.yaml; its names carry the microarchitecture)")
        return host_machine()

    def write_dataset(self) -> Dataset:
        """Ingest the profile databases into ``OUT/dataset`` with the suite's task metadata."""
        plan = self.plan
        parts = [ingest([plan.out / "metaschedule" / p.name], hardware=(p.name, p.family),
                        machine=self.machines[p.name])
                 for p in plan.profiles if (plan.out / "metaschedule" / p.name).exists()]
        out_dataset = plan.out / "dataset"
        if (out_dataset / "manifest.json").exists():
            # profiles collected by earlier commands into the same folder stay in the dataset
            previous = Dataset.load(out_dataset)
            names = {p.name for p in plan.profiles}
            parts.append(previous.filter(hardware=[h for h in previous.hardware
                                                   if h not in names]))
            commands = previous.manifest.get("commands", [])
        else:
            commands = []
        dataset = Dataset.concat(parts)
        describe_tasks(dataset, plan.suite)
        dataset.manifest["commands"] = commands + [c for c in plan.commands
                                                   if c not in commands]
        dataset.save(out_dataset)
        return dataset


def _remove_builds(built) -> None:
    for b in built:
        if b.artifact_path:
            shutil.rmtree(os.path.dirname(b.artifact_path), ignore_errors=True)
