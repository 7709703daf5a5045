"""Reading JSON-lines files (plain or gzip) with errors that name the file and line."""
from __future__ import annotations

import gzip
import io
import json
import math
import os
import zlib
from pathlib import Path

import orjson

from ...errors import InputError

GZIP_MAGIC = b"\x1f\x8b"


def open_binary(path: Path):
    """Open ``path`` for reading bytes, decompressing gzip whatever its suffix."""
    with open(path, "rb") as f:
        magic = f.read(2)
    return gzip.open(path, "rb") if magic == GZIP_MAGIC else open(path, "rb")


def json_lines(path: Path, start: int = 1, stop: int | None = None):
    """Yield ``(line_number, value)`` for every non-blank line of a JSON-lines file (of lines
    ``start`` <= number < ``stop`` only, when given: a chunk that one process reads).

    A line that is not UTF-8 or not JSON yields an :class:`InputError` as its value, so that the
    caller can skip it and read on. An empty or unreadable file or a truncated gzip stream
    raises :class:`InputError`. NaN and Infinity literals are rejected (they are not JSON); integers
    beyond 64 bits are too (orjson's limit).
    """
    n_values = 0
    try:
        with open_binary(path) as f:
            for number, raw in enumerate(_lines_from(f, start), start=start):
                if not raw.strip():
                    continue
                if stop is not None and number >= stop:
                    return
                n_values += 1
                try:
                    value = orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    value = _line_error(path, number, raw, exc)
                yield number, value
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise InputError(path, None, "truncated-file",
                         f"corrupt or truncated gzip ({exc})") from None
    except OSError as exc:  # no access, a dangling link, a read error
        raise InputError(path, None, "unreadable-file", _unreadable(path, exc)) from None
    if n_values == 0 and start == 1:
        raise InputError(path, None, "empty-file", "empty file: no JSON lines in it")


def _unreadable(path, exc: OSError) -> str:
    """Why ``path`` cannot be read: a link to nothing says where it points."""
    if os.path.islink(path) and not os.path.exists(path):
        return f"a link to {os.readlink(path)}, which does not exist"
    return exc.strerror or str(exc)


def _lines_from(f, start: int, block_size: int = 1 << 20):
    """The lines of binary stream ``f`` from line number ``start`` on: the lines before are
    skipped a block at a time (newlines counted in C), not read line by line."""
    skip, tail = start - 1, b""
    while skip:
        block = f.read(block_size)
        if not block:
            return
        n = block.count(b"\n")
        if n < skip:
            skip -= n
            continue
        cut = -1
        for _ in range(skip):
            cut = block.index(b"\n", cut + 1)
        tail, skip = block[cut + 1:], 0
    for line in io.BytesIO(tail):
        yield line if line.endswith(b"\n") else line + f.readline()  # continues in f
    yield from f


def chunk_starts(path: Path, size: int) -> list[int]:
    """The first line numbers of chunks of ``size`` non-blank lines of a JSON-lines file
    (``[1]`` for a file that is small, empty or unreadable: one chunk reads it all)."""
    starts, n = [1], 0
    try:
        with open_binary(path) as f:
            for number, raw in enumerate(f, start=1):
                if raw.strip():
                    if n and n % size == 0:
                        starts.append(number)
                    n += 1
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile):
        return [1]
    return starts


def _line_error(path, number, raw: bytes, exc) -> InputError:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as bad:
        return InputError(path, number, "not-utf8", f"byte {raw[bad.start]:#04x} at column "
                                                    f"{bad.start + 1} is not UTF-8")
    return InputError(path, number, "malformed-json", f"not a JSON value ({exc}); truncated line?")


def check_costs(path, line, costs, what="costs") -> list[float]:
    """Validate a list of repeat costs (seconds): non-empty, numbers, finite, positive."""
    if not isinstance(costs, list) or not costs:
        raise InputError(path, line, "bad-cost", f"{what} must be a non-empty list of seconds, "
                         f"got {_short(costs)}")
    for c in costs:
        if isinstance(c, bool) or not isinstance(c, (int, float)):
            raise InputError(path, line, "bad-cost", f"{what} must be numbers, got {_short(c)}")
        if not math.isfinite(c) or c <= 0:
            raise InputError(path, line, "bad-cost",
                             f"{what} must be finite and positive seconds, got {c!r}")
    return [float(c) for c in costs]


def shape_problem(shape) -> str:
    """Why ``shape`` is not a tensor shape (a list of positive integers), or ``""``."""
    if not isinstance(shape, list):
        return f"a shape must be a list of positive integers, got {_short(shape)}"
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, int) or d < 1:
            return f"a shape must be a list of positive integers, got {_short(shape)}"
    return ""


def expect(condition, path, line, message, reason="bad-structure"):
    """Raise an :class:`InputError` with ``message`` unless ``condition`` holds; ``message``
    may be a function that makes it (checks run per instruction of every record: a message
    formatted for each costs more than reading the file)."""
    if not condition:
        raise InputError(path, line, reason, message() if callable(message) else message)


def _short(value, limit=60) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
