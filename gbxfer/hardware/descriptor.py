"""Hardware descriptors: numeric vectors that say what a target is, for the model to condition on.

A :class:`HardwareDescriptor` is derived from a TVM target (llvm ``mcpu``/``mattr``/
``num-cores``, cuda ``arch`` and its limits) through a built-in table of x86/ARM ISA levels and
NVIDIA architectures (sm_60 to sm_90), and overridden field by field by a profile's
``descriptor`` mapping. Whatever cannot be derived is NaN, never a guess.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..errors import GbxferError
from ..records.targets import hardware_identity, parse_target

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

# x86/ARM mcpu -> (vector bits, fma)
CPU_ISAS = {
    **{m: (512, 1) for m in ("skylake-avx512", "cascadelake", "cooperlake", "icelake-server",
                             "icelake-client", "sapphirerapids", "tigerlake", "znver4",
                             "znver5", "x86-64-v4")},
    **{m: (256, 1) for m in ("haswell", "broadwell", "skylake", "alderlake", "raptorlake",
                             "znver1", "znver2", "znver3", "x86-64-v3", "core-avx2")},
    **{m: (256, 0) for m in ("sandybridge", "ivybridge", "corei7-avx", "core-avx-i", "btver2",
                             "bdver1")},
    **{m: (128, 0) for m in ("nehalem", "westmere", "corei7", "x86-64-v2", "silvermont",
                             "x86-64", "generic")},
    **{m: (128, 1) for m in ("cortex-a53", "cortex-a72", "cortex-a76", "neoverse-n1",
                             "neoverse-v1", "apple-m1", "carmel")},
}

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
    """A hardware profile's numeric description (see :data:`FIELDS`) and family name."""

    name: str
    family: str
    values: tuple  # one float per field of FIELDS, NaN when unknown

    def as_dict(self) -> dict:
        return dict(zip(FIELDS, self.values))

    def vector(self) -> np.ndarray:
        return np.array(self.values, dtype=float)

    @property
    def missing(self) -> list[str]:
        return [f for f, v in zip(FIELDS, self.values) if math.isnan(v)]

    @classmethod
    def from_target(cls, target, name: str | None = None, family: str | None = None,
                    overrides: dict | None = None) -> "HardwareDescriptor":
        """Derive a descriptor from a TVM target; ``overrides`` (a profile's ``descriptor``)
        replace derived fields. Unknown override fields are an error."""
        t = parse_target(target)
        derived_name, derived_family = hardware_identity(t)
        values = dict.fromkeys(FIELDS, math.nan)
        kind = t.get("kind")
        if kind == "cuda":
            values.update(_gpu_fields(t))
        elif kind == "llvm":
            values.update(_cpu_fields(t))
        for key, value in (overrides or {}).items():
            if key not in values:
                raise GbxferError(f"unknown descriptor field {key!r}; fields: {', '.join(FIELDS)}")
            values[key] = math.nan if value is None else float(value)
        return cls(name or derived_name, family or derived_family,
                   tuple(float(values[f]) for f in FIELDS))


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
        raise GbxferError(
            f"unknown hardware {text!r} ({exc}). Give a TVM target (JSON such as "
            '\'{"kind": "llvm", "mcpu": "znver3", "num-cores": 2}\' or a string such as '
            "'cuda -arch=sm_80'), or write a profile configs/hardware/NAME.yaml with: name, "
            "family, target, threads, descriptor: {" + ", ".join(FIELDS) + "}") from None
    overrides = {"threads": profile.threads, **profile.descriptor}
    return HardwareDescriptor.from_target(profile.target, profile.name, profile.family,
                                          overrides)


def _cpu_fields(t: dict) -> dict:
    out = {"is_gpu": 0.0, **dict.fromkeys(GPU_ONLY, 0.0)}  # not applicable, not unknown
    mcpu = t.get("mcpu")
    if mcpu in CPU_ISAS:
        out["vector_bits"], out["fma"] = CPU_ISAS[mcpu]
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
