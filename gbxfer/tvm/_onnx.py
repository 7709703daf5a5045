"""ONNX models tuned end to end: imported into Relax with every input shape fixed, then, after
tuning, compiled with the database and checked against ONNX Runtime.

``load_onnx`` validates before anything is written: the file is an ONNX model, every input has
a static shape (its own or one given by ``--input-shape``), every operator is one TVM's Relax
ONNX frontend converts; the weights become constants of the Relax module, so the tasks
extracted from it are the ones the compiled network runs. ``check_against_onnxruntime``
compiles the network with the tuning database, writes the library (``module.so``), runs it and
ONNX Runtime on the same seeded random inputs, compares every output and times both.
"""
from __future__ import annotations

import contextlib
import dataclasses
import gc
import logging
import math
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from ..errors import GbxferError
from ..hardware.profiles import HardwareProfile
from ._networks import PARALLEL_WITHIN

log = logging.getLogger("gbxfer")

# Outputs match when |tvm - onnxruntime| <= ATOL * scale + RTOL * |onnxruntime| everywhere, with
# scale the output's largest |onnxruntime| value (1 when that is 0): float32 kernels that sum in
# another order differ by a few ulps of the largest terms, not of each element.
RTOL = 1e-3
ATOL = 1e-4
DIRECT_OPS = {"If"}  # converted by the frontend itself, not through its converter map
# Layouts a model's convolutions can be converted to before tuning (relax.transform.
# ConvertLayout; the inputs and outputs keep the model's own): ``nhwc`` is channels-last with
# HWIO kernels, the layout of the suite's tasks and so of the pretrained model's training data.
LAYOUTS = {"as-is": None, "nhwc": {"relax.nn.conv2d": ["NHWC", "HWIO"]}}


@dataclasses.dataclass
class OnnxNetwork:
    """An ONNX model imported into Relax, every input shape fixed."""

    path: Path
    inputs: dict[str, tuple[tuple[int, ...], np.dtype]]  # graph order: name -> (shape, dtype)
    outputs: list[str]
    mod: object  # the Relax IRModule: function ``main``, weights bound as constants
    layout: str = "as-is"  # the convolutions' (as-is where the model has none)
    convolutions: bool = False  # whether the model has any


def _nodes(graph):
    """Every node of ``graph``, those of its subgraphs (If branches) included."""
    import onnx

    for node in graph.node:
        yield node
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                yield from _nodes(attribute.g)
            elif attribute.type == onnx.AttributeProto.GRAPHS:
                for subgraph in attribute.graphs:
                    yield from _nodes(subgraph)


def unsupported_operators(model) -> dict[str, str]:
    """Operators of ``model`` that TVM's Relax ONNX frontend cannot convert: op type -> the
    first node's name ("" when unnamed)."""
    from tvm.relax.frontend.onnx.onnx_frontend import _get_convert_map

    known = set(_get_convert_map()) | DIRECT_OPS
    found: dict[str, str] = {}
    for node in _nodes(model.graph):
        if node.op_type not in known:
            found.setdefault(node.op_type, node.name)
    return found


def _read_model(path: Path):
    import onnx

    try:
        model = onnx.load(str(path))
    except Exception as exc:  # protobuf's DecodeError, or an external-data file missing
        raise GbxferError(f"{path}: not an ONNX model ({type(exc).__name__}: "
                          f"{str(exc).splitlines()[0] if str(exc) else 'unreadable'})") from exc
    if not model.graph.output:  # protobuf reads some other files as an empty message
        raise GbxferError(f"{path}: not an ONNX model (no graph outputs)")
    if model.ir_version < 3:
        raise GbxferError(f"{path}: ONNX IR version {model.ir_version}; TVM's ONNX frontend "
                          "needs 3 or later")
    return model


def _dims(value_info) -> list[int | str] | None:
    """An input's declared dims (an int when static, its name or '?' when not); None when its
    rank is unknown."""
    tensor = value_info.type.tensor_type
    if not tensor.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else
            (d.dim_param or "?") for d in tensor.shape.dim]


def _fixed_shape(name: str, dims, given) -> tuple[int, ...]:
    """The static shape of input ``name``: ``given`` (from --input-shape), checked against the
    model's declared dims, or the declared dims when all are static."""
    shown = "[" + ", ".join(str(d) for d in dims) + "]" if dims is not None else "unknown"
    if given is not None:
        if dims is not None and (len(given) != len(dims) or any(
                isinstance(d, int) and d != g for d, g in zip(dims, given))):
            raise GbxferError(f"--input-shape {name}={','.join(map(str, given))}: the model's "
                              f"input {name!r} has shape {shown}")
        return tuple(given)
    if dims is None:
        raise GbxferError(f"input {name!r} has no declared shape: give it with --input-shape "
                          f"{name}=D1,D2,...")
    dynamic = [d for d in dims if not isinstance(d, int)]
    if dynamic:
        example = ",".join(str(d) if isinstance(d, int) else "1" for d in dims)
        raise GbxferError(f"input {name!r} has a dynamic dimension {dynamic[0]!r} (shape "
                          f"{shown}): fix it with --input-shape {name}={example}")
    return tuple(dims)


def load_onnx(path, input_shapes: dict[str, tuple[int, ...]] | None = None,
              layout: str = "as-is") -> OnnxNetwork:
    """The ONNX model at ``path`` imported into Relax, its inputs' dynamic dimensions fixed by
    ``input_shapes`` (input name -> shape), its convolutions in ``layout`` (of ``LAYOUTS``).
    Raises :class:`GbxferError` (one line) for a file that is no ONNX model, an input left
    dynamic, an ``input_shapes`` name the model lacks, an operator the frontend cannot
    convert, or any other import failure."""
    import onnx
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    path = Path(path)
    model = _read_model(path)
    unsupported = unsupported_operators(model)  # first: no --input-shape can fix these
    if unsupported:
        listed = ", ".join(f"{op} (node {node!r})" if node else op
                           for op, node in sorted(unsupported.items()))
        raise GbxferError(f"{path}: operators TVM's ONNX frontend cannot convert: {listed}")
    input_shapes = dict(input_shapes or {})
    weights = {init.name for init in model.graph.initializer}
    declared = [i for i in model.graph.input if i.name not in weights]
    names = [i.name for i in declared]
    unknown = [name for name in input_shapes if name not in names]
    if unknown:
        raise GbxferError(f"--input-shape {unknown[0]}: the model has no input {unknown[0]!r}; "
                          f"its inputs: {', '.join(names) or '-'}")
    inputs = {}
    for value_info in declared:
        name = value_info.name
        if not value_info.type.HasField("tensor_type"):
            raise GbxferError(f"input {name!r} is not a tensor: gbxfer feeds tensors only")
        elem_type = value_info.type.tensor_type.elem_type
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type)) if elem_type else None
        if dtype is None or dtype.kind not in "fiub":
            raise GbxferError(f"input {name!r} has element type "
                              f"{onnx.TensorProto.DataType.Name(elem_type)}: gbxfer feeds "
                              "float, integer and bool inputs only")
        inputs[name] = (_fixed_shape(name, _dims(value_info), input_shapes.get(name)), dtype)
    # The frontend warns (Python warnings: onnx.checker's findings) and, when it fails, leaves a
    # half-built BlockBuilder whose C++ destructor logs to stderr when freed: both are kept off
    # stderr (logged at debug level), so that a refusal is the one error line.
    failure = mod = None
    with _stderr_captured() as captured, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            mod = from_onnx(model, shape_dict={name: list(shape) for name, (shape, _) in
                                               inputs.items()}, keep_params_in_input=False)
        except Exception as exc:  # noqa: BLE001 - the frontend raises ValueError to TVMError
            message = str(exc).strip().splitlines()
            failure = f"{type(exc).__name__}: {message[-1] if message else ''}"
        gc.collect()  # the failed import's frames and builder, freed while stderr is captured
    checker = [" ".join(str(w.message).split()) for w in caught]
    for line in [*checker, *captured]:
        log.debug("TVM's ONNX frontend: %s", line)
    if failure is not None:
        hint = f" (onnx.checker: {checker[0]})" if checker else ""
        raise GbxferError(f"{path}: TVM's ONNX frontend cannot import it: {failure}{hint}")
    convolutions = any(n.op_type == "Conv" for n in _nodes(model.graph))
    if not convolutions:
        layout = "as-is"  # no convolution to convert
    if LAYOUTS[layout] is not None:
        try:
            mod = relax.transform.ConvertLayout(LAYOUTS[layout])(mod)
        except Exception as exc:  # noqa: BLE001 - TVM's InternalError (e.g. an unknown shape)
            message = str(exc).strip().splitlines()
            raise GbxferError(f"{path}: TVM cannot convert its convolutions to {layout} ("
                              f"{message[-1] if message else exc}); give --layout as-is") from None
    return OnnxNetwork(path, inputs, [o.name for o in model.graph.output], mod, layout,
                       convolutions)


@contextlib.contextmanager
def _stderr_captured():
    """File descriptor 2 (where TVM's C++ logging writes) into a temporary file while the block
    runs; yields a list that holds the captured lines afterwards."""
    lines: list[str] = []
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no stderr to capture
        yield lines
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield lines
        finally:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            lines.extend(line for line in sink.read().decode("utf-8", "replace").splitlines()
                         if line.strip())


def random_inputs(network: OnnxNetwork, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded random inputs: standard normal floats; integers and bools 0 or 1 (valid token
    ids, masks and segment ids of any vocabulary)."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for name, (shape, dtype) in network.inputs.items():
        if dtype.kind == "f":
            arrays[name] = rng.standard_normal(shape).astype(dtype)
        else:
            arrays[name] = rng.integers(0, 2, shape).astype(dtype)
    return arrays


def compare_outputs(names, actual, expected, rtol: float = RTOL,
                    atol: float = ATOL) -> dict[str, dict]:
    """Per output: the largest absolute difference of ``actual`` from ``expected``, the output's
    scale (largest |expected|) and whether every element is within tolerance (NaN where both are
    NaN counts as equal)."""
    report = {}
    for name, a, e in zip(names, actual, expected, strict=True):
        a, e = np.asarray(a, dtype="float64"), np.asarray(e, dtype="float64")
        if a.shape != e.shape:
            report[name] = {"max_abs_diff": None, "scale": None, "within_tolerance": False,
                            "shape": list(a.shape), "expected_shape": list(e.shape)}
            continue
        finite = np.abs(e[np.isfinite(e)])
        scale = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
        diff = np.abs(a - e)
        same = (a == e) | (np.isnan(a) & np.isnan(e))  # equal infinities, NaN for NaN
        diff[same] = 0.0
        within = bool(np.all(same | (diff <= atol * scale + rtol * np.abs(e))))
        report[name] = {"max_abs_diff": float(diff.max()) if diff.size else 0.0,
                        "scale": scale, "within_tolerance": within}
    return report


def onnxruntime_session(path, threads: int):
    """An ONNX Runtime CPU session of the model at ``path`` on ``threads`` intra-op threads;
    :class:`GbxferError` when ONNX Runtime cannot load the model."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    try:
        return onnxruntime.InferenceSession(str(path), options,
                                            providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime's own error classes, one per failure kind
        message = str(exc).strip().splitlines()
        raise GbxferError(f"{path}: ONNX Runtime, which checks the tuned network, cannot load "
                          f"it: {message[0] if message else type(exc).__name__}") from exc


def time_onnxruntime(session, feeds, repeat: int = 5, min_repeat_ms: int = 200) -> list[float]:
    """Seconds per inference of an ONNX Runtime session, ``repeat`` times (each the mean of
    enough runs to last ``min_repeat_ms``), as ``time_network`` times a compiled network."""
    session.run(None, feeds)  # warm-up
    start = time.perf_counter()
    session.run(None, feeds)
    number = max(1, math.ceil(min_repeat_ms / 1e3 / max(time.perf_counter() - start, 1e-9)))
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            session.run(None, feeds)
        seconds.append((time.perf_counter() - start) / number)
    return seconds


def run_executable(executable, arrays) -> list[np.ndarray]:
    """The outputs of a compiled network's ``main`` on the CPU, a tuple flattened."""
    import tvm
    from tvm import relax

    device = tvm.cpu()
    result = relax.VirtualMachine(executable, device)["main"](
        *[tvm.runtime.tensor(x, device) for x in arrays])
    if isinstance(result, tvm.runtime.Tensor):
        return [result.numpy()]
    return [r.numpy() for r in result]


def export_module(executable, path: Path) -> None:
    """``executable.export_library`` to ``path``, through a temporary file in the same folder
    so that ``path`` is never half-written (the name keeps the suffix: it picks the format)."""
    temporary = path.with_name(f".{path.stem}-{os.getpid()}{path.suffix}")
    try:
        executable.export_library(str(temporary))
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def check_against_onnxruntime(network: OnnxNetwork, folder: Path, profile: HardwareProfile,
                              out: Path, session, seed: int = 0,
                              parallel_within: float = PARALLEL_WITHIN,
                              packed: bool = False) -> dict:
    """Compile ``network`` with the tuning database in ``folder`` (``parallel_within``,
    ``packed``: see :func:`~gbxfer.tvm._networks.compile_network`), write ``out/module.so``, run
    it and ONNX Runtime (``session``, from :func:`onnxruntime_session` on the profile's thread
    count; TVM on as many) on the same seeded random inputs, compare the outputs and time both
    (median of 5, milliseconds). Returns the summary's ONNX part."""
    import tvm

    from ._networks import compile_tuned, time_network

    # TVM sizes its thread pool once, from TVM_NUM_THREADS (`gbxfer tune` sets the profile's);
    # the summary states the count it timed with
    tvm_threads = int(tvm.get_global_func("runtime.NumThreads")())
    executable, scheduled = compile_tuned(network.mod, profile, folder, parallel_within, packed)
    export_module(executable, out / "module.so")
    feeds = random_inputs(network, seed)
    arrays = list(feeds.values())
    outputs = compare_outputs(network.outputs, run_executable(executable, arrays),
                              session.run(network.outputs, feeds), rtol=RTOL, atol=ATOL)
    tvm_ms = 1e3 * float(np.median(time_network(executable, arrays, repeat=5)))
    onnx_runtime_ms = 1e3 * float(np.median(time_onnxruntime(session, feeds, repeat=5)))
    return {"onnx": str(network.path),
            "input_shapes": {name: list(shape) for name, (shape, _) in network.inputs.items()},
            "tvm_ms": tvm_ms, "onnx_runtime_ms": onnx_runtime_ms,
            "threads": {"tvm": tvm_threads, "onnx_runtime": profile.threads},
            "speedup": onnx_runtime_ms / tvm_ms,
            "max_abs_diff": {name: o["max_abs_diff"] for name, o in outputs.items()},
            "outputs": outputs,
            "tolerance": {"rtol": RTOL, "atol": ATOL, "rule": "|tvm - onnxruntime| <= atol x "
                          "max|onnxruntime output| + rtol x |onnxruntime|, per output"},
            "outputs_match": all(o["within_tolerance"] for o in outputs.values()),
            "scheduled_functions": scheduled}
