"""MetaSchedule's design space of a task as programs to measure: drawn at random, mutated
from good ones, or replayed from stored traces. Every draw is a deterministic function of
(task key, seed, attempt number)."""
from __future__ import annotations

import dataclasses
import hashlib

import orjson

from ._database import record_program_id
from ._json import to_python
from ._intrinsics import import_tensor_intrinsics


@dataclasses.dataclass
class Candidate:
    program_id: str
    schedule: object  # tvm.s_tir.Schedule; None when a replayed trace does not apply
    record_trace: list  # the trace as plain JSON, as written to the database
    error: str = ""


def replay_programs(mod, task_key: str, programs) -> list[Candidate]:
    """Candidates from stored traces (JSON text), in order; a trace that no longer applies to
    ``mod`` is kept as a candidate with an error, to be recorded as a failure."""
    from tvm.s_tir.schedule import Schedule, Trace

    out = []
    for text in programs:
        trace = orjson.loads(text)
        pid = record_program_id(task_key, [trace])
        sch = Schedule(mod, seed=1)
        try:
            Trace.apply_json_to_schedule(trace, sch)
        except Exception as exc:  # noqa: BLE001 - TVM's error for an inapplicable trace
            out.append(Candidate(pid, None, trace, f"replay: {str(exc)[-300:]}"))
            continue
        out.append(Candidate(pid, sch, trace))
    return out


def _attempt_seed(seed: int, task_key: str, attempt: int) -> int:
    digest = hashlib.blake2b(f"{seed}/{task_key}/{attempt}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big") % (2**31 - 2) + 1  # Schedule needs seed >= 1


class DesignSpace:
    """MetaSchedule's design space of one task for one target: random and mutated programs.

    Every draw is a deterministic function of (task key, seed, attempt number).
    """

    def __init__(self, mod, target, task_key: str, seed: int):
        from tvm.s_tir import meta_schedule as ms
        from tvm.s_tir.schedule import Trace

        self.mod, self.task_key, self.seed = mod, task_key, seed
        import_tensor_intrinsics()
        context = ms.TuneContext(mod=mod, target=target, space_generator="post-order-apply",
                                 task_name=task_key, num_threads=1, rand_state=seed + 1)
        self.sketches = [Trace(s.trace.simplified(remove_postproc=True).insts, {})
                         for s in context.generate_design_space()]
        self.postprocs = context.space_generator.postprocs
        probs = context.space_generator.mutator_probs
        self.mutators = list(probs)
        weights = [float(p) for p in probs.values()]
        self.mutator_cdf = [sum(weights[:i + 1]) / sum(weights) for i in range(len(weights))]

    def _finish(self, sch, trace, out, seen) -> None:
        """Apply ``trace`` with fresh postprocessing; keep the program if new and valid."""
        try:
            trace.apply_to_schedule(sch, remove_postproc=True)
            sch.enter_postproc()
            if not all(p.apply(sch) for p in self.postprocs):
                return
        except Exception:  # noqa: BLE001 - TVM raises TVMError subclasses on bad samples
            return
        record_trace = to_python(sch.trace.as_json())
        pid = record_program_id(self.task_key, [record_trace])
        if pid not in seen:
            seen.add(pid)
            out.append(Candidate(pid, sch, record_trace))

    def random(self, n: int, max_attempts_per_program: int = 20) -> list[Candidate]:
        """``n`` distinct programs with uniformly random decisions (fewer if the space is small)."""
        from tvm.s_tir.schedule import Schedule

        out: list[Candidate] = []
        seen: set[str] = set()
        for attempt in range(n * max_attempts_per_program):
            if len(out) == n:
                break
            sch = Schedule(self.mod, seed=_attempt_seed(self.seed, self.task_key, attempt))
            self._finish(sch, self.sketches[attempt % len(self.sketches)], out, seen)
        return out

    def mutants(self, parents, n: int, exclude: set[str],
                max_attempts_per_program: int = 20) -> list[Candidate]:
        """``n`` distinct programs made by one MetaSchedule mutation (tile size, unroll,
        parallel extent, compute location: its own mutators and probabilities) of a parent
        trace, parents taken in turn; programs in ``exclude`` are not repeated."""
        from tvm.s_tir.meta_schedule import _ffi_api
        from tvm.s_tir.schedule import Schedule

        out: list[Candidate] = []
        seen = set(exclude)
        for attempt in range(n * max_attempts_per_program):
            if len(out) == n or not parents:
                break
            seed = _attempt_seed(self.seed + 7919, self.task_key, attempt)
            u = (seed % 10007) / 10007
            mutator = self.mutators[next(i for i, c in enumerate(self.mutator_cdf) if u <= c)]
            trace = _ffi_api.MutatorApply(mutator, parents[attempt % len(parents)], seed)
            if trace is not None:
                self._finish(Schedule(self.mod, seed=seed), trace, out, seen)
        return out
