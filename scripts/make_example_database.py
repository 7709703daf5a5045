"""Write a small MetaSchedule database with TVM 0.27's own ``tune_tir`` (test and README data).

    python scripts/make_example_database.py --out gbxfer/data/example-metaschedule --trials 32

A 128x128x128 float32 matmul tuned for this CPU (LLVM's name for it as ``mcpu``), 1 thread.
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile


def tune_matmul(work_dir: str, trials: int, seed: int, n: int = 128) -> None:
    os.environ.setdefault("TVM_NUM_THREADS", "1")  # read when the runner's worker starts
    import tvm
    from tvm import te
    from tvm.s_tir import meta_schedule as ms

    from gbxfer.tvm import local_builder

    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="matmul")
    mod = tvm.IRModule({"main": te.create_prim_func([a, b, c])})
    from tvm.target import codegen

    # Code for an ISA the host lacks dies of SIGILL in the runner: use the host's own CPU.
    cpu = codegen.llvm_get_system_cpu()
    target = tvm.target.Target({"kind": "llvm", "mcpu": cpu, "num-cores": 1})
    ms.tir_integration.tune_tir(
        mod, target, work_dir, max_trials_global=trials, num_trials_per_iter=16,
        builder=local_builder(), runner=ms.runner.LocalRunner(), seed=seed,
        num_tuning_cores=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--trials", type=int, default=32)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        tune_matmul(work, args.trials, args.seed)
        os.makedirs(args.out, exist_ok=True)
        for name in ("database_workload.json", "database_tuning_record.json"):
            shutil.copy(os.path.join(work, name), os.path.join(args.out, name))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
