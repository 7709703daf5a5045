"""The ``gbxfer`` command: one sub-command per verb, each in its own module."""
from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys

from .._version import __version__
from ..errors import GbxferError
from ..tvm._interrupt import sigint_is_ours
from . import (_calibrate, _collect, _features, _hardware, _info, _ingest, _model, _prune,
               _study, _suite, _transfer, _tune)

VERBS = (_ingest, _info, _suite, _collect, _hardware, _features, _model, _transfer, _prune,
         _study, _calibrate, _tune)
log = logging.getLogger("gbxfer")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gbxfer",
        description="Learned cost models of tensor programs: ingest measurements, build "
                    "features, train ranking boosters, transfer them to new hardware.")
    parser.add_argument("--version", action="version", version=f"gbxfer {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    noise = common.add_mutually_exclusive_group()
    noise.add_argument("-q", "--quiet", action="store_true",
                       help="print only warnings and errors; no progress bars")
    noise.add_argument("-v", "--verbose", action="store_true", help="print debugging detail")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for module in VERBS:
        module.add_parser(verbs, common)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.WARNING if args.quiet else logging.DEBUG if args.verbose else logging.INFO
    logging.basicConfig(level=level, format="%(message)s", stream=sys.stderr, force=True)
    interrupts: list = []
    try:
        with _interruptible(interrupts):
            return int(args.run(args) or 0)
    except GbxferError as error:
        if interrupts:  # a Ctrl-C that a step caught and reported as a failure (ONNX import)
            print(_interrupted(args), file=sys.stderr)
            return 130
        text = " ".join(str(error).split())  # one line, even where a parser's message is not
        print(f"gbxfer {args.verb}: error: {text}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(_interrupted(args), file=sys.stderr)
        return 130
    except MemoryError as error:  # the data does not fit (pyarrow's ArrowMemoryError too)
        if args.verbose:
            raise
        hint = " (gbxfer train --dask local trains without holding it all)" \
            if args.verb == "train" else ""
        print(f"gbxfer {args.verb}: error: out of memory{hint}: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as error:  # an output that cannot be written (read-only, full, no access)
        if args.verbose:  # -v: the traceback, to tell a bug from a bad path
            raise
        where = f"{error.filename}: " if error.filename else ""
        what = error.strerror or str(error) or type(error).__name__  # e.g. a closed connection
        print(f"gbxfer {args.verb}: error: {where}{what}", file=sys.stderr)
        return 2
    except Exception:
        if not interrupts:
            raise
        # Ctrl-C while TVM's C++ code called back into Python: TVM re-raises the
        # KeyboardInterrupt as an error of its own
        print(_interrupted(args), file=sys.stderr)
        return 130


def _interrupted(args) -> str:
    """What an interrupted command says: a resumable one (``set_defaults(resumable=True)``)
    says how to go on."""
    more = "; run the same command again to continue where it stopped" \
        if getattr(args, "resumable", False) else ""
    return f"gbxfer {args.verb}: interrupted{more}"


@contextlib.contextmanager
def _interruptible(interrupts: list):
    """Ctrl-C raises KeyboardInterrupt as usual, and is remembered in ``interrupts``: the
    exception TVM wraps it in is then told from a failure (in the main thread, where SIGINT
    is not ignored: a background job's stays ignored)."""
    if not sigint_is_ours():
        yield
        return

    def handler(signum, frame):
        interrupts.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


if __name__ == "__main__":
    sys.exit(main())
