"""Few-shot transfer of a cost model to unseen hardware: one adaptation to a target's shots
(:mod:`._adapt`), guarded so that a few shots cannot make the model worse (:mod:`._guard`)."""
from ._adapt import (FALLBACKS, MODES, TransferConfig, adapt, draw_shots, expected_best_share,
                     hardware_similarity, median_shots, shot_scale, shots_rank,
                     source_weights)
from ._guard import GUARD_METRICS, cross_validate, guard_checks, shot_folds, transfer

__all__ = ["FALLBACKS", "GUARD_METRICS", "MODES", "TransferConfig", "adapt", "cross_validate",
           "draw_shots", "expected_best_share", "guard_checks", "hardware_similarity",
           "median_shots", "shot_folds", "shot_scale", "shots_rank", "source_weights",
           "transfer"]
