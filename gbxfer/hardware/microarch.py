"""CPU microarchitectures from archspec: which CPU an LLVM ``mcpu`` names, its vector ISA, its peak.

archspec (the microarchitecture database Spack maintains) knows each CPU's features and the
compiler flags that target it; LLVM ``mcpu`` names are read from its clang flags (``-march=X``,
``-mcpu=X``), so the mapping follows archspec's releases instead of a hand table. What archspec
does not record, the floating-point pipes that set the theoretical peak, is the small table
:data:`FP_PIPES` below.

Theoretical float32 peak (GFLOP/s), see :func:`theoretical_peak_gflops`::

    clock (GHz) x lanes (vector bits / 32) x flops per lane per cycle x threads

    flops per lane per cycle = 2 x FMA pipes                      for FMA code
                             = 2 x min(mul pipes, add pipes, FP pipes / 2)
                                                                  for code of separate multiplies
                                                                  and adds, one of each per result
"""
from __future__ import annotations

import functools
import math
import re
from typing import NamedTuple

import archspec.cpu
from archspec.cpu import Microarchitecture

# LLVM CPU names archspec has no target or clang flags for -> the archspec target of the same
# ISA and core (Tiger Lake is a client Ice Lake core; Raptor/Meteor Lake are Alder Lake cores).
MCPU_ALIASES = {
    "icelake-server": "icelake", "tigerlake": "icelake", "cooperlake": "cascadelake",
    "emeraldrapids": "sapphirerapids", "graniterapids": "sapphirerapids",
    "raptorlake": "alderlake", "meteorlake": "alderlake", "core-avx2": "haswell",
    "core-avx-i": "ivybridge", "corei7-avx": "sandybridge", "corei7": "nehalem",
    "silvermont": "x86_64_v2", "generic": "x86_64", "cortex-a53": "aarch64",
    "cortex-a76": "armv8.2a", "carmel": "armv8.2a",
}


# Intel server generations archspec folds into the target of the same ISA (MCPU_ALIASES), told
# apart by the CPUID model (family 6) so that two such machines keep two names: Emerald Rapids
# (0xCF) reads as sapphirerapids, Granite Rapids (0xAD, 0xAE) too. The model is what the
# hypervisor reports (a Sapphire Rapids guest reported 167), and a guest that masks more
# features than MASKED_IN_GUESTS reads as an older target, where no generation applies; other
# aliases (Tiger Lake and Ice Lake, Raptor Lake and Alder Lake) are not told apart.
INTEL_GENERATIONS = {0xCF: "emeraldrapids", 0xAD: "graniterapids", 0xAE: "graniterapids"}


def generation(uarch: Microarchitecture, vendor: str, family: int, model: int) -> str:
    """The name of the CPU generation: ``uarch.name``, or the generation of
    :data:`INTEL_GENERATIONS` a CPUID family 6 ``model`` gives where archspec folds it into
    ``uarch`` (an Emerald Rapids, model 207, -> ``emeraldrapids``, not ``sapphirerapids``)."""
    name = INTEL_GENERATIONS.get(model) if (vendor, family) == ("GenuineIntel", 6) else None
    return name if name and MCPU_ALIASES.get(name) == uarch.name else uarch.name


class Pipes(NamedTuple):
    """Floating-point pipes of one core for vector operations of one width: how many pipes
    execute an FMA, a multiply, an add, and how many distinct pipes there are among them."""

    fma: int
    mul: int
    add: int
    pipes: int


# archspec target -> {vector bits -> Pipes}. A target not listed uses its nearest listed
# archspec ancestor (zen3 for a descendant of zen3); a width its row lacks is unknown.
# Sources: Agner Fog, "The microarchitecture of Intel, AMD and VIA CPUs"; uops.info port
# assignments (vmulps/vaddps/vfmadd231ps); AMD's Zen 4 and Zen 5 optimisation guides.
_ZEN = Pipes(2, 2, 2, 4)  # two FMA/multiply pipes and two separate FP add pipes
_SKYLAKE = Pipes(2, 2, 2, 2)  # multiplies, adds and FMAs share ports 0 and 1
FP_PIPES: dict[str, dict[int, Pipes] | None] = {
    # Zen 1: four 128-bit pipes; a 256-bit operation takes two of them.
    "zen": {128: _ZEN, 256: Pipes(1, 1, 1, 2)},
    "zen2": {128: _ZEN, 256: _ZEN},  # zen3 inherits this row
    # Zen 4 runs 512-bit operations double-pumped on its 256-bit pipes.
    "zen4": {128: _ZEN, 256: _ZEN, 512: Pipes(1, 1, 1, 2)},
    # Zen 5 desktop/server: full 512-bit pipes (mobile Zen 5 double-pumps: half this at 512).
    "zen5": {128: _ZEN, 256: _ZEN, 512: _ZEN},
    "nehalem": {128: Pipes(0, 1, 1, 2)},  # multiply on port 0, add on port 1
    "sandybridge": {128: Pipes(0, 1, 1, 2), 256: Pipes(0, 1, 1, 2)},
    "haswell": {128: Pipes(2, 2, 1, 2), 256: Pipes(2, 2, 1, 2)},  # add on port 1 only
    "skylake": {128: _SKYLAKE, 256: _SKYLAKE},
    # Skylake-SP, Cascade Lake, Ice Lake-SP: two 512-bit FMA units (ports 0+1 fused, port 5).
    # Some Xeon Bronze/Silver/Gold 5xxx SKUs of Skylake-SP and Cascade Lake, and the client
    # Ice Lake/Tiger Lake (archspec's icelake is both), have one: half this at 512 bits.
    "skylake_avx512": {128: _SKYLAKE, 256: _SKYLAKE, 512: _SKYLAKE},
    "icelake": {128: _SKYLAKE, 256: _SKYLAKE, 512: _SKYLAKE},  # else cannonlake's row
    "cannonlake": {128: _SKYLAKE, 256: _SKYLAKE, 512: Pipes(1, 1, 1, 1)},
    # Golden Cove: FMA/multiply on ports 0 and 1, fast FP adders on ports 1 and 5.
    "alderlake": {128: Pipes(2, 2, 2, 3), 256: Pipes(2, 2, 2, 3)},
    "sapphirerapids": {128: Pipes(2, 2, 2, 3), 256: Pipes(2, 2, 2, 3), 512: _SKYLAKE},
    "mic_knl": None,  # two 512-bit VPUs, not Broadwell's pipes: unknown rather than wrong
    "neoverse_n1": {128: Pipes(2, 2, 2, 2)},  # two 128-bit FP/ASIMD pipes
    "neoverse_v1": {128: Pipes(4, 4, 4, 4)},  # four 128-bit pipes for NEON code
}


# archspec target -> (L1d KiB per core, L2 KiB per core, typical clock GHz under vector load):
# reference values for a CPU known only by its target (`source: table` in a descriptor). The
# caches are the core's own (fixed per microarchitecture); the clock is a typical server
# part's all-core boost (SKUs differ by +-20%: the probe measures the real one). L3 and memory
# bandwidth depend on the part, not the core: left unknown. Sources: vendor product briefs,
# Agner Fog's microarchitecture manual.
REFERENCE: dict[str, tuple[float, float, float]] = {
    "zen": (32, 512, 3.0), "zen2": (32, 512, 3.2), "zen3": (32, 512, 3.3),
    "zen4": (32, 1024, 3.5), "zen5": (48, 1024, 3.6),
    "nehalem": (32, 256, 2.8), "sandybridge": (32, 256, 3.0), "haswell": (32, 256, 3.0),
    "skylake": (32, 256, 3.5), "skylake_avx512": (32, 1024, 2.8),
    "cascadelake": (32, 1024, 3.0), "icelake": (48, 1280, 3.0), "alderlake": (48, 1280, 4.0),
    "sapphirerapids": (48, 2048, 3.0),
    "neoverse_n1": (64, 1024, 3.0), "neoverse_v1": (64, 1024, 2.6),
}


def reference_fields(uarch: Microarchitecture | str | None) -> dict:
    """``{l1d_kb, l2_kb, clock_ghz}`` of :data:`REFERENCE` for ``uarch`` (through its nearest
    listed archspec ancestor); empty when unknown."""
    if isinstance(uarch, str):
        uarch = target(uarch)
    for candidate in [uarch, *uarch.ancestors] if uarch is not None else []:
        if candidate.name in REFERENCE:
            return dict(zip(("l1d_kb", "l2_kb", "clock_ghz"), REFERENCE[candidate.name]))
    return {}


# CPU features a hypervisor may mask from its guests: KVM guests of some hosts lack the
# protection-keys and L1D-flush bits (a Zen 4 guest then reads as the generic x86_64_v4) or the
# user-wait bits (a Sapphire Rapids guest reads as icelake). archspec requires them, so only
# these may be missing when :func:`host` looks past archspec's answer.
MASKED_IN_GUESTS = frozenset({"pku", "ospke", "flush_l1d", "md_clear", "waitpkg"})


@functools.cache
def host() -> Microarchitecture:
    """This machine's microarchitecture, read once: ``archspec.cpu.host()``, or the most specific
    archspec target descending from it that lacks nothing but :data:`MASKED_IN_GUESTS` (a KVM
    guest of a Zen 4 -> zen4 rather than x86_64_v4, of a Sapphire Rapids -> sapphirerapids
    rather than icelake)."""
    info = archspec.cpu.detect.detected_info()
    return nearest_target(archspec.cpu.host(), info.vendor, info.features)


def nearest_target(found: Microarchitecture, vendor: str, features: set) -> Microarchitecture:
    """The most specific x86-64 archspec target of ``vendor`` descending from ``found`` (what
    archspec answered: an ISA level such as x86_64_v4, or a CPU such as icelake) whose features
    are all in ``features`` but for :data:`MASKED_IN_GUESTS`; ``found`` when there is none or
    for other families (their targets list too few features to tell a guest from its host)."""
    if found.family.name != "x86_64":
        return found
    fits = [t for t in archspec.cpu.TARGETS.values()
            if t.vendor == vendor and found in t.ancestors
            and not t.features - features - MASKED_IN_GUESTS]
    return max(fits, key=lambda t: (len(t.ancestors), len(t.features), t.name),
               default=found)


def target(name: str) -> Microarchitecture | None:
    """The archspec target called ``name`` (``zen3``, ``skylake_avx512``), or None."""
    return archspec.cpu.TARGETS.get(name)


def from_mcpu(mcpu: str) -> Microarchitecture | None:
    """The archspec microarchitecture an LLVM ``mcpu`` names (``znver3`` -> zen3,
    ``skylake-avx512`` -> skylake_avx512, ``x86-64-v3`` -> x86_64_v3, ``neoverse-n1`` ->
    neoverse_n1), or None when archspec knows no such CPU.

    Looked up in archspec's clang flags, then as an archspec name (``-`` read as ``_``), then
    in :data:`MCPU_ALIASES` (LLVM names archspec lacks)."""
    if not isinstance(mcpu, str) or not mcpu:
        return None
    name = _llvm_names().get(mcpu) or mcpu.replace("-", "_")
    if name not in archspec.cpu.TARGETS:
        name = MCPU_ALIASES.get(mcpu, "")
    return archspec.cpu.TARGETS.get(name)


def from_machine(machine: str) -> Microarchitecture | None:
    """The microarchitecture a machine name ends with (``AMD EPYC (zen3)`` -> zen3, as
    :func:`gbxfer.hardware.probe.host_machine` writes it; a generation archspec folds into
    another, ``Intel Xeon (emeraldrapids)``, -> that one, sapphirerapids), or None."""
    found = re.search(r"\(([\w.]+)\)\s*$", machine or "")
    name = found.group(1) if found else ""
    if name in INTEL_GENERATIONS.values():
        name = MCPU_ALIASES[name]
    return archspec.cpu.TARGETS.get(name)


def is_llvm_x86_cpu(mcpu: str) -> bool:
    """Whether ``mcpu`` is an x86-64 CPU name of LLVM's that archspec's clang flags or
    :data:`MCPU_ALIASES` give (``znver3``, ``x86-64-v3``; not archspec's own ``zen3``). The
    flags of old clang versions count too (``icelake``, which LLVM 7 renamed): without TVM's
    LLVM to ask, this is the check that can be made."""
    uarch = from_mcpu(mcpu)
    return (uarch is not None and uarch.family.name == "x86_64"
            and (mcpu in _llvm_names() or mcpu in MCPU_ALIASES))


def llvm_mcpu(uarch: Microarchitecture | None) -> str | None:
    """The LLVM ``mcpu`` that names ``uarch`` (zen3 -> ``znver3``), or None."""
    names = [llvm for llvm, name in _llvm_names().items()
             if uarch is not None and name == uarch.name]
    return min(names, key=len) if names else None


@functools.cache
def _llvm_names() -> dict[str, str]:
    """LLVM CPU name -> archspec target name, from every target's clang flags.

    Read from each target's ``compilers["clang"]`` entries rather than through
    ``optimization_flags(compiler, version)``: that returns the first entry a version satisfies,
    so a newer entry listed after an open-ended older one (neoverse_n1: ``-mcpu=neoverse-n1``
    from clang 10, after ``-march=armv8.2-a...`` from clang 5) is never returned. Where two
    targets give one name, the target of that name wins, then the one whose newest flags give
    it (zen4's flags for clang 12-15 say ``znver3``; zen3's say it for every clang since 12)."""
    best: dict[str, tuple] = {}
    for uarch in archspec.cpu.TARGETS.values():
        entries = uarch.compilers.get("clang", [])
        newest = max((_version(e["versions"].split(":")[0]) for e in entries), default=())
        for entry in entries:
            low, high = (_version(v) for v in entry["versions"].split(":"))
            flags = entry["flags"].format(**{"name": uarch.name, **entry})
            for llvm in re.findall(r"-m(?:arch|cpu)=([\w.-]+)(?=\s|$)", flags):
                if llvm.startswith(("armv", "rv")) or llvm == "generic":
                    continue  # an ISA level, not a CPU
                key = (llvm.replace("-", "_") == uarch.name, low == newest, not high,
                       -len(uarch.ancestors))
                if llvm not in best or key > best[llvm][0]:
                    best[llvm] = (key, uarch.name)
    return {llvm: name for llvm, (_, name) in best.items()}


def _version(text: str) -> tuple:
    return tuple(int(p) for p in re.findall(r"\d+", text))


def vector_isa(uarch: Microarchitecture) -> tuple[int, int] | None:
    """``(vector bits, fma)`` of the widest float SIMD ``uarch`` executes: AVX-512F 512,
    AVX/AVX2 256, SSE (every x86-64) and NEON/ASIMD (every AArch64) 128; fma 1 with the FMA
    (or AMD's FMA4) feature and on every AArch64 CPU. None for other families."""
    family = uarch.family.name
    if family == "aarch64":
        return 128, 1  # NEON with fused multiply-add is part of ARMv8-A
    if family not in ("x86_64", "x86"):
        return None
    fma = int("fma" in uarch or "fma4" in uarch)
    if "avx512f" in uarch:
        return 512, fma
    if "avx" in uarch or "avx2" in uarch:
        return 256, fma
    return (128, fma) if family == "x86_64" or "sse" in uarch else None  # SSE2 is x86-64


def fp_pipes(uarch: Microarchitecture | str | None, vector_bits: float) -> Pipes | None:
    """The :class:`Pipes` of ``uarch`` at ``vector_bits``, from :data:`FP_PIPES` through the
    nearest listed archspec ancestor; None when unknown."""
    if isinstance(uarch, str):
        uarch = target(uarch)
    if uarch is None:
        return None
    for candidate in [uarch, *uarch.ancestors]:
        if candidate.name in FP_PIPES:
            row = FP_PIPES[candidate.name]
            return None if row is None or not _known(vector_bits) else row.get(int(vector_bits))
    return None


def flops_per_lane_cycle(uarch: Microarchitecture | str | None, vector_bits: float,
                         fma: float) -> float | None:
    """Float32 FLOPs one core retires per vector lane per cycle at its peak: 2 x FMA pipes for
    FMA code, 2 x min(mul, add, pipes / 2) for separate multiplies and adds. None if unknown."""
    pipes = fp_pipes(uarch, vector_bits)
    if pipes is None or not _known(fma):
        return None
    if fma and pipes.fma:
        return 2.0 * pipes.fma
    return 2.0 * min(pipes.mul, pipes.add, pipes.pipes / 2)


def theoretical_peak_gflops(uarch: Microarchitecture | str | None, vector_bits: float,
                            fma: float, clock_ghz: float, threads: float) -> float:
    """Theoretical float32 peak in GFLOP/s: ``clock_ghz x vector_bits / 32 x``
    :func:`flops_per_lane_cycle` ``x threads`` (one thread per core). NaN when any part is
    unknown."""
    per_lane = flops_per_lane_cycle(uarch, vector_bits, fma)
    if per_lane is None or not (_known(clock_ghz) and _known(threads)):
        return math.nan
    return float(clock_ghz) * vector_bits / 32 * per_lane * float(threads)


def _known(value) -> bool:
    return value is not None and math.isfinite(float(value)) and float(value) >= 0
