"""Workload features: operator kind, argument shapes, FLOPs, bytes and arithmetic intensity.

From the dataset's tasks table, which ingest fills from MetaSchedule argument shapes, from
Ansor workload keys that spell the operator, and from suite YAML (with FLOPs). Unknown values
are NaN (FLOPs of foreign tasks whose operator is not spelled out), never zero.
"""
from __future__ import annotations

import json
import math

import numpy as np

OPERATOR_KINDS = ("conv2d", "depthwise_conv2d", "conv3d", "dense", "batch_matmul", "pool",
                  "softmax", "reduce", "norm", "elementwise", "other")
# substrings of operator names, most specific first
_HINTS = (("depthwise", "depthwise_conv2d"), ("conv3d", "conv3d"), ("conv", "conv2d"),
          ("batch_matmul", "batch_matmul"), ("bmm", "batch_matmul"), ("matmul", "dense"),
          ("dense", "dense"), ("_mm", "dense"), ("pool", "pool"), ("softmax", "softmax"),
          ("reduc", "reduce"), ("sum", "reduce"), ("norm", "norm"), ("relu", "elementwise"),
          ("add", "elementwise"))
MAX_ARGS = 4
DTYPE_BYTES = {"float32": 4, "float16": 2, "int8": 1, "uint8": 1, "int32": 4, "float64": 8,
               "bfloat16": 2, "int64": 8}

COLUMNS = ([f"op_{k}" for k in OPERATOR_KINDS]
           + [f"arg{i}_log2_size" for i in range(MAX_ARGS)]
           + [f"arg{i}_rank" for i in range(MAX_ARGS)]
           + ["out_log2_size", "n_args", "log2_flops", "log2_bytes", "log2_intensity",
              "max_dim_log2", "min_dim_log2"])


def operator_kind(name: str) -> str:
    lowered = (name or "").lower()
    for hint, kind in _HINTS:
        if hint in lowered:
            return kind
    return "other"


def workload_vector(operator: str, args_json: str, flops: float) -> np.ndarray:
    vec = np.full(len(COLUMNS), np.nan)
    kind = operator_kind(operator)
    for i, k in enumerate(OPERATOR_KINDS):
        vec[i] = float(k == kind)
    args = json.loads(args_json or "[]")
    shapes = [a[1] for a in args if isinstance(a, list) and len(a) == 2
              and isinstance(a[1], list) and all(isinstance(d, int) for d in a[1])]
    sizes = [math.prod(s) for s in shapes]
    base = len(OPERATOR_KINDS)
    for i in range(MAX_ARGS):
        if i < len(shapes):
            vec[base + i] = math.log2(max(sizes[i], 1))
            vec[base + MAX_ARGS + i] = len(shapes[i])
        else:
            vec[base + i] = vec[base + MAX_ARGS + i] = 0.0  # no such argument: known, not missing
    col = {c: j for j, c in enumerate(COLUMNS)}
    if shapes:
        vec[col["out_log2_size"]] = math.log2(max(sizes[-1], 1))
        dims = [d for s in shapes for d in s]
        vec[col["max_dim_log2"]] = math.log2(max(max(dims, default=1), 1))  # scalars: no dims
        vec[col["min_dim_log2"]] = math.log2(max(min(dims, default=1), 1))
        nbytes = sum(size * DTYPE_BYTES.get(a[0], 4) for size, a in zip(sizes, args))
        vec[col["log2_bytes"]] = math.log2(max(nbytes, 1))
    vec[col["n_args"]] = len(shapes)
    if flops and not math.isnan(flops) and flops > 0:
        vec[col["log2_flops"]] = math.log2(flops)
        if shapes:
            vec[col["log2_intensity"]] = vec[col["log2_flops"]] - vec[col["log2_bytes"]]
    return vec
