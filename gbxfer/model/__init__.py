"""Cost models: ranking boosters over joint features."""
from ._ranker import GBCostRanker, relevance_grades

__all__ = ["GBCostRanker", "relevance_grades"]
