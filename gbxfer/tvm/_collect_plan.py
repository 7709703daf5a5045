"""What ``gbxfer collect`` measures and how: the plan, and the runner that measures a profile."""
from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path

from ..errors import GbxferError
from ..hardware.profiles import HardwareProfile
from ..records.dataset import Dataset
from ..records.suite import Suite
from ._interrupt import ignore_interrupts


@dataclasses.dataclass
class CollectPlan:
    """What to collect and how to measure it.

    ``repeats`` runs of at least ``min_repeat_ms`` each give one program's costs (seconds); their
    median is its latency. Timeouts are in seconds.
    """

    suite: Suite
    profiles: list[HardwareProfile]
    programs: int
    out: Path
    seed: int = 0
    batch_size: int = 16
    repeats: int = 3
    min_repeat_ms: int = 40
    build_timeout: float = 60.0
    run_timeout: float = 20.0
    build_workers: int = 1
    rpc_tracker: str | None = None  # "HOST:PORT" of a TVM RPC tracker: measure on its devices
    rpc_key: str | None = None  # "KEY", or "KEY1,KEY2,...": one device key per profile
    evolutionary_share: float = 0.25  # of the programs: mutants of the best measured ones
    n_parents: int = 4  # best random programs (on the first profile) that the mutants come from
    replay: Dataset | None = None  # measure exactly this dataset's programs instead of sampling
    replay_rounds: int = 1  # > 1: replay in rounds, each a next share of every task's programs
    deadline: float | None = None  # time.time() after which no new batch starts
    on_round: object = None  # called after each replay round (calibrate saves its state)
    write_every: float = 300.0  # seconds between rebuilds of OUT/dataset (and one at the end)
    # cores the kernels run on; the next batch is built on the others meanwhile (None: builds
    # and runs take turns on every core this process may use)
    run_cores: tuple[int, ...] | None = None
    commands: list = dataclasses.field(default_factory=list)

    def __post_init__(self):
        keys = (self.rpc_key or "").split(",")
        if len(keys) > 1 and (len(keys) != len(self.profiles) or not all(keys)):
            raise GbxferError(f"--rpc-key: {len(keys)} keys for {len(self.profiles)} profiles: "
                              "give one key for every profile, in order (or one for all)")
        if self.run_cores is not None:
            usable = os.sched_getaffinity(0)
            cores = set(self.run_cores)
            if not cores or not cores <= usable:
                raise GbxferError(f"--run-cores: {sorted(cores)} are not among the cores this "
                                  f"process may use ({sorted(usable)})")
            if not usable - cores:
                raise GbxferError(f"--run-cores: leave at least one of {sorted(usable)} for "
                                  "the builds")
            wide = [p for p in self.profiles if p.threads > len(cores)]
            if wide:
                raise GbxferError(f"--run-cores: {wide[0].name} runs {wide[0].threads} threads "
                                  f"on {len(cores)} core(s): give it as many cores")

    @property
    def build_cores(self) -> set[int] | None:
        """Where builds run when ``run_cores`` are set aside for the kernels."""
        return None if self.run_cores is None else os.sched_getaffinity(0) - set(self.run_cores)

    def device_key(self, profile: HardwareProfile) -> str:
        """The RPC device key that measures ``profile`` (the i-th key the i-th profile)."""
        keys = (self.rpc_key or "").split(",")
        if len(keys) == 1:
            return keys[0]
        return keys[[p.name for p in self.profiles].index(profile.name)]


def _set_threads(n: int, cores=None) -> None:
    os.environ["TVM_NUM_THREADS"] = str(n)
    if cores is not None:
        os.sched_setaffinity(0, cores)


def _start_worker(n: int, cores=None) -> None:
    """The runner worker's initializer: the profile's threads and cores; SIGINT left to the
    parent (``_interrupt``)."""
    ignore_interrupts()
    _set_threads(n, cores)


def _keep_artifact() -> None:
    """Runner clean-up that leaves the build for the next thread variant (gbxfer removes it)."""


def make_runner(profile: HardwareProfile, plan: CollectPlan):
    """A LocalRunner whose worker runs kernels on the profile's thread count, or an RPCRunner
    that measures on a device of the plan's RPC tracker (its threads are the device's own)."""
    from tvm.s_tir import meta_schedule as ms

    config = ms.runner.EvaluatorConfig(number=1, repeat=plan.repeats,
                                       min_repeat_ms=plan.min_repeat_ms,
                                       enable_cpu_cache_flush=False)
    if plan.rpc_tracker:
        host, _, port = plan.rpc_tracker.rpartition(":")
        rpc = ms.runner.RPCConfig(tracker_host=host, tracker_port=int(port),
                                  tracker_key=plan.device_key(profile),
                                  session_timeout_sec=int(plan.run_timeout))
        return ms.runner.RPCRunner(rpc_config=rpc, evaluator_config=config, max_workers=1,
                                   initializer=ignore_interrupts)
    _set_threads(profile.threads)  # read when the runner's worker starts
    return ms.runner.LocalRunner(timeout_sec=plan.run_timeout, evaluator_config=config,
                                 initializer=functools.partial(_start_worker, profile.threads,
                                                               plan.run_cores),
                                 f_cleanup=_keep_artifact)


def close_runner(runner) -> None:
    """Stop a runner's worker processes now (left to the garbage collector, a pool that is
    collected on one of its own threads, after Ctrl-C, prints an error at exit)."""
    pool = getattr(runner, "pool", None)
    if pool is not None:
        pool.shutdown()
