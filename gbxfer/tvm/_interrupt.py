"""Ctrl-C while TVM's worker processes build and run programs.

A terminal's Ctrl-C sends SIGINT to every process of its group: TVM's builder and runner
workers too, which die mid-batch (their programs then count as failed), while in the parent a
KeyboardInterrupt raised in a Python callback of TVM's C++ task scheduler is wrapped in an
error of TVM's own, or, through a frame that may not throw, aborts the process. So the workers
ignore SIGINT (``ignore_interrupts``, their initializer), and during tuning they start with it
blocked and a thread of gbxfer's own acts on it, raising nothing inside TVM
(``stop_on_interrupt``): the first Ctrl-C ends the run after the batch in flight, so
everything measured is written as in a finished run; the second exits at once.
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading


def ignore_interrupts() -> None:
    """In a worker process: leave SIGINT to the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def sigint_is_ours() -> bool:
    """Whether this code may handle SIGINT: in the main thread (the only one Python runs
    signal handlers in), where it is not ignored (a background job's stays ignored)."""
    return threading.current_thread() is threading.main_thread() and \
        signal.getsignal(signal.SIGINT) is not signal.SIG_IGN


@contextlib.contextmanager
def stop_on_interrupt(stop, stopping: str, exiting: str):
    """Within the block, a thread of its own handles SIGINT at once, whatever the main thread
    waits on: the first calls ``stop()`` and prints ``stopping``; the second prints
    ``exiting``, kills this process's children and exits with status 130 (what was written
    stays). Processes started within the block, by the main thread or threads it starts, begin
    with SIGINT blocked (a signal mask is inherited by threads and across exec), so a Ctrl-C
    cannot kill a worker while it starts, before its initializer ignores SIGINT. Off the main
    thread (where signals cannot be handled), where SIGINT is ignored (a background job), or
    without ``pthread_sigmask``, the block runs unchanged. Yields a list that holds an item once
    ``stop()`` was called."""
    interrupts: list = []
    if not sigint_is_ours() or not hasattr(signal, "pthread_sigmask"):
        yield interrupts
        return
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)

    def receive() -> None:  # the signal numbers Python's C handler writes to the wakeup fd
        while (byte := os.read(read_end, 1)) not in (b"", b"\0"):
            if byte[0] != signal.SIGINT:
                continue
            if interrupts:
                print(exiting, file=sys.stderr, flush=True)
                _kill_children()
                os._exit(130)
            interrupts.append(signal.SIGINT)
            stop()
            print(stopping, file=sys.stderr, flush=True)

    previous_fd = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    previous = signal.signal(signal.SIGINT, lambda signum, frame: None)  # receive() acts
    receiver = threading.Thread(target=receive, name="gbxfer-sigint", daemon=True)
    receiver.start()  # before the mask: the signal is delivered to it
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield interrupts
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        signal.signal(signal.SIGINT, previous)
        signal.set_wakeup_fd(previous_fd)
        os.write(write_end, b"\0")  # ends receive()
        receiver.join()
        os.close(read_end)
        os.close(write_end)


def _kill_children() -> None:
    """Kill this process's worker processes (they ignore SIGINT and would finish their job)."""
    import psutil  # TVM's worker pools need it (a dependency of gbxfer[tvm])

    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            child.kill()
