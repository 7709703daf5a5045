"""Ctrl-C while TVM's worker processes build and run programs.

A terminal's Ctrl-C sends SIGINT to every process of its group: TVM's builder and runner
workers too, which die mid-batch (their programs then count as failed), while in the parent a
KeyboardInterrupt raised in a Python callback of TVM's C++ task scheduler is wrapped in an
error of TVM's own, or, through a frame that may not throw, aborts the process. So the workers
leave SIGINT to the parent: they start with it blocked (``shield_workers``), then ignore it
(``ignore_interrupts``, their initializer); and the parent's handler raises nothing inside TVM
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


@contextlib.contextmanager
def shield_workers():
    """Within the block, processes started by the main thread, or by threads it starts, begin
    with SIGINT blocked (a signal mask is inherited by threads and across exec), so a Ctrl-C
    cannot kill a worker while it starts, before its initializer ignores SIGINT. The main
    thread blocks it too, so a thread started here receives it for the process; the main
    thread's Python handler still runs as usual. Elsewhere than the main thread, or without
    ``pthread_sigmask``, the block runs unchanged."""
    if threading.current_thread() is not threading.main_thread() or \
            not hasattr(signal, "pthread_sigmask"):
        yield
        return
    done = threading.Event()
    receiver = threading.Thread(target=done.wait, name="gbxfer-sigint", daemon=True)
    receiver.start()  # before the mask: SIGINT is delivered to it
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        done.set()


@contextlib.contextmanager
def stop_on_interrupt(stop, stopping: str, exiting: str):
    """Within the block, the first SIGINT calls ``stop()`` and prints ``stopping``; the second
    prints ``exiting`` and ends the process with status 130 (what was written stays: a
    KeyboardInterrupt could abort it inside TVM). Off the main thread (where signals cannot be
    handled), or where SIGINT is ignored (a background job), the block runs unchanged. Yields
    a list that holds an item once ``stop()`` was called."""
    interrupts: list = []
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        yield interrupts
        return

    def handler(signum, frame):
        if interrupts:
            print(exiting, file=sys.stderr, flush=True)
            sys.stdout.flush()
            os._exit(130)
        interrupts.append(signum)
        stop()
        print(stopping, file=sys.stderr, flush=True)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield interrupts
    finally:
        signal.signal(signal.SIGINT, previous)
