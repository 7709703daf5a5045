"""Workload suites: the operators of real networks as shapes, with FLOPs and bytes (no TVM).

A suite file (``configs/workloads/*.yaml``) lists tasks by network::

    name: networks
    networks:
      resnet50:
        - {op: conv2d, shape: {N: 1, H: 56, W: 56, CI: 64, CO: 64, kernel: 3, stride: 1,
                               padding: 1}, weight: 3}

A task that occurs in several networks is one task: its networks are joined with commas and its
weight is the sum of its occurrences. Files are validated on load; every error names the file,
the network, the task's position and the field.
"""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import yaml

from ..errors import GbxferError

# op -> (shape parameters in order, defaults)
OPERATORS: dict[str, tuple[tuple[str, ...], dict]] = {
    "conv2d": (("N", "H", "W", "CI", "CO", "kernel", "stride", "padding"),
               {"stride": 1, "padding": 0}),
    "depthwise_conv2d": (("N", "H", "W", "C", "kernel", "stride", "padding"),
                         {"stride": 1, "padding": 0}),
    "dense": (("M", "N", "K"), {}),
    "batch_matmul": (("B", "M", "N", "K"), {}),
    "softmax": (("M", "N"), {}),
    "max_pool2d": (("N", "H", "W", "C", "kernel", "stride", "padding"),
                   {"stride": 1, "padding": 0}),
    "avg_pool2d": (("N", "H", "W", "C", "kernel", "stride", "padding"),
                   {"stride": 1, "padding": 0}),
    "global_avg_pool2d": (("N", "H", "W", "C"), {}),
    "conv1d": (("N", "L", "CI", "CO", "kernel", "stride", "padding"),
               {"stride": 1, "padding": 0}),
    "layer_norm": (("M", "N"), {}),
    "rms_norm": (("M", "N"), {}),
    "dense_gelu": (("M", "N", "K"), {}),
    "dense_silu_mul": (("M", "N", "K"), {}),
}
# element-wise operations per output element of the row-wise operators (a multiply-add counts 2)
_ROW_FLOPS = {"softmax": 4,      # max, subtract-exp, sum, divide
              "layer_norm": 8,   # mean, centre, square, variance, scale, gamma, beta
              "rms_norm": 4}     # square, sum, scale, weight
# a dense layer's fused element-wise epilogue, per output element
_EPILOGUE_FLOPS = {"dense_gelu": 6,      # + bias, x / sqrt(2), erf, 1 + ., x * ., 0.5 * .
                   "dense_silu_mul": 5}  # exp, 1 + ., divide, x * ., * up-projection
FLOAT_BYTES = 4  # every suite operator is float32


@dataclasses.dataclass(frozen=True)
class Task:
    """One operator with its shape, as a suite names it."""

    op: str
    shape: tuple[tuple[str, int], ...]
    network: str = ""
    weight: float = 1.0
    network_weights: tuple[tuple[str, float], ...] = ()  # occurrences in each network

    def weight_in(self, network: str) -> float:
        """How many times the task occurs in ``network`` (0 when it does not)."""
        return dict(self.network_weights).get(network, 0.0)

    @property
    def params(self) -> dict:
        return dict(self.shape)

    @property
    def name(self) -> str:
        """``op_`` followed by the shape values, e.g. ``dense_1_768_3072``."""
        return self.op + "_" + "_".join(str(v) for _, v in self.shape)

    @property
    def description(self) -> str:
        return f"{self.op} " + " ".join(f"{k}={v}" for k, v in self.shape)

    @property
    def flops(self) -> float:
        return operator_flops(self.op, self.params)

    @property
    def bytes(self) -> float:
        """Bytes of every input and output read or written once (float32)."""
        return FLOAT_BYTES * sum(math.prod(s) for s in operator_arg_shapes(self.op, self.params))

    @property
    def args(self) -> str:
        """JSON ``[[dtype, shape], ...]`` as the dataset's tasks table stores them."""
        return json.dumps([["float32", list(s)] for s in operator_arg_shapes(self.op,
                                                                             self.params)])


def _out_hw(p):
    h = (p["H"] + 2 * p["padding"] - p["kernel"]) // p["stride"] + 1
    w = (p["W"] + 2 * p["padding"] - p["kernel"]) // p["stride"] + 1
    return h, w


def operator_arg_shapes(op: str, p: dict) -> list[tuple[int, ...]]:
    """Shapes of the inputs then the output (NHWC layouts for convolutions and pooling)."""
    if op == "conv2d":
        oh, ow = _out_hw(p)
        return [(p["N"], p["H"], p["W"], p["CI"]), (p["kernel"], p["kernel"], p["CI"], p["CO"]),
                (p["N"], oh, ow, p["CO"])]
    if op == "depthwise_conv2d":
        oh, ow = _out_hw(p)
        return [(p["N"], p["H"], p["W"], p["C"]), (1, p["kernel"], p["kernel"], p["C"]),
                (p["N"], oh, ow, p["C"])]
    if op == "dense":
        return [(p["M"], p["K"]), (p["K"], p["N"]), (p["M"], p["N"])]
    if op == "batch_matmul":
        return [(p["B"], p["M"], p["K"]), (p["B"], p["K"], p["N"]), (p["B"], p["M"], p["N"])]
    if op == "softmax":
        return [(p["M"], p["N"]), (p["M"], p["N"])]
    if op == "conv1d":
        ol = (p["L"] + 2 * p["padding"] - p["kernel"]) // p["stride"] + 1
        return [(p["N"], p["L"], p["CI"]), (p["kernel"], p["CI"], p["CO"]), (p["N"], ol, p["CO"])]
    if op == "layer_norm":
        return [(p["M"], p["N"]), (p["N"],), (p["N"],), (p["M"], p["N"])]
    if op == "rms_norm":
        return [(p["M"], p["N"]), (p["N"],), (p["M"], p["N"])]
    if op == "dense_gelu":  # X, W, bias, GELU(X W + bias)
        return [(p["M"], p["K"]), (p["K"], p["N"]), (p["N"],), (p["M"], p["N"])]
    if op == "dense_silu_mul":  # X, W_gate, up-projection U, SiLU(X W_gate) * U
        return [(p["M"], p["K"]), (p["K"], p["N"]), (p["M"], p["N"]), (p["M"], p["N"])]
    if op in ("max_pool2d", "avg_pool2d"):
        oh, ow = _out_hw(p)
        return [(p["N"], p["H"], p["W"], p["C"]), (p["N"], oh, ow, p["C"])]
    if op == "global_avg_pool2d":
        return [(p["N"], p["H"], p["W"], p["C"]), (p["N"], 1, 1, p["C"])]
    raise GbxferError(f"unknown operator {op!r}")


def operator_flops(op: str, p: dict) -> float:
    """Floating-point operations of one run (a multiply-add counts 2)."""
    out = operator_arg_shapes(op, p)[-1]
    n_out = math.prod(out)
    if op == "conv2d":
        return 2.0 * n_out * p["CI"] * p["kernel"] ** 2
    if op == "depthwise_conv2d":
        return 2.0 * n_out * p["kernel"] ** 2
    if op == "dense":
        return 2.0 * p["M"] * p["N"] * p["K"]
    if op in _EPILOGUE_FLOPS:
        return (2.0 * p["K"] + _EPILOGUE_FLOPS[op]) * p["M"] * p["N"]
    if op == "batch_matmul":
        return 2.0 * p["B"] * p["M"] * p["N"] * p["K"]
    if op in _ROW_FLOPS:
        return float(_ROW_FLOPS[op] * n_out)
    if op == "conv1d":
        return 2.0 * n_out * p["CI"] * p["kernel"]
    if op in ("max_pool2d", "avg_pool2d"):
        return float(n_out * p["kernel"] ** 2)
    if op == "global_avg_pool2d":
        return float(p["N"] * p["H"] * p["W"] * p["C"])
    raise GbxferError(f"unknown operator {op!r}")


@dataclasses.dataclass(frozen=True)
class Suite:
    name: str
    description: str
    tasks: tuple[Task, ...]
    path: str = ""

    def select(self, names) -> "Suite":
        """The tasks whose :attr:`Task.name` is in ``names`` (an error names any unknown one)."""
        known = {t.name: t for t in self.tasks}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise GbxferError(f"{self.path or self.name}: no task named {unknown[0]!r}; "
                              f"tasks: {', '.join(list(known)[:8])}, ...")
        return dataclasses.replace(self, tasks=tuple(known[n] for n in names))

    @property
    def networks(self) -> list[str]:
        return list(dict.fromkeys(n for t in self.tasks for n, _ in t.network_weights))

    def network(self, name: str) -> tuple["Suite", list[float]]:
        """The tasks of network ``name`` and how many times each occurs in it (its weights in
        MetaSchedule's task scheduler); an error lists the suite's networks."""
        tasks = tuple(t for t in self.tasks if t.weight_in(name) > 0)
        if not tasks:
            raise GbxferError(f"{self.path or self.name}: no network named {name!r}; "
                              f"networks: {', '.join(self.networks)}")
        return dataclasses.replace(self, tasks=tasks), [t.weight_in(name) for t in tasks]


def load_suite(path) -> Suite:
    """Load and validate a suite YAML file."""
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise GbxferError(f"{path}: cannot read suite ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("networks"), dict):
        raise GbxferError(f"{path}: a suite needs a 'networks' mapping of network -> task list")
    merged: dict[tuple, dict] = {}
    for network, entries in doc["networks"].items():
        if not isinstance(entries, list) or not entries:
            raise GbxferError(f"{path}: network {network!r} needs a non-empty list of tasks")
        for i, entry in enumerate(entries, start=1):
            op, shape, weight = _validate_entry(path, network, i, entry)
            key = (op, shape)
            entry = merged.setdefault(key, {"networks": {}, "weight": 0.0})
            entry["networks"][str(network)] = entry["networks"].get(str(network), 0.0) + weight
            entry["weight"] += weight
    tasks = tuple(Task(op, shape, ",".join(v["networks"]), v["weight"],
                       tuple(v["networks"].items()))
                  for (op, shape), v in merged.items())
    return Suite(str(doc.get("name", path.stem)), str(doc.get("description", "")), tasks,
                 str(path))


def _validate_entry(path, network, i, entry):
    where = f"{path}: network {network!r}, task {i}"
    if not isinstance(entry, dict) or "op" not in entry:
        raise GbxferError(f"{where}: expected a mapping with 'op' and 'shape'")
    op = entry["op"]
    if op not in OPERATORS:
        raise GbxferError(f"{where}: unknown operator {op!r}; known: {', '.join(OPERATORS)}")
    names, defaults = OPERATORS[op]
    shape = entry.get("shape")
    if not isinstance(shape, dict):
        raise GbxferError(f"{where}: 'shape' must be a mapping of {', '.join(names)}")
    extra = sorted(set(shape) - set(names))
    if extra:
        raise GbxferError(f"{where}: unknown shape field {extra[0]!r} for {op} "
                          f"(fields: {', '.join(names)})")
    values = []
    for name in names:
        value = shape.get(name, defaults.get(name))
        if value is None:
            raise GbxferError(f"{where}: shape field {name!r} is missing")
        if isinstance(value, bool) or not isinstance(value, int) or (
                value < 0 if name == "padding" else value <= 0):
            raise GbxferError(f"{where}: shape field {name!r} must be a "
                              f"{'non-negative' if name == 'padding' else 'positive'} integer, "
                              f"got {value!r}")
        values.append((name, value))
    params = dict(values)
    if "kernel" in params:
        size = (params["H"], params["W"]) if "H" in params else (params["L"],)
        if any(n + 2 * params["padding"] < params["kernel"] for n in size):
            raise GbxferError(f"{where}: kernel {params['kernel']} does not fit the padded "
                              f"{'x'.join(map(str, size))} input")
    weight = entry.get("weight", 1)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight <= 0:
        raise GbxferError(f"{where}: 'weight' must be a positive number, got {weight!r}")
    unknown = sorted(set(entry) - {"op", "shape", "weight"})
    if unknown:
        raise GbxferError(f"{where}: unknown field {unknown[0]!r} (fields: op, shape, weight)")
    return op, tuple(values), float(weight)
