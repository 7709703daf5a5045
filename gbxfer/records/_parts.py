"""Reading parts of a dataset too large to load whole (a Dask worker's tasks).

A part is read one Parquet row group at a time: a row group whose ``task_key`` statistics
exclude every wanted key is skipped unread, any other has its ``task_key`` column read first
and its other columns only when some row is wanted, so a reader holds one row group and its
own rows, never the whole file (a filtered ``pyarrow.parquet.read_table`` decodes it all).
"""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


def read_part(file: Path, schema: pa.Schema, tasks=None) -> pa.Table:
    """The rows of Parquet ``file`` whose ``task_key`` is in ``tasks`` (None: every row), as
    ``schema``."""
    if tasks is None:
        return pq.read_table(file, schema=schema)
    wanted = pa.array(sorted(set(tasks)), type=pa.string())
    source = pq.ParquetFile(file)
    key_column = source.schema_arrow.get_field_index("task_key")
    names = [n for n in schema.names if n in source.schema_arrow.names]
    pieces = []
    for i in range(source.num_row_groups if len(wanted) else 0):
        stats = source.metadata.row_group(i).column(key_column).statistics
        if stats is not None and stats.has_min_max and (
                stats.max < wanted[0].as_py() or stats.min > wanted[-1].as_py()):
            continue
        mask = pc.is_in(source.read_row_group(i, columns=["task_key"]).column(0),
                        value_set=wanted)
        if pc.any(mask).as_py():
            pieces.append(source.read_row_group(i, columns=names).filter(mask))
    table = pa.concat_tables(pieces) if pieces else source.schema_arrow.empty_table()
    return table.select(schema.names).cast(schema)
