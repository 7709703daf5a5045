"""ONNX models built in code with ``onnx.helper`` for the ``gbxfer tune --onnx`` tests (no
downloads), and the tests' shared arguments."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SMALL = ["--trials-per-iter", "8", "--population", "16", "--repeats", "1",
         "--min-repeat-ms", "1", "-q"]
TINY = [*SMALL, "--cost-model", "random"]


def write_model(path, nodes, inputs, outputs, weights=()):
    graph = helper.make_graph(nodes, path.stem, inputs, outputs,
                              [numpy_helper.from_array(w, name) for name, w in weights])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(path))
    return path


def residual_block(path, batch: int | str = 1, channels: int = 8):
    """x -> conv 3x3 -> batch norm -> ReLU, plus x: input 'x', output 'y' (N, C, 16, 16);
    ``batch`` a name makes the batch dimension dynamic."""
    rng = np.random.default_rng(0)
    c = channels
    weights = [("w", rng.normal(0, 0.3, (c, c, 3, 3))), ("b", rng.normal(0, 0.1, c)),
               ("gamma", 1 + 0.1 * rng.normal(size=c)), ("beta", rng.normal(0, 0.1, c)),
               ("mean", rng.normal(0, 0.1, c)), ("var", 1 + rng.random(c))]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["conv"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["conv", "gamma", "beta", "mean", "var"],
                              ["bn"]),
             helper.make_node("Relu", ["bn"], ["relu"]),
             helper.make_node("Add", ["relu", "x"], ["y"])]
    shape = [batch, c, 16, 16]
    return write_model(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
                       [(name, w.astype("float32")) for name, w in weights])


def attention_block(path, seq: int = 8, hidden: int = 16):
    """Single-head self-attention: softmax(x Wq (x Wk)^T / sqrt(hidden)) x Wv; outputs
    'attention' (1, seq, hidden) and 'weights' (1, seq, seq)."""
    rng = np.random.default_rng(1)
    weights = [(name, rng.normal(0, hidden ** -0.5, (hidden, hidden)).astype("float32"))
               for name in ("wq", "wk", "wv")]
    weights.append(("scale", np.array(hidden ** -0.5, dtype="float32")))
    nodes = [helper.make_node("MatMul", ["x", "wq"], ["q"]),
             helper.make_node("MatMul", ["x", "wk"], ["k"]),
             helper.make_node("MatMul", ["x", "wv"], ["v"]),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "kt"], ["scores"]),
             helper.make_node("Mul", ["scores", "scale"], ["scaled"]),
             helper.make_node("Softmax", ["scaled"], ["weights"], axis=-1),
             helper.make_node("MatMul", ["weights", "v"], ["attention"])]
    return write_model(path, nodes,
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, hidden])],
                       [helper.make_tensor_value_info("attention", TensorProto.FLOAT,
                                                      [1, seq, hidden]),
                        helper.make_tensor_value_info("weights", TensorProto.FLOAT,
                                                      [1, seq, seq])],
                       weights)


def run_error(argv, capsys) -> str:
    """The one line ``gbxfer tune: error: ...`` of a failing run (exit status 2)."""
    from gbxfer.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("gbxfer tune: error: ")
    return err.strip()


def dense_block(path, seq: int = 8, hidden: int = 16):
    """Two dense layers, each x W + b (two constants per kernel), ReLU between: 'x' -> 'y'."""
    rng = np.random.default_rng(2)
    weights = [("w1", rng.normal(0, hidden ** -0.5, (hidden, 2 * hidden))),
               ("b1", rng.normal(0, 0.1, 2 * hidden)),
               ("w2", rng.normal(0, hidden ** -0.5, (2 * hidden, hidden))),
               ("b2", rng.normal(0, 0.1, hidden))]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
             helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["o"]),
             helper.make_node("Add", ["o", "b2"], ["y"])]
    return write_model(path, nodes,
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, hidden])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, hidden])],
                       [(name, w.astype("float32")) for name, w in weights])
