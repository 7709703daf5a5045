"""Cost models: ranking boosters over joint features, and their on-disk form."""
from ._ranker import GBCostRanker, relevance_grades
from ._saved import SavedModel

__all__ = ["GBCostRanker", "SavedModel", "relevance_grades"]
