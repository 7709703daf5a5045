"""The TVM edge of gbxfer (needs ``pip install gbxfer[tvm]``): building, measuring, tuning.

Nothing in the core imports this package.
"""
from ._builder import fast_build, local_builder

__all__ = ["fast_build", "local_builder"]
