"""Suite tasks as TVM IRModules (tensor expressions from TVM's own workload library and TOPI)."""
from __future__ import annotations

import functools

from ..records.dataset import Dataset
from ..records.suite import Suite, Task
from ._json import to_python


def task_module(task: Task):
    """The IRModule (one PrimFunc ``main``) of a suite task."""
    import tvm
    from tvm import te, topi
    from tvm.s_tir.meta_schedule.testing import te_workload

    p = task.params
    op = task.op
    if op == "conv2d":
        tensors = te_workload.conv2d_nhwc(p["N"], p["H"], p["W"], p["CI"], p["CO"], p["kernel"],
                                          p["stride"], p["padding"])
    elif op == "depthwise_conv2d":
        tensors = te_workload.depthwise_conv2d_nhwc(p["N"], p["H"], p["W"], p["C"], p["kernel"],
                                                    p["stride"], p["padding"])
    elif op == "dense":
        tensors = te_workload.matmul(p["M"], p["N"], p["K"])
    elif op == "batch_matmul":
        tensors = te_workload.batch_matmul_nkkm(p["B"], p["M"], p["N"], p["K"])
    elif op == "softmax":
        tensors = te_workload.softmax_mn(p["M"], p["N"])
    elif op in ("max_pool2d", "avg_pool2d"):
        x = te.placeholder((p["N"], p["H"], p["W"], p["C"]), name="X")
        pad = p["padding"]
        y = topi.nn.pool2d(x, [p["kernel"]] * 2, [p["stride"]] * 2, [1, 1], [pad] * 4,
                           op.split("_")[0], layout="NHWC")
        tensors = (x, y)
    elif op == "global_avg_pool2d":
        x = te.placeholder((p["N"], p["H"], p["W"], p["C"]), name="X")
        tensors = (x, topi.nn.global_pool(x, "avg", layout="NHWC"))
    elif op == "conv1d":
        tensors = te_workload.conv1d_nlc(p["N"], p["L"], p["CI"], p["CO"], p["kernel"],
                                         p["stride"], p["padding"])
    elif op in ("layer_norm", "rms_norm"):
        x = te.placeholder((p["M"], p["N"]), name="X")
        gamma = te.placeholder((p["N"],), name="gamma")
        if op == "layer_norm":
            beta = te.placeholder((p["N"],), name="beta")
            tensors = (x, gamma, beta, topi.nn.layer_norm(x, gamma, beta, axis=[1]))
        else:
            tensors = (x, gamma, topi.nn.rms_norm(x, gamma, axis=[1]))
    elif op == "dense_gelu":  # GELU (erf form) of X W + bias: a dense layer's fused epilogue
        x, w, xw = te_workload.matmul(p["M"], p["N"], p["K"])
        bias = te.placeholder((p["N"],), name="bias")
        tensors = (x, w, bias, te.compute(
            xw.shape, lambda i, j: _gelu(xw[i, j] + bias[j]), name="T_gelu"))
    elif op == "dense_silu_mul":  # SwiGLU's gate: SiLU(X W_gate) * U, U the up-projection
        x, w, xw = te_workload.matmul(p["M"], p["N"], p["K"])
        up = te.placeholder((p["M"], p["N"]), name="U")
        tensors = (x, w, up, te.compute(
            xw.shape, lambda i, j: xw[i, j] * te.sigmoid(xw[i, j]) * up[i, j],
            name="T_silu_mul"))
    else:
        raise ValueError(f"no TVM workload for operator {op!r}")
    return tvm.IRModule({"main": te.create_prim_func(list(tensors))})


def _gelu(y):
    from tvm import te

    return 0.5 * y * (1.0 + te.erf(y * 0.7071067811865476))


def describe_tasks(dataset: Dataset, suite: Suite) -> None:
    """Fill the dataset's task rows (operator, shapes, FLOPs, network, weight) from the suite."""
    by_key = {}
    for task in suite.tasks:
        by_key[suite_task_key(task)] = task
    tasks = dataset.tasks
    for i, key in enumerate(tasks["task_key"]):
        task = by_key.get(key)
        if task is None:
            continue
        tasks.loc[i, ["operator", "description", "args", "flops", "network", "weight"]] = [
            task.op, task.description, task.args, task.flops, task.network, task.weight]


@functools.lru_cache(maxsize=None)
def suite_task_key(task: Task) -> str:
    """The task key (workload structural hash) of a suite task."""
    from tvm.s_tir import meta_schedule as ms

    return str(to_python(ms.database.Workload(task_module(task)).as_json())[0])
