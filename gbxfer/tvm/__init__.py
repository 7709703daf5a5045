"""The TVM edge of gbxfer (needs ``pip install gbxfer[tvm]``): building, measuring, tuning.

Nothing in the core imports this package. Its names load TVM on first use.
"""
from ._builder import fast_build, local_builder
from ._logging import metaschedule_logging

__all__ = ["fast_build", "local_builder", "metaschedule_logging", "GbxferCostModel",
           "per_store_features", "XGBModelBaseline", "describe_tasks"]


def __getattr__(name):
    if name == "GbxferCostModel":
        from ._cost_model import GbxferCostModel

        return GbxferCostModel
    if name == "per_store_features":
        from ._per_store import per_store_features

        return per_store_features
    if name == "describe_tasks":
        from ._task_modules import describe_tasks

        return describe_tasks
    if name == "XGBModelBaseline":
        from ._baselines import XGBModelBaseline

        return XGBModelBaseline
    raise AttributeError(name)
