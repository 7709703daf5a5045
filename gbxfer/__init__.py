"""gbxfer: learned cost models of tensor programs that transfer across hardware.

The pipeline reads left to right: records (:mod:`gbxfer.dataset`, :func:`gbxfer.ingest` over :mod:`gbxfer.formats`) ->
metrics and splits (:mod:`gbxfer.metrics`, :mod:`gbxfer.splits`) -> features -> models ->
transfer and pruning -> integrations (CLI, Optuna, TVM) at the edge. The core imports no TVM.
"""
from ._version import __version__
from .dataset import Dataset, load_bundled, load_dataset
from .errors import GbxferError, InputError, SchemaVersionError
from ._ingest import ingest
from .splits import SplitSpec

__all__ = ["__version__", "Dataset", "load_dataset", "load_bundled", "ingest", "SplitSpec", "GbxferError",
           "InputError", "SchemaVersionError"]
