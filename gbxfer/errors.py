"""Errors raised on bad input: they name the file, the line and what was expected."""
from __future__ import annotations


class GbxferError(Exception):
    """Base class of every error gbxfer raises on purpose (the CLI prints it without a traceback)."""


class InputError(GbxferError):
    """A source file, or one line of it, is not what gbxfer expects.

    Parameters
    ----------
    path : str
        The file (or folder) that holds the bad input.
    line : int or None
        1-based line number, or None when the problem is the whole file.
    reason : str
        Short machine-friendly kind of problem (``"malformed-json"``, ``"bad-cost"``, ...), used to
        count skipped lines by reason.
    message : str
        What was wrong and what was expected.
    """

    def __init__(self, path, line, reason, message):
        self.path = str(path)
        self.line = line
        self.reason = reason
        self.message = message
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {message}")

    def __reduce__(self):  # picklable: ingest's worker processes send them to the parent
        return type(self), (self.path, self.line, self.reason, self.message)


class SchemaVersionError(GbxferError):
    """A dataset or model on disk was written with another schema version."""
