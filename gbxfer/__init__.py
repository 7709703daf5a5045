"""gbxfer: learned cost models of tensor programs that transfer across hardware.

The pipeline reads left to right: records (:class:`Dataset`, :func:`ingest`) -> splits
(:class:`SplitSpec`) -> features (:func:`build`) -> models (:class:`ModelConfig`,
:class:`GBCostRanker`, :func:`train`, :func:`evaluate`, :class:`SavedModel`) -> transfer and
pruning -> integrations (CLI, Optuna, TVM) at the edge. The core imports no TVM.

Examples
--------
>>> import gbxfer
>>> data = gbxfer.load_bundled()
>>> split = gbxfer.SplitSpec.parse("by-task", 0.3, seed=0)
>>> model = gbxfer.train(data, gbxfer.load_model_config(), split)
>>> report = gbxfer.evaluate(model, data)  # the held-out tasks only
>>> sorted(k for k in ("pca", "top1", "top5") if 0 <= report[k] <= 1)
['pca', 'top1', 'top5']
"""
from ._version import __version__
from .errors import GbxferError, InputError, SchemaVersionError

# imported on first use: the records load pandas and pyarrow, the model layer scikit-learn
# and the boosters (and the `gbxfer` command starts without them: see __main__)
_LAZY = {"Dataset": "records", "ingest": "records", "load_bundled": "records",
         "load_dataset": "records", "SplitSpec": "splits", "build": "features",
         "GBCostRanker": "model", "ModelConfig": "model", "SavedModel": "model",
         "load_model_config": "model", "train": "training", "evaluate": "training"}

__all__ = ["__version__", "GbxferError", "InputError", "SchemaVersionError", *_LAZY]


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'gbxfer' has no attribute {name!r}")
