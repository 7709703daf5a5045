"""Hardware descriptors: numeric vectors that say what a target is, for the model to condition on.

A :class:`HardwareDescriptor` is derived from a TVM target (llvm ``mcpu``/``mattr``/
``num-cores``, cuda ``arch`` and its limits) — CPUs through archspec's microarchitecture
database (:mod:`~gbxfer.hardware.microarch`), NVIDIA GPUs through a table of sm_37 to sm_90 — and
overridden field by field by a profile's ``descriptor`` mapping. Then, for CPUs, the relation
the probe measures fills what is still missing: the theoretical peak from the clock, or the
clock from the peak (:func:`fill_from_relations`). Whatever cannot be derived is NaN, never a
guess. :attr:`HardwareDescriptor.sources` says where each value came from.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..errors import GbxferError
from ..records.targets import hardware_identity, parse_target
from . import microarch

FIELDS = (
    "is_gpu",            # 1 for GPUs, 0 for CPUs
    "vector_bits",       # SIMD width (CPU)
    "fma",               # fused multiply-add (CPU)
    "cores",             # CPU cores, or GPU streaming multiprocessors
    "threads",           # runtime threads (CPU) / max threads per block (GPU)
    "l1d_kb", "l2_kb", "l3_kb",
    "clock_ghz",
    "peak_gflops",       # float32 peak of this ISA and thread count (measured where we can)
    "mem_gbps",          # memory bandwidth
    "shared_mem_kb",     # shared memory per block (GPU)
    "registers_per_block",
    "warp_size",
    "compute_capability",  # 8.0 for sm_80
)

# Where a descriptor value came from: the target (through the tables), the profile's
# descriptor mapping, a relation between other fields (:func:`fill_from_relations`), or nowhere
# ("given" for any value of a descriptor built from values alone, without sources).
SOURCES = ("target", "profile", "table", "filled", "missing", "given")

# sm_XX -> SMs, shared memory per block (KB), registers per block, peak fp32 GFLOP/s, GB/s, GHz
# (reference cards: P100, V100, T4, A100, RTX 3080, RTX 4090, H100 SXM; K80 for sm_37)
GPU_ARCHS = {
    "sm_37": (13, 48, 65536, 4370, 240, 0.82),
    "sm_60": (56, 48, 65536, 10600, 732, 1.48),
    "sm_61": (28, 48, 65536, 11340, 480, 1.58),
    "sm_70": (80, 48, 65536, 15700, 900, 1.53),
    "sm_75": (40, 48, 65536, 8100, 320, 1.59),
    "sm_80": (108, 48, 65536, 19500, 1555, 1.41),
    "sm_86": (68, 48, 65536, 29800, 760, 1.71),
    "sm_89": (128, 48, 65536, 82600, 1008, 2.52),
    "sm_90": (132, 48, 65536, 67000, 3350, 1.98),
}


@dataclasses.dataclass(frozen=True)
class HardwareDescriptor:
    """A hardware profile's numeric description (see :data:`FIELDS`) and family name.

    ``sources`` holds one of :data:`SOURCES` per field (empty for a descriptor built from
    values alone); ``microarchitecture`` the archspec name of the CPU the relations assume (the
    profile's machine, else the target's mcpu), if known."""

    name: str
    family: str
    values: tuple  # one float per field of FIELDS, NaN when unknown
    sources: tuple = ()
    microarchitecture: str = ""

    def as_dict(self) -> dict:
        return dict(zip(FIELDS, self.values))

    def source_of(self) -> dict:
        """Field -> where its value came from (:data:`SOURCES`)."""
        if self.sources:
            return dict(zip(FIELDS, self.sources))
        return {f: "missing" if math.isnan(v) else "given" for f, v in zip(FIELDS, self.values)}

    @property
    def filled(self) -> list[str]:
        """Fields filled from relations between the others (theoretical peak, clock)."""
        return [f for f, s in self.source_of().items() if s == "filled"]

    def vector(self) -> np.ndarray:
        return np.array(self.values, dtype=float)

    @property
    def missing(self) -> list[str]:
        return [f for f, v in zip(FIELDS, self.values) if math.isnan(v)]

    @classmethod
    def from_target(cls, target, name: str | None = None, family: str | None = None,
                    overrides: dict | None = None, machine: str = "") -> "HardwareDescriptor":
        """Derive a descriptor from a TVM target; ``overrides`` (a profile's ``descriptor``)
        replace derived fields, then :func:`fill_from_relations` fills what follows from them,
        the microarchitecture's reference values (:data:`~gbxfer.hardware.microarch.REFERENCE`:
        caches, typical clock) what is still missing, and the relations again (the peak at
        the reference clock). Unknown override fields are an error.

        The vector ISA is the target's (its ``mcpu``/``mattr``); the FP pipes behind the
        relations are those of ``machine``'s microarchitecture when it names one (a profile's
        ``machine: AMD EPYC (zen3)`` running ``mcpu: nehalem`` code), else the mcpu's. That
        microarchitecture is :attr:`microarchitecture`."""
        t = parse_target(target)
        derived_name, derived_family = hardware_identity(t)
        values = dict.fromkeys(FIELDS, math.nan)
        uarch = None
        kind = t.get("kind")
        if kind == "cuda":
            values.update(_gpu_fields(t))
        elif kind == "llvm":
            uarch = microarch.from_mcpu(t.get("mcpu"))
            values.update(_cpu_fields(t, uarch))
            uarch = microarch.from_machine(machine) or uarch
        sources = {f: "missing" if math.isnan(v) else "target" for f, v in values.items()}
        for key, value in (overrides or {}).items():
            if key not in values:
                raise GbxferError(f"unknown descriptor field {key!r}; fields: {', '.join(FIELDS)}")
            values[key] = math.nan if value is None else float(value)
            sources[key] = "missing" if math.isnan(values[key]) else "profile"
        for key, value in fill_from_relations(values, uarch).items():  # from measured ones
            values[key], sources[key] = value, "filled"
        if values.get("is_gpu") == 0:
            for key, value in microarch.reference_fields(uarch).items():
                if math.isnan(values[key]):
                    values[key], sources[key] = float(value), "table"
        for key, value in fill_from_relations(values, uarch).items():  # from the table's clock
            values[key], sources[key] = value, "filled"
        return cls(name or derived_name, family or derived_family,
                   tuple(float(values[f]) for f in FIELDS), tuple(sources[f] for f in FIELDS),
                   uarch.name if uarch is not None else "")


def fill_from_relations(values: dict, uarch) -> dict:
    """Missing CPU fields that follow from the others (the relation the probe measures):
    ``peak_gflops`` = theoretical peak (:func:`~gbxfer.hardware.microarch.theoretical_peak_gflops`
    of ``uarch``, vector bits, FMA, clock and threads — or the target's cores, the parallelism
    TVM schedules for, when no thread count is given) when the clock is known; else ``clock_ghz``
    = peak / theoretical FLOPs per cycle (the clock at which the peak would be the theoretical
    one) when the peak is known. Returns only the fields filled; nothing when the
    microarchitecture's FP pipes are unknown or both or neither field is known."""
    if values.get("is_gpu") != 0:
        return {}
    threads = values["threads"] if not math.isnan(values["threads"]) else values["cores"]
    clock, peak = values["clock_ghz"], values["peak_gflops"]
    per_ghz = microarch.theoretical_peak_gflops(uarch, values["vector_bits"], values["fma"],
                                                1.0, threads)
    if not per_ghz > 0 or math.isnan(clock) == math.isnan(peak):  # NaN, or no lane/thread
        return {}
    if math.isnan(peak):
        return {"peak_gflops": round(per_ghz * clock, 1)}
    return {"clock_ghz": round(peak / per_ghz, 3)}


GPU_ONLY = ("shared_mem_kb", "registers_per_block", "warp_size", "compute_capability")
CPU_ONLY = ("vector_bits", "fma", "l3_kb")
TARGET_KINDS = ("llvm", "cuda", "rocm", "vulkan", "opencl", "metal", "c")


def describe_hardware(text: str) -> HardwareDescriptor:
    """A descriptor for a TVM target (JSON or old string form) or a hardware profile name."""
    from .profiles import load_profile

    stripped = text.strip()
    if stripped.startswith("{") or stripped.split(" ")[0] in TARGET_KINDS:
        try:
            return HardwareDescriptor.from_target(stripped)
        except ValueError as exc:
            raise GbxferError(f"unreadable target {text!r}: {exc}") from None
    try:
        profile = load_profile(stripped)
    except GbxferError as exc:
        if _profile_file(stripped):  # a profile found and refused: its own reason, not help
            raise
        raise GbxferError(
            f"unknown hardware {text!r} ({exc}). Give a TVM target (JSON such as "
            '\'{"kind": "llvm", "mcpu": "znver3", "num-cores": 2}\' or a string such as '
            "'cuda -arch=sm_80'), or write a profile configs/hardware/NAME.yaml with: name, "
            "family, target, threads, descriptor: {" + ", ".join(FIELDS) + "}") from None
    overrides = {"threads": profile.threads, **profile.descriptor}
    return HardwareDescriptor.from_target(profile.target, profile.name, profile.family,
                                          overrides, profile.machine)


def _profile_file(name_or_path: str) -> bool:
    """Whether ``name_or_path`` finds a profile file (:func:`~gbxfer.config_files.find_config`)."""
    from ..config_files import find_config

    try:
        find_config("hardware", name_or_path)
    except GbxferError:
        return False
    return True


def _cpu_fields(t: dict, uarch) -> dict:
    out = {"is_gpu": 0.0, **dict.fromkeys(GPU_ONLY, 0.0)}  # not applicable, not unknown
    mcpu = t.get("mcpu")
    isa = microarch.vector_isa(uarch) if uarch is not None else None
    if isa is not None:
        out["vector_bits"], out["fma"] = isa
    elif mcpu is None and not t.get("mattr"):
        out["vector_bits"], out["fma"] = 128, 0  # no mcpu: TVM's llvm emits SSE-only code
    mattr = t.get("mattr") or []
    mattr = [mattr] if isinstance(mattr, str) else mattr
    if "+avx512f" in mattr:
        out["vector_bits"] = 512
    elif "+avx2" in mattr or "+avx" in mattr:
        out["vector_bits"] = max(out.get("vector_bits", 0) or 0, 256)
    if "+fma" in mattr:
        out["fma"] = 1
    cores = t.get("num-cores")
    if isinstance(cores, int) and cores > 0:
        out["cores"] = cores
    return out


def _gpu_fields(t: dict) -> dict:
    out = {"is_gpu": 1.0, **dict.fromkeys(CPU_ONLY, 0.0)}  # not applicable, not unknown
    arch = t.get("arch")
    if arch in GPU_ARCHS:
        sms, smem, regs, gflops, gbps, ghz = GPU_ARCHS[arch]
        out.update(cores=sms, shared_mem_kb=smem, registers_per_block=regs, peak_gflops=gflops,
                   mem_gbps=gbps, clock_ghz=ghz)
    if isinstance(arch, str) and arch.startswith("sm_") and arch[3:].isdigit():
        out["compute_capability"] = int(arch[3:]) / 10
    for key, field, scale in (("max_shared_memory_per_block", "shared_mem_kb", 1 / 1024),
                              ("max_threads_per_block", "threads", 1),
                              ("max_num_threads", "threads", 1),
                              ("thread_warp_size", "warp_size", 1)):
        value = t.get(key, t.get(key.replace("_", "-")))
        if isinstance(value, int) and value > 0:
            out[field] = value * scale
    if "warp_size" not in out and arch:
        out["warp_size"] = 32
    return out
