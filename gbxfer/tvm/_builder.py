"""A MetaSchedule LocalBuilder that skips re-importing tensor intrinsics in every worker.

TVM's default build imports ``tvm.s_tir.tensor_intrin`` (17-19 s) in each fresh worker on every
batch; building with ``tvm.driver.build`` directly took 3.5 s instead of 22 s for 32 programs
on a 2-vCPU AMD EPYC Zen 3 with TVM 0.27. The price: tensorized intrinsics are not available to the programs.
"""
from __future__ import annotations

import functools
import os

from ._interrupt import ignore_interrupts

# seconds: a tuning batch waits for its builds, and the fastest programs of 60-minute ResNet-50
# and BERT-base runs compiled in under 2.2 s while some picks took a minute or more
BUILD_TIMEOUT = 15.0
TIMEOUT_MESSAGE = "LocalBuilder: Timeout"  # how TVM's LocalBuilder (and ours) reports one


def fast_build(mod, target, _params):
    """Build an IRModule for ``target`` as MetaSchedule's default build does, minus intrinsics."""
    from tvm.driver import build as tvm_build
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    mod = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
    return tvm_build(mod, target=target)


def local_builder(max_workers: int = 1, timeout_sec: float = BUILD_TIMEOUT):
    """A ``LocalBuilder`` using :func:`fast_build`, sized for a small machine."""
    from tvm.s_tir.meta_schedule.builder import LocalBuilder

    return LocalBuilder(max_workers=max_workers, timeout_sec=timeout_sec, f_build=fast_build)


class PooledBuilder:
    """Builds like :func:`local_builder`, with worker processes that live across calls.

    TVM's ``LocalBuilder`` starts fresh workers on every ``build`` call (against a memory leak
    in long-lived ones), and a fresh worker imports TVM first: on a 2-vCPU Zen 3, seconds per
    call, more than building a batch of small programs. These workers are restarted only after
    ``recycle`` programs. ``gbxfer collect`` and ``gbxfer tune`` build with it.
    """

    def __init__(self, max_workers: int = 1, timeout_sec: float = 60.0, recycle: int = 512,
                 cores=None):
        self.max_workers, self.timeout_sec, self.recycle = max_workers, timeout_sec, recycle
        self.cores = cores  # the workers' CPU affinity (None: the parent's)
        self._pool, self._built = None, 0

    def build(self, build_inputs) -> list:
        from tvm.support.popen_pool import PopenPoolExecutor, StatusKind
        from tvm.s_tir.meta_schedule.builder import BuilderResult
        from tvm.s_tir.meta_schedule.builder.local_builder import _serialize_params

        if self._pool is None or self._built >= self.recycle:
            self.close()
            self._pool = PopenPoolExecutor(
                max_workers=self.max_workers, timeout=self.timeout_sec,
                initializer=functools.partial(_start_worker, self.cores))
        self._built += len(build_inputs)
        jobs = [(fast_build, None, b.mod, b.target, _serialize_params(b.params))
                for b in build_inputs]
        results = []
        for result in self._pool.map_with_error_catching(_pooled_build, jobs):
            if result.status == StatusKind.COMPLETE:
                results.append(BuilderResult(result.value, None))
            elif result.status == StatusKind.TIMEOUT:
                results.append(BuilderResult(
                    None, f"{TIMEOUT_MESSAGE}, killed after {self.timeout_sec} seconds"))
            else:
                results.append(BuilderResult(None, "LocalBuilder: An exception occurred\n"
                                             + str(result.value)))
        return results

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        self._built = 0


def _start_worker(cores) -> None:
    """A build worker's initializer: its CPU affinity (None: the parent's); SIGINT left to
    the parent (``_interrupt``)."""
    ignore_interrupts()
    if cores is not None:
        os.sched_setaffinity(0, set(cores))


def _pooled_build(job) -> str:
    """In a worker: build and export one program (TVM's LocalBuilder worker function)."""
    from tvm.s_tir.meta_schedule.builder.local_builder import _worker_func

    return _worker_func(*job)
