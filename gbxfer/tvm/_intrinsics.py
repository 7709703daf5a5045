"""TVM's tensor intrinsics, imported in seconds instead of minutes.

MetaSchedule's ``TuneContext`` imports ``tvm.s_tir.tensor_intrin`` when the first one is made:
hundreds of TVMScript functions, each of whose decorators calls ``inspect.stack()``, which
reads every frame's source and, for frames of no module file (frozen importlib), scans all of
``sys.modules`` for the module. On a 2-vCPU AMD EPYC Zen 3 core with TVM 0.27 the import took
48 s in a bare Python and 102 s beside gbxfer's own imports (1,600 modules); with
``inspect.stack`` replaced, for the import only, by :func:`_stack` (the same frames and
lines, read from ``linecache`` without the module lookup) it takes 9 s.
"""
from __future__ import annotations

import inspect
import linecache
import sys
import threading

_LOCK = threading.Lock()


def _stack(context: int = 1) -> list[inspect.FrameInfo]:
    """``inspect.stack(context)`` for ``context`` <= 1: each frame with its current line."""
    frame, frames = sys._getframe(1), []
    while frame is not None:
        code = frame.f_code
        line = linecache.getline(code.co_filename, frame.f_lineno, frame.f_globals) \
            if context > 0 else ""
        frames.append(inspect.FrameInfo(frame, code.co_filename, frame.f_lineno, code.co_name,
                                        [line] if line else None, 0 if line else None))
        frame = frame.f_back
    return frames


def import_tensor_intrinsics() -> None:
    """Import ``tvm.s_tir.tensor_intrin`` (once) with the fast :func:`_stack`; call it before
    making MetaSchedule's first ``TuneContext``."""
    if "tvm.s_tir.tensor_intrin" in sys.modules:
        return
    with _LOCK:
        original, inspect.stack = inspect.stack, _stack
        try:
            import tvm.s_tir.tensor_intrin  # noqa: F401
        finally:
            inspect.stack = original
