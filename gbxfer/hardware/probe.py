"""Measure this machine: its clock, peak GFLOP/s per vector ISA and thread count, memory
bandwidth and caches, against the theoretical peak of its microarchitecture.

Peak FLOP rates come from a small C kernel of independent ``a = a * m + c`` chains in GCC vector
types, compiled for each ISA with the system C compiler (``-O2 -ffp-contract=fast``: one FMA
per chain step wherever the ISA has FMA, whatever the compiler's default contraction) and run on
OpenMP threads bound to CPUs: about 0.25 s per repetition, best of 5. The chains cover latency x
pipes on every CPU of :data:`~gbxfer.hardware.microarch.FP_PIPES`: 8 are needed for FMA (latency
4, 2 pipes), 12 for separate multiplies and adds on Zen (3 + 3 cycles, 2 pairs per cycle); 512-bit
code has 32 vector registers and runs 16, narrower code 16 registers and 12 (each with the two
constants: no spills, :func:`kernel_asm` shows it). Separate multiplies and adds are measured
with 12 and with 14 chains (14 and the two constants fill the 16 registers) and the faster
counts, with the better of the two runs' memory bandwidths: 12 leave Zen's pipes no slack,
and on a Zen 3 (2026-12-03) AVX code read about 0.92 of the theoretical peak with 12 and 0.96
with 14, SSE4.2 code 0.95 with 12 and 0.93 with 14.

Right before and right after each repetition, on the same bound thread, a dependent chain of
register-register adds (one per cycle; not adds of an immediate, which Golden Cove's renamer
folds) measures the clock the kernel runs at: a VM's /proc/cpuinfo "cpu MHz" is the nominal
clock, not the boost clock. Memory bandwidth comes from a STREAM-style triad over arrays far
larger than the caches. Needs a C compiler with OpenMP (``cc``/``gcc``/``clang``).
"""
from __future__ import annotations

import functools
import math
import os
import platform
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import NamedTuple

from ..errors import GbxferError
from .descriptor import FIELDS
from .microarch import flops_per_lane_cycle, generation, host, theoretical_peak_gflops

# ISA name -> (compiler flags, vector bits, fused multiply-add, LLVM mcpu of that ISA level)
ISAS = {
    "avx512": (["-mavx512f", "-mfma"], 512, 1, "skylake-avx512"),
    "avx2-fma": (["-mavx2", "-mfma"], 256, 1, "haswell"),
    "avx": (["-mavx", "-mno-fma", "-mno-avx2"], 256, 0, "sandybridge"),
    "sse4.2": (["-msse4.2", "-mno-avx"], 128, 0, "nehalem"),
}
CHAINS = {512: 16, 256: 12, 128: 12}  # independent chains per vector width (see above)
SEPARATE_CHAINS = (12, 14)  # chain counts tried for separate multiplies and adds (<= 256 bits)
PEAK_RATIO_WARN = 0.9  # a probe below this share of the theoretical peak under-reads
CFLAGS = ["-O2", "-ffp-contract=fast", "-fopenmp"]

_HEAD = r"""
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <omp.h>
typedef float vec __attribute__((vector_size(VBYTES)));
#define LANES (VBYTES / 4)
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
                          return t.tv_sec + 1e-9 * t.tv_nsec; }
#if defined(__x86_64__) || defined(__i386__)
#define ADD1 "add %1, %0\n\t"
#elif defined(__aarch64__)
#define ADD1 "add %0, %0, %1\n\t"
#endif
#ifdef ADD1
#define ADD10 ADD1 ADD1 ADD1 ADD1 ADD1 ADD1 ADD1 ADD1 ADD1 ADD1
#define ADD100 ADD10 ADD10 ADD10 ADD10 ADD10 ADD10 ADD10 ADD10 ADD10 ADD10
#endif
/* GHz of the calling thread's CPU: each add depends on the one before, one per cycle. */
static double clock_ghz(long adds) {
#ifdef ADD1
  unsigned long x = 0, y = 1;
  long n = adds / 100;
  double t0 = now();
  for (long i = 0; i < n; i++) __asm__ volatile(ADD100 : "+r"(x) : "r"(y));
  double dt = now() - t0;
  return x == 100UL * n ? 100.0 * n / dt / 1e9 : 0;
#else
  return 0;
#endif
}
"""

_MAIN = r"""
int main(int argc, char **argv) {
  if (argc == 3) {  /* ADDS REPS: the clock of the CPU this starts on, pinned there */
    cpu_set_t one; CPU_ZERO(&one); CPU_SET(sched_getcpu(), &one);
    sched_setaffinity(0, sizeof one, &one);
    double best = 0;
    for (int rep = 0; rep < atoi(argv[2]); rep++) {
      double g = clock_ghz(atol(argv[1])); if (g > best) best = g; }
    printf("%.4f\n", best);
    return 0;
  }
  /* THREADS SECONDS N REPS ADDS: peak GFLOP/s, triad GB/s, clock before/after (GHz) */
  int threads = atoi(argv[1]); double seconds = atof(argv[2]); long n = atol(argv[3]);
  int reps = atoi(argv[4]); long adds = atol(argv[5]);
  omp_set_num_threads(threads);
  double best_flops = 0, best_bw = 0, before = 0, after = 0, t0 = 0, t1 = 0;
  float sink = 0;
  long iters = 1 << 16;
  for (;;) {  /* iterations for SECONDS per repetition; this also warms the cores up */
    double t = now();
    #pragma omp parallel reduction(+:sink)
    sink += fma_chains(iters);
    t = now() - t;
    if (t > 0.05) { iters = (long)(iters * seconds / t) + 1; break; }
    iters *= 4;
  }
  for (int rep = 0; rep < reps; rep++) {
    double b = 0, a = 0;
    #pragma omp parallel reduction(+:sink, b, a)
    {
      b += clock_ghz(adds);
      #pragma omp barrier
      #pragma omp master
      t0 = now();
      sink += fma_chains(iters);
      #pragma omp barrier
      #pragma omp master
      t1 = now();
      a += clock_ghz(adds);
    }
    double flops = (double)FLOPS_PER_STEP * CHAINS * LANES * (double)iters * threads / (t1 - t0);
    if (flops > best_flops) best_flops = flops;
    if (b / threads > before) before = b / threads;
    if (a / threads > after) after = a / threads;
  }
  float *x = malloc(n * 4), *y = malloc(n * 4), *z = malloc(n * 4);
  #pragma omp parallel for
  for (long i = 0; i < n; i++) { x[i] = 0; y[i] = 1; z[i] = 2; }
  for (int rep = 0; rep < reps; rep++) {
    double t = now();
    #pragma omp parallel for
    for (long i = 0; i < n; i++) x[i] = y[i] + 3.0f * z[i];
    double bw = 3.0 * 4 * n / (now() - t);
    if (bw > best_bw) best_bw = bw;
  }
  printf("%.3f %.3f %.4f %.4f %g %g\n", best_flops / 1e9, best_bw / 1e9, before, after,
         (double)sink, (double)x[n / 2]);
  return 0;
}
"""


def kernel_source(vector_bits: int, fma: bool = True, chains: int | None = None) -> str:
    """The C source of the probe for ``vector_bits``-wide vectors (``chains`` chains, by
    default :data:`CHAINS`).

    With FMA, every chain is a multiply-add (2 flops per step). Without, half the chains
    multiply and half add (1 flop per step): a multiply-then-add chain would wait for both
    latencies in turn, and its rate would be half the pipes' (the multiplier is 1.0 and the
    addend 1e-7, read from volatile globals so that the compiler cannot fold them: no value
    drifts into denormals)."""
    chains = chains or CHAINS[vector_bits]
    names = [f"a{i}" for i in range(chains)]
    init = ", ".join(f"{a} = (vec){{}} + {i}.0f" for i, a in enumerate(names))
    if fma:
        steps = "\n    ".join(f"{a} = {a} * m + c;" for a in names)
    else:
        steps = "\n    ".join(f"{a} = {a} * m;" if i % 2 == 0 else f"{a} = {a} + c;"
                              for i, a in enumerate(names))
    kernel = f"""
#define CHAINS {chains}
#define FLOPS_PER_STEP {2 if fma else 1}
static volatile float MUL = {"0.999999f" if fma else "1.0f"}, ADD = 1e-7f;
/* {chains} independent chains: the rate of the FP pipes, not their latency */
__attribute__((noinline)) static float fma_chains(long iters) {{
  vec m = (vec){{}} + MUL, c = (vec){{}} + ADD;  /* FMA: a -> 0.1, no denormals */
  vec {init};
  for (long i = 0; i < iters; i++) {{
    {steps}
  }}
  vec s = {" + ".join(names)};
  float t = 0;
  for (int l = 0; l < LANES; l++) t += s[l];
  return t;
}}
"""
    return _HEAD + kernel + _MAIN


def _compiler() -> str:
    for name in ("cc", "gcc", "clang"):
        path = shutil.which(name)
        if path:
            return path
    raise GbxferError("gbxfer hardware probe needs a C compiler with OpenMP (cc, gcc or clang)")


def _build(tmp: Path, bits: int, flags: list[str], assemble: bool = True,
           fma: bool = True, chains: int | None = None) -> Path:
    src, out = tmp / "peak.c", tmp / ("peak" if assemble else "peak.s")
    src.write_text(kernel_source(bits, fma, chains))
    cmd = [_compiler(), *CFLAGS, f"-DVBYTES={bits // 8}", *flags, str(src),
           *([] if assemble else ["-S"]), "-o", str(out)]
    built = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if built.returncode != 0:
        raise GbxferError(f"compiling the probe kernel failed ({' '.join(cmd)}): "
                          f"{built.stderr[-500:]}")
    return out


def chain_counts(isa: str) -> tuple[int, ...]:
    """The chain counts the probe measures ``isa`` with (it keeps the fastest)."""
    _, bits, fma, _ = ISAS[isa]
    return (CHAINS[bits],) if fma else SEPARATE_CHAINS


def kernel_asm(isa: str, chains: int | None = None) -> str:
    """The assembly the compiler makes of the probe for ``isa`` (this CPU need not run it)."""
    if isa not in ISAS:
        raise GbxferError(f"unknown ISA {isa!r}; known: {', '.join(ISAS)}")
    flags, bits, fma, _ = ISAS[isa]
    with tempfile.TemporaryDirectory() as tmp:
        return _build(Path(tmp), bits, flags, assemble=False, fma=bool(fma),
                      chains=chains).read_text()


@functools.cache
def cpuinfo() -> dict[str, str]:
    """The fields of the first CPU in /proc/cpuinfo (``model name``, ``flags``, ...; empty where
    there is none), read once: callers must not change it."""
    info = {}
    try:
        with open("/proc/cpuinfo") as lines:
            for line in lines:
                if not line.strip():  # the first CPU ends at a blank line
                    break
                key, _, value = line.partition(":")
                info.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return info


def cpu_flags() -> set[str]:
    """The CPU feature flags in /proc/cpuinfo (empty where there is none)."""
    return set(cpuinfo().get("flags", "").split())


def supported_isas() -> list[str]:
    """ISAs of :data:`ISAS` this CPU executes."""
    flags = cpu_flags()
    need = {"avx512": {"avx512f"}, "avx2-fma": {"avx2", "fma"}, "avx": {"avx"},
            "sse4.2": {"sse4_2"}}
    return [isa for isa in ISAS if need[isa] <= flags]


class PeakMeasurement(NamedTuple):
    """What one probe run measured: GFLOP/s, triad GB/s, and the clock (GHz) each thread
    ran at right before and right after the FMA kernel (mean over threads, best repetition;
    0 where the clock cannot be measured)."""

    gflops: float
    gbps: float
    clock_before_ghz: float
    clock_after_ghz: float


def measure_peak(isa: str, threads: int, seconds: float = 0.25, repeats: int = 5,
                 stream_mb: int = 256, clock_adds: int = 5_000_000) -> PeakMeasurement:
    """Peak GFLOP/s of ``isa`` on ``threads`` threads (best of ``repeats`` runs of about
    ``seconds`` each, for each of :func:`chain_counts`), memory GB/s, and the clock around
    the fastest kernel."""
    if isa not in ISAS:
        raise GbxferError(f"unknown ISA {isa!r}; known: {', '.join(ISAS)}")
    if isa not in supported_isas():
        raise GbxferError(f"this CPU does not execute {isa} code (flags in /proc/cpuinfo); "
                          f"it does: {', '.join(supported_isas())}")
    flags, bits, fma, _ = ISAS[isa]
    env = {**os.environ, "OMP_PROC_BIND": "true"}
    env.setdefault("OMP_PLACES", "cores")  # one thread per core, each on its own
    args = [threads, seconds, stream_mb * 1024 * 1024 // 4, repeats, clock_adds]
    runs = []
    for chains in chain_counts(isa):
        with tempfile.TemporaryDirectory() as tmp:
            exe = _build(Path(tmp), bits, flags, fma=bool(fma), chains=chains)
            out = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True,
                                 env=env, check=True)
        runs.append(PeakMeasurement(*(float(v) for v in out.stdout.split()[:4])))
    best = max(runs, key=lambda m: m.gflops)
    return best._replace(gbps=max(m.gbps for m in runs))


def measure_clock_ghz(adds: int = 5_000_000, repeats: int = 10) -> float | None:
    """This CPU's clock in GHz (best of ``repeats`` chains of ``adds`` dependent adds, pinned
    to one CPU); None on CPUs other than x86 and AArch64."""
    with tempfile.TemporaryDirectory() as tmp:
        exe = _build(Path(tmp), 128, [])
        out = subprocess.run([str(exe), str(adds), str(repeats)], capture_output=True,
                             text=True, check=True)
    return float(out.stdout) or None


def cache_sizes_kb() -> dict:
    """L1d/L2/L3 sizes in KiB of cpu0, from sysfs (missing levels are left out)."""
    sizes = {}
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    for index in sorted(base.glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        if kind == "Instruction":
            continue
        value = int(size.rstrip("KMG")) * {"K": 1, "M": 1024, "G": 1024**2}.get(size[-1], 1)
        sizes[{"1": "l1d_kb", "2": "l2_kb", "3": "l3_kb"}.get(level, f"l{level}_kb")] = value
    return sizes


def cpu_model() -> str:
    """The CPU model name of /proc/cpuinfo without trademarks and filler words (``AMD EPYC``;
    ``Intel(R) Xeon(R) Processor`` -> ``Intel Xeon``)."""
    name = cpuinfo().get("model name")
    return _plain_model(name) if name else platform.processor() or "unknown"


def _plain_model(name: str) -> str:
    words = re.sub(r"\((R|TM|tm)\)", "", name).split()
    return " ".join(w for w in words if w not in ("Processor", "CPU")) or name.strip()


def host_generation() -> str:
    """This CPU's archspec microarchitecture (``zen3``), or the generation its CPUID model
    tells where archspec folds it into another (``emeraldrapids``, see
    :func:`gbxfer.hardware.microarch.generation`)."""
    info = cpuinfo()
    family, model = (int(info[k]) if info.get(k, "").isdigit() else -1
                     for k in ("cpu family", "model"))
    return generation(host(), info.get("vendor_id", ""), family, model)


def host_machine() -> str:
    """This machine as profiles and records name it: the CPU model, then its generation
    (:func:`host_generation`) in parentheses (``AMD EPYC (zen3)``, ``Intel Xeon
    (emeraldrapids)``)."""
    return f"{cpu_model()} ({host_generation()})"


def probe(isa: str, threads: int, seconds: float = 0.25, repeats: int = 5,
          stream_mb: int = 256) -> dict:
    """Measure this machine for one ISA and thread count.

    Returns ``{"descriptor": {field: value}}`` (fields of
    :data:`~gbxfer.hardware.descriptor.FIELDS` only: ISA, cores, threads, caches, measured
    clock, peak GFLOP/s, GB/s) with ``machine`` (:func:`host_machine`), ``microarchitecture``
    (archspec's, whose FP pipes set the theoretical peak), ``generation``,
    ``theoretical_gflops`` (of the ISA at the measured clock; None where the microarchitecture's
    FP pipes are unknown), ``peak_ratio`` (measured / theoretical), ``flops_per_lane_cycle``,
    ``clock_before_ghz`` and ``clock_after_ghz``."""
    _, bits, fma, _ = ISAS[isa]
    m = measure_peak(isa, threads, seconds, repeats, stream_mb)
    clock = max(m.clock_before_ghz, m.clock_after_ghz) or None
    caches = {k: v for k, v in cache_sizes_kb().items() if k in FIELDS}
    descriptor = {"vector_bits": bits, "fma": fma, "cores": os.cpu_count(), "threads": threads,
                  **caches, "clock_ghz": round(clock, 3) if clock else None,
                  "peak_gflops": round(m.gflops, 1), "mem_gbps": round(m.gbps, 1)}
    uarch = host()
    theoretical = theoretical_peak_gflops(uarch, bits, fma, clock, threads)
    known = not math.isnan(theoretical)  # NaN when the FP pipes or the clock are unknown
    return {"descriptor": descriptor, "machine": host_machine(),
            "microarchitecture": uarch.name, "generation": host_generation(),
            "theoretical_gflops": round(theoretical, 1) if known else None,
            "peak_ratio": round(m.gflops / theoretical, 3) if known else None,
            "flops_per_lane_cycle": flops_per_lane_cycle(uarch, bits, fma),
            "clock_before_ghz": round(m.clock_before_ghz, 3) or None,
            "clock_after_ghz": round(m.clock_after_ghz, 3) or None}
