"""Operations on the string columns of a records table that pandas makes slow."""
from __future__ import annotations

import numpy as np
import pandas as pd


def isin(column: pd.Series | pd.Index, values) -> np.ndarray:
    """``column.isin(values)`` as a boolean array, fast for many values: pandas' own ``isin``
    on an Arrow-backed string column makes a pyarrow scalar of every value in Python (0.8 s for
    64k record ids), where hashing the column as Python objects takes 0.06 s. A missing value
    among ``values`` matches nothing (record and program ids are never missing)."""
    return np.asarray(column.astype(object).isin(values), dtype=bool)
