"""Measure this machine: peak GFLOP/s per vector ISA and thread count, memory bandwidth, caches.

Peak FLOP rates come from a small C kernel (independent multiply-add chains in GCC vector
types) compiled for each ISA with the system C compiler and run with OpenMP threads; memory
bandwidth from a STREAM-style triad over arrays far larger than the caches. Both report the best
of several runs. Needs a C compiler with OpenMP (``cc``/``gcc``).
"""
from __future__ import annotations

import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..errors import GbxferError

# ISA name -> (compiler flags, vector bits, fused multiply-add, LLVM mcpu of that ISA level)
ISAS = {
    "avx512": (["-mavx512f", "-mfma"], 512, 1, "skylake-avx512"),
    "avx2-fma": (["-mavx2", "-mfma"], 256, 1, "haswell"),
    "avx": (["-mavx", "-mno-fma", "-mno-avx2"], 256, 0, "sandybridge"),
    "sse4.2": (["-msse4.2", "-mno-avx"], 128, 0, "nehalem"),
}

KERNEL = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <omp.h>
typedef float vec __attribute__((vector_size(VBYTES)));
#define LANES (VBYTES / 4)
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
                          return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char **argv) {
  int threads = atoi(argv[1]); long iters = atol(argv[2]); long n = atol(argv[3]);
  omp_set_num_threads(threads);
  double best_flops = 0, best_bw = 0;
  for (int rep = 0; rep < 5; rep++) {
    double t0 = now(); float sink = 0;
    #pragma omp parallel reduction(+:sink)
    {
      vec a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, m, c;
      for (int l = 0; l < LANES; l++) { m[l] = 0.999999f; c[l] = 1e-7f;
        a0[l]=a1[l]=a2[l]=a3[l]=a4[l]=a5[l]=a6[l]=a7[l]=a8[l]=a9[l]=a10[l]=a11[l]=l; }
      for (long i = 0; i < iters; i++) {
        a0 = a0*m + c; a1 = a1*m + c; a2 = a2*m + c; a3 = a3*m + c; a4 = a4*m + c;
        a5 = a5*m + c; a6 = a6*m + c; a7 = a7*m + c; a8 = a8*m + c; a9 = a9*m + c;
        a10 = a10*m + c; a11 = a11*m + c;
      }
      vec s = a0+a1+a2+a3+a4+a5+a6+a7+a8+a9+a10+a11;
      for (int l = 0; l < LANES; l++) sink += s[l];
    }
    double dt = now() - t0;
    double flops = 2.0 * 12 * LANES * (double)iters * threads / dt;
    if (flops > best_flops) best_flops = flops;
    if (sink == 12345.f) printf("#");
  }
  float *a = malloc(n * 4), *b = malloc(n * 4), *c = malloc(n * 4);
  #pragma omp parallel for
  for (long i = 0; i < n; i++) { a[i] = 0; b[i] = 1; c[i] = 2; }
  for (int rep = 0; rep < 5; rep++) {
    double t0 = now();
    #pragma omp parallel for
    for (long i = 0; i < n; i++) a[i] = b[i] + 3.0f * c[i];
    double dt = now() - t0, bw = 3.0 * 4 * n / dt;
    if (bw > best_bw) best_bw = bw;
  }
  printf("%.3f %.3f %f\n", best_flops / 1e9, best_bw / 1e9, a[n / 2]);
  return 0;
}
"""


def _compiler() -> str:
    for name in ("cc", "gcc", "clang"):
        path = shutil.which(name)
        if path:
            return path
    raise GbxferError("gbxfer hardware probe needs a C compiler with OpenMP (cc, gcc or clang)")


def cpu_flags() -> set[str]:
    """The CPU feature flags in /proc/cpuinfo (empty where there is none)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def supported_isas() -> list[str]:
    """ISAs of :data:`ISAS` this CPU executes."""
    flags = cpu_flags()
    need = {"avx512": {"avx512f"}, "avx2-fma": {"avx2", "fma"}, "avx": {"avx"},
            "sse4.2": {"sse4_2"}}
    return [isa for isa in ISAS if need[isa] <= flags]


def measure_peak(isa: str, threads: int, iters: int = 20_000_000,
                 stream_mb: int = 256) -> tuple[float, float]:
    """``(peak GFLOP/s, memory GB/s)`` of ``isa`` on ``threads`` threads (best of 5 runs)."""
    if isa not in ISAS:
        raise GbxferError(f"unknown ISA {isa!r}; known: {', '.join(ISAS)}")
    if isa not in supported_isas():
        raise GbxferError(f"this CPU does not execute {isa} code (flags in /proc/cpuinfo); "
                          f"it does: {', '.join(supported_isas())}")
    flags, bits, _, _ = ISAS[isa]
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp) / "peak.c", Path(tmp) / "peak"
        src.write_text(KERNEL)
        cmd = [_compiler(), "-O2", "-fopenmp", f"-DVBYTES={bits // 8}", *flags, str(src),
               "-o", str(exe)]
        built = subprocess.run(cmd, capture_output=True, text=True)
        if built.returncode != 0:
            raise GbxferError(f"compiling the probe kernel failed: {built.stderr[-500:]}")
        n = stream_mb * 1024 * 1024 // 4
        out = subprocess.run([str(exe), str(threads), str(iters), str(n)], capture_output=True,
                             text=True, env={**os.environ, "OMP_PROC_BIND": "true"}, check=True)
    gflops, gbps, _ = out.stdout.split()
    return float(gflops), float(gbps)


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


def clock_ghz() -> float | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("cpu MHz"):
                return round(float(line.split(":")[1]) / 1000, 3)
    except OSError:
        pass
    return None


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def probe(isa: str, threads: int) -> dict:
    """A descriptor of this machine for one ISA and thread count, with measured peaks."""
    _, bits, fma, _ = ISAS[isa]
    gflops, gbps = measure_peak(isa, threads)
    return {"vector_bits": bits, "fma": fma, "cores": os.cpu_count(), "threads": threads,
            **cache_sizes_kb(), "clock_ghz": clock_ghz(), "peak_gflops": round(gflops, 1),
            "mem_gbps": round(gbps, 1)}
