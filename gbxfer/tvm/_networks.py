"""Whole networks in Relax, tuned end to end: ResNet-18, its tasks, and the compiled network timed
from any prefix of a tuning database.

The network is built in NHWC (the layout of the suite's tasks and of the bundled data), batch
norm folded into a per-channel bias, with seeded random weights: latency does not depend on
their values. ``prepare`` legalizes and fuses it as ``compile_relax`` does; ``extract_tasks`` of
the prepared module gives the tasks MetaSchedule tunes (conv2d + bias + ReLU + residual add
fused). ``compile_network`` takes the network as built, not prepared: it prepares it itself, as
``compile_relax`` does, and a module prepared twice no longer matches the database (3 of
ResNet-18's 19 tasks found).

``packed`` weights (TVM's ``cpu_weight_prepack``): the prepared module's constants are marked
layout-free, so that MetaSchedule's ``RewriteLayout`` lets each tuned program read its weights in
the order it computes (tiles stored contiguously); the build then folds each weight's
rearrangement into a new constant, once. The kernels are other tasks (other workloads in the
database), measured without the rearrangement; inputs and outputs are unchanged.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import GbxferError
from ..records.formats._metaschedule import FAILED_AT_SECS, RECORD_FILE, WORKLOAD_FILE


def resnet18(batch: int = 1, seed: int = 0):
    """ResNet-18 for 224 x 224 images as a Relax IRModule (function ``main``, weights inline)."""
    from tvm import relax

    rng = np.random.default_rng(seed)
    bb = relax.BlockBuilder()

    def const(shape, scale):
        return relax.const(rng.normal(0.0, scale, shape).astype("float32"))

    def conv(x, cin, cout, kernel, stride, relu=True):
        weight = const((kernel, kernel, cin, cout), np.sqrt(2.0 / (kernel * kernel * cin)))
        y = bb.emit(relax.op.nn.conv2d(x, weight, strides=stride, padding=kernel // 2,
                                       data_layout="NHWC", kernel_layout="HWIO"))
        y = bb.emit(relax.op.add(y, const((1, 1, 1, cout), 0.1)))  # batch norm, folded
        return bb.emit(relax.op.nn.relu(y)) if relu else y

    def basic_block(x, cin, cout, stride):
        y = conv(conv(x, cin, cout, 3, stride), cout, cout, 3, 1, relu=False)
        skip = x if stride == 1 and cin == cout else conv(x, cin, cout, 1, stride, relu=False)
        return bb.emit(relax.op.nn.relu(bb.emit(relax.op.add(y, skip))))

    data = relax.Var("data", relax.TensorType((batch, 224, 224, 3), "float32"))
    with bb.function("main", [data]):
        with bb.dataflow():
            x = conv(data, 3, 64, 7, 2)
            x = bb.emit(relax.op.nn.max_pool2d(x, (3, 3), (2, 2), (1, 1), layout="NHWC"))
            cin = 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                x = basic_block(basic_block(x, cin, cout, stride), cout, cout, 1)
                cin = cout
            x = bb.emit(relax.op.nn.adaptive_avg_pool2d(x, (1, 1), layout="NHWC"))
            x = bb.emit(relax.op.reshape(x, (batch, 512)))
            x = bb.emit(relax.op.matmul(x, const((512, 1000), np.sqrt(1.0 / 512))))
            out = bb.emit_output(bb.emit(relax.op.add(x, const((1000,), 0.1))))
        bb.emit_func_output(out)
    return bb.get()


NETWORKS = {"resnet18": resnet18}


def load_network(spec: str):
    """A Relax IRModule: a network named in :data:`NETWORKS`, or ``FILE.py:FUNCTION`` — a
    function of a Python file that returns one (its function ``main`` runs the network)."""
    import importlib.util

    import tvm

    if spec in NETWORKS:
        return NETWORKS[spec]()
    path, _, function = spec.rpartition(":")
    if path and not Path(path).exists():
        raise GbxferError(f"--relax {spec!r}: no such file {path}")
    if not path or not Path(path).is_file():
        raise GbxferError(f"--relax {spec!r}: neither a known network ({', '.join(NETWORKS)}) "
                          "nor FILE.py:FUNCTION")
    module_spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    module = importlib.util.module_from_spec(module_spec)
    try:  # the user's code: its failure is theirs to read, in one line
        module_spec.loader.exec_module(module)
        if not callable(getattr(module, function, None)):
            raise GbxferError(f"{path}: no function {function!r}")
        mod = getattr(module, function)()
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - whatever the file raises
        if isinstance(exc, GbxferError):
            raise
        raise GbxferError(f"--relax {spec}: {type(exc).__name__}: {exc} (run the file alone "
                          "to see its traceback)") from None
    if not isinstance(mod, tvm.ir.IRModule) or "main" not in [g.name_hint for g in
                                                            mod.get_global_vars()]:
        raise GbxferError(f"{path}:{function} must return a Relax IRModule with a 'main'")
    return mod


def prepare(mod, packed: bool = False):
    """Legalized and fused as ``compile_relax`` does it: the module whose tasks are tuned;
    ``packed``: its weights marked layout-free (see the module's docstring)."""
    import tvm
    from tvm import relax

    packing = [relax.transform.AttachAttrLayoutFreeBuffers()] if packed else []
    return tvm.ir.transform.Sequential([
        relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
        relax.transform.FoldConstant(), relax.transform.FuseOps(),
        relax.transform.FuseTIR(), *packing])(mod)


def extract_tasks(mod, target):
    """MetaSchedule's tasks of a prepared module (names, weights = occurrences, IRModules)."""
    from tvm.s_tir import meta_schedule as ms

    return list(ms.relax_integration.extract_tasks(mod, target))


def symbolic_tasks(tasks) -> list[str]:
    """The names of the tasks whose kernels have a buffer dimension known only at run time
    (a data-dependent shape, e.g. after NonZero): MetaSchedule measures fixed shapes only."""
    from tvm import tirx

    def symbolic(task) -> bool:
        functions = [f for mod in task.dispatched for f in mod.functions.values()
                     if isinstance(f, tirx.PrimFunc)]
        return any(not isinstance(dim, tirx.IntImm) for f in functions
                   for p in f.params for dim in getattr(p.ty, "shape", ()))

    return [task.task_name for task in tasks if symbolic(task)]


def database_prefix(folder, n: int):
    """The first ``n`` tuning records of a JSON database folder that ``tune`` wrote (one line
    per measured program, in the order measured), as an in-memory database: the database as it
    was after ``n`` trials."""
    from tvm.s_tir import meta_schedule as ms

    folder = Path(folder)
    workloads = [ms.database.Workload.from_json(json.loads(line)) for line in
                 (folder / WORKLOAD_FILE).read_text().splitlines() if line.strip()]
    database = ms.database.MemoryDatabase()
    workloads = [database.commit_workload(w.mod) for w in workloads]
    lines = [line for line in (folder / RECORD_FILE).read_text().splitlines()
             if line.strip()][:n]
    for line in lines:
        index, record = json.loads(line)
        database.commit_tuning_record(ms.database.TuningRecord.from_json(record,
                                                                         workloads[index]))
    return database


def scheduled_functions(network, database, target, packed: bool = False) -> tuple[int, int]:
    """How many of the prepared network's functions ``database`` schedules, of how many."""
    from tvm import relax, tirx

    with target, database:
        mod = relax.transform.MetaScheduleApplyDatabase()(prepare(network, packed))
    functions = [f for f in mod.functions.values() if isinstance(f, tirx.PrimFunc)]
    return sum(bool(f.attrs and "tirx.is_scheduled" in f.attrs) for f in functions), \
        len(functions)


# The default ``parallel_within`` of network builds: a task's serial pick gives way to its fastest
# parallel program when that is at most 2% slower at 1 thread. Measured by
# scripts/parallel_picks.py --time 0.02 on Zen 4 (2026-12-05): BERT 0.79x the as-tuned latency
# at 2 threads, 0.999x at 1; ResNet-50 0.979x and 1.001x.
PARALLEL_WITHIN = 0.02
# how a network's kernels read their weights (see the module's docstring)
WEIGHT_LAYOUTS = ("as-is", "packed")


def compile_network(network, database, target, parallel_within: float = PARALLEL_WITHIN,
                    packed: bool = False):
    """The network (as built, not prepared) compiled with the best record of each task in
    ``database`` (with ``parallel_within`` > 0: :func:`prefer_parallel`'s pick; 0: the fastest,
    as tuned); functions without one run MetaSchedule's unscheduled default. ``packed``: the
    tasks were tuned with packed weights, which the build rearranges once (constants folded)."""
    import tvm
    from tvm import relax
    from tvm.s_tir import meta_schedule as ms

    if parallel_within > 0:
        database = prefer_parallel(database, parallel_within)
    if not packed:
        return ms.relax_integration.compile_relax(database, network, target, params=None)
    if target.kind.name != "llvm":
        raise GbxferError(f"packed weights are for CPUs, not a {target.kind.name} target")

    # TVM 0.27's CPU passes (its cpu_generic package does not export the lowering ones, so
    # relax.pipeline cannot find them and compile_relax uses a copy of the same list)
    from tvm.relax.backend.cpu_generic import pipeline as cpu

    @tvm.transform.module_pass(opt_level=3)
    def pipeline(mod, _context):  # compile_relax's, the weights' rearrangement split off
        mod = tvm.ir.transform.Sequential(cpu.library_dispatch_passes(target))(mod)
        mod = relax.transform.MetaScheduleApplyDatabase()(prepare(mod, packed=True))
        return tvm.ir.transform.Sequential([
            relax.transform.SplitLayoutRewritePreproc(), relax.transform.LiftTransformParams(),
            relax.transform.FoldConstant(), relax.transform.DeadCodeElimination(),
            *cpu.dataflow_lower_passes(target), *cpu.finalize_passes(target)])(mod)

    with target, database, tvm.transform.PassContext(opt_level=3):
        return relax.build(network, target=target, relax_pipeline=pipeline)


def packable(prepared) -> bool:
    """Whether a network prepared with ``packed`` has weights to pack: constants that a kernel
    reads. Weights given as parameters of ``main`` (beyond its ``num_input``) would have to be
    packed by the caller: :class:`GbxferError`."""
    from tvm import tirx

    main = prepared["main"]
    inputs = main.attrs.get("num_input") if main.attrs else None
    if inputs is not None and int(inputs) < len(main.params):
        raise GbxferError(f"--weight-layout packed: the network's main takes "
                          f"{len(main.params) - int(inputs)} weights as parameters beyond its "
                          "num_input; bind them as constants (relax.transform.BindParams) or "
                          "give --weight-layout as-is")
    return any(f.attrs and len(f.attrs.get("layout_free_buffers", ())) for f in
               prepared.functions.values() if isinstance(f, tirx.PrimFunc))


def compile_tuned(network, profile, folder: Path, parallel_within: float = PARALLEL_WITHIN,
                  packed: bool = False) -> tuple[object, tuple[int, int]]:
    """The network compiled for ``profile`` with the tuning database in ``folder``
    (``parallel_within``, ``packed``: see :func:`compile_network`), and how many of its
    functions the database scheduled, of how many."""
    import tvm
    from tvm.s_tir import meta_schedule as ms

    database = ms.database.JSONDatabase(work_dir=str(folder))
    target = tvm.target.Target(profile.target)
    return compile_network(network, database, target, parallel_within, packed), \
        scheduled_functions(network, database, target, packed)


def end_to_end_ms(network, profile, folder: Path, parallel_within: float = PARALLEL_WITHIN,
                  packed: bool = False) -> tuple[float, tuple[int, int]]:
    """:func:`compile_tuned`'s network timed (median of 5, milliseconds), and its scheduled
    functions."""
    executable, scheduled = compile_tuned(network, profile, folder, parallel_within, packed)
    seconds = time_network(executable, network_inputs(network), repeat=5)
    return 1e3 * float(np.median(seconds)), scheduled


def has_parallel_loop(record) -> bool:
    """Whether a tuning record's (post-processed) trace parallelises a loop: a schedule whose
    outer tiles all have extent 1 has none and runs on one thread however many there are."""
    return any(inst.kind.name == "Parallel" for inst in record.trace.insts)


def prefer_parallel(database, within: float):
    """An in-memory database of one record per workload of ``database``: the fastest, or where
    that has no parallel loop, the fastest that has one if it is at most ``within`` (a
    fraction) slower. Tuned at 1 thread, a serial kernel can be the fastest by a few percent
    and then not speed up on more threads."""
    import tvm_ffi
    from tvm.s_tir import meta_schedule as ms

    def seconds(record) -> float:
        run = [float(s) for s in record.run_secs or []]
        return float(np.mean(run)) if run and max(run) < FAILED_AT_SECS else np.inf

    by_workload: dict = {}
    for record in database.get_all_tuning_records():
        by_workload.setdefault(tvm_ffi.structural_hash(record.workload.mod), []).append(record)
    picked = ms.database.MemoryDatabase()
    for records in by_workload.values():
        best = min(records, key=seconds)
        if not np.isfinite(seconds(best)):
            continue
        parallel = [r for r in records if has_parallel_loop(r)]
        if not has_parallel_loop(best) and parallel:
            fastest = min(parallel, key=seconds)
            if seconds(fastest) <= seconds(best) * (1 + within):
                best = fastest
        picked.commit_tuning_record(ms.database.TuningRecord(
            best.trace, picked.commit_workload(best.workload.mod), best.run_secs, best.target,
            best.args_info))
    return picked


def network_inputs(mod, seed: int = 0) -> list[np.ndarray]:
    """Random inputs for the parameters of the module's ``main``."""
    rng = np.random.default_rng(seed)
    return [rng.random([int(d) for d in p.ty.shape.values]).astype(str(p.ty.dtype))
            for p in mod["main"].params]


def time_network(executable, inputs, repeat: int = 5, min_repeat_ms: int = 200) -> list[float]:
    """Seconds per inference of a compiled network on the CPU, ``repeat`` times (each the
    mean of enough runs to last ``min_repeat_ms``)."""
    import tvm
    from tvm import relax

    device = tvm.cpu()
    vm = relax.VirtualMachine(executable, device)
    args = [tvm.runtime.tensor(x, device) for x in inputs]
    timer = vm.time_evaluator("main", device, number=1, repeat=repeat,
                              min_repeat_ms=min_repeat_ms)
    return [float(s) for s in timer(*args).results]
