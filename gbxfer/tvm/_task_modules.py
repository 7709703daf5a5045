"""Suite tasks as TVM IRModules (tensor expressions from TVM's own workload library and TOPI)."""
from __future__ import annotations

from ..records.suite import Task


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
    else:
        raise ValueError(f"no TVM workload for operator {op!r}")
    return tvm.IRModule({"main": te.create_prim_func(list(tensors))})
