"""Cost models: ranking boosters over joint features, and their on-disk form."""
from ._config import ModelConfig, load_model_config
from ._ranker import GBCostRanker, relevance_grades
from ._saved import PRETRAINED, SavedModel, load_models, save_models

__all__ = ["GBCostRanker", "ModelConfig", "PRETRAINED", "SavedModel", "load_model_config",
           "load_models", "relevance_grades", "save_models"]
